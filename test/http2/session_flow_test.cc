// Bytes and windows: request bodies reopen windows only on Consume; Send
// gives the same bytes whatever its cap; Receive gives the same events
// whatever the split of its input.
#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/http2/session.h"
#include "test/http2/h2_test_peer.h"

namespace uring_http::http2 {
namespace {

using testing::Drain;
using testing::Fields;
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

int CountWindowUpdates(const std::string& server_output, int32_t stream_id) {
  int n = 0;
  for (const RawFrame& f : ParseFrames(server_output)) n += f.type == NGHTTP2_WINDOW_UPDATE && f.stream_id == stream_id;
  return n;
}

TEST(SessionFlowTest, UploadWindowsReopenOnlyOnConsume) {
  Recorder rec;
  SessionSettings settings;
  settings.initial_window_size = 16384;
  Session server(&rec, settings);
  TestClient client;
  ASSERT_TRUE(Pump(server, client));  // the client learns the window first
  const std::string body(40000, 'u');
  client.Request(Req("POST", "/up"), &body);
  ASSERT_TRUE(Pump(server, client));
  // The stream's window is all the client may send until we consume.
  EXPECT_EQ(rec.requests[1].body.size(), 16384u);
  EXPECT_FALSE(rec.requests[1].ended);
  std::string out = Drain(server);
  EXPECT_EQ(CountWindowUpdates(out, 1), 0);
  while (!rec.requests[1].ended) {
    const size_t before = rec.requests[1].body.size();
    server.Consume(1, before);  // more than outstanding is clamped
    const std::string wire = Drain(server);
    ASSERT_GE(CountWindowUpdates(wire, 1), 1);
    client.Input(wire);
    ASSERT_TRUE(Pump(server, client));
    ASSERT_GT(rec.requests[1].body.size(), before);
  }
  EXPECT_EQ(rec.requests[1].body, body);
}

TEST(SessionFlowTest, ConnectionWindowComesBackWhenAStreamCloses) {
  Recorder rec;
  SessionSettings settings;
  settings.initial_window_size = 65535;
  settings.connection_window_size = 65535;  // no initial WINDOW_UPDATE: the stream uses it all
  Session server(&rec, settings);
  TestClient client;
  const std::string body(65535, 'u');
  client.Request(Req("POST", "/a"), &body);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(rec.requests[1].ended);
  // Never consumed; the handler resets it. The connection window must not
  // stay spent, or the next upload would stall.
  server.ResetStream(1, NGHTTP2_CANCEL);
  ASSERT_TRUE(Pump(server, client));
  client.Request(Req("POST", "/b"), &body);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(rec.requests[3].ended);
  EXPECT_EQ(rec.requests[3].body.size(), body.size());
}

TEST(SessionFlowTest, RefusedRequestBodyDoesNotStallTheConnection) {
  Recorder rec;
  SessionSettings settings;
  settings.max_header_list_size = 512;
  settings.connection_window_size = 65535;
  Session server(&rec, settings);
  TestClient client;
  const std::string body(60000, 'u');
  client.Request(Req("POST", "/", {{"x-big", std::string(600, 'v')}}), &body);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(rec.refused[1], 431);
  // Were the refused body's 60,000 bytes not given back, the next upload
  // would stop at the 5,535 left of the connection window.
  client.Request(Req("POST", "/next"), &body);
  ASSERT_TRUE(Pump(server, client));
  for (int i = 0; i < 10 && !rec.requests[3].ended; ++i) {
    server.Consume(3, rec.requests[3].body.size());
    ASSERT_TRUE(Pump(server, client));
  }
  EXPECT_EQ(rec.requests[3].body.size(), body.size());
}

// An answer whose bytes all went out at the edge of the client's window
// still has its END_STREAM to send, and an empty DATA frame waits for an
// open window as any other: the connection must see the answer as held by
// the client (its send timeout runs), not as done (it would arm no timer).
TEST(SessionFlowTest, EndWaitingForAClosedWindowIsPending) {
  Recorder rec;
  Session server(&rec, {});
  TestClient client;
  client.auto_consume = false;
  const nghttp2_settings_entry small = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 4};
  ASSERT_EQ(nghttp2_submit_settings(client.raw(), NGHTTP2_FLAG_NONE, &small, 1), 0);
  client.Request(Req("GET", "/a"));
  ASSERT_TRUE(Pump(server, client));
  ASSERT_TRUE(server.SubmitResponse(1, 200, http::HeaderTable(), /*has_body=*/true));
  server.WriteData(1, "abcd");
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(client.streams[1].body, "abcd");
  EXPECT_FALSE(server.AnswerPending(1)) << "a stream whose producer has nothing yet waits for us";
  ASSERT_TRUE(server.EndData(1));
  ASSERT_TRUE(Pump(server, client));
  EXPECT_EQ(server.QueuedData(1), 0u);
  EXPECT_TRUE(server.AnswerPending(1));
  EXPECT_FALSE(client.streams[1].closed);
  client.Consume(1, 4);
  ASSERT_TRUE(Pump(server, client));
  EXPECT_TRUE(client.streams[1].closed);
  EXPECT_FALSE(server.AnswerPending(1));
}

// One whole exchange: two requests (one with a body and trailers), and
// responses with bodies (one with trailers) written from the events.
struct Exchange {
  std::string server_output;
  std::vector<std::string> log;
  std::string client_view;  // what the client got, in a comparable form
};

Exchange RunExchange(size_t cap) {
  Exchange ex;
  Recorder rec;
  Session server(&rec, {});
  rec.on_end = [&](int32_t id) {
    http::HeaderTable fields;
    fields.Add("Content-Type", "text/plain");
    server.SubmitResponse(id, 200, fields, true);
    server.WriteData(id, std::string(30000 + id, static_cast<char>('a' + id)));
    http::HeaderTable trailers;
    trailers.Add("x-sum", std::to_string(id));
    server.EndData(id, id == 3 ? &trailers : nullptr);
  };
  TestClient client;
  const std::string body(20000, 'p');
  const Fields trailers = {{"x-t", "1"}};
  client.Request(Req("GET", "/one", {{"accept", "*/*"}}));
  client.Request(Req("POST", "/two", {{"content-type", "text/plain"}}), &body, &trailers);
  for (int round = 0; round < 100; ++round) {
    const std::string up = client.Output();
    if (!up.empty()) server.Receive(up.data(), up.size());
    const std::string down = Drain(server, cap);
    ex.server_output += down;
    if (!down.empty()) client.Input(down);
    if (up.empty() && down.empty()) break;
  }
  // OnStreamWritable depends on where Send stopped (a stream whose last
  // bytes and END_STREAM go out in one call closes first and gets none).
  for (const std::string& line : rec.log) {
    if (line.rfind("writable", 0) != 0) ex.log.push_back(line);
  }
  for (const auto& [id, s] : client.streams) {
    ex.client_view += std::to_string(id) + ":" + std::to_string(s.header_blocks.size()) + ":" +
                      std::to_string(s.body.size()) + ":" + std::to_string(s.closed) + ";";
  }
  return ex;
}

TEST(SessionFlowTest, SendIsByteExactWhateverTheCap) {
  const Exchange whole = RunExchange(1 << 20);
  EXPECT_EQ(whole.client_view, "1:1:30001:1;3:2:30003:1;");
  for (size_t cap : {size_t{1}, size_t{7}, size_t{9}, size_t{1000}, size_t{16384}}) {
    SCOPED_TRACE(cap);
    const Exchange ex = RunExchange(cap);
    EXPECT_EQ(ex.server_output, whole.server_output);
    EXPECT_EQ(ex.log, whole.log);
    EXPECT_EQ(ex.client_view, whole.client_view);
  }
}

TEST(SessionFlowTest, SendRespectsCap) {
  Recorder rec;
  Session server(&rec, {});
  char buf[5];
  std::string out;
  for (;;) {
    const size_t n = server.Send(buf, sizeof(buf));
    ASSERT_LE(n, sizeof(buf));
    if (n == 0) break;
    out.append(buf, n);
  }
  EXPECT_EQ(ParseFrames(out).size(), 2u);
  EXPECT_FALSE(server.WantsWrite());
}

// What a client sends for a GET, a POST with a body and trailers, and a
// stream it resets, as one byte string.
std::string ClientWire() {
  TestClient client;
  const std::string body(3000, 'p');
  const Fields trailers = {{"x-t", "1"}};
  client.Request(Req("GET", "/a", {{"cookie", "a=1"}, {"cookie", "b=2"}}));
  client.Request(Req("POST", "/b", {{"content-type", "text/plain"}}), &body, &trailers);
  const int32_t third = client.Request(Req("GET", "/c"));
  std::string wire = client.Output();
  nghttp2_submit_rst_stream(client.raw(), NGHTTP2_FLAG_NONE, third, NGHTTP2_CANCEL);
  nghttp2_submit_ping(client.raw(), NGHTTP2_FLAG_NONE, nullptr);
  wire += client.Output();
  return wire;
}

std::vector<std::string> Feed(const std::string& wire, const std::vector<size_t>& cuts) {
  Recorder rec;
  Session server(&rec, {});
  size_t at = 0;
  for (size_t cut : cuts) {
    EXPECT_TRUE(server.Receive(wire.data() + at, cut - at));
    Drain(server);
    at = cut;
  }
  EXPECT_TRUE(server.Receive(wire.data() + at, wire.size() - at));
  Drain(server);
  // Stream bodies arrive in pieces that depend on the cuts: join them.
  std::vector<std::string> joined;
  for (const std::string& line : rec.log) {
    if (line.rfind("data ", 0) == 0 && !joined.empty() && joined.back() == "data") continue;
    joined.push_back(line.rfind("data ", 0) == 0 ? "data" : line);
  }
  joined.push_back("body " + std::to_string(rec.requests[3].body.size()));
  return joined;
}

TEST(SessionFlowTest, SameEventsAtEverySplit) {
  const std::string wire = ClientWire();
  const std::vector<std::string> whole = Feed(wire, {});
  EXPECT_EQ(whole, (std::vector<std::string>{"request 1 GET https example.com /a", "end 1",
                                             "request 3 POST https example.com /b",
                                             "request 5 GET https example.com /c", "end 5", "data", "trailers 3 1",
                                             "end 3", "closed 5 8", "body 3000"}));
  for (size_t cut = 1; cut < wire.size(); ++cut) {
    ASSERT_EQ(Feed(wire, {cut}), whole) << "cut at " << cut;
  }
  std::vector<size_t> every;
  for (size_t cut = 1; cut < wire.size(); ++cut) every.push_back(cut);
  EXPECT_EQ(Feed(wire, every), whole);
}

}  // namespace
}  // namespace uring_http::http2
