// Tests for Listener: ephemeral ports, SO_REUSEPORT sharing, address and bind
// errors (without leaking the socket), TCP_NODELAY inherited by accepted
// sockets, and ownership of the descriptor through moves and Close().
#include "src/io/listener.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace uring_http::io {
namespace {

// A blocking TCP connection to 127.0.0.1:port; -1 (and errno) on failure.
int ConnectTo(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

int OpenDescriptors() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(ListenerTest, PortZeroPicksAnEphemeralPort) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_GE(listener->fd(), 0);
  EXPECT_NE(listener->port(), 0);
  // port() is what the socket is really bound to.
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener->fd(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EXPECT_EQ(ntohs(addr.sin_port), listener->port());
  EXPECT_EQ(ntohl(addr.sin_addr.s_addr), INADDR_LOOPBACK);
  // It is listening: a client can connect.
  int client = ConnectTo(listener->port());
  EXPECT_GE(client, 0) << strerror(errno);
  if (client >= 0) close(client);
}

TEST(ListenerTest, SocketOptionsAreSet) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  EXPECT_EQ(IntOption(listener->fd(), SOL_SOCKET, SO_REUSEPORT), 1);
  EXPECT_EQ(IntOption(listener->fd(), SOL_SOCKET, SO_REUSEADDR), 1);
  EXPECT_NE(IntOption(listener->fd(), IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_EQ(IntOption(listener->fd(), SOL_SOCKET, SO_ACCEPTCONN), 1);
  EXPECT_TRUE(fcntl(listener->fd(), F_GETFD) & FD_CLOEXEC);
}

TEST(ListenerTest, SecondListenerSharesThePort) {
  auto first = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(first.ok());
  auto second = Listener::Bind("127.0.0.1", first->port(), 16);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->port(), first->port());
  EXPECT_NE(second->fd(), first->fd());
}

TEST(ListenerTest, PortHeldWithoutReusePortIsRefused) {
  int plain = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(plain, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(plain, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(plain, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(plain, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);

  const int before = OpenDescriptors();
  auto listener = Listener::Bind("127.0.0.1", port, 16);
  EXPECT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(listener.status().message().find(std::to_string(port)), absl::string_view::npos)
      << listener.status();
  EXPECT_EQ(OpenDescriptors(), before);  // the failed socket was closed
  close(plain);
}

TEST(ListenerTest, InvalidAddressesAreRejected) {
  for (const char* address : {"", "localhost", "256.0.0.1", "1.2.3", "::1", "1.2.3.4 "}) {
    auto listener = Listener::Bind(address, 0, 16);
    ASSERT_FALSE(listener.ok()) << "'" << address << "'";
    EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_NE(listener.status().message().find("IPv4"), absl::string_view::npos);
  }
}

TEST(ListenerTest, AddressNotOnThisHostFailsWithoutLeaking) {
  const int before = OpenDescriptors();
  auto listener = Listener::Bind("192.0.2.1", 0, 16);  // TEST-NET-1: not ours
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(listener.status().message().find("192.0.2.1"), absl::string_view::npos);
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST(ListenerTest, AcceptedSocketsInheritNoDelay) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  int client = ConnectTo(listener->port());
  ASSERT_GE(client, 0) << strerror(errno);
  // The client socket is a control: Nagle is on by default.
  EXPECT_EQ(IntOption(client, IPPROTO_TCP, TCP_NODELAY), 0);
  int accepted = accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0) << strerror(errno);
  EXPECT_NE(IntOption(accepted, IPPROTO_TCP, TCP_NODELAY), 0);
  close(accepted);
  close(client);
}

TEST(ListenerTest, MoveTransfersOwnership) {
  auto bound = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(bound.ok());
  Listener a = *std::move(bound);
  const int fd = a.fd();
  const uint16_t port = a.port();

  Listener b(std::move(a));
  EXPECT_EQ(b.fd(), fd);
  EXPECT_EQ(b.port(), port);
  EXPECT_EQ(a.fd(), -1);  // NOLINT(bugprone-use-after-move): testing it
  a.Close();              // closing the moved-from listener closes nothing
  EXPECT_TRUE(IsOpen(fd));

  auto other = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(other.ok());
  Listener c = *std::move(other);
  const int old_fd = c.fd();
  c = std::move(b);  // c's old socket is closed, b's moves in
  EXPECT_EQ(c.fd(), fd);
  EXPECT_EQ(c.port(), port);
  EXPECT_EQ(b.fd(), -1);  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(IsOpen(old_fd));
  EXPECT_TRUE(IsOpen(fd));
}

TEST(ListenerTest, CloseStopsListening) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  const int fd = listener->fd();
  const uint16_t port = listener->port();
  listener->Close();
  EXPECT_EQ(listener->fd(), -1);
  EXPECT_FALSE(IsOpen(fd));
  listener->Close();  // idempotent
  EXPECT_EQ(ConnectTo(port), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
}

TEST(ListenerTest, CloseStopsListeningWhileTheSocketIsStillReferenced) {
  // An in-flight io_uring accept holds its own reference to the socket, like
  // this dup(); Close() must stop the listening all the same.
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  const uint16_t port = listener->port();
  const int other_reference = dup(listener->fd());
  ASSERT_GE(other_reference, 0);
  listener->Close();
  EXPECT_EQ(ConnectTo(port), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(other_reference);
}

TEST(ListenerTest, DestructorCloses) {
  int fd = -1;
  {
    auto listener = Listener::Bind("127.0.0.1", 0, 16);
    ASSERT_TRUE(listener.ok());
    fd = listener->fd();
    ASSERT_TRUE(IsOpen(fd));
  }
  EXPECT_FALSE(IsOpen(fd));
}

}  // namespace
}  // namespace uring_http::io
