// The connection on a --proxy-protocol listener (ConnectionConfig::
// proxy_protocol), without a kernel: the PROXY header is read before the
// first request in any split, its client reaches FAST and SLOW handlers and
// the access log, and a missing, malformed or late header closes the
// connection without a byte of answer.
#include <arpa/inet.h>

#include <string>

#include "gtest/gtest.h"
#include "src/http1/connection.h"
#include "test/http1/connection_harness.h"

namespace uring_http::http1 {
namespace {

using std::string_literals::operator""s;
using testing::Harness;

std::string Describe(const http::Request& req) {
  char text[http::ClientAddress::kMaxText];
  return std::string(req.client_address.Format(text)) + ":" +
         std::to_string(req.client_address.port());
}

router::Router ClientRouter() {
  router::Router r;
  (void)r.Fast("GET", "/client", [](const http::Request& req, http::Response& resp) {
    resp.set_body(Describe(req));
  });
  (void)r.Slow("GET", "/slow-client", [](const http::Request& req, http::Response& resp) {
    resp.set_body("slow " + Describe(req));
  });
  return r;
}

exchange::ConnectionConfig ProxyConfig() {
  exchange::ConnectionConfig c;
  c.proxy_protocol = true;
  return c;
}

const std::string kGet = "GET /client HTTP/1.1\r\nHost: t\r\n\r\n";
const std::string kV1 = "PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n";
// 2001:db8::7 port 12345 -> 2001:db8::1 port 80, then an ALPN TLV.
const std::string kV2Inet6 = "\r\n\r\n\0\r\nQUIT\n\x21\x21\x00\x29"s +
                             "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x07"s +
                             "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01"s + "\x30\x39\x00\x50"s +
                             "\x01\x00\x02h2"s;
const std::string kV2Local = "\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00"s;

// The socket's peer, as the loop has the kernel write it at accept.
void SetPeer(Harness& h, const char* ip, uint16_t port) {
  uint8_t bytes[4];
  ASSERT_EQ(inet_pton(AF_INET, ip, bytes), 1);
  *h.conn.peer_address() = http::ClientAddress::V4(bytes, port);
}

TEST(ConnectionProxyTest, V1HeaderThenRequestInOneReceive) {
  Harness h(ClientRouter(), ProxyConfig());
  SetPeer(h, "10.0.0.9", 40000);
  h.Open();
  h.Recv(kV1 + kGet);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, "203.0.113.7:51000");
  ASSERT_EQ(h.host.done.size(), 1u);
  EXPECT_EQ(h.host.done[0].client, "203.0.113.7");
  EXPECT_EQ(h.host.done[0].request_line, "GET /client HTTP/1.1");
  EXPECT_EQ(h.stats.proxy_header_errors.Get(), 0u);
  // The first receive stays single-shot (then multishot, as without it).
  EXPECT_EQ(h.host.recv_once_arms, 1);
  EXPECT_TRUE(h.host.violations.empty());
}

TEST(ConnectionProxyTest, V2HeaderAndRequestOneByteAtATime) {
  Harness h(ClientRouter(), ProxyConfig());
  SetPeer(h, "10.0.0.9", 40000);
  h.Open();
  h.Recv(kV2Inet6 + kGet, /*piece=*/1);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "2001:db8::7:12345");
  ASSERT_EQ(h.host.done.size(), 1u);
  EXPECT_EQ(h.host.done[0].client, "2001:db8::7");
  EXPECT_TRUE(h.host.violations.empty());
}

TEST(ConnectionProxyTest, HeaderSplitWithTheRequestInItsLastPiece) {
  for (size_t cut = 1; cut < kV1.size(); ++cut) {
    Harness h(ClientRouter(), ProxyConfig());
    h.Open();
    h.Recv(kV1.substr(0, cut));
    EXPECT_TRUE(h.wire.empty()) << cut;
    h.Recv(kV1.substr(cut) + kGet);
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << cut;
    EXPECT_EQ(replies[0].body, "203.0.113.7:51000") << cut;
    EXPECT_TRUE(h.host.violations.empty());
  }
}

TEST(ConnectionProxyTest, SlowHandlersSeeTheClientToo) {
  Harness h(ClientRouter(), ProxyConfig());
  h.Open();
  h.Recv(kV1 + "GET /slow-client HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_EQ(h.host.tasks.size(), 1u);
  h.RunTask();
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "slow 203.0.113.7:51000");
  EXPECT_EQ(h.host.done[0].client, "203.0.113.7");
}

TEST(ConnectionProxyTest, EveryRequestOfTheConnectionHasTheClientButOnlyOneHeader) {
  Harness h(ClientRouter(), ProxyConfig());
  h.Open();
  h.Recv(kV1 + kGet);
  h.Flush();
  h.Recv(kGet);
  h.Flush();
  // A second PROXY line is not a header any more but a bad request.
  h.Recv(kV1);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[1].body, "203.0.113.7:51000");
  EXPECT_EQ(replies[2].status, 400);
  EXPECT_EQ(h.host.done[1].client, "203.0.113.7");
}

TEST(ConnectionProxyTest, LocalAndUnknownLeaveTheSocketsPeer) {
  for (const std::string& header : {kV2Local, "PROXY UNKNOWN\r\n"s}) {
    Harness h(ClientRouter(), ProxyConfig());
    SetPeer(h, "10.0.0.9", 40000);
    h.Open();
    h.Recv(header + kGet);
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].body, "10.0.0.9:40000");
    EXPECT_EQ(h.host.done[0].client, "10.0.0.9");
  }
}

TEST(ConnectionProxyTest, WithoutTheFlagHandlersSeeThePeerAndPROXYIsABadRequest) {
  Harness h(ClientRouter());
  SetPeer(h, "10.0.0.9", 40000);
  h.Open();
  h.Recv(kGet);
  h.Flush();
  h.Recv(kV1 + kGet);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].body, "10.0.0.9:40000");
  EXPECT_EQ(replies[1].status, 400);
  EXPECT_EQ(h.host.done[0].client, "10.0.0.9");
}

TEST(ConnectionProxyTest, MissingHeaderClosesWithoutAnAnswer) {
  Harness h(ClientRouter(), ProxyConfig());
  h.Open();
  h.Recv(kGet);
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.wire.empty());
  EXPECT_TRUE(h.host.done.empty());
  EXPECT_EQ(h.stats.proxy_header_errors.Get(), 1u);
  EXPECT_TRUE(h.conn.Freeable());
  EXPECT_TRUE(h.host.violations.empty());
}

TEST(ConnectionProxyTest, MalformedHeaderSplitAcrossReceivesClosesWithoutAnAnswer) {
  Harness h(ClientRouter(), ProxyConfig());
  h.Open();
  h.Recv("PROXY TCP4 203.0.113.7 ");
  EXPECT_FALSE(h.host.closed);
  h.Recv("192.0.2.1 51000 99999\r\n" + kGet);  // a port past 65535
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.wire.empty());
  EXPECT_EQ(h.stats.proxy_header_errors.Get(), 1u);
  EXPECT_TRUE(h.conn.Freeable());
  EXPECT_TRUE(h.host.violations.empty());
}

TEST(ConnectionProxyTest, AHeaderNotWholeWithinTheHeadTimeoutClosesWithoutA408) {
  exchange::ConnectionConfig config = ProxyConfig();
  Harness h(ClientRouter(), config);
  h.Open();
  h.Recv(kV2Inet6.substr(0, 20));
  const uint64_t ticks = config.header_timeout_ms / config.tick_ms;
  h.Tick(ticks - 1);
  EXPECT_FALSE(h.host.closed);
  h.Tick(2);
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.wire.empty());
  EXPECT_EQ(h.stats.proxy_header_errors.Get(), 1u);
  EXPECT_EQ(h.stats.timeouts.Get(), 1u);
}

TEST(ConnectionProxyTest, NothingAtAllIsHeldToTheHeadTimeoutNotTheIdleOne) {
  exchange::ConnectionConfig config = ProxyConfig();
  config.idle_timeout_ms = 600'000;
  Harness h(ClientRouter(), config);
  h.Open();
  h.Tick(config.header_timeout_ms / config.tick_ms + 1);
  EXPECT_TRUE(h.host.closed);
  EXPECT_TRUE(h.wire.empty());
}

TEST(ConnectionProxyTest, PeerLeavingMidHeaderClosesQuietly) {
  Harness h(ClientRouter(), ProxyConfig());
  h.Open();
  h.Recv(kV1.substr(0, 10));
  h.RecvEnd(0);
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.wire.empty());
  EXPECT_TRUE(h.conn.Freeable());
}

TEST(ConnectionProxyTest, ASlotReusedStartsWithoutTheLastClient) {
  Harness h(ClientRouter(), ProxyConfig());
  SetPeer(h, "10.0.0.9", 40000);
  h.Open();
  h.Recv(kV1 + kGet);
  h.Flush();
  h.RecvEnd(0);
  h.CloseDone();
  ASSERT_TRUE(h.conn.Freeable());
  h.conn.Release();
  h.wire.clear();
  h.host = testing::FakeHost();
  SetPeer(h, "10.0.0.10", 40001);
  h.Open();
  h.Recv(kV2Local + kGet);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "10.0.0.10:40001");
}

}  // namespace
}  // namespace uring_http::http1
