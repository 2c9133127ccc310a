// The HTTP/1 connection driven event by event, without a kernel: bytes in
// any split, completions in the orders that matter (cancels landing late,
// notifications before or after the send they follow, tasks finishing while
// output is in flight), deadlines by hand. Each test names the rule it holds.
#include "src/http1/connection.h"

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/http1/connection_harness.h"

namespace uring_http::http1 {
namespace {

using testing::Harness;
using testing::Reply;

std::string Get(std::string_view path, std::string_view extra = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" + std::string(extra) + "\r\n";
}
std::string Post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + std::string(extra) + "\r\n" + std::string(body);
}
std::string Chunked(std::string_view path, const std::vector<std::string>& pieces,
                    std::string_view extra = "", std::string_view trailers = "") {
  std::string r = "POST " + std::string(path) +
                  " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n" + std::string(extra) +
                  "\r\n";
  for (const std::string& p : pieces) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx", p.size());
    r += std::string(size) + "\r\n" + p + "\r\n";
  }
  return r + "0\r\n" + std::string(trailers) + "\r\n";
}

// A sink for FAST streamed bodies: counts and checksums what it is given.
class CountingSink : public router::BodySink {
 public:
  explicit CountingSink(std::shared_ptr<int> aborts) : aborts_(std::move(aborts)) {}
  void OnData(std::string_view piece) override {
    bytes_ += piece.size();
    for (char c : piece) sum_ = sum_ * 31 + static_cast<unsigned char>(c);
  }
  void OnEnd(const http::Request& request, http::Response& response) override {
    response.set_body(std::string(request.path) + ":" + std::to_string(bytes_) + ":" +
                      std::to_string(sum_));
  }
  void OnAbort() override { ++*aborts_; }

 private:
  std::shared_ptr<int> aborts_;
  uint64_t bytes_ = 0;
  uint64_t sum_ = 0;
};

uint64_t Checksum(std::string_view s) {
  uint64_t sum = 0;
  for (char c : s) sum = sum * 31 + static_cast<unsigned char>(c);
  return sum;
}

std::shared_ptr<int> g_aborts = std::make_shared<int>(0);

router::Router TestRouter() {
  router::Router r;
  (void)r.Fast("GET", "/fast", [](const http::Request&, http::Response& resp) {
    resp.set_static_body("ok");
  });
  (void)r.Fast("POST", "/echo", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.body);
  });
  (void)r.Fast("GET", "/big", [](const http::Request& req, http::Response& resp) {
    resp.body().assign(std::stoul(std::string(req.query)), 'b');
  });
  (void)r.Slow("GET", "/slow", [](const http::Request& req, http::Response& resp) {
    resp.set_body("slow:" + std::string(req.query));
  });
  // Echoes its body by pointing the response at the request's bytes: the
  // server must copy it before the task's memory goes (defect 7).
  (void)r.Slow("POST", "/slow-echo", [](const http::Request& req, http::Response& resp) {
    resp.set_static_body(req.body);
  });
  // Refused headers (issue 19 item 9): each answer must be a 500, never the
  // response without its header. ?framing: a header the server writes;
  // ?inject: CR/LF in a value; ?big: past the limit (4 KiB here).
  auto refuse = [](const http::Request& req, http::Response& resp) {
    resp.set_max_header_bytes(4096);
    EXPECT_TRUE(resp.AddHeader("X-Before", "1"));
    if (req.query == "framing") {
      EXPECT_FALSE(resp.AddHeader("Content-Length", "1"));
    } else if (req.query == "inject") {
      EXPECT_FALSE(resp.AddHeader("X-A", "a\r\nX-Evil: 1"));
    } else if (req.query == "big") {
      EXPECT_FALSE(resp.AddHeader("Set-Cookie", std::string(5000, 'c')));
    }
    EXPECT_TRUE(resp.AddHeader("X-After", "1"));  // (the response has failed anyway)
    resp.set_body("the handler's body");
  };
  (void)r.Fast("GET", "/refuse", refuse);
  (void)r.Slow("GET", "/slow-refuse", refuse);
  // The same before a SLOW handler's first Write (which then says the
  // stream is gone) and before a FAST producer starts.
  (void)r.Slow("GET", "/slow-refuse-stream", [](const http::Request&, http::Response& resp) {
    EXPECT_FALSE(resp.AddHeader("X A", "1"));
    EXPECT_FALSE(resp.Write("data"));
  });
  (void)r.Fast("GET", "/refuse-producer", [](const http::Request&, http::Response& resp) {
    EXPECT_FALSE(resp.AddHeader("Connection", "close"));
    resp.Stream([](http::BodyOutput& out) {
      ADD_FAILURE() << "a failed response's producer ran";
      out.Write("x");
      return true;
    });
  });
  // A trailer refused once the head has gone: the stream ends without its
  // last chunk (the client sees it cut), not complete without the trailer.
  (void)r.Slow("GET", "/slow-refuse-trailer", [](const http::Request&, http::Response& resp) {
    EXPECT_TRUE(resp.Write("part"));
    EXPECT_FALSE(resp.AddTrailer("X-Sum", "a\nb"));
  });
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = router::kUnlimitedBody;
  (void)r.Slow("POST", "/sink", [](const http::Request& req, http::Response& resp) {
    char buf[10000];
    uint64_t total = 0, sum = 0;
    for (;;) {
      const long n = req.ReadBody(buf, sizeof buf);
      if (n < 0) {
        resp.set_status(499);
        return;
      }
      if (n == 0) break;
      total += static_cast<uint64_t>(n);
      for (long i = 0; i < n; ++i) sum = sum * 31 + static_cast<unsigned char>(buf[i]);
    }
    resp.set_body(std::to_string(total) + ":" + std::to_string(sum));
  }, streamed);
  // POST /duplex: the body streamed back as it arrives (like examples/echo).
  (void)r.Slow("POST", "/duplex", [](const http::Request& req, http::Response& resp) {
    char buf[4096];
    long n;
    while ((n = req.ReadBody(buf, sizeof buf)) > 0) {
      if (!resp.Write(std::string_view(buf, static_cast<size_t>(n)))) return;
    }
  }, streamed);
  // GET /stream?N: N bytes in 1000-byte writes.
  (void)r.Slow("GET", "/stream", [](const http::Request& req, http::Response& resp) {
    size_t n = std::stoul(std::string(req.query));
    resp.set_content_type("application/octet-stream");
    std::string piece(1000, 's');
    size_t i = 0;
    while (n > 0) {
      const size_t k = std::min(n, piece.size());
      piece[0] = static_cast<char>('a' + (i++ % 26));
      if (!resp.Write(std::string_view(piece.data(), k))) return;
      n -= k;
    }
    EXPECT_TRUE(resp.AddTrailer("X-Pieces", std::to_string(i)));
  });
  (void)r.FastStream("PUT", "/count", [](const http::Request&) {
    return std::make_unique<CountingSink>(g_aborts);
  });
  // GET /produce?N: a FAST producer of N bytes, 700 per call.
  (void)r.Fast("GET", "/produce", [](const http::Request& req, http::Response& resp) {
    auto left = std::make_shared<size_t>(std::stoul(std::string(req.query)));
    resp.Stream([left](http::BodyOutput& out) {
      const size_t k = std::min<size_t>(*left, 700);
      out.Write(std::string(k, 'p'));
      *left -= k;
      return *left == 0;
    });
  });
  return r;
}

exchange::ConnectionConfig SmallConfig() {
  exchange::ConnectionConfig c;
  c.limits.max_body_bytes = 100000;
  c.idle_timeout_ms = 60000;
  c.request_pipe_bytes = 64 * 1024;
  return c;
}

void ExpectClean(const Harness& h) {
  EXPECT_TRUE(h.host.violations.empty()) << h.host.violations.front();
}

TEST(ConnectionTest, KeepAliveRequestGoesOutAndTheConnectionIdles) {
  Harness h(TestRouter());
  h.Open();
  EXPECT_TRUE(h.host.recv_armed);
  const uint64_t idle_at_open = h.host.deadline;
  EXPECT_GT(idle_at_open, h.now());
  h.Recv(Get("/fast"));
  ASSERT_TRUE(h.host.send.has_value());
  h.CompleteSend();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, "ok");
  EXPECT_TRUE(h.conn.open());
  EXPECT_EQ(h.chunks_available(), 256u);  // nothing held while idle
  ASSERT_EQ(h.host.done.size(), 1u);
  EXPECT_EQ(h.host.done[0].request_line, "GET /fast HTTP/1.1");
  ExpectClean(h);
}

// Pipelined requests of every framing, fed in every possible two-way split
// and a byte at a time: the same answers, in order.
TEST(ConnectionTest, PipelinedRequestsOfEveryFramingInAnySplit) {
  const std::string stream = Get("/fast") + Post("/echo", "hello") +
                             Chunked("/echo", {"ab", "cdef"}, "", "X-T: 1\r\n") +
                             Get("/slow?1") + Chunked("/echo", {"x"}) + Get("/fast");
  const std::vector<std::string> want = {"ok", "hello", "abcdef", "slow:1", "x", "ok"};
  auto run = [&](const std::vector<size_t>& cuts) {
    Harness h(TestRouter());
    h.Open();
    size_t at = 0;
    for (size_t cut : cuts) {
      h.Recv(std::string_view(stream).substr(at, cut - at));
      at = cut;
      h.RunTask();
      h.Flush();
    }
    h.Recv(std::string_view(stream).substr(at));
    for (int i = 0; i < 4; ++i) {
      h.RunTask();
      h.Flush();
    }
    auto replies = h.Replies();
    EXPECT_EQ(replies.size(), want.size());
    for (size_t i = 0; i < std::min(replies.size(), want.size()); ++i) {
      EXPECT_EQ(replies[i].status, 200) << i;
      EXPECT_EQ(replies[i].body, want[i]) << i;
    }
    EXPECT_TRUE(h.conn.open());
    ExpectClean(h);
  };
  for (size_t cut = 1; cut < stream.size(); ++cut) run({cut});
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  run(every);
}

TEST(ConnectionTest, ChunkedBodyWithExtensionsAndTrailersIsDecoded) {
  Harness h(TestRouter());
  h.Open();
  h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5;name=\"a;b\"\r\nhello\r\n1 ; x\r\n!\r\n0\r\nX-Sum: 1\r\n\r\n");
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "hello!");
  EXPECT_EQ(h.stats.chunked_bodies.Get(), 1u);
}

struct BadChunk {
  const char* name;
  std::string body;  // after the head
  int status;
};

// A chunked body that breaks the grammar is answered with its status and the
// connection closes, lingering (the client may be sending the rest).
TEST(ConnectionTest, MalformedChunkedBodiesAreRefusedAndClose) {
  const BadChunk cases[] = {
      {"size overflow", "11111111111111111\r\n", 400},
      {"bad hex", "5g\r\nhello\r\n0\r\n\r\n", 400},
      {"negative", "-5\r\nhello\r\n0\r\n\r\n", 400},
      {"missing crlf after data", "5\r\nhelloX\r\n0\r\n\r\n", 400},
      {"bare lf after data", "5\r\nhello\n0\r\n\r\n", 400},
      {"bare lf after size", "5\nhello\r\n0\r\n\r\n", 400},
      {"cr in extension", "5;a=\"b\rc\"\r\nhello\r\n0\r\n\r\n", 400},
      {"space before size", " 5\r\nhello\r\n0\r\n\r\n", 400},
      {"trailer obs-fold", "0\r\nX: 1\r\n y\r\n\r\n", 400},
      {"trailer too large", "0\r\nX: " + std::string(20000, 'v') + "\r\n\r\n", 431},
      {"over the body limit", "186a1\r\n" + std::string(100001, 'z') + "\r\n0\r\n\r\n", 413},
  };
  for (const BadChunk& c : cases) {
    Harness h(TestRouter(), SmallConfig());
    h.Open();
    h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + c.body +
           Get("/fast"));
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u) << c.name;  // nothing after it is answered
    EXPECT_EQ(replies[0].status, c.status) << c.name;
    EXPECT_EQ(replies[0].Header("connection"), "close") << c.name;
    EXPECT_TRUE(h.host.shutdown_pending) << c.name << ": a lingering close sends our FIN first";
    ExpectClean(h);
  }
}

// 413 for a Content-Length over the limit, at once and without a 100
// Continue: the body is never read.
TEST(ConnectionTest, TooLargeContentLengthIsRefusedWithoutReadingIt) {
  Harness h(TestRouter(), SmallConfig());
  h.Open();
  h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100001\r\n"
         "Expect: 100-continue\r\n\r\n");
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 413);
  EXPECT_EQ(h.wire.find("100 Continue"), std::string::npos);
  EXPECT_TRUE(h.host.shutdown_pending);
}

TEST(ConnectionTest, ExpectContinueOnlyWhenTheHandlerWillReadTheBody) {
  {
    Harness h(TestRouter());
    h.Open();
    h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    h.Flush();
    EXPECT_EQ(h.wire, "HTTP/1.1 100 Continue\r\n\r\n");
    h.Recv("data");
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_EQ(replies[1].body, "data");
  }
  {
    // Unknown path: no 100, a 404, and the connection closes (the client
    // held its body back for us).
    Harness h(TestRouter());
    h.Open();
    h.Recv("POST /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
           "Expect: 100-continue\r\n\r\n");
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].status, 404);
    EXPECT_EQ(replies[0].Header("connection"), "close");
  }
  {
    // Unknown path without Expect: the body is read and dropped and the
    // connection goes on.
    Harness h(TestRouter());
    h.Open();
    h.Recv(Post("/nowhere", "abcdef") + Chunked("/nowhere", {"xyz"}) + Get("/fast"));
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 3u);
    EXPECT_EQ(replies[0].status, 404);
    EXPECT_EQ(replies[1].status, 404);
    EXPECT_EQ(replies[2].body, "ok");
    EXPECT_TRUE(h.conn.open());
  }
}

// Defect 1: the send deadline measures our output's progress. Bytes from
// the peer do not move it; progress of a long send (short completions) does.
TEST(ConnectionTest, SendDeadlineMovesWithOutputProgressNotInput) {
  exchange::ConnectionConfig config;
  config.send_timeout_ms = 1000;  // 10 ticks
  Harness h(TestRouter(), config);
  h.Open();
  h.Recv(Get("/big?60000"));
  ASSERT_TRUE(h.host.send.has_value());
  const uint64_t deadline = h.host.deadline;
  EXPECT_LE(deadline, h.now() + 12);
  // The peer trickles a byte every few ticks (a pipelined head), never reading.
  for (int i = 0; i < 3; ++i) {
    h.Tick(2);
    h.Recv("G");
    EXPECT_EQ(h.host.deadline, deadline) << "input moved the send deadline";
  }
  h.Tick(20);
  EXPECT_TRUE(h.host.closed) << "a peer taking none of our output is cut off";
  EXPECT_EQ(h.stats.timeouts.Get(), 1u);

  // A slow but steady reader: every short completion moves the deadline.
  Harness slow(TestRouter(), config);
  slow.Open();
  slow.Recv(Get("/big?60000"));
  for (int i = 0; i < 40 && slow.host.send.has_value(); ++i) {
    slow.Tick(8);  // under the 10-tick timeout each time, 320 ticks in all
    slow.CompleteSend(1500);
  }
  slow.Flush();
  EXPECT_FALSE(slow.host.closed);
  auto replies = slow.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body.size(), 60000u);
}

// Defect 2, end to end: zero-copy sends of responses that share a chunk
// with later (pipelined) ones, completions short, notifications arriving in
// between: no byte of any response is lost or replaced.
TEST(ConnectionTest, ZeroCopyBuffersLiveUntilTheirNotification) {
  exchange::ConnectionConfig config;
  config.send_zc_min_bytes = 1024;
  Harness h(TestRouter(), config, 64);
  h.Open();
  std::string burst;
  for (int i = 0; i < 6; ++i) burst += Get("/big?" + std::to_string(1500 + i * 700));
  h.Recv(burst);
  int zc = 0;
  for (int step = 0; step < 1000 && (h.host.send || h.host.zc_held); ++step) {
    if (h.host.send && h.host.send->zero_copy) ++zc;
    h.CompleteSend(900);                    // short every time
    if (step % 3 == 1) h.Notify();          // notifications late, in between
    h.Recv("");                             // other events meanwhile
  }
  h.Flush();
  EXPECT_GT(zc, 0);
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(replies[i].body, std::string(1500 + i * 700, 'b')) << i;
  EXPECT_EQ(h.chunks_available(), 64u);
  ExpectClean(h);
}

// Defect 3: a receive pause lifted before its cancel completes. The cancel's
// final completion must re-arm the receive.
TEST(ConnectionTest, PauseLiftedBeforeTheCancelLandsReArms) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/slow?a"));  // a worker holds the input back
  ASSERT_EQ(h.host.tasks.size(), 1u);
  // More than the pause threshold of pipelined requests arrive.
  std::string more;
  while (more.size() <= kStagedPauseBytes) more += Get("/fast", "X-Pad: " + std::string(500, 'p') + "\r\n");
  h.Recv(more);
  EXPECT_EQ(h.host.recv_cancels, 1);
  EXPECT_TRUE(h.host.cancel_pending);
  // The task finishes and the staged requests are answered before the
  // cancel lands: the pause is lifted already.
  h.RunTask();
  h.Flush();
  EXPECT_EQ(h.conn.staged_bytes(), 0u);
  const int arms = h.host.recv_arms;
  h.LandCancel();
  EXPECT_EQ(h.host.recv_arms, arms + 1) << "no receive armed after the late cancel";
  EXPECT_TRUE(h.host.recv_armed);
  h.Recv(Get("/fast"));
  h.Flush();
  EXPECT_EQ(h.Replies().back().body, "ok");
  ExpectClean(h);
}

// Defect 4a: the close lingers even when the receive was paused (the kernel
// may hold the unread input): it is re-armed to read until the peer's FIN.
TEST(ConnectionTest, LingerReArmsAPausedReceive) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/slow?a", "Connection: close\r\n"));
  std::string more;
  while (more.size() <= kStagedPauseBytes) more += "x";
  h.Recv(more);  // bytes after a closing request
  h.LandCancel();
  h.RunTask();
  h.Flush();
  EXPECT_TRUE(h.host.shutdown_pending) << "close did not linger";
  EXPECT_TRUE(h.host.recv_armed) << "lingering without reading";
  h.ShutdownDone();
  h.Recv("more bytes");  // read and dropped
  h.RecvEnd(0);          // the peer's FIN: now the close
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
  ExpectClean(h);
}

// Defect 4b: a pause's cancel that lands after our SHUT_WR re-arms.
TEST(ConnectionTest, CancelLandingAfterShutdownReArmsForTheLinger) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/slow?a"));
  std::string more;
  while (more.size() <= kStagedPauseBytes) more += Get("/fast");
  more += "BAD REQUEST LINE\r\n\r\n";
  h.Recv(more);
  ASSERT_TRUE(h.host.cancel_pending);
  h.RunTask();
  h.Flush();  // answers, then the 400 and its close: SHUT_WR goes out
  ASSERT_TRUE(h.host.shutdown_pending);
  h.ShutdownDone();
  h.LandCancel();  // lands after the shutdown
  EXPECT_TRUE(h.host.recv_armed) << "the linger stopped reading";
  h.RecvEnd(0);
  EXPECT_TRUE(h.host.closed);
  ExpectClean(h);
}

// Defect 4c: bytes arriving in a later receive, after a request that said
// Connection: close, make the close linger.
TEST(ConnectionTest, BytesAfterAClosingRequestInALaterReceiveLinger) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/big?100000", "Connection: close\r\n"));
  h.CompleteSend(1000);  // still sending
  h.Recv(Get("/fast"));  // the client pipelined anyway
  h.Flush();
  EXPECT_TRUE(h.host.shutdown_pending) << "a plain close would reset the response";
  EXPECT_FALSE(h.host.closed);
  ExpectClean(h);
}

// A connection's first receive is single-shot (the request is usually
// there already); the keep-alive connection then reads on with a multishot
// one.
TEST(ConnectionTest, FirstReceiveIsSingleShotThenMultishot) {
  Harness h(TestRouter());
  h.Open();
  EXPECT_TRUE(h.host.recv_armed);
  EXPECT_TRUE(h.host.recv_once);
  h.Recv(Get("/fast") + Get("/fast"), 30);  // pieces: the first ends the single-shot receive
  h.Flush();
  EXPECT_EQ(h.Replies().size(), 2u);
  EXPECT_EQ(h.host.recv_once_arms, 1);
  EXPECT_EQ(h.host.recv_arms, 2);
  EXPECT_TRUE(h.host.recv_armed);
  EXPECT_FALSE(h.host.recv_once);
  h.Recv(Get("/fast"));
  h.Flush();
  EXPECT_EQ(h.Replies().size(), 3u);
  EXPECT_EQ(h.host.recv_arms, 2) << "the multishot receive goes on";
  ExpectClean(h);
}

// Connection per request: the request's one receive, then the answer's one
// send with the close linked to it (the FIN follows the answer at once): no
// second receive armed only to be cancelled.
TEST(ConnectionTest, SmallLastAnswerGoesWithItsCloseAndNoReceiveArmed) {
  for (const std::string& request :
       {Get("/fast", "Connection: close\r\n"), std::string("GET /fast HTTP/1.0\r\n\r\n")}) {
    Harness h(TestRouter());
    h.Open();
    h.Recv(request);
    EXPECT_FALSE(h.host.recv_armed) << request;
    ASSERT_TRUE(h.host.send.has_value()) << request;
    EXPECT_TRUE(h.host.send->close_linked) << request;
    EXPECT_TRUE(h.host.closed) << "the close goes with the send";
    EXPECT_EQ(h.CompleteSend(10), 0u) << "MSG_WAITALL: never short";
    EXPECT_FALSE(h.conn.Freeable());
    h.CloseDone();  // the send completes first, then the close
    EXPECT_TRUE(h.conn.Freeable());
    EXPECT_FALSE(h.host.shutdown_pending);
    EXPECT_EQ(h.host.recv_arms, 1);
    ASSERT_EQ(h.Replies().size(), 1u) << request;
    EXPECT_EQ(h.Replies()[0].status, 200);
    ExpectClean(h);
  }
}

// A closing SLOW request: while the worker runs, a receive watches for
// bytes the client should not send (the task's time is a window worth
// watching); the close then cancels it, unlinked.
TEST(ConnectionTest, ClosingSlowRequestReadsOnWhileTheWorkerRuns) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/slow?1", "Connection: close\r\n"));
  EXPECT_TRUE(h.host.recv_armed);
  h.RunTask();
  ASSERT_TRUE(h.host.send.has_value());
  EXPECT_FALSE(h.host.send->close_linked);
  h.CompleteSend();
  EXPECT_TRUE(h.host.closed);  // FakeHost checks it is told the receive is armed
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
  EXPECT_EQ(h.Replies().size(), 1u);
  ExpectClean(h);
}

// A keep-alive connection whose last request says close: the same, after
// its earlier answers (the multishot receive stays armed, so the close is
// the plain one that cancels it).
TEST(ConnectionTest, ClosingRequestOnAKeepAliveConnection) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/fast"));
  h.Flush();
  h.Recv(Get("/fast", "Connection: close\r\n"));
  h.Flush();
  EXPECT_TRUE(h.host.closed);
  EXPECT_EQ(h.Replies().size(), 2u);
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
  ExpectClean(h);
}

// Bytes after the closing request in the same receive: no linked close,
// the close lingers instead (a plain close would reset the answer).
TEST(ConnectionTest, BytesAfterTheClosingRequestKeepTheCloseApart) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/fast", "Connection: close\r\n") + Get("/fast"));
  ASSERT_TRUE(h.host.send.has_value());
  EXPECT_FALSE(h.host.send->close_linked);
  h.CompleteSend();
  EXPECT_TRUE(h.host.shutdown_pending);
  EXPECT_EQ(h.Replies().size(), 1u);
  ExpectClean(h);
}

// A peer that takes none of the linked send: the send deadline cancels it,
// and the close linked to it runs.
TEST(ConnectionTest, LinkedSendThePeerNeverTakesIsCancelledByTheSendDeadline) {
  exchange::ConnectionConfig config = SmallConfig();
  config.send_timeout_ms = 1000;
  Harness h(TestRouter(), config);
  h.Open();
  h.Recv(Get("/fast", "Connection: close\r\n"));
  ASSERT_TRUE(h.host.send.has_value() && h.host.send->close_linked);
  h.Tick(5);
  EXPECT_FALSE(h.host.send_cancel_pending) << "cancelled before its time";
  h.Tick(20);
  EXPECT_TRUE(h.host.send_cancel_pending);
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
  EXPECT_TRUE(h.Replies().empty());
  ExpectClean(h);
}

TEST(ConnectionTest, CleanCloseAfterConnectionCloseDoesNotLinger) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/fast", "Connection: close\r\n"));
  h.Flush();
  EXPECT_FALSE(h.host.shutdown_pending);
  EXPECT_TRUE(h.host.closed);
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
}

// Defect 7: a SLOW response that views its request's bytes is copied before
// the task's memory goes.
TEST(ConnectionTest, SlowResponseViewingItsRequestIsCopiedAndFramedByTheServer) {
  Harness h(TestRouter());
  h.Open();
  const std::string body(3000, 'e');
  h.Recv(Post("/slow-echo", body) + Get("/fast"));
  h.RunTask();
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].body, body);
  EXPECT_EQ(replies[0].Header("content-length"), "3000");
  EXPECT_EQ(replies[0].Header("transfer-encoding"), "");
  EXPECT_EQ(replies[0].Header("connection"), "");
  EXPECT_EQ(replies[1].body, "ok");
}

// Issue 19 item 9: a response whose handler had a header refused is
// answered 500 (FAST and SLOW, buffered, streamed and produced), and the
// connection goes on; a trailer refused after the head cuts the stream.
TEST(ConnectionTest, ARefusedHeaderIsA500NeverAResponseWithoutIt) {
  for (const char* path : {"/refuse?framing", "/refuse?inject", "/refuse?big",
                           "/slow-refuse?framing", "/slow-refuse?inject", "/slow-refuse?big",
                           "/slow-refuse-stream", "/refuse-producer"}) {
    Harness h(TestRouter());
    h.Open();
    h.Recv(Get(path) + Get("/fast"));
    while (!h.host.tasks.empty()) h.RunTask();
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 2u) << path << "\n" << h.wire;
    EXPECT_EQ(replies[0].status, 500) << path;
    EXPECT_EQ(replies[0].body, "500 Internal Server Error\n") << path;
    EXPECT_EQ(replies[0].Header("x-before"), "") << path;
    EXPECT_EQ(replies[0].Header("x-evil"), "") << path;
    EXPECT_EQ(replies[1].status, 200) << path;
    EXPECT_EQ(replies[1].body, "ok") << path;
    ExpectClean(h);
  }
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/slow-refuse-trailer") + Get("/fast"));
  while (!h.host.tasks.empty()) h.RunTask();
  h.Flush();
  EXPECT_NE(h.wire.find("\r\n\r\n4\r\npart\r\n"), std::string::npos) << h.wire;
  EXPECT_EQ(h.wire.find("0\r\n"), std::string::npos) << h.wire;  // no last chunk
  EXPECT_EQ(h.wire.find("ok"), std::string::npos) << h.wire;  // the connection ended
  EXPECT_TRUE(h.host.closed || h.host.shutdown_pending || h.host.shutdown_done);
}

// Defect 8: the header deadline runs from a head's first byte to its end,
// also while a send is in flight; it does not run over the body (that has
// its own deadline).
TEST(ConnectionTest, HeaderDeadlineCoversTheHeadOnly) {
  exchange::ConnectionConfig config;
  config.header_timeout_ms = 1000;  // 10 ticks
  config.body_timeout_ms = 5000;    // 50 ticks
  {
    Harness h(TestRouter(), config);
    h.Open();
    h.Recv(Get("/big?100000"));  // a long send in flight...
    h.Recv("GET /fast HTTP/1.1\r\n");  // ...and a slow head behind it
    h.Tick(11);
    auto replies = h.Replies();
    h.Flush();
    replies = h.Replies();
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_EQ(replies[1].status, 408);
  }
  {
    Harness h(TestRouter(), config);
    h.Open();
    h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n");
    for (int i = 0; i < 9; ++i) {
      h.Tick(8);  // 72 ticks in all: past the header timeout, each step under the body's
      h.Recv("x");
    }
    h.Recv("y");
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].status, 200);
    EXPECT_EQ(replies[0].body, "xxxxxxxxxy");
  }
  {
    Harness h(TestRouter(), config);
    h.Open();
    h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    h.Tick(51);
    h.Flush();
    auto replies = h.Replies();
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].status, 408);
  }
}

// A head fed a byte at a time is not re-parsed from its start on every byte:
// the connection waits for its end (or an early error) before parsing.
TEST(ConnectionTest, HeadArrivingByteByByteIsAnsweredOnce) {
  Harness h(TestRouter());
  h.Open();
  std::string head = Get("/fast", "X-A: " + std::string(3000, 'a') + "\r\n");
  for (char c : head) h.Recv(std::string_view(&c, 1));
  h.Flush();
  ASSERT_EQ(h.Replies().size(), 1u);
  // An early error is still early: a bad request line is answered before
  // the head ends.
  Harness e(TestRouter());
  e.Open();
  for (char c : std::string("GET /x HTTP/9.9\r\nHost:")) e.Recv(std::string_view(&c, 1));
  e.Flush();
  auto replies = e.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 505);
}

// A FAST route streaming its body into a sink, in any split; an abort when
// the peer leaves mid-body.
TEST(ConnectionTest, FastSinkGetsTheBodyAsItArrives) {
  const std::string body(50000, 'k');
  Harness h(TestRouter());
  h.Open();
  h.Recv("PUT /count HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n" + body.substr(0, 1000));
  h.Recv(body.substr(1000), 333);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "/count:50000:" + std::to_string(Checksum(body)));

  Harness gone(TestRouter());
  gone.Open();
  const int before = *g_aborts;
  gone.Recv("PUT /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
  gone.RecvEnd(-ECONNRESET);
  EXPECT_EQ(*g_aborts, before + 1);
  EXPECT_TRUE(gone.host.closed);
}

TEST(ConnectionTest, FastProducerStreamsChunkedAndHeadGetsTheHeadOnly) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/produce?5000") + "HEAD /produce?5000 HTTP/1.1\r\nHost: t\r\n\r\n" + Get("/fast"));
  h.Flush();
  auto replies = h.Replies({false, true, false});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_TRUE(replies[0].chunked);
  EXPECT_EQ(replies[0].body, std::string(5000, 'p'));
  EXPECT_EQ(replies[1].Header("transfer-encoding"), "chunked");
  EXPECT_EQ(replies[2].body, "ok");

  // HTTP/1.0: close-delimited.
  Harness old(TestRouter());
  old.Open();
  old.Recv("GET /produce?3000 HTTP/1.0\r\n\r\n");
  old.Flush();
  EXPECT_TRUE(old.host.closed);
  auto r = old.Replies();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].body, std::string(3000, 'p'));
  EXPECT_EQ(r[0].Header("connection"), "close");
}

// A SLOW handler streaming a body larger than its pipe to a reader that
// takes small steps: bounded memory, every byte in order, trailers after.
TEST(ConnectionTest, SlowStreamedResponseWithBackpressure) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/stream?1000000") + Get("/fast"));
  ASSERT_EQ(h.host.tasks.size(), 1u);
  h.StartTaskThread();
  for (int i = 0; i < 2000000; ++i) {
    if (h.Pump(8000)) break;
    if (i % 64 == 0) std::this_thread::yield();
  }
  h.JoinTaskThread();
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[0].chunked);
  EXPECT_EQ(replies[0].body.size(), 1000000u);
  EXPECT_EQ(replies[0].body[0], 'a');
  EXPECT_EQ(replies[0].body[1000], 'b');
  EXPECT_EQ(replies[1].body, "ok");
  EXPECT_NE(h.wire.find("X-Pieces: 1000\r\n"), std::string::npos);
  EXPECT_EQ(h.stats.streamed_responses.Get(), 1u);
  ExpectClean(h);
}

// A SLOW handler reading a streamed upload: the ring stops receiving while
// the handler lags (the pipe is full and more is staged) and resumes when it
// catches up.
TEST(ConnectionTest, SlowStreamedUploadPausesTheReceive) {
  Harness h(TestRouter(), SmallConfig());
  h.Open();
  const std::string body(600000, 'u');
  h.Recv("POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 600000\r\n\r\n");
  // The handler has not started: the pipe fills, then staging, then a pause.
  size_t sent = 0;
  while (sent < body.size() && !h.host.cancel_pending) {
    h.Recv(std::string_view(body).substr(sent, 2048));
    sent += 2048;
  }
  EXPECT_TRUE(h.host.cancel_pending) << "never paused";
  ASSERT_EQ(h.host.tasks.size(), 1u);  // dispatched with the body's first bytes
  EXPECT_LE(h.conn.staged_bytes(), 2 * kStagedPauseBytes);
  h.LandCancel();
  h.StartTaskThread();
  bool finished = false;
  for (int i = 0; i < 2000000 && !finished; ++i) {
    if (h.host.recv_armed && sent < body.size()) {
      const size_t n = std::min<size_t>(2048, body.size() - sent);
      h.Recv(std::string_view(body).substr(sent, n));
      sent += n;
      if (h.host.cancel_pending) h.LandCancel();
    }
    finished = h.Pump();
    if (i % 64 == 0) std::this_thread::yield();
  }
  ASSERT_TRUE(finished);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "600000:" + std::to_string(Checksum(body)));
  ExpectClean(h);
}

// Receives that completed before a pause's cancel landed are all staged,
// however many (up to every provided buffer of the loop): the connection is
// not dropped for them.
TEST(ConnectionTest, ReceivesInFlightWhenPausingAreStagedNotAborted) {
  exchange::ConnectionConfig config = SmallConfig();
  config.recv_pool_bytes = 2 * 1024 * 1024;
  Harness h(TestRouter(), config);
  h.Open();
  h.Recv("POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n");
  const std::string block(16384, 'i');
  size_t sent = 0;
  while (!h.host.cancel_pending) {
    h.Recv(block, block.size());
    sent += block.size();
  }
  // The whole pool's worth was already on its way.
  for (size_t extra = 0; extra < config.recv_pool_bytes; extra += block.size()) {
    h.Recv(block, block.size());
    sent += block.size();
  }
  EXPECT_FALSE(h.host.closed) << "dropped for receives already in flight";
  EXPECT_TRUE(h.conn.open());
  h.LandCancel();
  h.StartTaskThread();
  bool finished = false;
  for (int i = 0; i < 4000000 && !finished; ++i) {
    if (h.host.recv_armed && sent < 10000000) {
      const size_t n = std::min<size_t>(block.size(), 10000000 - sent);
      h.Recv(std::string_view(block).substr(0, n), block.size());
      sent += n;
      if (h.host.cancel_pending) h.LandCancel();
    }
    finished = h.Pump();
  }
  ASSERT_TRUE(finished);
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body.substr(0, 9), "10000000:");
  ExpectClean(h);
}

// A large body is received into the loop's bulk buffers (fewer, larger
// receives); the connection moves back to the small ones for the next head.
TEST(ConnectionTest, LargeBodiesMoveTheReceiveToBulkBuffers) {
  exchange::ConnectionConfig config;
  config.bulk_receives = true;
  config.bulk_body_bytes = 64 * 1024;
  config.limits.max_body_bytes = 1 << 20;
  Harness h(TestRouter(), config);
  h.Open();
  EXPECT_FALSE(h.host.recv_bulk);
  // Small bodies stay on the small buffers.
  h.Recv(Post("/echo", std::string(1000, 's')));
  h.Flush();
  EXPECT_FALSE(h.host.recv_bulk);
  EXPECT_EQ(h.host.recv_cancels, 0);
  // A large one: the receive is cancelled and re-armed with bulk buffers.
  const std::string body(300000, 'L');
  h.Recv("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 300000\r\n\r\n" + body.substr(0, 100));
  EXPECT_TRUE(h.host.cancel_pending);
  h.LandCancel();
  EXPECT_TRUE(h.host.recv_armed);
  EXPECT_TRUE(h.host.recv_bulk);
  h.Recv(body.substr(100), 16384);
  EXPECT_TRUE(h.host.cancel_pending);  // the body is done: back to small buffers
  h.LandCancel();
  EXPECT_FALSE(h.host.recv_bulk);
  h.Recv(Get("/fast"));
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[1].body, body);
  EXPECT_EQ(replies[2].body, "ok");
  ExpectClean(h);
}

// A streamed answer to a body that turns out malformed part-way must not end
// like a whole one: no last chunk, and the connection closes.
TEST(ConnectionTest, StreamedAnswerToABrokenBodyIsCutShort) {
  Harness h(TestRouter(), SmallConfig());
  h.Open();
  h.Recv("POST /duplex HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  h.StartTaskThread();
  // Let the worker echo the first chunk before the bad one arrives.
  for (int i = 0; i < 1000000 && h.wire.find("hello") == std::string::npos; ++i) h.Pump();
  ASSERT_NE(h.wire.find("hello"), std::string::npos);
  h.Recv("zz\r\n");  // not a chunk size
  bool finished = false;
  for (int i = 0; i < 1000000 && !finished; ++i) finished = h.Pump();
  ASSERT_TRUE(finished);
  h.Flush();
  EXPECT_EQ(h.wire.find("0\r\n\r\n"), std::string::npos) << "a cut-short body ended like a whole one";
  EXPECT_TRUE(h.host.shutdown_pending || h.host.closed);
  ExpectClean(h);
}

// The client vanishes mid-upload: the handler's read fails, the task comes
// back, and the slot is free.
TEST(ConnectionTest, ClientVanishingMidUploadReleasesTheWorker) {
  Harness h(TestRouter(), SmallConfig());
  h.Open();
  h.Recv("POST /sink HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n" +
         std::string(2000, 'v'));
  h.StartTaskThread();
  h.RecvEnd(-ECONNRESET);
  EXPECT_TRUE(h.host.closed);
  ASSERT_TRUE(h.PumpUntilDone());
  h.CloseDone();
  EXPECT_TRUE(h.conn.Freeable());
  EXPECT_EQ(h.stats.aborted_streams.Get(), 1u);
  ExpectClean(h);
}

// The client vanishes mid-download: the handler's write fails and it stops.
TEST(ConnectionTest, ClientVanishingMidDownloadStopsTheHandler) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/stream?100000000"));
  h.StartTaskThread();
  for (int i = 0; i < 100; ++i) h.Pump(5000);
  for (int i = 0; i < 1000000 && !h.host.send.has_value(); ++i) h.conn.OnStreamNotify(0);
  ASSERT_TRUE(h.host.send.has_value());
  h.FailSend(-ECONNRESET);
  EXPECT_TRUE(h.host.closed);
  bool finished = false;
  for (int i = 0; i < 10000000 && !finished; ++i) finished = h.Pump();
  ASSERT_TRUE(finished);
  h.CloseDone();
  h.Flush();
  EXPECT_TRUE(h.conn.Freeable());
  ExpectClean(h);
}

TEST(ConnectionTest, QueueFullIsA503AndTheConnectionGoesOn) {
  Harness h(TestRouter());
  h.Open();
  h.host.refuse_tasks = true;
  h.Recv(Get("/slow?x") + Get("/fast"));
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].status, 503);
  EXPECT_EQ(replies[1].body, "ok");
  EXPECT_EQ(h.stats.slow_rejected.Get(), 1u);
}

TEST(ConnectionTest, DrainingAnswersTheLastRequestWithClose) {
  Harness h(TestRouter());
  h.Open();
  h.SetDraining();
  h.Recv(Get("/fast") + Get("/fast"));
  h.Flush();
  auto replies = h.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].Header("connection"), "");
  EXPECT_EQ(replies[1].Header("connection"), "close");
  EXPECT_TRUE(h.host.closed);
}

TEST(ConnectionTest, PeerHalfCloseStillGetsItsAnswers) {
  Harness h(TestRouter());
  h.Open();
  h.Recv(Get("/fast") + Get("/slow?2") + Get("/fast"));
  h.RecvEnd(0);
  h.RunTask();
  h.Flush();
  EXPECT_EQ(h.Replies().size(), 3u);
  EXPECT_TRUE(h.host.closed);
  EXPECT_FALSE(h.host.shutdown_pending);  // nothing unread: no linger
}

}  // namespace
}  // namespace uring_http::http1
