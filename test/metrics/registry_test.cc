// The application metrics registry: registration rules and their errors,
// updates from many threads, and the Prometheus text it renders (escapes,
// label quoting, a histogram's _bucket/_sum/_count).
#include "src/metrics/registry.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::metrics {
namespace {

TEST(RegistryTest, CounterRendersWithHelpTypeAndLabels) {
  Registry r;
  Counter& a = r.Counter("jobs_done_total", "Jobs done.", {{"queue", "a"}});
  Counter& b = r.Counter("jobs_done_total", "Jobs done.", {{"queue", "b"}});
  a.Inc();
  a.Add(4);
  b.Inc();
  EXPECT_EQ(a.Value(), 5u);
  EXPECT_EQ(r.Render(),
            "# HELP jobs_done_total Jobs done.\n"
            "# TYPE jobs_done_total counter\n"
            "jobs_done_total{queue=\"a\"} 5\n"
            "jobs_done_total{queue=\"b\"} 1\n");
  EXPECT_TRUE(r.status().ok());
}

TEST(RegistryTest, SameNameAndLabelsIsTheSameMetric) {
  Registry r;
  Counter& a = r.Counter("hits_total", "Hits.", {{"x", "1"}});
  Counter& again = r.Counter("hits_total", "Hits.", {{"x", "1"}});
  EXPECT_EQ(&a, &again);
  Gauge& g = r.Gauge("depth", "Depth.");
  EXPECT_EQ(&g, &r.Gauge("depth", "Depth."));
}

TEST(RegistryTest, GaugeSetAddAndFormatting) {
  Registry r;
  Gauge& g = r.Gauge("temperature_celsius", "Temperature.");
  g.Set(21.5);
  g.Add(0.25);
  g.Dec();
  EXPECT_DOUBLE_EQ(g.Value(), 20.75);
  EXPECT_EQ(r.Render(),
            "# HELP temperature_celsius Temperature.\n"
            "# TYPE temperature_celsius gauge\n"
            "temperature_celsius 20.75\n");
  g.Set(std::numeric_limits<double>::infinity());
  EXPECT_NE(r.Render().find("temperature_celsius +Inf\n"), std::string::npos);
  g.Set(-std::numeric_limits<double>::infinity());
  EXPECT_NE(r.Render().find("temperature_celsius -Inf\n"), std::string::npos);
  g.Set(std::nan(""));
  EXPECT_NE(r.Render().find("temperature_celsius NaN\n"), std::string::npos);
  g.Set(0.1);  // the shortest text that reads back as the same double
  EXPECT_NE(r.Render().find("temperature_celsius 0.1\n"), std::string::npos);
}

TEST(RegistryTest, HistogramBucketsSumAndCount) {
  Registry r;
  Histogram& h = r.Histogram("job_seconds", "Job time.", {0.1, 1, 2.5}, {{"queue", "a"}});
  h.Observe(0.05);
  h.Observe(0.1);  // bounds are inclusive
  h.Observe(0.5);
  h.Observe(3);
  EXPECT_EQ(r.Render(),
            "# HELP job_seconds Job time.\n"
            "# TYPE job_seconds histogram\n"
            "job_seconds_bucket{queue=\"a\",le=\"0.1\"} 2\n"
            "job_seconds_bucket{queue=\"a\",le=\"1\"} 3\n"
            "job_seconds_bucket{queue=\"a\",le=\"2.5\"} 3\n"
            "job_seconds_bucket{queue=\"a\",le=\"+Inf\"} 4\n"
            "job_seconds_sum{queue=\"a\"} 3.65\n"
            "job_seconds_count{queue=\"a\"} 4\n");
}

TEST(RegistryTest, HistogramWithoutLabelsAndDefaultBuckets) {
  Registry r;
  Histogram& h = r.Histogram("latency_seconds", "Latency.", {});
  EXPECT_EQ(h.bounds(), DefaultBuckets());
  h.Observe(0.003);
  const std::string text = r.Render();
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_sum 0.003\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_count 1\n"), std::string::npos) << text;
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry r;
  r.Counter("odd_total", "Help with a \\ backslash\nand a newline \"quoted\".",
            {{"path", "C:\\dir \"x\"\nnext"}})
      .Inc();
  EXPECT_EQ(r.Render(),
            "# HELP odd_total Help with a \\\\ backslash\\nand a newline \"quoted\".\n"
            "# TYPE odd_total counter\n"
            "odd_total{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 1\n");
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeHelp("a\"b\\c\nd"), "a\"b\\\\c\\nd");
}

// Each broken registration: a working metric that is not exported, and a
// status naming it.
TEST(RegistryTest, RefusesBrokenRegistrationsWithAClearError) {
  struct Case {
    std::function<void(Registry&)> register_it;
    std::string expect;  // in the status message
  };
  const std::vector<Case> cases = {
      {[](Registry& r) { r.Counter("jobs done", "x"); },
       "metric \"jobs done\": a metric name must match"},
      {[](Registry& r) { r.Counter("", "x"); }, "a metric name must match"},
      {[](Registry& r) { r.Counter("9lives", "x"); }, "a metric name must match"},
      {[](Registry& r) { r.Counter("uring_http_mine_total", "x"); },
       "names starting with uring_http_ are the server's own"},
      {[](Registry& r) { r.Counter("a_total", "x", {{"bad-label", "v"}}); },
       "label name \"bad-label\""},
      {[](Registry& r) { r.Counter("a_total", "x", {{"__reserved", "v"}}); },
       "label name \"__reserved\""},
      {[](Registry& r) { r.Counter("a_total", "x", {{"k", "1"}, {"k", "2"}}); },
       "label \"k\" given twice"},
      {[](Registry& r) { r.Histogram("h", "x", {1}, {{"le", "1"}}); }, "le label"},
      {[](Registry& r) { r.Histogram("h", "x", {1, 1}); }, "strictly increasing"},
      {[](Registry& r) { r.Histogram("h", "x", {2, 1}); }, "strictly increasing"},
      {[](Registry& r) { r.Histogram("h", "x", {1, std::numeric_limits<double>::infinity()}); },
       "finite"},
      {[](Registry& r) {
         r.Counter("x_total", "x");
         r.Gauge("x_total", "x");
       },
       "registered before as another type"},
      {[](Registry& r) {
         r.Counter("x_total", "x");
         r.Counter("x_total", "y");
       },
       "another help text"},
      {[](Registry& r) {
         r.Counter("x_total", "x", {{"a", "1"}});
         r.Counter("x_total", "x", {{"b", "1"}});
       },
       "other label names"},
      {[](Registry& r) {
         r.Histogram("h", "x", {1, 2});
         r.Histogram("h", "x", {1, 3});
       },
       "other buckets"},
      {[](Registry& r) {
         r.Histogram("req", "x", {1});
         r.Counter("req_count", "x");
       },
       "clash with those of \"req\""},
      {[](Registry& r) {
         r.Gauge("req_sum", "x");
         r.Histogram("req", "x", {1});
       },
       "clash with those of \"req_sum\""},
  };
  for (const Case& c : cases) {
    Registry r;
    c.register_it(r);
    EXPECT_FALSE(r.status().ok()) << c.expect;
    EXPECT_NE(std::string(r.status().message()).find(c.expect), std::string::npos)
        << r.status().message();
  }
  // The metric handed out still works, and stays out of the output.
  Registry r;
  Counter& c = r.Counter("not ok", "x");
  c.Inc();
  EXPECT_EQ(c.Value(), 1u);
  EXPECT_EQ(r.Render(), "");
  // The first error is the one kept.
  r.Gauge("also bad", "x");
  EXPECT_NE(std::string(r.status().message()).find("not ok"), std::string::npos);
}

// Counters and histograms updated from many threads at once lose nothing.
TEST(RegistryTest, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  Counter& c = r.Counter("events_total", "Events.");
  Histogram& h = r.Histogram("sizes", "Sizes.", {1, 10});
  Gauge& g = r.Gauge("level", "Level.");
  constexpr int kThreads = 24;  // more than the shards: some share a cell
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        c.Inc();
        h.Observe(i % 3 == 0 ? 0.5 : 5);
        g.Add(1);
      }
    });
  }
  // Scraping meanwhile is fine too.
  for (int i = 0; i < 20; ++i) (void)r.Render();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Value(), uint64_t{kThreads} * kEach);
  const Histogram::Snapshot snap = h.Collect();
  EXPECT_EQ(snap.count, uint64_t{kThreads} * kEach);
  uint64_t small = 0;
  for (int i = 0; i < kEach; ++i) small += i % 3 == 0;
  EXPECT_EQ(snap.counts[0], small * kThreads);
  EXPECT_EQ(snap.counts[2], 0u);
  EXPECT_DOUBLE_EQ(g.Value(), double{kThreads} * kEach);
}

}  // namespace
}  // namespace uring_http::metrics
