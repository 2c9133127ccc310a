// Request bodies that fail, driven event by event without a kernel: the
// server's own answer (400, 413, 408) whatever a streamed route's handler
// did, the reason ReadBody() gives the handler, nothing for a client that
// is gone; when a streamed SLOW body reaches a worker (with its first
// bytes, not its head); and the minimum body rate (--body-min-rate).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/http1/connection.h"
#include "test/http1/connection_harness.h"

namespace uring_http::http1 {
namespace {

using http::BodyError;
using testing::Harness;

std::string Head(std::string_view path, std::string_view framing, std::string_view extra = "") {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" + std::string(framing) +
         "\r\n" + std::string(extra) + "\r\n";
}
const char* const kChunked = "Transfer-Encoding: chunked";
std::string Length(size_t n) { return "Content-Length: " + std::to_string(n); }

// What the last handler's ReadBody() failed with (set on its worker).
std::atomic<BodyError> g_reason{BodyError::kNone};
std::atomic<int> g_aborts{0};

// Reads its body to the end; on -1 it records why and returns without
// answering, as the README tells a handler to. `write_after`: it tries to
// stream an answer after the failure all the same.
void ReadAll(const http::Request& req, http::Response& resp, bool write_after) {
  char buf[4096];
  uint64_t total = 0;
  long n;
  while ((n = req.ReadBody(buf, sizeof buf)) > 0) total += static_cast<uint64_t>(n);
  if (n < 0) {
    g_reason.store(req.body_error());
    if (write_after) (void)resp.Write("the handler's own answer");
    return;
  }
  resp.set_body(std::to_string(total));
}

class Sink : public router::BodySink {
 public:
  void OnData(std::string_view piece) override { bytes_ += piece.size(); }
  void OnEnd(const http::Request&, http::Response& resp) override {
    resp.set_body(std::to_string(bytes_));
  }
  void OnAbort() override { g_aborts.fetch_add(1); }

 private:
  uint64_t bytes_ = 0;
};

router::Router Routes() {
  router::Router r;
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = router::kUnlimitedBody;
  router::RouteOptions limited = streamed;
  limited.max_body_bytes = 1000;
  (void)r.Slow("POST", "/sink", [](const http::Request& q, http::Response& p) { ReadAll(q, p, false); },
               streamed);
  (void)r.Slow("POST", "/sink-limited",
               [](const http::Request& q, http::Response& p) { ReadAll(q, p, false); }, limited);
  (void)r.Slow("POST", "/sink-writes",
               [](const http::Request& q, http::Response& p) { ReadAll(q, p, true); }, streamed);
  (void)r.FastStream("POST", "/count", [](const http::Request&) { return std::make_unique<Sink>(); });
  (void)r.FastStream("POST", "/count-limited",
                     [](const http::Request&) { return std::make_unique<Sink>(); }, 1000);
  (void)r.Fast("POST", "/echo", [](const http::Request& q, http::Response& p) {
    p.set_body(q.body);
  });
  (void)r.Slow("GET", "/slow", [](const http::Request&, http::Response& p) {
    p.set_static_body("slow");
  });
  return r;
}

exchange::ConnectionConfig Config() {
  exchange::ConnectionConfig c;
  c.limits.max_body_bytes = 100000;
  c.request_pipe_bytes = 64 * 1024;
  c.body_min_rate = 0;  // the rate has tests of its own
  return c;
}

void ExpectClean(const Harness& h) {
  EXPECT_TRUE(h.host.violations.empty()) << h.host.violations.front();
}

// Runs every task dispatched so far (their bodies have failed or ended:
// ReadBody() does not block), then sends everything.
void Finish(Harness& h) {
  while (!h.host.tasks.empty()) h.RunTask();
  h.Flush();
}

struct Broken {
  const char* name;
  std::string body;  // after the head
  int status;
};

std::vector<Broken> BrokenChunkedBodies() {
  return {
      {"bad size line", "zz\r\n", 400},
      {"2^64 size", "10000000000000000\r\nx\r\n", 400},
      {"bad chunk CRLF", "5\r\nhelloXY", 400},
      {"bare LF after the size", "5\nhello\r\n0\r\n\r\n", 400},
      {"bare CR after the size", "5\rhello\r\n0\r\n\r\n", 400},
      {"bare LF after the data", "5\r\nhello\n0\r\n\r\n", 400},
      {"bad extension", "5;=x\r\nhello\r\n0\r\n\r\n", 400},
      {"bad trailer", "0\r\nX : y\r\n\r\n", 400},
      {"trailer too large", "0\r\nX: " + std::string(20000, 'v') + "\r\n\r\n", 431},
  };
}

// Item 2: a broken chunked body to a streamed route is the server's to
// answer, with close, whatever the handler did after ReadBody() said -1:
// before its first byte (the worker never sees it) or after some of it.
TEST(ConnectionBodyTest, BrokenChunkedBodiesToStreamedRoutesAreAnsweredByTheServer) {
  for (const char* path : {"/sink", "/count", "/sink-writes"}) {
    for (const bool data_first : {false, true}) {
      for (const Broken& c : BrokenChunkedBodies()) {
        SCOPED_TRACE(std::string(path) + (data_first ? " after data: " : ": ") + c.name);
        g_reason.store(BodyError::kNone);
        Harness h(Routes(), Config());
        h.Open();
        h.Recv(Head(path, kChunked) + (data_first ? "3\r\nabc\r\n" : "") + c.body);
        Finish(h);
        auto replies = h.Replies();
        ASSERT_EQ(replies.size(), 1u) << h.wire;
        EXPECT_EQ(replies[0].status, c.status);
        EXPECT_EQ(replies[0].Header("connection"), "close");
        EXPECT_FALSE(replies[0].chunked);
        EXPECT_TRUE(h.host.shutdown_pending || h.host.closed);
        if (std::string_view(path) != "/count" && data_first) {
          EXPECT_EQ(g_reason.load(), BodyError::kMalformed);
        }
        ExpectClean(h);
      }
    }
  }
}

// Item 2: a chunked body past a streamed route's max_body_bytes is a 413.
TEST(ConnectionBodyTest, ChunkedBodyPastAStreamedRoutesLimitIs413) {
  for (const char* path : {"/sink-limited", "/count-limited"}) {
    SCOPED_TRACE(path);
    g_reason.store(BodyError::kNone);
    Harness h(Routes(), Config());
    h.Open();
    const std::string piece(600, 'l');
    h.Recv(Head(path, kChunked) + "258\r\n" + piece + "\r\n");
    h.Recv("258\r\n" + piece + "\r\n0\r\n\r\n");
    Finish(h);
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << h.wire;
    EXPECT_EQ(replies[0].status, 413);
    EXPECT_EQ(replies[0].Header("connection"), "close");
    if (std::string_view(path) == "/sink-limited") {
      EXPECT_EQ(g_reason.load(), BodyError::kTooLarge);
    }
    ExpectClean(h);
  }
}

// Item 2: a Content-Length body the client ends short (its FIN) is a
// malformed request: 400 to a client that may still read (half-closed),
// for every kind of route.
TEST(ConnectionBodyTest, ContentLengthBodyCutShortIsAnswered400) {
  for (const char* path : {"/sink", "/count", "/echo", "/sink-writes"}) {
    SCOPED_TRACE(path);
    g_reason.store(BodyError::kNone);
    const int aborts = g_aborts.load();
    Harness h(Routes(), Config());
    h.Open();
    h.Recv(Head(path, Length(100)) + "only ten b");
    h.RecvEnd(0);
    Finish(h);
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << h.wire;
    EXPECT_EQ(replies[0].status, 400);
    EXPECT_EQ(replies[0].Header("connection"), "close");
    EXPECT_TRUE(h.host.closed);
    if (std::string_view(path) == "/sink") {
      EXPECT_EQ(g_reason.load(), BodyError::kMalformed);
    }
    if (std::string_view(path) == "/count") {
      EXPECT_EQ(g_aborts.load(), aborts + 1);
    }
    ExpectClean(h);
  }
}

// Item 2: a client that resets mid-body gets nothing (there is nobody to
// answer); the handler's ReadBody() says the client is gone, and the
// stream is counted.
TEST(ConnectionBodyTest, ClientGoneMidBodyGetsNothingAndIsCounted) {
  g_reason.store(BodyError::kNone);
  Harness h(Routes(), Config());
  h.Open();
  h.Recv(Head("/sink", Length(100000)) + std::string(3000, 'g'));
  ASSERT_EQ(h.host.tasks.size(), 1u);
  h.StartTaskThread();  // blocks in ReadBody() for the rest
  h.RecvEnd(-ECONNRESET);
  ASSERT_TRUE(h.PumpUntilDone());
  h.CloseDone();
  EXPECT_EQ(h.wire, "");
  EXPECT_EQ(g_reason.load(), BodyError::kClientGone);
  EXPECT_EQ(h.stats.aborted_streams.Get(), 1u);
  EXPECT_TRUE(h.conn.Freeable());
  ExpectClean(h);
}

// Item 2: a body that stops arriving for --body-timeout is a 408, also
// while a worker's handler waits in ReadBody(), which says it timed out.
TEST(ConnectionBodyTest, BodyTimeoutIsA408WithTheReason) {
  for (const char* path : {"/sink", "/count", "/sink-writes"}) {
    SCOPED_TRACE(path);
    g_reason.store(BodyError::kNone);
    exchange::ConnectionConfig config = Config();
    config.body_timeout_ms = 1000;  // 10 ticks
    Harness h(Routes(), config);
    h.Open();
    h.Recv(Head(path, Length(100000)) + std::string(3000, 't'));
    const bool slow = !h.host.tasks.empty();
    if (slow) h.StartTaskThread();
    h.Tick(12);
    if (slow) {
      ASSERT_TRUE(h.PumpUntilDone());
    }
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << h.wire;
    EXPECT_EQ(replies[0].status, 408);
    EXPECT_EQ(replies[0].Header("connection"), "close");
    if (slow) {
      EXPECT_EQ(g_reason.load(), BodyError::kTimedOut);
    }
    EXPECT_EQ(h.stats.timeouts.Get(), 1u);
    ExpectClean(h);
  }
}

// Item 8: a streamed SLOW body goes to a worker with its first bytes, not
// with its head: a client that sends only the head holds no worker.
TEST(ConnectionBodyTest, StreamedSlowBodyIsDispatchedWithItsFirstBytes) {
  {
    Harness h(Routes(), Config());
    h.Open();
    h.Recv(Head("/sink", Length(10)));
    EXPECT_TRUE(h.host.tasks.empty()) << "dispatched with the head alone";
    EXPECT_EQ(h.stats.slow_dispatched.Get(), 0u);
    h.Recv("0123");
    ASSERT_EQ(h.host.tasks.size(), 1u);
    h.Recv("456789");
    Finish(h);
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].body, "10");
    ExpectClean(h);
  }
  {
    // Chunked: a size line is not body bytes yet; an empty body ends at once.
    Harness h(Routes(), Config());
    h.Open();
    h.Recv(Head("/sink", kChunked) + "3\r\n");
    EXPECT_TRUE(h.host.tasks.empty());
    h.Recv("abc\r\n0\r\n\r\n" + Head("/sink", kChunked) + "0\r\n\r\n");
    Finish(h);
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_EQ(replies[0].body, "3");
    EXPECT_EQ(replies[1].body, "0");
    EXPECT_TRUE(h.conn.open());
    ExpectClean(h);
  }
  {
    // The queue refuses it when the bytes come: 503, and the body (not
    // read) ends the connection.
    Harness h(Routes(), Config());
    h.Open();
    h.host.refuse_tasks = true;
    h.Recv(Head("/sink", Length(10)));
    h.Recv("01234");
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].status, 503);
    EXPECT_EQ(replies[0].Header("connection"), "close");
    ExpectClean(h);
  }
}

// Item 8: with Expect: 100-continue the client sends nothing until told:
// the ring answers 100 Continue at once, and the worker gets the request
// with the first bytes that follow.
TEST(ConnectionBodyTest, ExpectContinueIsAnsweredByTheRingBeforeTheWorkerRuns) {
  Harness h(Routes(), Config());
  h.Open();
  h.Recv(Head("/sink", Length(4), "Expect: 100-continue\r\n"));
  h.Flush();
  EXPECT_EQ(h.wire, "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_TRUE(h.host.tasks.empty());
  h.Recv("data");
  ASSERT_EQ(h.host.tasks.size(), 1u);
  Finish(h);
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[1].body, "4");
  EXPECT_TRUE(h.conn.open());
  ExpectClean(h);
}

// Item 2: the client's FIN ends the body short while the handler waits in
// ReadBody() on its worker: it is woken with kMalformed, its late Write()
// is refused, and the server answers 400. (A failure after the handler's
// head went out cuts the stream instead: connection_test.cc,
// StreamedAnswerToABrokenBodyIsCutShort.)
TEST(ConnectionBodyTest, BodyEndedShortUnderAWaitingHandlerIsAnswered400) {
  g_reason.store(BodyError::kNone);
  Harness h(Routes(), Config());
  h.Open();
  h.Recv(Head("/sink-writes", Length(100000)) + "abc");
  ASSERT_EQ(h.host.tasks.size(), 1u);
  h.StartTaskThread();
  h.RecvEnd(0);
  ASSERT_TRUE(h.PumpUntilDone());
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u) << h.wire;
  EXPECT_EQ(replies[0].status, 400);
  EXPECT_FALSE(replies[0].chunked);
  EXPECT_EQ(g_reason.load(), BodyError::kMalformed);
  ExpectClean(h);
}

// ---------------------------------------------------------------- the rate

exchange::ConnectionConfig RateConfig() {
  exchange::ConnectionConfig c = Config();
  c.body_min_rate = 1000;          // bytes a second
  c.body_rate_window_ms = 1000;    // 10 ticks: 1000 bytes a window
  c.body_timeout_ms = 60'000;      // never the body timeout here
  return c;
}

// Item 8: a body trickling below --body-min-rate is cut with 408 once a
// window ends short, however often a byte arrives; one above it is not.
TEST(ConnectionBodyTest, BodyBelowTheMinimumRateIs408) {
  for (const char* path : {"/echo", "/count", "/sink"}) {
    SCOPED_TRACE(path);
    g_reason.store(BodyError::kNone);
    Harness h(Routes(), RateConfig());
    h.Open();
    h.Recv(Head(path, Length(50000)) + "x");
    const bool slow = !h.host.tasks.empty();
    if (slow) h.StartTaskThread();
    // A byte every 2 ticks: 5 bytes a window, each re-arming the body
    // timeout, for at most 100 windows.
    for (int i = 0; i < 500 && h.conn.open() && h.host.recv_armed && h.wire.empty(); ++i) {
      h.Tick(2);
      if (h.host.recv_armed) h.Recv("x");
      h.Flush();
    }
    if (slow) {
      ASSERT_TRUE(h.PumpUntilDone());
    }
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << "never cut off";
    EXPECT_EQ(replies[0].status, 408);
    EXPECT_EQ(replies[0].Header("connection"), "close");
    EXPECT_EQ(h.stats.body_rate_timeouts.Get(), 1u);
    EXPECT_EQ(h.stats.timeouts.Get(), 1u);
    if (slow) {
      EXPECT_EQ(g_reason.load(), BodyError::kTimedOut);
    }
    ExpectClean(h);
  }
  {
    // 200 bytes a tick: twice the rate, for 60 windows.
    Harness h(Routes(), RateConfig());
    h.Open();
    const size_t total = 200 * 600;
    h.Recv(Head("/count", Length(total)));
    for (size_t sent = 0; sent < total; sent += 200) {
      h.Tick(1);
      h.Recv(std::string(200, 'y'));
    }
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].status, 200);
    EXPECT_EQ(replies[0].body, std::to_string(total));
    EXPECT_EQ(h.stats.body_rate_timeouts.Get(), 0u);
    ExpectClean(h);
  }
}

// Item 8: a burst does not buy an idle connection more than a window: a
// body that stops after a fast start is cut at the end of the next window.
TEST(ConnectionBodyTest, BurstThenSilenceIsCutAfterAWindow) {
  Harness h(Routes(), RateConfig());
  h.Open();
  h.Recv(Head("/echo", Length(50000)) + std::string(20000, 'b'));
  h.Tick(11);  // the first window brought 20 times its due
  h.Flush();
  EXPECT_TRUE(h.wire.empty());
  h.Tick(11);  // the second brought nothing
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 408);
  EXPECT_EQ(h.stats.body_rate_timeouts.Get(), 1u);
}

// Item 8: the rate measures the client, not us: while a handler lags and
// its pipe is full we do not read, and no window runs.
TEST(ConnectionBodyTest, RateClockStopsWhileTheHandlerLags) {
  Harness h(Routes(), RateConfig());
  h.Open();
  const size_t total = 600000;
  h.Recv(Head("/sink", Length(total)));
  size_t sent = 0;
  while (sent < total && !h.host.cancel_pending) {
    h.Recv(std::string(2048, 'p'));
    sent += 2048;
  }
  ASSERT_TRUE(h.host.cancel_pending) << "never paused";
  h.LandCancel();
  ASSERT_EQ(h.host.tasks.size(), 1u);
  h.Tick(100);  // ten windows with the handler not reading
  EXPECT_TRUE(h.wire.empty()) << h.wire;
  EXPECT_TRUE(h.conn.open());
  h.StartTaskThread();
  bool finished = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!finished && std::chrono::steady_clock::now() < until) {
    if (h.host.recv_armed && sent < total) {
      const size_t n = std::min<size_t>(2048, total - sent);
      h.Recv(std::string(n, 'p'));
      sent += n;
      if (h.host.cancel_pending) h.LandCancel();
    }
    finished = h.Pump();
  }
  ASSERT_TRUE(finished);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, std::to_string(total));
  EXPECT_EQ(h.stats.body_rate_timeouts.Get(), 0u);
  ExpectClean(h);
}

}  // namespace
}  // namespace uring_http::http1
