// Load shedding and rate limits from a user's side, through the public
// header only, over real sockets: the N+1th concurrent SLOW request of a
// route limited to N gets 503 with Retry-After while the others run; the
// server-wide --max-in-flight does the same across routes but not to
// /metrics and /healthz; a burst from one client gets 429 with Retry-After
// once its bucket is empty while another client is served; all counted in
// /metrics.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

using testing::HttpResponse;
using testing::TestClient;

serving::ServerConfig SmallConfig() {
  serving::ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.accept_threads = 2;  // limits must hold across rings
  config.accept_capacity = 64;
  config.workers = 4;
  return config;
}

// SLOW handlers that wait until the test opens the gate.
class Gate {
 public:
  router::Handler Handler() {
    return [this](const http::Request&, http::Response& r) {
      std::unique_lock<std::mutex> lock(mu_);
      ++inside_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return open_; });
      --inside_;
      r.set_static_body("done\n");
    };
  }
  // Waits (generously) until n handlers are inside.
  bool WaitInside(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return inside_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Declared after the server: opens the gate before the server stops,
  // whichever way the test ends, so that its workers can finish.
  struct OpenOnExit {
    Gate& gate;
    ~OpenOnExit() { gate.Open(); }
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool open_ = false;
};

std::optional<HttpResponse> Get(TestClient& c, const std::string& path) {
  if (!c.Send(testing::Get(path))) return std::nullopt;
  return c.ReadResponse();
}

std::string Scrape(uint16_t port) {
  TestClient c(port);
  auto r = Get(c, "/metrics");
  EXPECT_TRUE(r.has_value());
  return r ? r->body : "";
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(LimitsTest, RouteMaxInFlightSheds503WithRetryAfter) {
  Gate gate;
  router::Router router;
  router::RouteOptions two;
  two.max_in_flight = 2;
  ASSERT_TRUE(router.Slow("GET", "/report", gate.Handler(), two).ok());
  ASSERT_TRUE(router
                  .Slow("GET", "/other",
                        [](const http::Request&, http::Response& r) { r.set_static_body("o\n"); })
                  .ok());
  serving::Server server(SmallConfig(), std::move(router));
  Gate::OpenOnExit open_on_exit{gate};
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::unique_ptr<TestClient>> running;
  for (int i = 0; i < 2; ++i) {
    running.push_back(std::make_unique<TestClient>(server.port()));
    ASSERT_TRUE(running.back()->Send(testing::Get("/report")));
  }
  ASSERT_TRUE(gate.WaitInside(2));
  // The third, on a connection of its own (and so maybe another ring).
  TestClient third(server.port());
  auto shed = Get(third, "/report");
  ASSERT_TRUE(shed.has_value());
  EXPECT_EQ(shed->status, 503);
  EXPECT_EQ(shed->Header("retry-after"), "1");
  EXPECT_FALSE(shed->Closes());  // the connection stays
  // Another route is not held up.
  auto other = Get(third, "/other");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->status, 200);

  const std::string text = Scrape(server.port());
  EXPECT_TRUE(Has(text, "uring_http_requests_in_flight{method=\"GET\",route=\"/report\"} 2\n"))
      << text;
  EXPECT_TRUE(Has(text,
                  "uring_http_requests_shed_total{method=\"GET\",route=\"/report\","
                  "reason=\"in_flight\"} 1\n"))
      << text;

  gate.Open();
  for (auto& c : running) {
    auto r = c->ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  // Their places are free again.
  auto again = Get(third, "/report");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
  EXPECT_TRUE(Has(Scrape(server.port()),
                  "uring_http_requests_in_flight{method=\"GET\",route=\"/report\"} 0\n"));
  server.Stop();
  server.Wait();
}

TEST(LimitsTest, ServerMaxInFlightCoversRoutesButNotTheBuiltIns) {
  Gate gate;
  router::Router router;
  ASSERT_TRUE(router.Slow("GET", "/a", gate.Handler()).ok());
  ASSERT_TRUE(router
                  .Fast("GET", "/b",
                        [](const http::Request&, http::Response& r) { r.set_static_body("b\n"); })
                  .ok());
  serving::ServerConfig config = SmallConfig();
  config.max_in_flight = 1;
  serving::Server server(config, std::move(router));
  Gate::OpenOnExit open_on_exit{gate};
  ASSERT_TRUE(server.Start().ok());

  TestClient first(server.port());
  ASSERT_TRUE(first.Send(testing::Get("/a")));
  ASSERT_TRUE(gate.WaitInside(1));
  TestClient second(server.port());
  auto shed = Get(second, "/b");  // another route, FAST even
  ASSERT_TRUE(shed.has_value());
  EXPECT_EQ(shed->status, 503);
  EXPECT_EQ(shed->Header("retry-after"), "1");
  auto health = Get(second, "/healthz");
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->status, 200);
  const std::string text = Scrape(server.port());
  EXPECT_TRUE(Has(text, "uring_http_requests_in_flight{method=\"\",route=\"(server)\"} 1\n"))
      << text;
  EXPECT_TRUE(Has(text,
                  "uring_http_requests_shed_total{method=\"GET\",route=\"/b\","
                  "reason=\"in_flight\"} 1\n"))
      << text;
  gate.Open();
  auto r = first.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  auto b = Get(second, "/b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->status, 200);
  server.Stop();
  server.Wait();
}

// A rate so low that no token comes back during the test (one per 100 s):
// the outcome does not depend on the machine's speed.
TEST(LimitsTest, ABurstFromOneClientGets429WhileAnotherIsServed) {
  router::Router router;
  ASSERT_TRUE(router
                  .Fast("GET", "/api",
                        [](const http::Request&, http::Response& r) { r.set_static_body("a\n"); })
                  .ok());
  router::RouteOptions strict;
  strict.rate_per_client = limits::RateLimit{0.01, 1};
  ASSERT_TRUE(router
                  .Fast("GET", "/login",
                        [](const http::Request&, http::Response& r) { r.set_static_body("l\n"); },
                        strict)
                  .ok());
  serving::ServerConfig config = SmallConfig();
  config.rate_limit = limits::RateLimit{0.01, 5};
  serving::Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());

  // Five requests from 127.0.0.1 empty its bucket, over connections that
  // land on either ring.
  for (int i = 0; i < 5; ++i) {
    TestClient c(server.port());
    auto r = Get(c, "/api");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200) << i;
  }
  TestClient a(server.port());
  auto limited = Get(a, "/api");
  ASSERT_TRUE(limited.has_value());
  EXPECT_EQ(limited->status, 429);
  const int retry = std::atoi(limited->Header("retry-after").c_str());
  EXPECT_GE(retry, 90);  // a token per 100 s
  EXPECT_LE(retry, 100);
  EXPECT_FALSE(limited->Closes());
  // Another client is served.
  TestClient b(server.port(), 10000, 0, "127.0.0.2");
  ASSERT_TRUE(b.connected());
  auto served = Get(b, "/api");
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->status, 200);
  // A route's own rate: one request, then 429 (the server's bucket has
  // four left for 127.0.0.2).
  auto login = Get(b, "/login");
  ASSERT_TRUE(login.has_value());
  EXPECT_EQ(login->status, 200);
  login = Get(b, "/login");
  ASSERT_TRUE(login.has_value());
  EXPECT_EQ(login->status, 429);
  // /metrics is not limited.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Scrape(server.port()).empty());
  const std::string text = Scrape(server.port());
  EXPECT_TRUE(Has(text,
                  "uring_http_requests_shed_total{method=\"GET\",route=\"/api\","
                  "reason=\"rate_limit\"} 1\n"))
      << text;
  EXPECT_TRUE(Has(text,
                  "uring_http_requests_shed_total{method=\"GET\",route=\"/login\","
                  "reason=\"rate_limit\"} 1\n"))
      << text;
  server.Stop();
  server.Wait();
}

}  // namespace
}  // namespace uring_http
