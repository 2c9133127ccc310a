#include "src/http/client_address.h"

#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

std::string Text(const ClientAddress& a) {
  char buf[ClientAddress::kMaxText];
  return std::string(a.Format(buf));
}

TEST(ClientAddressTest, UnknownByDefault) {
  const ClientAddress a;
  EXPECT_FALSE(a.known());
  EXPECT_EQ(a.family(), AF_UNSPEC);
  EXPECT_EQ(a.port(), 0);
  EXPECT_EQ(Text(a), "-");
}

TEST(ClientAddressTest, V4AndV6) {
  const uint8_t v4[4] = {10, 0, 0, 255};
  const ClientAddress a = ClientAddress::V4(v4, 8080);
  EXPECT_TRUE(a.known());
  EXPECT_EQ(Text(a), "10.0.0.255");
  EXPECT_EQ(a.port(), 8080);
  uint8_t v6[16];
  ASSERT_EQ(inet_pton(AF_INET6, "fe80::1:2", v6), 1);
  const ClientAddress b = ClientAddress::V6(v6, 1);
  EXPECT_EQ(b.family(), AF_INET6);
  EXPECT_EQ(Text(b), "fe80::1:2");
  EXPECT_EQ(b.port(), 1);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == ClientAddress::V4(v4, 8080));
  EXPECT_FALSE(a == ClientAddress::V4(v4, 8081));
}

TEST(ClientAddressTest, TheLongestTextFits) {
  uint8_t v6[16];
  ASSERT_EQ(inet_pton(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", v6), 1);
  EXPECT_EQ(Text(ClientAddress::V6(v6, 0)), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:255.255.255.255", v6), 1);
  EXPECT_EQ(Text(ClientAddress::V6(v6, 0)), "255.255.255.255");  // mapped: shown as IPv4
  ASSERT_EQ(inet_pton(AF_INET6, "::255.255.255.255", v6), 1);
  EXPECT_EQ(Text(ClientAddress::V6(v6, 0)), "::255.255.255.255");
}

TEST(ClientAddressTest, TheKernelWritesASockaddrIntoIt) {
  // What getsockopt(SO_PEERNAME) does for an IPv4 socket.
  ClientAddress a;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(443);
  in.sin_addr.s_addr = htonl(0x7f000001);
  std::memcpy(a.raw(), &in, sizeof(in));
  EXPECT_EQ(Text(a), "127.0.0.1");
  EXPECT_EQ(a.port(), 443);
}

TEST(ClientAddressTest, AUnixSocketsClientIsUnix) {
  // A connection on a Unix-domain listener has no address and no port: it
  // is known (a process on this host), and logged as "unix".
  const ClientAddress a = ClientAddress::Unix();
  EXPECT_TRUE(a.known());
  EXPECT_TRUE(a.is_unix());
  EXPECT_EQ(a.family(), AF_UNIX);
  EXPECT_EQ(a.port(), 0);
  EXPECT_EQ(Text(a), "unix");
  EXPECT_TRUE(a == ClientAddress::Unix());
  EXPECT_FALSE(a == ClientAddress());
  const uint8_t v4[4] = {127, 0, 0, 1};
  EXPECT_FALSE(ClientAddress::V4(v4, 0).is_unix());
  EXPECT_FALSE(ClientAddress().is_unix());
}

TEST(ClientAddressTest, AnIpv4MappedPeerIsItsIpv4Address) {
  // What getsockopt(SO_PEERNAME) writes for an IPv4 client of a dual-stack
  // [::] listener: ::ffff:127.0.0.1. Handlers and the log see 127.0.0.1,
  // as a client of an IPv4 listener would be seen (Go does the same).
  ClientAddress a;
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(5000);
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr), 1);
  std::memcpy(a.raw(), &in6, sizeof(in6));
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(Text(a), "127.0.0.1");
  EXPECT_EQ(a.port(), 5000);
  const uint8_t v4[4] = {127, 0, 0, 1};
  EXPECT_TRUE(a == ClientAddress::V4(v4, 5000));
  EXPECT_TRUE(ClientAddress::V4(v4, 5000) == a);
  // The same from a PROXY header naming a mapped address.
  uint8_t mapped[16];
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:203.0.113.9", mapped), 1);
  const ClientAddress b = ClientAddress::V6(mapped, 80);
  EXPECT_EQ(b.family(), AF_INET);
  EXPECT_EQ(Text(b), "203.0.113.9");
  // Other IPv6 addresses stay IPv6 (::1, and ::127.0.0.1, which is not mapped).
  uint8_t loopback[16];
  ASSERT_EQ(inet_pton(AF_INET6, "::1", loopback), 1);
  EXPECT_EQ(ClientAddress::V6(loopback, 1).family(), AF_INET6);
  EXPECT_EQ(Text(ClientAddress::V6(loopback, 1)), "::1");
  uint8_t compat[16];
  ASSERT_EQ(inet_pton(AF_INET6, "::127.0.0.1", compat), 1);
  EXPECT_EQ(ClientAddress::V6(compat, 1).family(), AF_INET6);
}

}  // namespace
}  // namespace uring_http::http
