// ASYNC handlers over real sockets, HTTP/1.1 and h2c: awaits of each kind
// interleaved on one ring, a handler that throws, middleware around one,
// a route's deadline, fifty waits at once with a single worker that none
// of them takes, and the client leaving during each kind of await (the
// await is cancelled and the exchange freed: the server's own figures say
// so, nothing is timed).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <cstdio>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/async/deferral.h"
#include "src/async/exchange.h"
#include "src/http/sse.h"
#include "src/serving/server.h"
#include "test/http2/h2_client.h"
#include "test/serving/http_client.h"
#include "test/serving/stderr_capture.h"

namespace uring_http::serving {
namespace {

using namespace std::chrono_literals;
using async::Exchange;
using async::Task;
using testing::Get;
using testing::TestClient;

// A helper coroutine awaited by a handler: two sleeps, a value back.
Task<int> TwoNaps(Exchange& ex) {
  absl::Status nap1 = co_await ex.Sleep(5ms);
  if (!nap1.ok()) co_return -1;
  absl::Status nap2 = co_await ex.Sleep(5ms);
  if (!nap2.ok()) co_return -2;
  co_return 2;
}

std::atomic<int> worker_calls_blocked{0};
std::atomic<uint64_t> bytes_written{0};

// Subscribers of /ticks, written to by the test's producer thread.
struct Hub {
  std::mutex mu;
  std::vector<std::shared_ptr<async::PushStream>> streams;
  void Add(std::shared_ptr<async::PushStream> s) {
    std::lock_guard<std::mutex> lock(mu);
    streams.push_back(std::move(s));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return streams.size();
  }
  // Writes to every open stream; returns how many took it.
  int Broadcast(std::string_view event) {
    std::lock_guard<std::mutex> lock(mu);
    int sent = 0;
    for (auto& s : streams) {
      const auto r = s->Write(event);
      sent += r == async::PushStream::Result::kSent || r == async::PushStream::Result::kBackpressure;
    }
    return sent;
  }
  void EndAll() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& s : streams) s->End();
    streams.clear();
  }
};
Hub hub;

// Whole answers left to the test's thread (async::DeferredAnswer).
struct Answers {
  std::mutex mu;
  std::vector<std::shared_ptr<async::DeferredAnswer>> waiting;
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return waiting.size();
  }
};
Answers answers;

router::Router MakeRouter() {
  router::Router r;
  EXPECT_TRUE(r.Async("GET", "/sleep", [](Exchange& ex) -> Task<> {
                 const auto ms = std::stoi(std::string(ex.request().QueryParam("ms").value()));
                 absl::Status slept = co_await ex.Sleep(std::chrono::milliseconds(ms));
                 ex.response().set_body(slept.ok() ? "slept" : std::string(slept.message()));
               }).ok());
  EXPECT_TRUE(r.Async("GET", "/worker", [](Exchange& ex) -> Task<> {
                 const std::thread::id ring = std::this_thread::get_id();
                 absl::StatusOr<std::thread::id> where =
                     co_await ex.OnWorker([] { return std::this_thread::get_id(); });
                 ex.response().set_body(where.ok() && *where != ring ? "elsewhere" : "here");
               }).ok());
  // Blocks its worker until the test lets go (the worker call a leaving
  // client cannot interrupt).
  EXPECT_TRUE(r.Async("GET", "/worker-hold", [](Exchange& ex) -> Task<> {
                 absl::Status held = co_await ex.OnWorker([] {
                   ++worker_calls_blocked;
                   while (worker_calls_blocked.load() > 0) std::this_thread::sleep_for(1ms);
                 });
                 ex.response().set_body(held.ok() ? "held" : "cancelled");
               }).ok());
  // A file opened, read at an offset and closed on the ring.
  EXPECT_TRUE(r.Async("GET", "/file", [](Exchange& ex) -> Task<> {
                 const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/async_file.txt";
                 async::IoOp op;
                 op.kind = async::IoOp::Kind::kOpen;
                 op.path = path.c_str();
                 const int fd = co_await ex.Io(op);
                 if (fd < 0) {
                   ex.response().set_body("open failed");
                   co_return;
                 }
                 char buf[64];
                 op = async::IoOp();
                 op.kind = async::IoOp::Kind::kRead;
                 op.fd = fd;
                 op.buf = buf;
                 op.len = sizeof(buf);
                 op.offset = 6;
                 const int n = co_await ex.Io(op);
                 op = async::IoOp();
                 op.kind = async::IoOp::Kind::kClose;
                 op.fd = fd;
                 const int closed = co_await ex.Io(op);
                 ex.response().set_body(n >= 0 && closed == 0 ? std::string(buf, n) : "read failed");
               }).ok());
  EXPECT_TRUE(r.Async("GET", "/nested", [](Exchange& ex) -> Task<> {
                 const int naps = co_await TwoNaps(ex);
                 ex.response().set_body("naps=" + std::to_string(naps));
               }).ok());
  EXPECT_TRUE(r.Async("GET", "/throw", [](Exchange& ex) -> Task<> {
                 (void)co_await ex.Sleep(1ms);
                 throw std::runtime_error("async boom");
               }).ok());
  router::RouteOptions with_header;
  router::Middleware tag;
  tag.after = [](const http::Request&, http::Response& response) {
    (void)response.AddHeader("X-After", "ran");
  };
  with_header.middleware = {tag};
  EXPECT_TRUE(r.Async("GET", "/mw", [](Exchange& ex) -> Task<> {
                 (void)co_await ex.Sleep(1ms);
                 ex.response().set_body("inner");
               }, with_header).ok());
  router::RouteOptions deadline;
  deadline.timeout = 200ms;
  EXPECT_TRUE(r.Async("GET", "/deadline", [](Exchange& ex) -> Task<> {
                 (void)co_await ex.Sleep(30s);
                 ex.response().set_body("late");
               }, deadline).ok());
  // count events interval_ms apart (the shipped server's /test/events).
  EXPECT_TRUE(r.Async("GET", "/events", [](Exchange& ex) -> Task<> {
                 const int count = std::stoi(std::string(ex.request().QueryParam("count").value()));
                 const int interval =
                     std::stoi(std::string(ex.request().QueryParam("interval_ms").value()));
                 http::StartEventStream(ex.response());
                 for (int i = 1; i <= count; ++i) {
                   if (i > 1) {
                     absl::Status waited = co_await ex.Sleep(std::chrono::milliseconds(interval));
                     if (!waited.ok()) co_return;
                   }
                   std::string text;
                   const std::string id = std::to_string(i);
                   EXPECT_TRUE(http::AppendEvent(&text, {.id = id, .data = "e" + id}));
                   absl::Status wrote = co_await ex.Write(text);
                   if (!wrote.ok()) co_return;
                 }
               }).ok());
  // 8 MiB in 64 KiB writes, each counted once the write returns.
  EXPECT_TRUE(r.Async("GET", "/big", [](Exchange& ex) -> Task<> {
                 ex.response().set_content_length(8 << 20);
                 std::string piece(64 << 10, 'z');
                 for (int i = 0; i < 128; ++i) {
                   piece[0] = static_cast<char>('a' + i % 26);
                   absl::Status wrote = co_await ex.Write(piece);
                   if (!wrote.ok()) co_return;
                   bytes_written += piece.size();
                 }
               }).ok());
  // A SLOW handler that waits on its stop word rather than sleeping.
  EXPECT_TRUE(r.Slow("GET", "/slow-wait", [](const http::Request& request, http::Response& response) {
                 const http::StopReason why = request.WaitForStop(std::chrono::seconds(30));
                 response.set_body(std::string(http::StopReasonName(why)));
               }).ok());
  // A streamed upload of any size, read as it comes: its length and a sum.
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = 64 << 20;
  EXPECT_TRUE(r.Async("POST", "/upload", [](Exchange& ex) -> Task<> {
                 char buf[16384];
                 uint64_t total = 0, sum = 0;
                 for (;;) {
                   absl::StatusOr<size_t> n = co_await ex.ReadBody(buf, sizeof buf);
                   if (!n.ok()) co_return;  // the connection answers the failure
                   if (*n == 0) break;
                   total += *n;
                   for (size_t i = 0; i < *n; ++i) sum += static_cast<unsigned char>(buf[i]);
                 }
                 ex.response().set_body(std::to_string(total) + " " + std::to_string(sum));
               }, streamed).ok());
  EXPECT_TRUE(r.Async("GET", "/ticks", [](Exchange& ex) -> Task<> {
                 http::StartEventStream(ex.response());
                 hub.Add(ex.Push());
                 co_return;
               }).ok());
  // Deferred answers from handlers written as FAST and SLOW ones: the
  // body comes from the test's thread after they have returned.
  EXPECT_TRUE(r.Async("GET", "/poll", async::Deferrable([](const http::Request& req,
                                                           http::Response& res,
                                                           async::Deferral& later) {
                 if (req.QueryParam("now").present()) {
                   res.set_body("not deferred");
                   return;
                 }
                 res.set_content_type("text/plain");
                 hub.Add(later.Stream());
               })).ok());
  EXPECT_TRUE(r.Async("GET", "/slow-poll", async::DeferrableOnWorker([](const http::Request&,
                                                                        http::Response& res,
                                                                        async::Deferral& later) {
                 std::this_thread::sleep_for(2ms);  // blocking is allowed here
                 http::StartEventStream(res);
                 hub.Add(later.Stream());
               })).ok());
  EXPECT_TRUE(r.Async("GET", "/answer-later", async::Deferrable([](const http::Request&,
                                                                   http::Response& res,
                                                                   async::Deferral& later) {
                 res.set_content_type("text/plain");
                 std::lock_guard<std::mutex> lock(answers.mu);
                 answers.waiting.push_back(later.Answer());
               })).ok());
  return r;
}

// Reads an HTTP/1.1 chunked body to its last chunk: the data, and whether
// the terminating chunk came (a stream ended, not cut).
std::pair<std::string, bool> ReadChunked(TestClient& client) {
  std::string raw = client.pending();
  char buf[65536];
  for (;;) {
    if (raw.find("\r\n0\r\n\r\n") != std::string::npos) break;
    const ssize_t n = recv(client.fd(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  const size_t body = raw.find("\r\n\r\n");
  std::string data;
  size_t at = body == std::string::npos ? raw.size() : body + 4;
  bool ended = false;
  while (at < raw.size()) {
    const size_t eol = raw.find("\r\n", at);
    if (eol == std::string::npos) break;
    const size_t len = std::stoul(raw.substr(at, eol - at), nullptr, 16);
    if (len == 0) {
      ended = true;
      break;
    }
    data.append(raw, eol + 2, len);
    at = eol + 2 + len + 2;
  }
  return {data, ended};
}

class AsyncServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_calls_blocked = 0;
    {
      std::ofstream file(std::string(std::getenv("TEST_TMPDIR")) + "/async_file.txt");
      file << "hello world";
    }
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 256;
    config.workers = 1;
    server_ = std::make_unique<Server>(config, MakeRouter());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    worker_calls_blocked = 0;
    hub.EndAll();
    {
      std::lock_guard<std::mutex> lock(answers.mu);
      for (auto& a : answers.waiting) (void)a->Send(503, "");
      answers.waiting.clear();
    }
    server_->Stop();
    server_->Wait();
  }
  // Polls the server's figures (no sleeping on a guess): true once `pred`
  // holds, false after 10 s.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    for (int i = 0; i < 2000; ++i) {
      if (pred(server_->Stats())) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  std::unique_ptr<Server> server_;
};

TEST_F(AsyncServerTest, EachKindOfAwaitAnswersOverOneKeepAliveConnection) {
  TestClient client(server_->port());
  const std::pair<const char*, const char*> cases[] = {
      {"/sleep?ms=5", "slept"}, {"/worker", "elsewhere"}, {"/nested", "naps=2"},
      {"/sleep?ms=0", "slept"}, {"/mw", "inner"}, {"/file", "world"},
  };
  for (const auto& [path, body] : cases) {
    ASSERT_TRUE(client.Send(Get(path)));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->body, body) << path;
    EXPECT_FALSE(r->Closes()) << path;
    if (std::string_view(path) == "/mw") EXPECT_EQ(r->Header("x-after"), "ran");
  }
  const ServerStats s = server_->Stats();
  EXPECT_EQ(s.async_started, std::size(cases));
  EXPECT_EQ(s.async_worker_calls, 1u);
  EXPECT_EQ(s.slow_dispatched, 0u);  // nothing went to the pool as a SLOW task
}

TEST_F(AsyncServerTest, PipelinedRequestsAreAnsweredInOrder) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/sleep?ms=30") + Get("/sleep?ms=1") + Get("/nested")));
  for (const char* body : {"slept", "slept", "naps=2"}) {
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, body);
  }
}

TEST_F(AsyncServerTest, AThrowIs500AndOneLogLine) {
  testing::StderrCapture err;
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/throw")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(err.WaitForLines(1, {"route \"GET /throw\"", "the handler threw: async boom"}).size(),
            1u)
      << err.Text();
}

TEST_F(AsyncServerTest, ARoutesDeadlineIs503AndCancelsTheAwait) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/deadline")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body, "late");
  const ServerStats s = server_->Stats();
  EXPECT_EQ(s.async_deadlines, 1u);
  EXPECT_EQ(s.async_active, 0u);
}

TEST_F(AsyncServerTest, FiftyWaitsAtOnceHoldNoWorker) {
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 50; ++i) {
    clients.push_back(std::make_unique<TestClient>(server_->port()));
    ASSERT_TRUE(clients.back()->Send(Get("/sleep?ms=300")));
  }
  // All fifty wait at once on one ring, with one worker in the pool.
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 50; }));
  for (auto& c : clients) {
    auto r = c->ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "slept");
  }
  const ServerStats s = server_->Stats();
  EXPECT_EQ(s.workers.completed, 0u);
  EXPECT_EQ(s.async_started, 50u);
}

TEST_F(AsyncServerTest, AClientThatLeavesCancelsItsSleep) {
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/sleep?ms=60000")));
    ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 1; }));
  }  // closed
  EXPECT_TRUE(WaitFor([](const ServerStats& s) {
    return s.async_active == 0 && s.async_cancelled == 1 && s.active == 0;
  }));
}

TEST_F(AsyncServerTest, AClientThatHalfClosesIsTakenAsGoneButStillGetsTheAnswer) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/sleep?ms=60000")));
  ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 1; }));
  shutdown(client.fd(), SHUT_WR);
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "the client is gone");  // the handler saw its await cancelled
  EXPECT_EQ(server_->Stats().async_cancelled, 1u);
}

TEST_F(AsyncServerTest, AWorkerCallRunningWhenTheClientLeavesIsWaitedFor) {
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/worker-hold")));
    ASSERT_TRUE(WaitFor([](const ServerStats&) { return worker_calls_blocked.load() == 1; }));
  }
  // Gone, but the worker still runs the call: the exchange lives on.
  ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_cancelled == 0 && s.async_active == 1; }));
  worker_calls_blocked = 0;  // the call returns
  EXPECT_TRUE(WaitFor([](const ServerStats& s) {
    return s.async_active == 0 && s.async_cancelled == 1 && s.active == 0;
  }));
}

TEST_F(AsyncServerTest, OverH2cStreamsWaitSideBySideAndAResetCancelsOne) {
  testing::H2Client h2(server_->port());
  ASSERT_TRUE(h2.connected());
  const int32_t a = h2.Submit("GET", "/sleep?ms=50");
  const int32_t b = h2.Submit("GET", "/nested");
  const int32_t c = h2.Submit("GET", "/worker");
  const int32_t held = h2.Submit("GET", "/sleep?ms=60000");
  ASSERT_TRUE(h2.Flush());
  ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_started == 4; }));
  nghttp2_submit_rst_stream(h2.session(), NGHTTP2_FLAG_NONE, held, NGHTTP2_CANCEL);
  ASSERT_TRUE(h2.Run());
  EXPECT_EQ(h2.answer(a).body, "slept");
  EXPECT_EQ(h2.answer(b).body, "naps=2");
  EXPECT_EQ(h2.answer(c).body, "elsewhere");
  EXPECT_TRUE(WaitFor([](const ServerStats& s) {
    return s.async_active == 0 && s.async_cancelled == 1;
  }));
  // The connection goes on.
  const int32_t d = h2.Submit("GET", "/sleep?ms=1");
  ASSERT_TRUE(h2.Run());
  EXPECT_EQ(h2.answer(d).status, 200);
}

TEST_F(AsyncServerTest, EventsStreamChunkedOverHttp1AndAsDataOverH2c) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/events?count=3&interval_ms=5")));
  auto [data, ended] = ReadChunked(client);
  EXPECT_EQ(data, "id: 1\ndata: e1\n\nid: 2\ndata: e2\n\nid: 3\ndata: e3\n\n");
  EXPECT_TRUE(ended);

  testing::H2Client h2(server_->port());
  const int32_t id = h2.Submit("GET", "/events?count=2&interval_ms=5");
  ASSERT_TRUE(h2.Run());
  EXPECT_EQ(h2.answer(id).status, 200);
  EXPECT_EQ(h2.answer(id).fields.at("content-type"), "text/event-stream");
  EXPECT_EQ(h2.answer(id).body, "id: 1\ndata: e1\n\nid: 2\ndata: e2\n\n");
  EXPECT_EQ(h2.answer(id).reset, 0u);
}

TEST_F(AsyncServerTest, AStreamsWritesWaitForASlowReaderAndLoseNothing) {
  bytes_written = 0;
  TestClient client(server_->port(), 20000, /*receive_buffer=*/16 * 1024);
  ASSERT_TRUE(client.Send(Get("/big")));
  // The client reads nothing: the handler's writes stop short of the end
  // (what is unsent stays within the pipe's bound and the socket's).
  uint64_t last = 0;
  for (int still = 0; still < 5;) {
    std::this_thread::sleep_for(20ms);
    const uint64_t now = bytes_written.load();
    still = now == last ? still + 1 : 0;
    last = now;
  }
  EXPECT_LT(last, uint64_t{8} << 20);
  EXPECT_EQ(server_->Stats().async_active, 1u);
  // Then everything arrives, in order.
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->body.size(), size_t{8} << 20);
  for (int i = 0; i < 128; ++i) {
    ASSERT_EQ(r->body[static_cast<size_t>(i) << 16], static_cast<char>('a' + i % 26)) << i;
  }
  EXPECT_EQ(bytes_written.load(), uint64_t{8} << 20);
}

TEST_F(AsyncServerTest, AClientLeavingMidStreamEndsTheHandler) {
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/events?count=1000&interval_ms=20")));
    ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 1; }));
  }
  EXPECT_TRUE(WaitFor([](const ServerStats& s) {
    return s.async_active == 0 && s.async_cancelled == 1 && s.active == 0;
  }));
}

TEST_F(AsyncServerTest, ADrainEndsAStreamAtOnceAndLetsAnAnswerFinish) {
  TestClient events(server_->port());
  ASSERT_TRUE(events.Send(Get("/events?count=100&interval_ms=60000")));
  TestClient sleeper(server_->port());
  ASSERT_TRUE(sleeper.Send(Get("/sleep?ms=300")));
  ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 2; }));
  server_->Stop();
  // The stream ends with its last chunk (not cut), long before its next
  // event was due; the sleep is answered as usual.
  auto [data, ended] = ReadChunked(events);
  EXPECT_EQ(data, "id: 1\ndata: e1\n\n");
  EXPECT_TRUE(ended);
  auto r = sleeper.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slept");
  server_->Wait();
}

TEST_F(AsyncServerTest, OneProducerThreadFansEventsOutToManyStreamsWithNoWorker) {
  constexpr int kHttp1 = 200, kH2 = 2, kEvents = 20;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kHttp1; ++i) {
    clients.push_back(std::make_unique<TestClient>(server_->port()));
    ASSERT_TRUE(clients.back()->Send(Get("/ticks")));
  }
  std::vector<std::unique_ptr<testing::H2Client>> h2;
  std::vector<int32_t> ids;
  for (int i = 0; i < kH2; ++i) {
    h2.push_back(std::make_unique<testing::H2Client>(server_->port()));
    ids.push_back(h2.back()->Submit("GET", "/ticks"));
    ASSERT_TRUE(h2.back()->Flush());
  }
  ASSERT_TRUE(WaitFor([&](const ServerStats&) { return hub.size() == kHttp1 + kH2; }));
  std::string expected;
  std::thread producer([&expected] {
    for (int i = 1; i <= kEvents; ++i) {
      std::string text;
      EXPECT_TRUE(http::AppendEvent(&text, {.id = std::to_string(i), .data = "tick"}));
      expected += text;
      EXPECT_EQ(hub.Broadcast(text), kHttp1 + kH2);
    }
    hub.EndAll();
  });
  producer.join();
  for (auto& c : clients) {
    auto [data, ended] = ReadChunked(*c);
    ASSERT_EQ(data, expected);
    EXPECT_TRUE(ended);
  }
  for (int i = 0; i < kH2; ++i) {
    ASSERT_TRUE(h2[i]->Run());
    EXPECT_EQ(h2[i]->answer(ids[i]).body, expected);
    EXPECT_EQ(h2[i]->answer(ids[i]).reset, 0u);
  }
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0; }));
  EXPECT_EQ(server_->Stats().workers.completed, 0u);
}

TEST_F(AsyncServerTest, APushedStreamsWriterLearnsTheClientLeft) {
  // An ASYNC route's Push, and a SLOW-style handler's deferred stream.
  for (const char* path : {"/ticks", "/slow-poll"}) {
    std::shared_ptr<async::PushStream> stream;
    {
      TestClient client(server_->port());
      ASSERT_TRUE(client.Send(Get(path)));
      ASSERT_TRUE(WaitFor([](const ServerStats&) { return hub.size() == 1; })) << path;
      std::lock_guard<std::mutex> lock(hub.mu);
      stream = hub.streams[0];
      hub.streams.clear();
    }
    EXPECT_TRUE(WaitFor([&](const ServerStats&) { return stream->closed(); })) << path;
    EXPECT_EQ(stream->stop_reason(), http::StopReason::kClientGone) << path;
    EXPECT_EQ(stream->Write("x"), async::PushStream::Result::kClosed) << path;
    EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0 && s.active == 0; }))
        << path;
  }
}

TEST_F(AsyncServerTest, DeferredAnswersFromFastAndSlowStyleHandlersComeFromAnotherThread) {
  // Eight SLOW-style handlers with one worker: each lets the worker go when
  // it returns, so all eight streams are open at once.
  constexpr int kSlow = 8;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kSlow; ++i) {
    clients.push_back(std::make_unique<TestClient>(server_->port()));
    ASSERT_TRUE(clients.back()->Send(Get("/slow-poll")));
  }
  clients.push_back(std::make_unique<TestClient>(server_->port()));
  ASSERT_TRUE(clients.back()->Send(Get("/poll")));
  testing::H2Client h2(server_->port());
  const int32_t id = h2.Submit("GET", "/poll");
  ASSERT_TRUE(h2.Flush());
  ASSERT_TRUE(WaitFor([&](const ServerStats&) { return hub.size() == kSlow + 2; }));
  std::thread producer([] {
    EXPECT_EQ(hub.Broadcast("answer"), kSlow + 2);
    hub.EndAll();
  });
  producer.join();
  for (auto& c : clients) {
    auto [data, ended] = ReadChunked(*c);
    EXPECT_EQ(data, "answer");
    EXPECT_TRUE(ended);
  }
  ASSERT_TRUE(h2.Run());
  EXPECT_EQ(h2.answer(id).status, 200);
  EXPECT_EQ(h2.answer(id).body, "answer");
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0; }));
  // The SLOW-style handlers ran on the worker and the FAST-style ones on
  // the ring; no SLOW task was queued.
  EXPECT_EQ(server_->Stats().async_worker_calls, static_cast<uint64_t>(kSlow));
  EXPECT_EQ(server_->Stats().slow_dispatched, 0u);
  // One that does not defer answers at once.
  TestClient plain(server_->port());
  ASSERT_TRUE(plain.Send(Get("/poll?now=1")));
  auto r = plain.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "not deferred");
}

TEST_F(AsyncServerTest, AWholeAnswerSentFromAnotherThreadChoosesItsStatus) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/answer-later")));
  testing::H2Client h2(server_->port());
  const int32_t id = h2.Submit("GET", "/answer-later");
  ASSERT_TRUE(h2.Flush());
  ASSERT_TRUE(WaitFor([](const ServerStats&) { return answers.size() == 2; }));
  std::thread sender([] {
    std::lock_guard<std::mutex> lock(answers.mu);
    // The HTTP/1.1 one came first (it was seen first: the h2c one may have
    // been read in the same batch, so each is told by its own answer).
    EXPECT_TRUE(answers.waiting[0]->Send(204, "", {{"X-Why", "nothing new"}}));
    EXPECT_TRUE(answers.waiting[1]->Send(200, "news", {{"X-Why", "news"}}));
    answers.waiting.clear();
  });
  sender.join();
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(h2.Run());
  // Which request got which answer depends on the order they were seen;
  // each got one whole answer with the fields of its own.
  const bool h1_first = r->status == 204;
  EXPECT_EQ(r->Header("x-why"), h1_first ? "nothing new" : "news");
  EXPECT_EQ(r->body, h1_first ? "" : "news");
  EXPECT_EQ(r->Header("content-type"), "text/plain");
  EXPECT_FALSE(r->Closes());
  EXPECT_EQ(h2.answer(id).status, h1_first ? 200 : 204);
  EXPECT_EQ(h2.answer(id).body, h1_first ? "news" : "");
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0; }));
}

TEST_F(AsyncServerTest, AnAnswerWaitingWhenTheClientLeavesRefusesItsSend) {
  std::shared_ptr<async::DeferredAnswer> answer;
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/answer-later")));
    ASSERT_TRUE(WaitFor([](const ServerStats&) { return answers.size() == 1; }));
    std::lock_guard<std::mutex> lock(answers.mu);
    answer = answers.waiting[0];
    answers.waiting.clear();
  }
  EXPECT_TRUE(WaitFor([&](const ServerStats&) { return answer->closed(); }));
  EXPECT_EQ(answer->stop_reason(), http::StopReason::kClientGone);
  EXPECT_FALSE(answer->Send(200, "late"));
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0 && s.active == 0; }));
}

TEST_F(AsyncServerTest, ASlowHandlerWaitingForItsStopWakesWhenTheClientLeaves) {
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/slow-wait")));
    ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.workers.running == 1; }));
  }
  // Its worker is free again long before the 30 s.
  EXPECT_TRUE(WaitFor([](const ServerStats& s) {
    return s.workers.completed == 1 && s.workers.running == 0 && s.active == 0;
  }));
  // And a drain wakes it too, its answer going out as usual.
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/slow-wait")));
  ASSERT_TRUE(WaitFor([](const ServerStats& s) { return s.workers.running == 1; }));
  server_->Stop();
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "the server is draining");
  server_->Wait();
}

std::string Body(size_t n) {
  std::string body(n, '\0');
  for (size_t i = 0; i < n; ++i) body[i] = static_cast<char>('a' + i * 7 % 26);
  return body;
}

std::string SumOf(const std::string& body) {
  uint64_t sum = 0;
  for (char c : body) sum += static_cast<unsigned char>(c);
  return std::to_string(body.size()) + " " + std::to_string(sum);
}

TEST_F(AsyncServerTest, AStreamedUploadIsReadAsItComesOverHttp1AndH2c) {
  const std::string body = Body(5 << 20);
  {
    // Content-Length.
    TestClient client(server_->port(), 20000);
    ASSERT_TRUE(client.Send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, SumOf(body));
  }
  {
    // Chunked, in pieces of 100 KB.
    TestClient client(server_->port(), 20000);
    std::string req = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size(); at += 100000) {
      const size_t n = std::min<size_t>(100000, body.size() - at);
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", n);
      req += size + body.substr(at, n) + "\r\n";
    }
    req += "0\r\n\r\n";
    ASSERT_TRUE(client.Send(req));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, SumOf(body));
  }
  testing::H2Client h2(server_->port(), 20000, /*initial_window=*/1 << 20);
  const std::string small = Body(300000);
  const int32_t id = h2.Submit("POST", "/upload", {}, small);
  ASSERT_TRUE(h2.Run());
  EXPECT_EQ(h2.answer(id).body, SumOf(small));
  EXPECT_EQ(server_->Stats().workers.completed, 0u);
}

TEST_F(AsyncServerTest, AnUploadPastTheRoutesLimitIs413) {
  TestClient client(server_->port(), 20000);
  std::string req = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string piece(1 << 20, 'x');
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
  ASSERT_TRUE(client.Send(req));
  std::optional<testing::HttpResponse> r;
  for (int i = 0; i < 80; ++i) {  // 80 MiB against a 64 MiB limit
    if (!client.Send(std::string(size) + piece + "\r\n")) break;
  }
  r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(WaitFor([](const ServerStats& s) { return s.async_active == 0; }));
}

}  // namespace
}  // namespace uring_http::serving
