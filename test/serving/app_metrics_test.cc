// Application metrics from a user's side, through the public header only:
// a counter a FAST handler increments, a histogram a SLOW one observes and
// a gauge the app sets, scraped over a real socket from /metrics beside the
// server's own; a broken registration stops the server from starting.
#include <string>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

serving::ServerConfig SmallConfig() {
  serving::ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.accept_threads = 2;
  config.accept_capacity = 64;
  config.workers = 2;
  return config;
}

std::string Scrape(uint16_t port) {
  testing::TestClient client(port);
  EXPECT_TRUE(client.Send(testing::Get("/metrics")));
  auto r = client.ReadResponse();
  EXPECT_TRUE(r.has_value());
  return r ? r->body : "";
}

TEST(AppMetricsTest, HandlersUpdateMetricsThatMetricsShows) {
  metrics::Registry registry;
  metrics::Counter& jobs = registry.Counter("jobs_done_total", "Jobs done.", {{"queue", "a"}});
  metrics::Histogram& sizes =
      registry.Histogram("report_rows", "Rows per report.", {10, 100}, {{"kind", "daily"}});
  registry.Gauge("build_info", "The app's version.", {{"version", "1.2.3"}}).Set(1);

  router::Router router;
  ASSERT_TRUE(router
                  .Fast("POST", "/jobs",
                        [&jobs](const http::Request&, http::Response& r) {
                          jobs.Inc();
                          r.set_static_body("done\n");
                        })
                  .ok());
  ASSERT_TRUE(router
                  .Slow("GET", "/report",
                        [&sizes](const http::Request&, http::Response& r) {
                          sizes.Observe(42);
                          r.set_static_body("report\n");
                        })
                  .ok());
  serving::ServerConfig config = SmallConfig();
  config.metrics = &registry;
  serving::Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(&server.metrics(), &registry);

  testing::TestClient client(server.port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send("POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  ASSERT_TRUE(client.Send(testing::Get("/report")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);

  const std::string text = Scrape(server.port());
  EXPECT_NE(text.find("# TYPE jobs_done_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jobs_done_total{queue=\"a\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("report_rows_bucket{kind=\"daily\",le=\"10\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("report_rows_bucket{kind=\"daily\",le=\"100\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("report_rows_count{kind=\"daily\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("build_info{version=\"1.2.3\"} 1\n"), std::string::npos) << text;
  // Beside the server's own.
  EXPECT_NE(text.find("uring_http_connections_accepted_total"), std::string::npos);
  server.Stop();
  server.Wait();
}

// Without a registry of its own the server has one: metrics registered on
// it after the server is made are exported too.
TEST(AppMetricsTest, TheServersOwnRegistry) {
  router::Router router;
  serving::Server server(SmallConfig(), std::move(router));
  metrics::Gauge& depth = server.metrics().Gauge("queue_depth", "Jobs waiting.");
  depth.Set(7);
  ASSERT_TRUE(server.Start().ok());
  const std::string text = Scrape(server.port());
  EXPECT_NE(text.find("queue_depth 7\n"), std::string::npos) << text;
  server.Stop();
  server.Wait();
}

TEST(AppMetricsTest, ABrokenRegistrationStopsTheStart) {
  metrics::Registry registry;
  registry.Counter("jobs done", "A space in the name.");
  serving::ServerConfig config = SmallConfig();
  config.metrics = &registry;
  serving::Server server(config, router::Router());
  const absl::Status s = server.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("metric \"jobs done\""), std::string::npos) << s;
}

}  // namespace
}  // namespace uring_http
