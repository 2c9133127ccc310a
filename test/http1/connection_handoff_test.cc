// An HTTP/1 connection hands its socket to HTTP/2 when its first bytes are
// the HTTP/2 preface (h2c with prior knowledge, RFC 9113 3.3): in any
// split, with every byte read so far, its receive as it stands, and
// nothing sent. Anything else that looks like the preface is an HTTP/1
// request (answered 505 and closed).
#include <string>

#include "gtest/gtest.h"
#include "src/http1/connection.h"
#include "test/http1/connection_harness.h"

namespace uring_http::http1 {
namespace {

using testing::Harness;

router::Router HelloRouter() {
  router::Router r;
  (void)r.Fast("GET", "/", [](const http::Request&, http::Response& resp) {
    resp.set_body("hello");
  });
  return r;
}

// The preface, then the client's SETTINGS frame (empty) as HTTP/2 sends it.
const std::string kH2Start =
    std::string(kHttp2Preface) + std::string("\0\0\0\4\0\0\0\0\0", 9);

TEST(ConnectionHandoffTest, ThePrefaceHandsTheConnectionToHttp2WithItsBytes) {
  for (size_t piece : {kH2Start.size(), size_t{1}, size_t{5}, size_t{23}}) {
    SCOPED_TRACE(piece);
    Harness h(HelloRouter());
    h.env().h2c = true;
    h.Open();
    // Byte by byte the preface is handed off once complete; bytes after it
    // in later pieces are the next protocol's (the loop gives them there).
    const size_t upto = piece >= kHttp2Preface.size() ? kH2Start.size() : kHttp2Preface.size();
    size_t fed = 0;
    while (fed < upto && h.host.handoffs.empty()) {
      const size_t n = std::min(piece, upto - fed);
      h.Recv(std::string_view(kH2Start).substr(fed, n), n);
      fed += n;
    }
    ASSERT_EQ(h.host.handoffs.size(), 1u);
    const auto& call = h.host.handoffs[0];
    EXPECT_EQ(call.next, conn::ProtocolId::kHttp2);
    EXPECT_EQ(call.bytes, kH2Start.substr(0, fed)) << "every byte read goes with it";
    EXPECT_EQ(call.recv_armed, h.host.recv_armed) << "the receive as the kernel has it";
    EXPECT_FALSE(h.host.send.has_value());
    EXPECT_FALSE(h.host.closed) << "the socket is the next protocol's";
    EXPECT_TRUE(h.wire.empty());
    EXPECT_TRUE(h.conn.Freeable());
    h.conn.Release();
    EXPECT_TRUE(h.host.violations.empty()) << h.host.violations.front();
  }
}

// Upgrade: h2c (RFC 7540 3.2): the first request, bodiless, with one
// HTTP2-Settings named in Connection, goes to HTTP/2 with the bytes after
// it, whatever the splits; HTTP/1 answers nothing.
TEST(ConnectionHandoffTest, AnUpgradeRequestGoesToHttp2WithWhatFollows) {
  const std::string request =
      "GET /?x=1 HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
      "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n";
  const std::string wire = request + kH2Start;
  for (size_t piece : {wire.size(), size_t{1}, size_t{7}, size_t{64}}) {
    SCOPED_TRACE(piece);
    Harness h(HelloRouter());
    h.env().h2c = true;
    h.Open();
    size_t fed = 0;
    while (fed < wire.size() && h.host.handoffs.empty()) {
      const size_t n = std::min(piece, wire.size() - fed);
      h.Recv(std::string_view(wire).substr(fed, n), n);
      fed += n;
    }
    ASSERT_EQ(h.host.handoffs.size(), 1u);
    const auto& call = h.host.handoffs[0];
    EXPECT_TRUE(call.upgraded);
    EXPECT_EQ(call.upgrade_target, "/?x=1");
    EXPECT_EQ(call.upgrade_settings, "AAMAAABk");
    EXPECT_EQ(call.upgrade_fields, 4u);
    EXPECT_EQ(call.bytes, wire.substr(request.size(), fed - request.size()));
    EXPECT_TRUE(h.wire.empty()) << "the 101 is HTTP/2's to send";
    EXPECT_TRUE(h.conn.Freeable());
    h.conn.Release();
    EXPECT_TRUE(h.host.violations.empty()) << h.host.violations.front();
  }
  // Without --http2 (h2c off) the same request is HTTP/1's.
  Harness h(HelloRouter());
  h.Open();
  h.Recv(request);
  h.Flush();
  EXPECT_TRUE(h.host.handoffs.empty());
  const auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
}

TEST(ConnectionHandoffTest, WithoutH2cThePrefaceIsAnHttp1RequestRefused) {
  Harness h(HelloRouter());
  h.Open();
  h.Recv(kH2Start);
  h.Flush();
  EXPECT_TRUE(h.host.handoffs.empty());
  const auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 505);
}

TEST(ConnectionHandoffTest, OnlyTheFirstBytesOfAConnectionCanBeThePreface) {
  Harness h(HelloRouter());
  h.env().h2c = true;
  h.Open();
  h.Recv("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + kH2Start);
  h.Flush();
  EXPECT_TRUE(h.host.handoffs.empty());
  const auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[1].status, 505);
}

TEST(ConnectionHandoffTest, ARequestThatOnlyStartsLikeThePrefaceIsHttp1) {
  Harness h(HelloRouter());
  h.env().h2c = true;
  h.Open();
  h.Recv("PRI * HTTP/1.1\r\nHost: x\r\n\r\n");
  h.Flush();
  EXPECT_TRUE(h.host.handoffs.empty());
  const auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_NE(replies[0].status, 200);
}

}  // namespace
}  // namespace uring_http::http1
