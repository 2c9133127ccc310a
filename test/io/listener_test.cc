// Tests for Listener: ephemeral ports, SO_REUSEPORT sharing, address and bind
// errors (without leaking the socket), TCP_NODELAY inherited by accepted
// sockets, and ownership of the descriptor through moves and Close(); the
// check for a port another socket listens on (the kernel's overlap rules,
// what does not count); adopting a socket from elsewhere; and closing a
// descriptor without ending the listening for another holder. IPv6 (skipped
// without it): ::1, the dual-stack wildcard and its overlaps. Unix-domain
// sockets: the file's mode, a stale file replaced, a live socket or another
// file left alone, the path removed by its owner only, abstract names.
#include "src/io/listener.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "src/io/socket_address.h"

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
  // Bind() takes numeric addresses; names are resolved before it
  // (ResolveListenHost).
  for (const char* address : {"", "localhost", "256.0.0.1", "1.2.3", "127.1", "1.2.3.4 ",
                              "::1::2", "[1.2.3.4]", "[::1", "::1]", "fe80::1%no-such-if0"}) {
    auto listener = Listener::Bind(address, 0, 16);
    ASSERT_FALSE(listener.ok()) << "'" << address << "'";
    EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument) << address;
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

// A plain listening socket (no SO_REUSEPORT) on `address`:`port`.
int PlainListener(const char* address, uint16_t port, bool listening = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, address, &addr.sin_addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  if (listening) EXPECT_EQ(listen(fd, 16), 0);
  return fd;
}

uint16_t PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// ------------------------------------------------------------------ IPv6

bool HostHasIpv6() {
  // The kernel lists its IPv6 addresses here; no file or an empty one: no
  // IPv6 (ipv6.disable=1, or a sandbox without it).
  FILE* f = std::fopen("/proc/net/if_inet6", "r");
  if (f == nullptr) return false;
  char line[256];
  const bool any = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  return any;
}

#define SKIP_WITHOUT_IPV6() \
  if (!HostHasIpv6()) GTEST_SKIP() << "no IPv6 on this host (/proc/net/if_inet6)"

// A blocking TCP connection to `address` (numeric) and `port`; -1 on failure.
int ConnectIp(const char* address, uint16_t port) {
  auto a = SocketAddress::ParseIp(address, port);
  if (!a.ok()) return -1;
  int fd = socket(a->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, a->get(), a->size()) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// The address the accepted connection's peer has, as text.
std::string AcceptAndName(int listen_fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  int accepted = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  if (accepted < 0) return std::string("accept: ") + strerror(errno);
  close(accepted);
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&peer), len).HostText();
}

TEST(ListenerTest, Ipv6LoopbackListens) {
  SKIP_WITHOUT_IPV6();
  for (const char* address : {"::1", "[::1]", "0:0::1"}) {
    auto listener = Listener::Bind(address, 0, 16);
    ASSERT_TRUE(listener.ok()) << address << ": " << listener.status();
    EXPECT_EQ(listener->address(), "::1");
    EXPECT_EQ(listener->local().ToString(), "[::1]:" + std::to_string(listener->port()));
    EXPECT_EQ(IntOption(listener->fd(), SOL_SOCKET, SO_REUSEPORT), 1);
    int client = ConnectIp("::1", listener->port());
    ASSERT_GE(client, 0) << strerror(errno);
    EXPECT_EQ(AcceptAndName(listener->fd()), "::1");
    close(client);
    // Not IPv4: ::1 is IPv6's loopback only.
    EXPECT_EQ(ConnectIp("127.0.0.1", listener->port()), -1);
  }
}

TEST(ListenerTest, TheIpv6WildcardIsDualStackUnlessAskedOtherwise) {
  SKIP_WITHOUT_IPV6();
  auto dual = Listener::Bind("::", 0, 16);
  ASSERT_TRUE(dual.ok()) << dual.status();
  EXPECT_FALSE(dual->v6_only());
  EXPECT_EQ(dual->local().ToString(), "[::]:" + std::to_string(dual->port()));
  int v4 = ConnectIp("127.0.0.1", dual->port());
  ASSERT_GE(v4, 0) << strerror(errno);
  // The kernel hands IPv4 clients of [::] over as IPv4-mapped addresses.
  EXPECT_EQ(AcceptAndName(dual->fd()), "::ffff:127.0.0.1");
  close(v4);
  int v6 = ConnectIp("::1", dual->port());
  ASSERT_GE(v6, 0);
  EXPECT_EQ(AcceptAndName(dual->fd()), "::1");
  close(v6);

  Listener::BindOptions only6;
  only6.dual_stack = false;
  auto v6_only = Listener::Bind(SocketAddress::Any(/*ipv6=*/true, 0), only6);
  ASSERT_TRUE(v6_only.ok()) << v6_only.status();
  EXPECT_TRUE(v6_only->v6_only());
  EXPECT_EQ(ConnectIp("127.0.0.1", v6_only->port()), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
}

TEST(ListenerTest, CheckNotListeningSeesDualStackOverlaps) {
  SKIP_WITHOUT_IPV6();
  // An IPv4 listener blocks a dual-stack [::] on its port, not an IPv6-only one.
  int v4 = PlainListener("127.0.0.1", 0);
  const uint16_t p1 = PortOf(v4);
  const SocketAddress any6 = SocketAddress::Any(true, p1);
  absl::Status s = Listener::CheckNotListening(any6);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_NE(s.message().find("[::]:" + std::to_string(p1)), absl::string_view::npos) << s;
  EXPECT_TRUE(Listener::CheckNotListening(any6, /*dual_stack=*/false).ok());
  close(v4);
  EXPECT_TRUE(Listener::CheckNotListening(any6).ok());
  // A dual-stack [::] listener blocks IPv4 addresses on its port.
  auto dual = Listener::Bind("::", 0, 16);
  ASSERT_TRUE(dual.ok());
  EXPECT_EQ(Listener::CheckNotListening("127.0.0.1", dual->port()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Listener::CheckNotListening("0.0.0.0", dual->port()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Listener::CheckNotListening("::1", dual->port()).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(ListenerTest, AdoptTakesIpv6AndUnixListeners) {
  SKIP_WITHOUT_IPV6();
  auto bound = Listener::Bind("::1", 0, 16);
  ASSERT_TRUE(bound.ok());
  auto adopted = Listener::Adopt(dup(bound->fd()));
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->local(), bound->local());
  EXPECT_TRUE(adopted->SetOptions(1).ok());
  EXPECT_GT(IntOption(adopted->fd(), IPPROTO_TCP, TCP_DEFER_ACCEPT), 0);
}

// ------------------------------------------------------------ Unix sockets

// In /tmp: TEST_TMPDIR's path is longer than a Unix socket's 107 bytes.
// A fresh directory: a process id is no name (each sandbox's first
// process has the same).
std::string TempPath(const std::string& name) {
  char dir[] = "/tmp/uring-http-listener-test.XXXXXX";
  if (mkdtemp(dir) == nullptr) return "/tmp/uring-http-listener-test." + name + ".sock";
  return std::string(dir) + "/" + name + ".sock";
}

SocketAddress UnixAt(const std::string& path) {
  auto a = SocketAddress::Unix(path);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : SocketAddress();
}

int ConnectUnixStream(const SocketAddress& address) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, address.get(), address.size()) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// A Unix stream socket bound at `address` by someone else; listening or not.
int OtherUnixSocket(const SocketAddress& address, bool listening) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(bind(fd, address.get(), address.size()), 0) << strerror(errno);
  if (listening) EXPECT_EQ(listen(fd, 4), 0);
  return fd;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(ListenerTest, AUnixSocketListensWithItsModeAndGoesOnClose) {
  const std::string path = TempPath("unix_mode");
  unlink(path.c_str());
  const mode_t old_umask = umask(077);  // the mode must not depend on it
  for (uint32_t mode : {0660u, 0600u, 0666u}) {
    Listener::BindOptions options;
    options.unix_mode = mode;
    auto listener = Listener::Bind(UnixAt(path), options);
    ASSERT_TRUE(listener.ok()) << listener.status();
    EXPECT_TRUE(listener->is_unix());
    EXPECT_EQ(listener->port(), 0);
    EXPECT_EQ(listener->local().ToString(), "unix:" + path);
    EXPECT_TRUE(S_ISSOCK(ModeOf(path)));
    EXPECT_EQ(ModeOf(path) & 07777, mode) << std::oct << mode;
    int client = ConnectUnixStream(listener->local());
    ASSERT_GE(client, 0) << strerror(errno);
    int accepted = accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC);
    EXPECT_GE(accepted, 0);
    close(accepted);
    close(client);
    listener->Close();
    EXPECT_FALSE(Exists(path)) << "the path outlived its listener";
  }
  umask(old_umask);
}

TEST(ListenerTest, AStaleUnixSocketFileIsReplaced) {
  // What a server killed with SIGKILL leaves: a socket file nobody listens on.
  const std::string path = TempPath("unix_stale");
  unlink(path.c_str());
  close(OtherUnixSocket(UnixAt(path), /*listening=*/true));
  ASSERT_TRUE(S_ISSOCK(ModeOf(path)));
  EXPECT_TRUE(Listener::CheckNotListening(UnixAt(path)).ok());
  auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
  ASSERT_TRUE(listener.ok()) << listener.status();
  int client = ConnectUnixStream(listener->local());
  EXPECT_GE(client, 0) << strerror(errno);
  close(client);
}

TEST(ListenerTest, AUnixSocketSomebodyListensOnIsLeftAlone) {
  const std::string path = TempPath("unix_live");
  unlink(path.c_str());
  int other = OtherUnixSocket(UnixAt(path), /*listening=*/true);
  absl::Status check = Listener::CheckNotListening(UnixAt(path));
  EXPECT_EQ(check.code(), absl::StatusCode::kAlreadyExists) << check;
  EXPECT_NE(check.message().find("unix:" + path), absl::string_view::npos) << check;
  auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kAlreadyExists) << listener.status();
  // Still the other's: it is there and answers.
  int client = ConnectUnixStream(UnixAt(path));
  EXPECT_GE(client, 0) << strerror(errno);
  close(client);
  close(other);
  unlink(path.c_str());
}

TEST(ListenerTest, AFileThatIsNotASocketIsLeftAlone) {
  const std::string path = TempPath("unix_file");
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("data", f);
  std::fclose(f);
  auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition)
      << listener.status();
  EXPECT_NE(listener.status().message().find("not a socket"), absl::string_view::npos);
  EXPECT_EQ(Listener::CheckNotListening(UnixAt(path)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(S_ISREG(ModeOf(path)));
  unlink(path.c_str());
}

TEST(ListenerTest, AUnixSocketsPathStaysWhenHandedOverOrReplaced) {
  const std::string path = TempPath("unix_keep");
  unlink(path.c_str());
  {
    // Handed over: the successor holds the socket and removes the path
    // itself, in its turn.
    auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto successor = Listener::Adopt(dup(listener->fd()), /*owns_path=*/true);
    ASSERT_TRUE(successor.ok()) << successor.status();
    listener->CloseDescriptor();
    EXPECT_TRUE(Exists(path));
    int client = ConnectUnixStream(UnixAt(path));
    EXPECT_GE(client, 0);
    close(client);
    successor->Close();
    EXPECT_FALSE(Exists(path));
  }
  {
    // systemd's socket: never ours to remove.
    auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
    ASSERT_TRUE(listener.ok());
    auto systemds = Listener::Adopt(dup(listener->fd()));
    ASSERT_TRUE(systemds.ok());
    systemds->Close();
    EXPECT_TRUE(Exists(path));
    listener->Close();
    EXPECT_FALSE(Exists(path));
  }
  {
    // Somebody put another socket at the path meanwhile: it stays.
    auto listener = Listener::Bind(UnixAt(path), Listener::BindOptions());
    ASSERT_TRUE(listener.ok());
    unlink(path.c_str());
    int other = OtherUnixSocket(UnixAt(path), /*listening=*/true);
    listener->Close();
    EXPECT_TRUE(Exists(path));
    close(other);
    unlink(path.c_str());
  }
}

TEST(ListenerTest, AnAbstractUnixSocketHasNoFile) {
  const std::string name = "@uring-http-listener-test." + std::to_string(std::random_device()());
  auto listener = Listener::Bind(UnixAt(name), Listener::BindOptions());
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ(listener->local().ToString(), "unix:" + name);
  EXPECT_EQ(Listener::CheckNotListening(UnixAt(name)).code(), absl::StatusCode::kAlreadyExists);
  int client = ConnectUnixStream(UnixAt(name));
  EXPECT_GE(client, 0) << strerror(errno);
  close(client);
  auto adopted = Listener::Adopt(dup(listener->fd()), /*owns_path=*/true);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->local(), listener->local());
  adopted->Close();
  listener->Close();
  EXPECT_TRUE(Listener::CheckNotListening(UnixAt(name)).ok());
}

TEST(ListenerTest, CheckNotListeningSeesOurOwnKindOfListener) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  // Bind() would join it (SO_REUSEPORT, same user); the check does not.
  absl::Status s = Listener::CheckNotListening("127.0.0.1", listener->port());
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(listener->port())),
            absl::string_view::npos)
      << s;
  EXPECT_TRUE(Listener::Bind("127.0.0.1", listener->port(), 16).ok());
}

TEST(ListenerTest, CheckNotListeningFollowsTheKernelsOverlaps) {
  // Specific under wildcard, and wildcard over specific.
  int specific = PlainListener("127.0.0.1", 0);
  const uint16_t p1 = PortOf(specific);
  EXPECT_EQ(Listener::CheckNotListening("0.0.0.0", p1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Listener::CheckNotListening("127.0.0.1", p1).code(),
            absl::StatusCode::kAlreadyExists);
  close(specific);
  int wildcard = PlainListener("0.0.0.0", 0);
  const uint16_t p2 = PortOf(wildcard);
  EXPECT_EQ(Listener::CheckNotListening("127.0.0.1", p2).code(),
            absl::StatusCode::kAlreadyExists);
  close(wildcard);
  // Closed: free again.
  EXPECT_TRUE(Listener::CheckNotListening("127.0.0.1", p2).ok());
  EXPECT_TRUE(Listener::CheckNotListening("0.0.0.0", p1).ok());
}

TEST(ListenerTest, CheckNotListeningIgnoresWhatDoesNotListen) {
  // Port 0 is always free.
  EXPECT_TRUE(Listener::CheckNotListening("127.0.0.1", 0).ok());
  // Bound, not listening, SO_REUSEADDR (a draining server's listener after
  // its shutdown looks like this).
  int bound = PlainListener("127.0.0.1", 0, /*listening=*/false);
  EXPECT_TRUE(Listener::CheckNotListening("127.0.0.1", PortOf(bound)).ok());
  close(bound);
  // A listener shut down while another reference keeps it open.
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  const uint16_t port = listener->port();
  const int other = dup(listener->fd());
  listener->Close();
  EXPECT_TRUE(Listener::CheckNotListening("127.0.0.1", port).ok());
  close(other);
  // Connections in TIME_WAIT on the port: the server closed first.
  auto server = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(server.ok());
  const uint16_t tw_port = server->port();
  int client = ConnectTo(tw_port);
  ASSERT_GE(client, 0);
  int accepted = accept4(server->fd(), nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  close(accepted);  // our side goes to TIME_WAIT once the client closes too
  char c;
  EXPECT_EQ(recv(client, &c, 1, 0), 0);
  close(client);
  server->Close();
  EXPECT_TRUE(Listener::CheckNotListening("127.0.0.1", tw_port).ok());
  EXPECT_TRUE(Listener::Bind("127.0.0.1", tw_port, 16).ok());
}

TEST(ListenerTest, CheckNotListeningRefusesABadAddress) {
  EXPECT_EQ(Listener::CheckNotListening("localhost", 80).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Listener::CheckNotListening("192.0.2.1", 8080).code(),
            absl::StatusCode::kUnavailable);  // not an address of this host
}

TEST(ListenerTest, AdoptTakesAListeningSocketThenSetsItsOptions) {
  int fd = PlainListener("127.0.0.1", 0);
  auto listener = Listener::Adopt(fd);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ(listener->fd(), fd);
  EXPECT_EQ(listener->port(), PortOf(fd));
  EXPECT_EQ(listener->address(), "127.0.0.1");
  EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_NODELAY), 0);  // untouched until asked
  ASSERT_TRUE(listener->SetOptions(/*defer_accept_s=*/2).ok());
  EXPECT_NE(IntOption(fd, IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_GT(IntOption(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT), 0);
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  // Adopted: the socket may be another process's too, so Close() only
  // closes the descriptor.
  const int other = dup(fd);
  listener->Close();
  EXPECT_FALSE(IsOpen(fd));
  EXPECT_EQ(IntOption(other, SOL_SOCKET, SO_ACCEPTCONN), 1);
  close(other);
}

TEST(ListenerTest, AdoptRefusesWhatIsNotAListeningStreamSocket) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  int udp = socket(AF_INET, SOCK_DGRAM, 0);
  int unix_stream = socket(AF_UNIX, SOCK_STREAM, 0);
  int v6 = socket(AF_INET6, SOCK_STREAM, 0);
  int not_listening = PlainListener("127.0.0.1", 0, /*listening=*/false);
  // A listening Unix socket of another kind (the takeover's control socket is one).
  int seqpacket = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  auto seqpacket_name =
      SocketAddress::Unix("@uring-http-listener-test-seqpacket." + std::to_string(std::random_device()()));
  ASSERT_TRUE(seqpacket_name.ok());
  ASSERT_EQ(bind(seqpacket, seqpacket_name->get(), seqpacket_name->size()), 0);
  ASSERT_EQ(listen(seqpacket, 4), 0);
  for (int fd : {pipe_fds[0], udp, unix_stream, v6, not_listening, seqpacket, 9999}) {
    auto listener = Listener::Adopt(fd);
    EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument) << fd;
    if (fd != 9999) {
      EXPECT_TRUE(IsOpen(fd)) << "a refused descriptor stays the caller's";
    }
  }
  for (int fd : {pipe_fds[0], pipe_fds[1], udp, unix_stream, v6, not_listening, seqpacket}) {
    close(fd);
  }
}

TEST(ListenerTest, CloseDescriptorLeavesTheQueueToAnotherHolder) {
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  int waiting = ConnectTo(listener->port());  // in the accept queue
  ASSERT_GE(waiting, 0);
  const int successor = dup(listener->fd());
  listener->CloseDescriptor();
  int accepted = accept4(successor, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_GE(accepted, 0) << strerror(errno);
  ASSERT_EQ(send(waiting, "x", 1, MSG_NOSIGNAL), 1);
  char c = 0;
  EXPECT_EQ(recv(accepted, &c, 1, 0), 1);
  close(accepted);
  close(waiting);
  close(successor);
}

TEST(ListenerTest, CloseResetsTheQueueEvenForAnotherHolder) {
  // Why a server handing its sockets over must not Close() them: shutdown()
  // ends the listening for every holder and resets what waits in the queue.
  auto listener = Listener::Bind("127.0.0.1", 0, 16);
  ASSERT_TRUE(listener.ok());
  int waiting = ConnectTo(listener->port());
  ASSERT_GE(waiting, 0);
  const int successor = dup(listener->fd());
  listener->Close();
  char c;
  EXPECT_EQ(recv(waiting, &c, 1, 0), -1);
  EXPECT_EQ(errno, ECONNRESET);
  close(waiting);
  close(successor);
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
