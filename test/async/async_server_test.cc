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
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/async/exchange.h"
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
  return r;
}

class AsyncServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_calls_blocked = 0;
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
      {"/sleep?ms=0", "slept"}, {"/mw", "inner"},
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

}  // namespace
}  // namespace uring_http::serving
