// Tests for SocketAddress and ResolveListenHost: literals (IPv4, IPv6 with
// or without brackets, zones), Unix paths and abstract names and their
// limits, the text the ready line prints; "" as every address (dual-stack
// [::], or 0.0.0.0 without IPv6), localhost as both loopbacks without a
// resolver, names through getaddrinfo; and Ipv6Available() on a host whose
// kernel refuses IPv6 sockets (a seccomp filter in a child process).
#include "src/io/socket_address.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/io/seccomp_refusal.h"

namespace uring_http::io {
namespace {

std::vector<std::string> Texts(const std::vector<SocketAddress>& addresses) {
  std::vector<std::string> out;
  for (const SocketAddress& a : addresses) out.push_back(a.ToString());
  return out;
}

TEST(SocketAddressTest, Literals) {
  auto v4 = SocketAddress::ParseIp("127.0.0.1", 80);
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->family(), AF_INET);
  EXPECT_EQ(v4->ToString(), "127.0.0.1:80");
  EXPECT_EQ(v4->HostText(), "127.0.0.1");
  EXPECT_EQ(v4->port(), 80);
  EXPECT_FALSE(v4->is_wildcard());
  for (const char* text : {"::1", "[::1]", "0::1"}) {
    auto v6 = SocketAddress::ParseIp(text, 443);
    ASSERT_TRUE(v6.ok()) << text;
    EXPECT_EQ(v6->family(), AF_INET6);
    EXPECT_EQ(v6->ToString(), "[::1]:443");
    EXPECT_EQ(v6->HostText(), "::1");
  }
  EXPECT_TRUE(SocketAddress::ParseIp("::", 1)->is_wildcard());
  EXPECT_TRUE(SocketAddress::ParseIp("0.0.0.0", 1)->is_wildcard());
  EXPECT_EQ(SocketAddress::Any(true, 9000).ToString(), "[::]:9000");
  EXPECT_EQ(SocketAddress::Any(false, 9000).ToString(), "0.0.0.0:9000");
  // A zone by number (interface 1 is the loopback on Linux).
  auto zoned = SocketAddress::ParseIp("fe80::1%1", 8080);
  ASSERT_TRUE(zoned.ok()) << zoned.status();
  EXPECT_EQ(zoned->ToString(), "[fe80::1%lo]:8080");
  EXPECT_EQ(*zoned, *SocketAddress::ParseIp("fe80::1%lo", 8080));
  EXPECT_FALSE(*zoned == *SocketAddress::ParseIp("fe80::1", 8080));
  for (const char* bad : {"", "localhost", "1.2.3", "127.1", "[127.0.0.1]", "::1::", "[::1",
                          "1.2.3.4:80", "fe80::1%"}) {
    EXPECT_EQ(SocketAddress::ParseIp(bad, 1).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  auto set = *SocketAddress::ParseIp("::1", 0);
  set.set_port(5);
  EXPECT_EQ(set.port(), 5);
  EXPECT_FALSE(set == *SocketAddress::ParseIp("::1", 6));
}

TEST(SocketAddressTest, UnixPathsAndAbstractNames) {
  auto path = SocketAddress::Unix("/run/app.sock");
  ASSERT_TRUE(path.ok());
  EXPECT_TRUE(path->is_unix());
  EXPECT_FALSE(path->abstract());
  EXPECT_EQ(path->unix_path(), "/run/app.sock");
  EXPECT_EQ(path->ToString(), "unix:/run/app.sock");
  EXPECT_EQ(path->port(), 0);
  auto abstract = SocketAddress::Unix("@app");
  ASSERT_TRUE(abstract.ok());
  EXPECT_TRUE(abstract->abstract());
  EXPECT_EQ(abstract->ToString(), "unix:@app");
  EXPECT_FALSE(*path == *abstract);
  EXPECT_EQ(*path, *SocketAddress::Unix("/run/app.sock"));
  EXPECT_TRUE(SocketAddress::Unix("/" + std::string(106, 'x')).ok());
  for (const std::string& bad :
       {std::string(""), std::string("@"), std::string("relative.sock"),
        "/" + std::string(107, 'x'), std::string("/a\0b", 4)}) {
    EXPECT_EQ(SocketAddress::Unix(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(SocketAddressTest, EveryAddressIsDualStackOrIpv4) {
  EXPECT_EQ(Texts(*ResolveListenHost("", 9000, /*ipv6=*/true)),
            std::vector<std::string>({"[::]:9000"}));
  EXPECT_EQ(Texts(*ResolveListenHost("", 9000, /*ipv6=*/false)),
            std::vector<std::string>({"0.0.0.0:9000"}));
}

TEST(SocketAddressTest, LiteralsResolveToThemselves) {
  EXPECT_EQ(Texts(*ResolveListenHost("10.1.2.3", 80, true)),
            std::vector<std::string>({"10.1.2.3:80"}));
  EXPECT_EQ(Texts(*ResolveListenHost("[::1]", 80, true)), std::vector<std::string>({"[::1]:80"}));
  EXPECT_EQ(Texts(*ResolveListenHost("::", 80, true)), std::vector<std::string>({"[::]:80"}));
  // IPv6 asked for where there is none: said so.
  auto refused = ResolveListenHost("::1", 80, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("no IPv6"), absl::string_view::npos);
  EXPECT_EQ(ResolveListenHost("1.2.3", 80, true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SocketAddressTest, LocalhostIsBothLoopbacksWithoutAResolver) {
  // This machine's /etc/hosts may name only 127.0.0.1: the answer must not
  // depend on it.
  for (const char* name : {"localhost", "LocalHost", "localhost.", "app.localhost"}) {
    EXPECT_EQ(Texts(*ResolveListenHost(name, 8080, true)),
              std::vector<std::string>({"[::1]:8080", "127.0.0.1:8080"}))
        << name;
    EXPECT_EQ(Texts(*ResolveListenHost(name, 8080, false)),
              std::vector<std::string>({"127.0.0.1:8080"}))
        << name;
  }
}

TEST(SocketAddressTest, NamesAreResolvedOnce) {
  // This host's own name: whatever the system's resolver answers (its
  // /etc/hosts or nss), each address once and with the port.
  char name[256] = "";
  ASSERT_EQ(gethostname(name, sizeof(name)), 0);
  auto resolved = ResolveListenHost(name, 1234, true);
  if (!resolved.ok()) GTEST_SKIP() << "this host's name does not resolve: " << resolved.status();
  ASSERT_FALSE(resolved->empty());
  for (size_t i = 0; i < resolved->size(); ++i) {
    EXPECT_EQ((*resolved)[i].port(), 1234);
    EXPECT_TRUE((*resolved)[i].is_ip());
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE((*resolved)[i] == (*resolved)[j]);
  }
  EXPECT_EQ(ResolveListenHost("no-such-host.invalid", 80, true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SocketAddressTest, ListenAddressesAsWritten) {
  EXPECT_EQ(Texts(*ResolveListenAddress(":8080", true)), std::vector<std::string>({"[::]:8080"}));
  EXPECT_EQ(Texts(*ResolveListenAddress(":8080", false)),
            std::vector<std::string>({"0.0.0.0:8080"}));
  EXPECT_EQ(Texts(*ResolveListenAddress("127.0.0.1:0", true)),
            std::vector<std::string>({"127.0.0.1:0"}));
  EXPECT_EQ(Texts(*ResolveListenAddress("[::1]:443", true)),
            std::vector<std::string>({"[::1]:443"}));
  EXPECT_EQ(Texts(*ResolveListenAddress("localhost:80", true)),
            std::vector<std::string>({"[::1]:80", "127.0.0.1:80"}));
  EXPECT_EQ(Texts(*ResolveListenAddress("unix:/run/app.sock", true)),
            std::vector<std::string>({"unix:/run/app.sock"}));
  EXPECT_EQ(Texts(*ResolveListenAddress("unix:@app", true)),
            std::vector<std::string>({"unix:@app"}));
  for (const char* good : {":80", "[::]:80", "0.0.0.0:65535", "example.com:443", "unix:/a"}) {
    EXPECT_TRUE(CheckListenAddress(good).ok()) << good;
  }
  for (const char* bad : {"", "8080", "::1:80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
                          "127.0.0.1:http", "1.2.3:80", "[::1", "unix:", "unix:rel.sock"}) {
    EXPECT_EQ(CheckListenAddress(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(ResolveListenAddress(bad, true).ok()) << bad;
  }
  EXPECT_NE(CheckListenAddress("::1:80").message().find("brackets"), absl::string_view::npos);
}

TEST(SocketAddressTest, Ipv6AvailableIsFalseWhereTheKernelRefusesIpv6Sockets) {
  // In a child: the filter binds its process for good.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (testing::RefuseIpv6Sockets() != 0) _exit(3);
    if (socket(AF_INET6, SOCK_STREAM, 0) >= 0) _exit(4);  // the filter must work
    if (Ipv6Available()) _exit(5);
    auto any = ResolveListenHost("", 80, Ipv6Available());
    if (!any.ok() || any->size() != 1 || any->front().ToString() != "0.0.0.0:80") _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no filter, 4: IPv6 not refused, 5: reported "
                                       "available, 6: not 0.0.0.0";
}

TEST(SocketAddressTest, Ipv6AvailableWhereTheHostHasIt) {
  FILE* f = std::fopen("/proc/net/if_inet6", "r");
  char line[256];
  const bool has = f != nullptr && std::fgets(line, sizeof(line), f) != nullptr;
  if (f != nullptr) std::fclose(f);
  if (!has) GTEST_SKIP() << "no IPv6 on this host";
  EXPECT_TRUE(Ipv6Available());
}

}  // namespace
}  // namespace uring_http::io
