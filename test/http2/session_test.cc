// Session against a real nghttp2 client, in memory: the start of a
// connection, requests and responses (heads, bodies, trailers, HEAD, 100),
// resets from the peer, drain and h2c upgrade.
#include "src/http2/session.h"

#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/http2/h2_test_peer.h"

namespace uring_http::http2 {
namespace {

using testing::ClientStream;
using testing::Drain;
using testing::Fields;
using testing::ParseFrames;
using testing::Pump;
using testing::Recorder;
using testing::TestClient;

Fields Req(const std::string& method, const std::string& path, Fields extra = {}) {
  Fields f = {{":method", method}, {":scheme", "https"}, {":authority", "example.com"}, {":path", path}};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

http::HeaderTable Table(const Fields& fields) {
  http::HeaderTable t;
  for (const auto& [n, v] : fields) t.Add(n, v);
  return t;
}

TEST(SessionTest, StartsWithSettingsAndConnectionWindowUpdate) {
  Recorder rec;
  SessionSettings settings;
  Session server(&rec, settings);
  ASSERT_TRUE(server.WantsWrite());
  const std::vector<testing::RawFrame> frames = ParseFrames(Drain(server));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, NGHTTP2_SETTINGS);
  EXPECT_EQ(frames[0].stream_id, 0);
  std::map<uint16_t, uint32_t> entries;
  for (size_t at = 0; at + 6 <= frames[0].payload.size(); at += 6) {
    const auto* p = reinterpret_cast<const uint8_t*>(frames[0].payload.data() + at);
    entries[static_cast<uint16_t>((p[0] << 8) | p[1])] = frames[0].U32(at + 2);
  }
  EXPECT_EQ(entries[NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS], 100u);
  EXPECT_EQ(entries[NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE], 65535u);
  EXPECT_EQ(entries[NGHTTP2_SETTINGS_MAX_FRAME_SIZE], 16384u);
  EXPECT_EQ(entries[NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE], 65536u);
  EXPECT_EQ(entries[NGHTTP2_SETTINGS_HEADER_TABLE_SIZE], 4096u);
  EXPECT_EQ(frames[1].type, NGHTTP2_WINDOW_UPDATE);
  EXPECT_EQ(frames[1].stream_id, 0);
  EXPECT_EQ(frames[1].U32(0), (1u << 20) - 65535u);
  EXPECT_FALSE(server.WantsWrite());
  EXPECT_TRUE(server.WantsRead());
  EXPECT_EQ(server.failure(), "");
}

TEST(SessionTest, GetDeliversPseudoHeadersAndFieldsInOrder) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  client.Request(Req("GET", "/x?y=1", {{"user-agent", "t/1"}, {"cookie", "a=1"}, {"cookie", "b=2"}}));
  ASSERT_TRUE(Pump(server, client));
  ASSERT_EQ(rec.log, (std::vector<std::string>{"request 1 GET https example.com /x?y=1", "end 1"}));
  const Recorder::Request& r = rec.requests[1];
  EXPECT_EQ(r.headers, (Fields{{"user-agent", "t/1"}, {"cookie", "a=1"}, {"cookie", "b=2"}}));
  EXPECT_TRUE(r.end_stream);
  EXPECT_FALSE(r.has_content_length);
  EXPECT_EQ(r.head_bytes, (7 + 3 + 32) + (7 + 5 + 32) + (10 + 11 + 32) + (5 + 6 + 32) + (10 + 3 + 32) +
                              2 * (6 + 3 + 32));
  EXPECT_EQ(server.open_streams(), 1u);
}

TEST(SessionTest, AuthorityFallsBackToHost) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  client.Request({{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"host", "h.example"}});
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.requests[1].authority, "h.example");
}

TEST(SessionTest, ResponseNamesLowercasedAndConnectionFieldsDropped) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead&) {
    const http::HeaderTable t = Table({{"Content-Type", "text/plain"},
                                       {"Connection", "keep-alive"},
                                       {"Keep-Alive", "timeout=5"},
                                       {"Transfer-Encoding", "chunked"},
                                       {"Upgrade", "h2c"},
                                       {"Proxy-Connection", "x"},
                                       {"X-Custom", "Value"},
                                       {"Keep-Alivx", "same length, kept"},
                                       {"UPGRADE", "any case"}});
    // The server's own fields follow the table's, as they are.
    const ServerField server_fields[] = {{"date", "Thu, 26 Nov 2026 00:00:00 GMT"},
                                         {"content-length", "5"}};
    ASSERT_TRUE(server.SubmitResponse(id, 200, t, true, server_fields));
    EXPECT_EQ(server.WriteData(id, "hello"), 5u);
    EXPECT_TRUE(server.EndData(id));
  };
  TestClient client;
  client.Request(Req("GET", "/"));
  ASSERT_TRUE(Pump(server, client));
  const ClientStream& s = client.streams[1];
  ASSERT_EQ(s.header_blocks.size(), 1u);
  EXPECT_EQ(s.header_blocks[0], (Fields{{":status", "200"},
                                        {"content-type", "text/plain"},
                                        {"x-custom", "Value"},
                                        {"keep-alivx", "same length, kept"},
                                        {"date", "Thu, 26 Nov 2026 00:00:00 GMT"},
                                        {"content-length", "5"}}));
  EXPECT_EQ(s.body, "hello");
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.close_code, 0u);
  EXPECT_EQ(rec.log.back(), "closed 1 0");
  EXPECT_EQ(server.open_streams(), 0u);
}

TEST(SessionTest, BodyWaitsForClientWindowThenCompletes) {
  Recorder rec;
  Session server(&rec, {});
  const std::string body(100000, 'b');
  rec.on_request = [&](int32_t id, const RequestHead&) {
    ASSERT_TRUE(server.SubmitResponse(id, 200, {}, true));
    EXPECT_EQ(server.WriteData(id, body), body.size());
    EXPECT_TRUE(server.EndData(id));
  };
  TestClient client;
  client.auto_consume = false;
  client.Request(Req("GET", "/big"));
  ASSERT_TRUE(Pump(server, client));
  // The client's default windows (65,535 each) hold the rest back.
  EXPECT_EQ(client.streams[1].body.size(), 65535u);
  EXPECT_EQ(server.QueuedData(1), body.size() - 65535u);
  EXPECT_FALSE(client.streams[1].closed);
  EXPECT_FALSE(server.WantsWrite());
  client.Consume(1, 65535);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.streams[1].body, body);
  EXPECT_TRUE(client.streams[1].closed);
  EXPECT_EQ(server.QueuedData(1), 0u);
  // The queue went from 100,000 to under the low-water mark once.
  EXPECT_EQ(std::count(rec.log.begin(), rec.log.end(), "writable 1"), 1);
}

TEST(SessionTest, ProducerWaitsForWritable) {
  Recorder rec;
  SessionSettings settings;
  settings.write_low_water = 1000;
  Session server(&rec, settings);
  const size_t kHighWater = 4000;
  std::string sent;
  int chunks = 0;
  auto produce = [&](int32_t id) {
    while (chunks < 100) {
      const std::string chunk(1000, static_cast<char>('a' + chunks % 26));
      sent += chunk;
      ++chunks;
      if (server.WriteData(id, chunk) >= kHighWater) return;
    }
    server.EndData(id);
  };
  rec.on_request = [&](int32_t id, const RequestHead&) {
    ASSERT_TRUE(server.SubmitResponse(id, 200, {}, true));
    produce(id);
  };
  rec.on_writable = produce;
  TestClient client;
  client.Request(Req("GET", "/stream"));
  ASSERT_TRUE(Pump(server, client, 1500));
  EXPECT_EQ(client.streams[1].body, sent);
  EXPECT_EQ(chunks, 100);
  EXPECT_TRUE(client.streams[1].closed);
}

TEST(SessionTest, GrpcShapedExchangeWithTrailersBothWays) {
  Recorder rec;
  Session server(&rec, {});
  const std::string message("\0\0\0\0\x05hello", 10);
  rec.on_end = [&](int32_t id) {
    ASSERT_TRUE(server.SubmitResponse(id, 200, Table({{"content-type", "application/grpc"}}), true));
    server.WriteData(id, message);
    const http::HeaderTable trailers = Table({{"grpc-status", "0"}, {"grpc-message", "OK"}});
    EXPECT_TRUE(server.EndData(id, &trailers));
  };
  TestClient client;
  const Fields request_trailers = {{"x-checksum", "abc"}};
  client.Request(Req("POST", "/pkg.Svc/Call", {{"content-type", "application/grpc"}, {"te", "trailers"}}), &message,
                 &request_trailers);
  ASSERT_TRUE(Pump(server, client));
  const Recorder::Request& r = rec.requests[1];
  EXPECT_EQ(r.body, message);
  EXPECT_EQ(r.trailers, request_trailers);
  EXPECT_EQ(rec.log, (std::vector<std::string>{"request 1 POST https example.com /pkg.Svc/Call", "data 1 10",
                                               "trailers 1 1", "end 1", "closed 1 0"}));
  const ClientStream& s = client.streams[1];
  ASSERT_EQ(s.header_blocks.size(), 2u);
  EXPECT_EQ(s.header_blocks[1], (Fields{{"grpc-status", "0"}, {"grpc-message", "OK"}}));
  EXPECT_EQ(s.body, message);
  EXPECT_TRUE(s.closed);
  EXPECT_FALSE(s.reset_by_server);
}

TEST(SessionTest, HeadResponseEndsWithHeaders) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead& head) {
    EXPECT_EQ(head.method, "HEAD");
    ASSERT_TRUE(server.SubmitResponse(id, 200, Table({{"content-length", "1234"}}), false));
    EXPECT_FALSE(server.SubmitResponse(id, 200, {}, false));  // one response per stream
    EXPECT_EQ(server.WriteData(id, "x"), 0u);                 // no body to write to
  };
  TestClient client;
  client.Request(Req("HEAD", "/"));
  ASSERT_TRUE(Pump(server, client));
  const ClientStream& s = client.streams[1];
  EXPECT_EQ(s.header_blocks.at(0), (Fields{{":status", "200"}, {"content-length", "1234"}}));
  EXPECT_EQ(s.body, "");
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(rec.log.back(), "closed 1 0");
}

TEST(SessionTest, ExpectContinueGetsInterim100) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead& head) {
    EXPECT_TRUE(head.expect_continue);
    EXPECT_TRUE(head.has_content_length);
    EXPECT_EQ(head.content_length, 5u);
    EXPECT_FALSE(head.end_stream);
    EXPECT_TRUE(server.SubmitContinue(id));
  };
  rec.on_end = [&](int32_t id) {
    EXPECT_TRUE(server.SubmitResponse(id, 204, {}, false));
    EXPECT_FALSE(server.SubmitContinue(id));
  };
  TestClient client;
  const std::string body = "12345";
  client.Request(Req("PUT", "/up", {{"expect", "100-continue"}, {"content-length", "5"}}), &body);
  ASSERT_TRUE(Pump(server, client));
  const ClientStream& s = client.streams[1];
  ASSERT_EQ(s.header_blocks.size(), 2u);
  EXPECT_EQ(s.header_blocks[0], (Fields{{":status", "100"}}));
  EXPECT_EQ(s.header_blocks[1], (Fields{{":status", "204"}}));
  EXPECT_EQ(rec.requests[1].body, body);
}

TEST(SessionTest, PeerResetClosesStreamAndLaterWritesAreHarmless) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead&) {
    ASSERT_TRUE(server.SubmitResponse(id, 200, {}, true));
    server.WriteData(id, "partial");
  };
  TestClient client;
  client.Request(Req("GET", "/slow"));
  ASSERT_TRUE(Pump(server, client));
  ASSERT_EQ(nghttp2_submit_rst_stream(client.raw(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_CANCEL), 0);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.log.back(), "closed 1 8");
  EXPECT_EQ(server.open_streams(), 0u);
  EXPECT_EQ(server.WriteData(1, "more"), 0u);
  EXPECT_FALSE(server.EndData(1));
  EXPECT_EQ(server.QueuedData(1), 0u);
  EXPECT_FALSE(server.SubmitResponse(1, 200, {}, false));
  server.Consume(1, 100);
  server.ResetStream(1, NGHTTP2_CANCEL);
  EXPECT_EQ(server.WriteData(77, "x"), 0u);  // never existed
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(server.WantsRead());
}

TEST(SessionTest, ServerResetStream) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead&) { server.ResetStream(id, NGHTTP2_INTERNAL_ERROR); };
  TestClient client;
  client.Request(Req("GET", "/"));
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(client.streams[1].reset_by_server);
  EXPECT_EQ(client.streams[1].rst_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_EQ(rec.log, (std::vector<std::string>{"request 1 GET https example.com /", "closed 1 2"}));
}

TEST(SessionTest, ShutdownSendsTwoGoawaysAndInflightStreamsFinish) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  client.Request(Req("GET", "/a"));
  ASSERT_TRUE(Pump(server, client));
  server.Shutdown();
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.goaways, 2);  // the notice, then after the PING's round trip the final one
  EXPECT_EQ(client.goaway_last_stream, 1);
  EXPECT_EQ(client.goaway_code, 0u);
  EXPECT_TRUE(server.WantsRead());  // stream 1 is still open
  ASSERT_TRUE(server.SubmitResponse(1, 200, {}, true));
  server.WriteData(1, "done");
  server.EndData(1);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.streams[1].body, "done");
  EXPECT_TRUE(client.streams[1].closed);
  EXPECT_FALSE(server.WantsRead());
  EXPECT_FALSE(server.WantsWrite());
  EXPECT_EQ(server.failure(), "");
}

TEST(SessionTest, ShutdownTwiceSendsFinalGoawayAtOnce) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  ASSERT_TRUE(Pump(server, client));
  server.Shutdown();
  server.Shutdown();
  std::vector<testing::RawFrame> frames = ParseFrames(Drain(server));
  int goaways = 0;
  for (const auto& f : frames) goaways += f.type == NGHTTP2_GOAWAY;
  EXPECT_EQ(goaways, 2);
}

std::string Base64Url(std::string_view in) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

TEST(SessionTest, UpgradeServesStreamOne) {
  Recorder rec;
  Session server(&rec, {});
  uint8_t payload[64];
  const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 50},
                                       {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
  const ssize_t n = nghttp2_pack_settings_payload(payload, sizeof(payload), iv, 2);
  ASSERT_GT(n, 0);
  const std::string settings(reinterpret_cast<char*>(payload), static_cast<size_t>(n));
  ASSERT_TRUE(server.Upgrade(Base64Url(settings), false));
  EXPECT_EQ(server.open_streams(), 1u);
  ASSERT_TRUE(server.SubmitResponse(1, 200, Table({{"content-type", "text/plain"}}), true));
  server.WriteData(1, "upgraded");
  server.EndData(1);

  TestClient client;
  ASSERT_EQ(nghttp2_session_upgrade2(client.raw(), payload, static_cast<size_t>(n), 0, nullptr), 0);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.streams[1].body, "upgraded");
  EXPECT_TRUE(client.streams[1].closed);
  EXPECT_EQ(rec.log, (std::vector<std::string>{"closed 1 0"}));
  // The next stream is the client's 3.
  client.Request(Req("GET", "/next"));
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.log.back(), "end 3");
}

TEST(SessionTest, UpgradeRejectsMalformedSettings) {
  Recorder rec;
  {
    Session server(&rec, {});
    EXPECT_FALSE(server.Upgrade("not base64!", false));
  }
  {
    Session server(&rec, {});
    EXPECT_FALSE(server.Upgrade("AAMAAABk_", false));  // 6-byte entries: 7 bytes decoded
  }
  {
    Session server(&rec, {});
    EXPECT_TRUE(server.Upgrade("", true));  // no settings is fine
  }
}

}  // namespace
}  // namespace uring_http::http2
