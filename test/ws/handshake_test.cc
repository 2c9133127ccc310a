// The opening handshake's checks (RFC 6455 4.2.1, 4.4) and
// permessage-deflate's negotiation (RFC 7692 7), on parsed requests.
#include "src/ws/handshake.h"

#include <string>

#include "gtest/gtest.h"
#include "src/http/parser.h"

namespace uring_http::ws {
namespace {

constexpr std::string_view kKey = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455 1.3's

struct Parsed {
  explicit Parsed(std::string text) : raw(std::move(text)) {
    const http::ParseResult r = http::ParseRequestHead(raw, http::ParseLimits(), &request, headers, 32);
    EXPECT_EQ(r.status, http::ParseStatus::kComplete) << raw;
  }
  std::string raw;
  http::Header headers[32];
  http::Request request;
};

std::string Upgrade(std::string_view extra = "", std::string_view line = "GET /chat HTTP/1.1",
                    std::string_view key = kKey, std::string_view version = "13") {
  std::string r(line);
  r += "\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
  if (!key.empty()) r += "Sec-WebSocket-Key: " + std::string(key) + "\r\n";
  if (!version.empty()) r += "Sec-WebSocket-Version: " + std::string(version) + "\r\n";
  r += std::string(extra) + "\r\n";
  return r;
}

TEST(HandshakeTest, TheRfcsExample) {
  EXPECT_EQ(AcceptKey(kKey), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  Parsed p(Upgrade("Origin: http://example.com\r\nSec-WebSocket-Protocol: chat, superchat\r\n"));
  const UpgradeCheck c = CheckUpgrade(p.request);
  EXPECT_EQ(c.status, 0) << c.error;
  EXPECT_EQ(c.key, kKey);
  EXPECT_EQ(c.origin, "http://example.com");
  EXPECT_EQ(c.protocols, "chat, superchat");
}

TEST(HandshakeTest, TokensInAnyCaseAndAmongOthers) {
  Parsed p("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: foo, WebSocket\r\nConnection: keep-alive, upgrade\r\n"
           "Sec-WebSocket-Key: " + std::string(kKey) + "\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(CheckUpgrade(p.request).status, 0);
}

TEST(HandshakeTest, WhatIsRefused) {
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "POST /chat HTTP/1.1")).request).status, 400);
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "GET /chat HTTP/1.0")).request).status, 400);
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "GET /chat HTTP/1.1", "")).request).status, 400);
  for (const char* key : {"dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZR==",
                          "dGhlIHNhbXBsZSBub25j", "dGhlIHNhbXBsZSBub25jZQ==AA", "!GhlIHNhbXBsZSBub25jZQ=="}) {
    EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "GET /chat HTTP/1.1", key)).request).status, 400) << key;
  }
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("Sec-WebSocket-Key: " + std::string(kKey) + "\r\n")).request).status,
            400);  // two keys
  // Another version: 426, for the route to answer with the one it speaks.
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "GET /chat HTTP/1.1", kKey, "8")).request).status, 426);
  EXPECT_EQ(CheckUpgrade(Parsed(Upgrade("", "GET /chat HTTP/1.1", kKey, "")).request).status, 426);
  Parsed no_upgrade("GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + std::string(kKey) +
                    "\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(CheckUpgrade(no_upgrade.request).status, 400);
  Parsed no_connection("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nSec-WebSocket-Key: " +
                       std::string(kKey) + "\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(CheckUpgrade(no_connection.request).status, 400);
}

TEST(HandshakeTest, DeflateOffers) {
  const DeflateLimits ours;
  std::optional<DeflateParams> p = NegotiateDeflate("permessage-deflate", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p), "permessage-deflate");
  p = NegotiateDeflate("permessage-deflate; client_max_window_bits", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->client_max_window_bits, 15);
  p = NegotiateDeflate("permessage-deflate; client_max_window_bits=10; server_no_context_takeover", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->client_max_window_bits, 10);
  EXPECT_EQ(DeflateResponse(*p), "permessage-deflate; server_no_context_takeover");
  p = NegotiateDeflate("permessage-deflate; server_max_window_bits=10; client_no_context_takeover", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p),
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=10");
  p = NegotiateDeflate("permessage-deflate; server_max_window_bits=\"12\"", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->server_max_window_bits, 12);
  // Declined: an unknown parameter, a repeat, a value out of range, a
  // window zlib cannot make (8); the next offer is taken instead.
  for (const char* bad : {"permessage-deflate; foo", "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                          "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=7",
                          "permessage-deflate; server_max_window_bits", "permessage-deflate; client_max_window_bits=x",
                          "permessage-deflate; server_no_context_takeover=1", "permessage-deflate; server_max_window_bits=8",
                          "x-webkit-deflate-frame", ""}) {
    EXPECT_FALSE(NegotiateDeflate(bad, ours).has_value()) << bad;
  }
  p = NegotiateDeflate("permessage-deflate; server_max_window_bits=8, permessage-deflate; client_max_window_bits", ours);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->server_max_window_bits, 15);
  // The server's own limits.
  DeflateLimits small;
  small.max_window_bits = 10;
  small.context_takeover = false;
  p = NegotiateDeflate("permessage-deflate", small);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p), "permessage-deflate; server_no_context_takeover; server_max_window_bits=10");
  DeflateLimits off;
  off.enabled = false;
  EXPECT_FALSE(NegotiateDeflate("permessage-deflate", off).has_value());
}

TEST(HandshakeTest, DeflateAsksTheClient) {
  // Shared state: no context either way, asked of a client that offered
  // nothing about it (RFC 7692 7.1.1.2 allows it).
  DeflateLimits shared;
  shared.context_takeover = false;
  shared.client_context_takeover = false;
  std::optional<DeflateParams> p = NegotiateDeflate("permessage-deflate", shared);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p),
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover");
  // A smaller client window only of a client that offered the parameter.
  DeflateLimits dedicated;
  dedicated.max_window_bits = 12;
  dedicated.client_max_window_bits = 12;
  p = NegotiateDeflate("permessage-deflate", dedicated);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p), "permessage-deflate; server_max_window_bits=12");
  EXPECT_EQ(p->client_max_window_bits, 15);
  p = NegotiateDeflate("permessage-deflate; client_max_window_bits", dedicated);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p),
            "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12");
  EXPECT_EQ(p->client_max_window_bits, 12);
  // A client that will use a smaller window than ours anyway is not asked.
  p = NegotiateDeflate("permessage-deflate; client_max_window_bits=10", dedicated);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(DeflateResponse(*p), "permessage-deflate; server_max_window_bits=12");
  EXPECT_EQ(p->client_max_window_bits, 10);
}

}  // namespace
}  // namespace uring_http::ws
