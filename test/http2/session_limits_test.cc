// What a peer may not do: a bad preface, malformed requests (a stream
// error: the connection lives on), heads over the limit, too many streams,
// and each flood (a connection error: GOAWAY ENHANCE_YOUR_CALM). The clock
// is the test's, so the flood windows end when the test says.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "src/http2/session.h"
#include "test/http2/h2_test_peer.h"

namespace uring_http::http2 {
namespace {

using testing::ClientPreface;
using testing::Drain;
using testing::Fields;
using testing::Frame;
using testing::LiteralBlock;
using testing::ParseFrames;
using testing::Pump;
using testing::RawFrame;
using testing::Recorder;
using testing::TestClient;

Fields Req(const std::string& method, const std::string& path, Fields extra = {}) {
  Fields f = {{":method", method}, {":scheme", "https"}, {":authority", "example.com"}, {":path", path}};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

// The GOAWAY among the server's frames, if any: {error code, last stream}.
std::pair<int64_t, int32_t> Goaway(const std::vector<RawFrame>& frames) {
  for (const RawFrame& f : frames) {
    if (f.type == NGHTTP2_GOAWAY) return {f.U32(4), static_cast<int32_t>(f.U32(0))};
  }
  return {-1, -1};
}

TEST(SessionLimitsTest, BadPrefaceEndsTheConnection) {
  Recorder rec;
  Session server(&rec, {});
  const std::string http1 = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_FALSE(server.Receive(http1.data(), http1.size()));
  EXPECT_EQ(server.failure(), "bad preface");
  EXPECT_FALSE(server.WantsRead());
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, NGHTTP2_PROTOCOL_ERROR);
  EXPECT_FALSE(server.Receive("x", 1));  // stays failed
  EXPECT_TRUE(rec.log.empty());
}

TEST(SessionLimitsTest, ProtocolErrorEndsTheConnection) {
  Recorder rec;
  Session server(&rec, {});
  // DATA on stream 0 is a connection error (RFC 9113 6.1).
  const std::string bytes = ClientPreface() + Frame(NGHTTP2_DATA, 0, 0, "x");
  // nghttp2 tells only when its GOAWAY is framed (see Session::Receive).
  server.Receive(bytes.data(), bytes.size());
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, NGHTTP2_PROTOCOL_ERROR);
  EXPECT_EQ(server.failure(), "protocol error");
  EXPECT_FALSE(server.WantsRead());
  EXPECT_FALSE(server.WantsWrite());
  EXPECT_FALSE(server.Receive(bytes.data(), bytes.size()));
}

TEST(SessionLimitsTest, ProtocolErrorClosesOpenStreams) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  client.Request(Req("GET", "/"));
  ASSERT_TRUE(Pump(server, client));
  const std::string bad = Frame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string(4, '\0'));  // increment 0
  server.Receive(bad.data(), bad.size());
  Drain(server);
  EXPECT_EQ(rec.log.back(), "closed 1 1");
  EXPECT_EQ(server.open_streams(), 0u);
}

// Each request is reset with PROTOCOL_ERROR by nghttp2, without reaching
// OnRequest; a good request on the same connection is served afterwards.
TEST(SessionLimitsTest, MalformedRequestsAreResetAndTheConnectionLives) {
  const std::vector<std::string> raw = {
      Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
            LiteralBlock(Req("GET", "/", {{"X-Upper", "1"}}))),
      Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
            LiteralBlock(Req("GET", "/", {{"bad name", "1"}}))),
      Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
            LiteralBlock(Req("GET", "/", {{"x-ws", " leading space"}}))),
      Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
            LiteralBlock(Req("GET", "/", {{"x-nul", std::string("a\0b", 3)}}))),
  };
  for (size_t i = 0; i < raw.size(); ++i) {
    SCOPED_TRACE(i);
    Recorder rec;
    Session server(&rec, {});
    const std::string bytes = ClientPreface() + raw[i];
    ASSERT_TRUE(server.Receive(bytes.data(), bytes.size()));
    const std::vector<RawFrame> frames = ParseFrames(Drain(server));
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().type, NGHTTP2_RST_STREAM);
    EXPECT_EQ(frames.back().U32(0), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_TRUE(rec.log.empty());
    const std::string good = Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3,
                                   LiteralBlock(Req("GET", "/ok")));
    ASSERT_TRUE(server.Receive(good.data(), good.size()));
    EXPECT_EQ(rec.log, (std::vector<std::string>{"request 3 GET https example.com /ok", "end 3"}));
  }
  const std::vector<Fields> malformed = {
      {{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}},  // no :path
      Req("GET", "/", {{"connection", "keep-alive"}}),
      Req("GET", "/", {{"te", "gzip"}}),
      Req("GET", "/", {{":bogus", "1"}}),
      {{":path", "/"}, {":method", "GET"}, {"a", "b"}, {":scheme", "https"}},  // pseudo after regular
  };
  for (size_t i = 0; i < malformed.size(); ++i) {
    SCOPED_TRACE(i);
    Recorder rec;
    Session server(&rec, {});
    TestClient client;
    client.Request(malformed[i]);
    ASSERT_TRUE(Pump(server, client));
    EXPECT_TRUE(client.streams[1].reset_by_server);
    EXPECT_EQ(client.streams[1].rst_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_TRUE(rec.log.empty());
    client.Request(Req("GET", "/ok"));
    ASSERT_TRUE(Pump(server, client));
    EXPECT_EQ(rec.log, (std::vector<std::string>{"request 3 GET https example.com /ok", "end 3"}));
    EXPECT_EQ(server.failure(), "");
  }
}

TEST(SessionLimitsTest, ContentLengthMismatchResetsAfterTheHead) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  const std::string body = "short";
  client.Request(Req("POST", "/", {{"content-length", "10"}}), &body);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(client.streams[1].reset_by_server);
  EXPECT_EQ(client.streams[1].rst_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(rec.requests[1].close_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_FALSE(rec.requests[1].ended);
  EXPECT_EQ(server.open_streams(), 0u);
  EXPECT_TRUE(server.WantsRead());
}

TEST(SessionLimitsTest, HeadOverTheLimitIsRefusedWith431) {
  Recorder rec;
  SessionSettings settings;
  settings.max_header_list_size = 1024;
  Session server(&rec, settings);
  rec.on_request = [](int32_t, const RequestHead&) { FAIL() << "refused heads do not reach OnRequest"; };
  TestClient client;
  const std::string body = "ignored body";
  client.Request(Req("POST", "/", {{"x-big", std::string(1500, 'v')}}), &body);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.refused[1], 431);
  ASSERT_TRUE(server.SubmitResponse(1, 431, {}, false));
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.streams[1].header_blocks.at(0), (Fields{{":status", "431"}}));
  EXPECT_EQ(rec.log, (std::vector<std::string>{"refused 1 431", "closed 1 0"}));
  // A head just under the limit is served.
  rec.on_request = nullptr;
  Fields fields = Req("GET", "/");
  size_t bytes = 0;
  for (const auto& [n, v] : fields) bytes += n.size() + v.size() + 32;
  fields.emplace_back("x-fill", std::string(1024 - bytes - 6 - 32, 'v'));
  client.Request(fields);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.requests[3].head_bytes, 1024u);
  EXPECT_TRUE(rec.requests[3].ended);
}

TEST(SessionLimitsTest, OversizedTrailersResetTheStream) {
  Recorder rec;
  SessionSettings settings;
  settings.max_header_list_size = 1024;
  Session server(&rec, settings);
  TestClient client;
  const std::string body = "b";
  const Fields trailers = {{"x-t", std::string(2000, 't')}};
  client.Request(Req("POST", "/"), &body, &trailers);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(client.streams[1].reset_by_server);
  EXPECT_EQ(rec.log.back(), "closed 1 2");
  EXPECT_EQ(server.failure(), "");
}

TEST(SessionLimitsTest, MaxConcurrentStreamsRefusesTheExtraStream) {
  Recorder rec;
  SessionSettings settings;
  settings.max_concurrent_streams = 2;
  Session server(&rec, settings);
  TestClient client;
  // Sent before the client has seen our SETTINGS, so it does not hold back.
  for (int i = 0; i < 3; ++i) client.Request(Req("POST", "/", {}), nullptr);
  const std::string out = client.Output();
  ASSERT_TRUE(server.Receive(out.data(), out.size()));
  client.Input(Drain(server));
  EXPECT_EQ(rec.requests.size(), 2u);
  EXPECT_TRUE(client.streams[5].reset_by_server);
  EXPECT_EQ(client.streams[5].rst_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(server.failure(), "");
}

struct FloodCase {
  const char* name;
  std::string failure;
  std::function<std::string(int)> frame;  // the i-th offending frame
};

class FloodTest : public ::testing::TestWithParam<int> {};

std::string RequestHeaders(int32_t id, bool end_stream) {
  const std::string block = LiteralBlock(Req("POST", "/"));
  return Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0), id, block);
}

const std::vector<FloodCase>& FloodCases() {
  static const std::vector<FloodCase> cases = {
      {"ping", "flood: PING", [](int) { return Frame(NGHTTP2_PING, 0, 0, std::string(8, 'p')); }},
      {"settings", "flood: SETTINGS", [](int) { return Frame(NGHTTP2_SETTINGS, 0, 0, ""); }},
      {"priority", "flood: PRIORITY",
       [](int i) { return Frame(NGHTTP2_PRIORITY, 0, 2 * i + 101, std::string("\0\0\0\0\x10", 5)); }},
      {"rapid reset", "flood: RST_STREAM",
       [](int i) {
         const int32_t id = 2 * i + 1;
         return RequestHeaders(id, false) + Frame(NGHTTP2_RST_STREAM, 0, id, std::string("\0\0\0\x08", 4));
       }},
      {"window update", "flood: WINDOW_UPDATE",
       [](int) { return Frame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string("\0\0\0\x01", 4)); }},
      {"empty data", "flood: empty DATA",
       [](int i) { return (i == 0 ? RequestHeaders(1, false) : std::string()) + Frame(NGHTTP2_DATA, 0, 1, ""); }},
  };
  return cases;
}

TEST_P(FloodTest, EndsWithEnhanceYourCalm) {
  const FloodCase& c = FloodCases()[GetParam()];
  SCOPED_TRACE(c.name);
  Recorder rec;
  SessionSettings settings;
  settings.flood.max_ping = settings.flood.max_settings = settings.flood.max_priority = 10;
  settings.flood.max_rst_stream = settings.flood.max_window_update = settings.flood.max_empty_data = 10;
  int64_t now = 5000;
  Session server(&rec, settings, [&] { return now; });
  std::string bytes = ClientPreface();
  ASSERT_TRUE(server.Receive(bytes.data(), bytes.size()));
  // Ten in a window pass; ten more in the next window pass too.
  for (int window = 0; window < 2; ++window) {
    bytes.clear();
    for (int i = 0; i < 9; ++i) bytes += c.frame(window * 20 + i);
    ASSERT_TRUE(server.Receive(bytes.data(), bytes.size())) << server.failure();
    Drain(server);
    now += 1000;
  }
  bytes.clear();
  for (int i = 0; i < 11; ++i) bytes += c.frame(40 + i);
  EXPECT_FALSE(server.Receive(bytes.data(), bytes.size()));
  EXPECT_EQ(server.failure(), c.failure);
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_FALSE(server.WantsRead());
  EXPECT_EQ(server.open_streams(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, FloodTest, ::testing::Range(0, 6));

TEST(SessionLimitsTest, ContinuationFloodEndsTheConnection) {
  Recorder rec;
  Session server(&rec, {});
  const std::string block = LiteralBlock(Req("GET", "/"));
  std::string bytes = ClientPreface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, block);
  for (int i = 0; i < 20; ++i) bytes += Frame(NGHTTP2_CONTINUATION, 0, 1, "");
  EXPECT_FALSE(server.Receive(bytes.data(), bytes.size()));
  EXPECT_EQ(server.failure(), "flood: CONTINUATION");
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, NGHTTP2_ENHANCE_YOUR_CALM);
}

// The cap counts CONTINUATION frames, not reads: a block of the most
// frames allowed is a request however its bytes are split (Debian's
// nghttp2 1.52 alone counted a frame header split across reads once per
// read, and cut such a client off), and one frame more is the flood.
TEST(SessionLimitsTest, ContinuationsAreCountedPerFrameWhateverTheSplit) {
  const std::string block = LiteralBlock(Req("GET", "/"));
  const size_t max = FloodLimits().max_continuations;
  for (size_t frames : {max, max + 1}) {
    SCOPED_TRACE(frames);
    // The block cut into a HEADERS and `frames` CONTINUATIONs.
    const size_t piece = block.size() / (frames + 1);
    std::string bytes =
        ClientPreface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, block.substr(0, piece));
    for (size_t i = 1; i <= frames; ++i) {
      const bool last = i == frames;
      bytes += Frame(NGHTTP2_CONTINUATION, last ? NGHTTP2_FLAG_END_HEADERS : 0, 1,
                     last ? block.substr(i * piece) : block.substr(i * piece, piece));
    }
    Recorder rec;
    Session server(&rec, {});
    bool ok = true;
    for (size_t i = 0; i < bytes.size() && ok; ++i) ok = server.Receive(&bytes[i], 1);
    if (frames == max) {
      EXPECT_TRUE(ok) << server.failure();
      EXPECT_FALSE(rec.log.empty()) << "the request arrives";
    } else {
      EXPECT_FALSE(ok);
      EXPECT_EQ(server.failure(), "flood: CONTINUATION");
    }
  }
}

TEST(SessionLimitsTest, HeaderBlockFarOverTheLimitEndsTheConnection) {
  Recorder rec;
  SessionSettings settings;
  settings.max_header_list_size = 1024;
  Session server(&rec, settings);
  // One big field into the dynamic table, then many one-byte references to
  // it: decoding expands them far past the limit.
  std::string block;
  block.push_back(0x40);  // literal with incremental indexing, new name
  block.push_back(0x01);
  block += "x";
  block.push_back(0x7f);  // value length 127 + 873 = 1000 (HPACK integer)
  block.push_back(static_cast<char>(0xe9));
  block.push_back(0x06);
  block += std::string(1000, 'v');
  for (int i = 0; i < 10; ++i) block.push_back(static_cast<char>(0x80 | 62));  // indexed: dynamic entry 62
  std::string bytes = ClientPreface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS,
                                              1, LiteralBlock(Req("GET", "/")) + block);
  EXPECT_FALSE(server.Receive(bytes.data(), bytes.size()));
  EXPECT_EQ(server.failure(), "flood: CONTINUATION");
  EXPECT_TRUE(rec.log.empty());
}

TEST(SessionLimitsTest, UnreadAcksEndTheConnection) {
  Recorder rec;
  SessionSettings settings;
  settings.flood.max_ping = 1000;
  settings.flood.max_outbound_ack = 20;
  Session server(&rec, settings, [] { return int64_t{0}; });
  std::string bytes = ClientPreface();
  for (int i = 0; i < 50; ++i) bytes += Frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  // Nothing is sent in between: the acks pile up.
  EXPECT_FALSE(server.Receive(bytes.data(), bytes.size()));
  EXPECT_EQ(server.failure(), "flood: outbound control frames");
}

// ---- Frames on streams the client has closed, on stream ids it skipped,
// and PRIORITY (RFC 9113 5.1, 5.1.1, 6.3; RFC 7540 5.3.1): h2spec's 5.1/5,
// 5.1/6, 5.1/8, 5.1/9, 5.1/11, 5.1/12, 5.1.1/2, 5.3.1/2, 6.1/2 and 6.3/1.

std::string Data(int32_t id, bool end_stream) {
  return Frame(NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0, id, "test");
}

std::string Trailers(int32_t id) {
  return Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
               LiteralBlock({{"x-trailer", "1"}}));
}

std::string Reset(int32_t id) { return Frame(NGHTTP2_RST_STREAM, 0, id, std::string("\0\0\0\x08", 4)); }

std::string Priority(int32_t id, uint32_t depends_on) {
  std::string payload;
  for (int shift = 24; shift >= 0; shift -= 8) payload.push_back(static_cast<char>(depends_on >> shift));
  payload.push_back(15);  // weight 16
  return Frame(NGHTTP2_PRIORITY, 0, id, payload);
}

struct StreamRuleCase {
  const char* name;
  std::string first;  // after the preface; then the server's answers are sent
  std::string then;
  int64_t goaway;      // the GOAWAY's error code; -1: none, the connection lives
  bool reset = false;  // the server resets each request instead of answering 204
};

const std::vector<StreamRuleCase>& StreamRuleCases() {
  static const std::vector<StreamRuleCase> cases = {
      // Connection errors (nghttp2 itself finds only the first: the stream
      // is still open there).
      {"DATA after END_STREAM, before the answer", "", RequestHeaders(1, true) + Data(1, true),
       NGHTTP2_STREAM_CLOSED},
      {"DATA after END_STREAM, after the answer", RequestHeaders(1, true), Data(1, true), NGHTTP2_STREAM_CLOSED},
      {"HEADERS after END_STREAM, after the answer", RequestHeaders(1, true), RequestHeaders(1, true),
       NGHTTP2_STREAM_CLOSED},
      {"DATA after RST_STREAM", RequestHeaders(1, false) + Reset(1), Data(1, true), NGHTTP2_STREAM_CLOSED},
      {"HEADERS after RST_STREAM", RequestHeaders(1, false) + Reset(1), RequestHeaders(1, true),
       NGHTTP2_STREAM_CLOSED},
      {"trailers after RST_STREAM", RequestHeaders(1, false) + Reset(1), Trailers(1), NGHTTP2_STREAM_CLOSED},
      {"HEADERS on a lower stream id never opened", RequestHeaders(5, true), RequestHeaders(3, true),
       NGHTTP2_PROTOCOL_ERROR},
      {"DATA on a lower stream id never opened", RequestHeaders(5, false), Data(3, true), NGHTTP2_PROTOCOL_ERROR},
      {"PRIORITY on stream 0", "", Priority(0, 1), NGHTTP2_PROTOCOL_ERROR},
      {"PRIORITY depending on its own stream", "", Priority(3, 3), NGHTTP2_PROTOCOL_ERROR},
      {"PRIORITY depending on its own open stream", RequestHeaders(1, false), Priority(1, 0x80000001u),
       NGHTTP2_PROTOCOL_ERROR},
      // What a client may send: frames that crossed our RST_STREAM (RFC
      // 9113 5.1, "closed"), the frames allowed on a closed stream, PRIORITY
      // anywhere else, and ids too old to be remembered.
      {"DATA and trailers after we reset", RequestHeaders(1, false), Data(1, false) + Trailers(1), -1, true},
      {"DATA after our answer ended the stream", RequestHeaders(1, false), Data(1, false) + Data(1, true), -1},
      {"WINDOW_UPDATE, PRIORITY, RST_STREAM after both ends",
       RequestHeaders(1, true),
       Frame(NGHTTP2_WINDOW_UPDATE, 0, 1, std::string("\0\0\0\x01", 4)) + Priority(1, 0) + Reset(1), -1},
      {"PRIORITY on an idle stream, then its request", "", Priority(7, 0) + RequestHeaders(7, true), -1},
      {"PRIORITY on a stream id never opened", RequestHeaders(5, true), Priority(3, 5), -1},
      {"a stream older than the last 512", RequestHeaders(1, true) + RequestHeaders(2001, true), Data(1, true), -1},
  };
  return cases;
}

// {case, whether each byte is a Receive of its own}
class StreamRuleTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(StreamRuleTest, ConnectionErrorOrNot) {
  const StreamRuleCase& c = StreamRuleCases()[std::get<0>(GetParam())];
  const bool bytewise = std::get<1>(GetParam());
  SCOPED_TRACE(c.name);
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead&) {
    if (c.reset) {
      server.ResetStream(id, NGHTTP2_CANCEL);
    } else {
      ASSERT_TRUE(server.SubmitResponse(id, 204, {}, false));
    }
  };
  auto feed = [&](const std::string& bytes) {
    bool ok = true;
    if (!bytewise) return server.Receive(bytes.data(), bytes.size());
    for (size_t i = 0; i < bytes.size() && ok; ++i) ok = server.Receive(bytes.data() + i, 1);
    return ok;
  };
  ASSERT_TRUE(feed(ClientPreface() + c.first)) << server.failure();
  Drain(server);
  const bool ok = feed(c.then);
  const std::vector<RawFrame> frames = ParseFrames(Drain(server));
  EXPECT_EQ(Goaway(frames).first, c.goaway);
  if (c.goaway < 0) {
    EXPECT_TRUE(ok);
    EXPECT_TRUE(server.WantsRead());
    EXPECT_EQ(server.failure(), "");
  } else {
    EXPECT_FALSE(server.WantsRead());
    EXPECT_NE(server.failure(), "");
    EXPECT_EQ(server.open_streams(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StreamRuleTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(StreamRuleCases().size())),
                                            ::testing::Bool()));

// After an h2c Upgrade, stream 1 carried the HTTP/1 request: the client
// has ended it, and DATA on it, even once answered, is the client's error.
TEST(SessionLimitsTest, DataOnTheUpgradedStreamEndsTheConnection) {
  Recorder rec;
  Session server(&rec, {});
  ASSERT_TRUE(server.Upgrade("", false));
  ASSERT_TRUE(server.SubmitResponse(1, 204, {}, false));
  const std::string preface = ClientPreface();
  ASSERT_TRUE(server.Receive(preface.data(), preface.size()));
  Drain(server);
  EXPECT_EQ(server.open_streams(), 0u);
  const std::string data = Data(1, true);
  server.Receive(data.data(), data.size());
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, NGHTTP2_STREAM_CLOSED);
  EXPECT_FALSE(server.WantsRead());
}

TEST(SessionLimitsTest, TerminateFromOnStreamClosed) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_closed = [&](int32_t, uint32_t) { server.Terminate(NGHTTP2_INTERNAL_ERROR); };
  TestClient client;
  client.Request(Req("GET", "/1"));
  client.Request(Req("GET", "/2"));
  client.Request(Req("GET", "/3"));
  ASSERT_TRUE(Pump(server, client));
  // Outside Receive/Send the streams close at once, and the first one's
  // handler terminates again from inside that loop.
  server.Terminate(NGHTTP2_CANCEL);
  EXPECT_EQ(server.open_streams(), 0u);
  for (int32_t id : {1, 3, 5}) EXPECT_TRUE(rec.requests[id].closed) << id;
  EXPECT_EQ(std::count_if(rec.log.begin(), rec.log.end(), [](const std::string& l) { return l.rfind("closed", 0) == 0; }),
            3);
  EXPECT_EQ(server.failure(), "terminated");
}

TEST(SessionLimitsTest, UnsolicitedPingAckDoesNotDrain) {
  Recorder rec;
  Session server(&rec, {});
  // The opaque data Shutdown's PING carries, acked without any Shutdown.
  const std::string bytes = ClientPreface() + Frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, "shutdown");
  ASSERT_TRUE(server.Receive(bytes.data(), bytes.size()));
  EXPECT_EQ(Goaway(ParseFrames(Drain(server))).first, -1);
  EXPECT_TRUE(server.WantsRead());
}

TEST(SessionLimitsTest, TerminateFromAHandlerClosesEveryStream) {
  Recorder rec;
  Session server(&rec, {});
  rec.on_request = [&](int32_t id, const RequestHead&) {
    if (id == 3) server.Terminate(NGHTTP2_ENHANCE_YOUR_CALM);
  };
  TestClient client;
  client.Request(Req("GET", "/1"));
  client.Request(Req("GET", "/2"));
  EXPECT_FALSE(Pump(server, client));
  EXPECT_EQ(server.failure(), "terminated");
  EXPECT_TRUE(client.goaway);
  EXPECT_EQ(client.goaway_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(rec.requests[1].close_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(rec.requests[3].close_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(server.open_streams(), 0u);
}

}  // namespace
}  // namespace uring_http::http2
