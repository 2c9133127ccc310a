// Where a server listens, from a user's side (the public header only, real
// sockets): IPv6 and the client address a handler sees over it; every
// address by default, dual-stack [::] taking IPv4 clients too; localhost as
// both loopbacks; a Unix-domain socket (its mode, its path gone after
// stop); several listen addresses at once, each named in the ready line;
// the admin listener, which alone serves /metrics and /healthz; and a
// takeover of them all, the Unix socket's path handed on with its socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;
using uring_http::router::Router;
using uring_http::serving::ListenAddress;
using uring_http::serving::ListeningAddress;
using uring_http::serving::Server;
using uring_http::serving::ServerConfig;

bool HostHasIpv6() {
  FILE* f = std::fopen("/proc/net/if_inet6", "r");
  if (f == nullptr) return false;
  char line[256];
  const bool any = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  return any;
}

#define SKIP_WITHOUT_IPV6() \
  if (!HostHasIpv6()) GTEST_SKIP() << "no IPv6 on this host"

// One request on a fresh connection (Connection: close), the whole answer
// back; on a failure, what failed. Generous timeouts: a slow machine is
// not a failure.
std::string Exchange(int fd, const std::string& path) {
  if (fd < 0) return std::string("<connect: ") + strerror(errno) + ">";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    const std::string failed = std::string("<send: ") + strerror(errno) + ">";
    close(fd);
    return failed;
  }
  std::string answer;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;  // seen about once in 20 runs: retried
    if (n < 0) answer += std::string("<recv: ") + strerror(errno) + ">";
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return answer;
}

int ConnectTcp(const std::string& host, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(*v6);
  } else {
    return -1;
  }
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int ConnectUnix(const std::string& path) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path, path.data(), path.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  if (path[0] == '@') {
    un.sun_path[0] = '\0';
    --len;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&un), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Body(const std::string& answer) {
  const size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

int Status(const std::string& answer) {
  return answer.size() >= 12 ? std::atoi(answer.substr(9, 3).c_str()) : 0;
}

// In a fresh directory under /tmp: a sandbox's TEST_TMPDIR may be longer
// than a Unix socket's 107 bytes, and a process id is no name (each
// sandbox's first process has the same).
std::string SocketPath(const std::string& name) {
  char dir[] = "/tmp/uring-http-listen-test.XXXXXX";
  if (mkdtemp(dir) == nullptr) return "/tmp/uring-http-listen-test." + name + ".sock";
  return std::string(dir) + "/" + name + ".sock";
}

class ListenTest : public ::testing::Test {
 protected:
  static ServerConfig Config() {
    ServerConfig config;
    config.port = 0;
    config.accept_threads = 2;
    config.accept_capacity = 128;
    config.workers = 0;
    return config;
  }

  void Start(const ServerConfig& config) {
    Router router;
    // The client's address as the handler sees it.
    (void)router.Fast("GET", "/who", [](const Request& request, Response& response) {
      char text[uring_http::http::ClientAddress::kMaxText];
      response.set_body(request.client_address.Format(text));
    });
    server_ = std::make_unique<Server>(config, std::move(router));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }

  const ListeningAddress* Find(const std::string& text) const {
    for (const ListeningAddress& a : server_->listening()) {
      if (a.text == text) return &a;
    }
    return nullptr;
  }

  std::unique_ptr<Server> server_;
};

TEST_F(ListenTest, Ipv6LoopbackAndTheClientAddressOverIt) {
  SKIP_WITHOUT_IPV6();
  ServerConfig config = Config();
  config.address = "::1";
  Start(config);
  ASSERT_EQ(server_->listening().size(), 1u);
  const ListeningAddress& a = server_->listening()[0];
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.text, "[::1]:" + std::to_string(server_->port()));
  const std::string answer = Exchange(ConnectTcp("::1", server_->port()), "/who");
  EXPECT_EQ(Status(answer), 200) << answer;
  EXPECT_EQ(Body(answer), "::1");
  EXPECT_NE(server_->ReadyLine().find("listening on [::1]:" + std::to_string(server_->port())),
            std::string::npos)
      << server_->ReadyLine();
}

TEST_F(ListenTest, EveryAddressByDefaultIsDualStack) {
  SKIP_WITHOUT_IPV6();
  Start(Config());  // no address: every one
  ASSERT_EQ(server_->listening().size(), 1u);
  EXPECT_EQ(server_->listening()[0].text, "[::]:" + std::to_string(server_->port()));
  // An IPv4 client of [::]: its address as the IPv4 one it is.
  std::string answer = Exchange(ConnectTcp("127.0.0.1", server_->port()), "/who");
  EXPECT_EQ(Body(answer), "127.0.0.1") << answer;
  answer = Exchange(ConnectTcp("::1", server_->port()), "/who");
  EXPECT_EQ(Body(answer), "::1") << answer;
}

TEST_F(ListenTest, LocalhostIsBothLoopbacksOnOnePort) {
  SKIP_WITHOUT_IPV6();
  ServerConfig config = Config();
  config.address = "localhost";
  Start(config);
  const std::string port = std::to_string(server_->port());
  ASSERT_NE(Find("[::1]:" + port), nullptr) << server_->ReadyLine();
  ASSERT_NE(Find("127.0.0.1:" + port), nullptr) << server_->ReadyLine();
  EXPECT_EQ(Body(Exchange(ConnectTcp("::1", server_->port()), "/who")), "::1");
  EXPECT_EQ(Body(Exchange(ConnectTcp("127.0.0.1", server_->port()), "/who")), "127.0.0.1");
  EXPECT_NE(server_->ReadyLine().find("listening on [::1]:" + port + ", 127.0.0.1:" + port +
                                      ", 4 socket(s) bound"),
            std::string::npos)
      << server_->ReadyLine();
}

TEST_F(ListenTest, AUnixSocketServesAndGoesWithTheServer) {
  const std::string path = SocketPath("unix");
  unlink(path.c_str());
  ServerConfig config = Config();
  config.listen.push_back(ListenAddress{"unix:" + path});
  // Its stderr, to see that the stop is quiet: the rings share the one
  // socket, and the first to stop shuts it down under the others' accepts.
  std::fflush(stderr);
  FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  const int saved_stderr = dup(2);
  dup2(fileno(log), 2);
  Start(config);
  ASSERT_EQ(server_->listening().size(), 1u);
  EXPECT_EQ(server_->listening()[0].text, "unix:" + path);
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  // Every accept thread takes from the one socket: a few in a row.
  for (int i = 0; i < 6; ++i) {
    const std::string answer = Exchange(ConnectUnix(path), "/who");
    EXPECT_EQ(Status(answer), 200) << i << ": " << answer;
    EXPECT_EQ(Body(answer), "unix");
  }
  EXPECT_NE(server_->ReadyLine().find("listening on unix:" + path + ", 1 socket(s) bound"),
            std::string::npos)
      << server_->ReadyLine();
  server_->Stop();
  server_->Wait();
  std::fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  std::string logged(4096, '\0');
  std::rewind(log);
  logged.resize(std::fread(logged.data(), 1, logged.size(), log));
  std::fclose(log);
  EXPECT_EQ(logged.find("accept:"), std::string::npos) << logged;
  EXPECT_NE(lstat(path.c_str(), &st), 0) << "the socket file outlived the server";
}

TEST_F(ListenTest, SeveralAddressesEachServedAndNamed) {
  const std::string path = SocketPath("several");
  unlink(path.c_str());
  ServerConfig config = Config();
  config.listen.push_back(ListenAddress{"127.0.0.1:0"});
  config.listen.push_back(ListenAddress{"unix:" + path});
  config.listen.push_back(ListenAddress{"127.0.0.1:0"});  // another port
  const bool v6 = HostHasIpv6();
  if (v6) config.listen.push_back(ListenAddress{"[::1]:0"});
  Start(config);
  const auto& listening = server_->listening();
  ASSERT_EQ(listening.size(), v6 ? 4u : 3u) << server_->ReadyLine();
  EXPECT_NE(listening[0].port, listening[2].port);
  EXPECT_EQ(listening[0].port, server_->port());
  std::string names;
  for (const ListeningAddress& a : listening) {
    names += (names.empty() ? "" : ", ") + a.text;
    std::string answer;
    if (a.host.rfind("unix:", 0) == 0) {
      answer = Exchange(ConnectUnix(path), "/who");
    } else {
      answer = Exchange(ConnectTcp(a.host, a.port), "/who");
    }
    EXPECT_EQ(Status(answer), 200) << a.text << ": " << answer;
    EXPECT_FALSE(a.tls);
    EXPECT_FALSE(a.admin);
  }
  // 2 accept threads: two sockets per TCP address, one for the Unix one.
  EXPECT_NE(server_->ReadyLine().find("listening on " + names + ", " +
                                      std::to_string(v6 ? 7 : 5) + " socket(s) bound"),
            std::string::npos)
      << server_->ReadyLine();
}

TEST_F(ListenTest, TheAdminListenerAloneServesMetricsAndHealth) {
  ServerConfig config = Config();
  config.listen.push_back(ListenAddress{"127.0.0.1:0"});
  ListenAddress admin;
  admin.address = "127.0.0.1:0";
  admin.admin = true;
  config.listen.push_back(admin);
  Start(config);
  ASSERT_EQ(server_->listening().size(), 2u);
  const ListeningAddress& pub = server_->listening()[0];
  const ListeningAddress& adm = server_->listening()[1];
  EXPECT_FALSE(pub.admin);
  EXPECT_TRUE(adm.admin);
  EXPECT_NE(server_->ReadyLine().find(", " + adm.text + " (admin), "), std::string::npos)
      << server_->ReadyLine();
  // Public: the app's routes, not the built-in ones.
  EXPECT_EQ(Status(Exchange(ConnectTcp("127.0.0.1", pub.port), "/who")), 200);
  EXPECT_EQ(Status(Exchange(ConnectTcp("127.0.0.1", pub.port), "/metrics")), 404);
  EXPECT_EQ(Status(Exchange(ConnectTcp("127.0.0.1", pub.port), "/healthz")), 404);
  // Admin: the built-in ones only.
  const std::string metrics = Exchange(ConnectTcp("127.0.0.1", adm.port), "/metrics");
  EXPECT_EQ(Status(metrics), 200) << metrics;
  EXPECT_NE(Body(metrics).find("uring_http_requests_total"), std::string::npos) << metrics;
  const std::string health = Exchange(ConnectTcp("127.0.0.1", adm.port), "/healthz");
  EXPECT_EQ(Status(health), 200) << health;
  EXPECT_EQ(Body(health), "ok\n");
  EXPECT_EQ(Status(Exchange(ConnectTcp("127.0.0.1", adm.port), "/who")), 404);
}

TEST_F(ListenTest, ATakeoverHandsOverEveryAddressAndTheUnixSocketsPath) {
  const std::string path = SocketPath("takeover");
  unlink(path.c_str());
  const std::string control = "@uring-http-listen-test." + path;
  ServerConfig config = Config();
  config.listen.push_back(ListenAddress{"unix:" + path});
  config.listen.push_back(ListenAddress{"127.0.0.1:0"});
  config.accept_takeover = true;
  config.control_socket = control;
  Start(config);
  const uint16_t port = server_->listening()[1].port;
  // The successor: the same addresses (the port the first one picked).
  config.listen[1].address = "127.0.0.1:" + std::to_string(port);
  config.accept_takeover = false;
  config.takeover = true;
  config.takeover_from = control;
  Router router;
  (void)router.Fast("GET", "/who", [](const Request&, Response& response) {
    response.set_static_body("successor");
  });
  Server successor(config, std::move(router));
  const absl::Status s = successor.Start();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_NE(successor.ReadyLine().find("3 socket(s) inherited from PID"), std::string::npos)
      << successor.ReadyLine();
  // The old server drains and goes; its Unix socket's path stays, the
  // successor's now.
  server_->Wait();
  server_.reset();
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "the predecessor removed the path it handed over";
  EXPECT_EQ(Body(Exchange(ConnectUnix(path), "/who")), "successor");
  EXPECT_EQ(Body(Exchange(ConnectTcp("127.0.0.1", port), "/who")), "successor");
  successor.Stop();
  successor.Wait();
  EXPECT_NE(lstat(path.c_str(), &st), 0) << "the successor left the path behind";
}

TEST_F(ListenTest, MistakesAreRefusedAtStart) {
  for (const char* bad : {"::1:80", "127.0.0.1", "unix:relative.sock", "1.2.3:80"}) {
    ServerConfig config = Config();
    config.listen.push_back(ListenAddress{bad});
    Server server(config, Router());
    const absl::Status s = server.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
  ServerConfig tls_without_certificate = Config();
  tls_without_certificate.listen.push_back(ListenAddress{"127.0.0.1:0", /*tls=*/true});
  Server server(tls_without_certificate, Router());
  const absl::Status s = server.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("TLS"), std::string::npos) << s;
}

}  // namespace
