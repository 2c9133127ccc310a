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
  EXPECT_EQ(Text(ClientAddress::V6(v6, 0)), "::ffff:255.255.255.255");
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

}  // namespace
}  // namespace uring_http::http
