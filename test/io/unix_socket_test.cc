// Tests for the Unix-domain socket helpers: abstract and path names (mode,
// a stale path replaced, in use, removed on close), NotFound when nobody
// listens, SO_PEERCRED, messages with descriptors (several, none, too many:
// nothing leaks), end of stream and timeouts; and the kernel behaviour a
// takeover rests on: a listening TCP socket sent with SCM_RIGHTS is the same
// socket, so a connection waiting in its queue is accepted from the copy
// after the sender has closed its own.
#include "src/io/unix_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "src/io/listener.h"

namespace uring_http::io {
namespace {

int OpenDescriptors() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

std::string UniqueAbstract(const char* what) {
  return std::string("@uring-http-test/") + what + "/" + std::to_string(getpid());
}

// In /tmp: a socket path has room for 107 bytes, less than Bazel's
// TEST_TMPDIR may take.
std::string TempPath(const char* what) {
  return std::string("/tmp/uring-http-test.") + what + "." + std::to_string(getpid()) + ".sock";
}

struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    a = OwnedFd(fds[0]);
    b = OwnedFd(fds[1]);
  }
  OwnedFd a, b;
};

TEST(UnixSocketTest, AbstractNameListensAndConnects) {
  const std::string name = UniqueAbstract("abstract");
  auto listener = UnixListener::Listen(name);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ(listener->name(), name);
  auto client = ConnectUnix(name);
  ASSERT_TRUE(client.ok()) << client.status();
  OwnedFd server(accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_GE(server.get(), 0);
  EXPECT_EQ(*PeerUid(server.get()), geteuid());
  EXPECT_EQ(*PeerUid(client->get()), geteuid());
  EXPECT_TRUE(TrustedPeer(geteuid()));
  EXPECT_TRUE(TrustedPeer(0));

  // The name is taken while it listens, and free once closed.
  auto second = UnixListener::Listen(name);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  listener->Close();
  EXPECT_EQ(ConnectUnix(name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(UnixListener::Listen(name).ok());
}

TEST(UnixSocketTest, PathNameIsPrivateReplacesAStaleOneAndIsRemoved) {
  const std::string path = TempPath("control");
  unlink(path.c_str());
  {
    // A socket file left by a process that is gone (bound, never listening).
    int stale = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(stale);
  }
  auto listener = UnixListener::Listen(path);
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(ConnectUnix(path).ok());
  // One that somebody listens on is not replaced.
  EXPECT_EQ(UnixListener::Listen(path).status().code(), absl::StatusCode::kFailedPrecondition);
  listener->Close();
  EXPECT_NE(stat(path.c_str(), &st), 0);  // removed
  EXPECT_EQ(ConnectUnix(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(UnixSocketTest, BadNamesAreRefused) {
  for (const std::string& name : {std::string(), std::string("@"), std::string(200, 'x')}) {
    EXPECT_EQ(UnixListener::Listen(name).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ConnectUnix(name).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(UnixSocketTest, MessagesCarryDescriptors) {
  Pair pair;
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const int fds[] = {pipe_fds[0], pipe_fds[1]};
  ASSERT_TRUE(SendMessage(pair.a.get(), "two", fds).ok());
  ASSERT_TRUE(SendMessage(pair.a.get(), "none").ok());

  auto message = ReceiveMessage(pair.b.get(), 1000);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->bytes, "two");
  ASSERT_EQ(message->fds.size(), 2u);
  for (const OwnedFd& fd : message->fds) {
    EXPECT_TRUE(fcntl(fd.get(), F_GETFD) & FD_CLOEXEC);
  }
  // The same pipe: what goes in one end comes out of the received other.
  ASSERT_EQ(write(message->fds[1].get(), "x", 1), 1);
  char c = 0;
  ASSERT_EQ(read(pipe_fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');

  message = ReceiveMessage(pair.b.get(), 1000);
  ASSERT_TRUE(message.ok());
  EXPECT_EQ(message->bytes, "none");
  EXPECT_TRUE(message->fds.empty());
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(UnixSocketTest, TooManyDescriptorsOrBytesLeakNothing) {
  Pair pair;
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const int fds[] = {pipe_fds[0], pipe_fds[1], pipe_fds[0]};
  ASSERT_TRUE(SendMessage(pair.a.get(), "three", fds).ok());
  ASSERT_TRUE(SendMessage(pair.a.get(), std::string(100, 'b')).ok());
  const int before = OpenDescriptors();
  auto message = ReceiveMessage(pair.b.get(), 1000, 512, /*max_fds=*/2);
  EXPECT_EQ(message.status().code(), absl::StatusCode::kDataLoss) << message.status();
  message = ReceiveMessage(pair.b.get(), 1000, /*max_bytes=*/10, 2);
  EXPECT_EQ(message.status().code(), absl::StatusCode::kDataLoss) << message.status();
  EXPECT_EQ(OpenDescriptors(), before);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(UnixSocketTest, EndOfStreamAndTimeout) {
  Pair pair;
  EXPECT_EQ(ReceiveMessage(pair.b.get(), 10).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  pair.a.Reset();
  EXPECT_EQ(ReceiveMessage(pair.b.get(), 1000).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(SendMessage(pair.b.get(), "to nobody").ok());  // no SIGPIPE either
}

// A client connected to `port` that has sent `bytes`; not yet accepted.
int ConnectAndSend(uint16_t port, const char* bytes) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(send(fd, bytes, std::strlen(bytes), 0), static_cast<ssize_t>(std::strlen(bytes)));
  return fd;
}

TEST(UnixSocketTest, APassedListenerKeepsItsQueueWhenTheSenderClosesIt) {
  auto bound = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(bound.ok());
  Listener old_listener = *std::move(bound);
  // Waiting in the queue before the handover.
  const int waiting = ConnectAndSend(old_listener.port(), "before");

  Pair pair;
  const int fds[] = {old_listener.fd()};
  ASSERT_TRUE(SendMessage(pair.a.get(), "sockets", fds).ok());
  auto message = ReceiveMessage(pair.b.get(), 1000);
  ASSERT_TRUE(message.ok());
  ASSERT_EQ(message->fds.size(), 1u);
  // The old owner lets go of its descriptor, without a shutdown.
  const uint16_t port = old_listener.port();
  old_listener.CloseDescriptor();
  const int later = ConnectAndSend(port, "after");

  // Both are accepted from the received copy, their bytes intact.
  for (const char* expected : {"before", "after"}) {
    OwnedFd accepted(accept4(message->fds[0].get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_GE(accepted.get(), 0) << strerror(errno);
    char buf[16] = {};
    ASSERT_EQ(recv(accepted.get(), buf, sizeof(buf), 0),
              static_cast<ssize_t>(std::strlen(expected)));
    EXPECT_STREQ(buf, expected);
  }
  close(waiting);
  close(later);
}

}  // namespace
}  // namespace uring_http::io
