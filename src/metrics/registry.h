// Application metrics: counters, gauges and histograms that a program
// registers and updates, exported on /metrics beside the server's own
// (Prometheus text format, version 0.0.4).
//
//   metrics::Registry registry;                      // outlives the server
//   metrics::Counter& done = registry.Counter("jobs_done_total", "Jobs done.",
//                                             {{"queue", "a"}});
//   router.Slow("POST", "/jobs", [&done](const http::Request&, http::Response&) {
//     done.Inc();                                    // any thread, no lock
//   });
//   config.metrics = &registry;                      // or Server::metrics()
//
// A name is registered once per label set: asking again with the same name
// and labels returns the same metric (so a handler may ask on every call,
// though keeping the reference is cheaper). Series of one name (a family)
// share their type, help text, label names and, for histograms, buckets.
// A registration that breaks the rules (a name or label name outside
// Prometheus' grammar, a name starting with the server's own "uring_http_",
// a family asked for with another type, help, label names or buckets,
// buckets not strictly increasing) returns a metric that works but is not
// exported, writes one error line, and is kept in status(): the server
// refuses to start with it, naming the metric.
//
// Updates are cheap from any thread (ring threads, workers, the app's own):
// a counter and a histogram are split into per-thread-group cells on
// separate cache lines (one relaxed atomic add, uncontended unless more
// than kShards threads update one metric), summed when /metrics is
// scraped; a gauge is one atomic (Set must be exact). Nothing allocates
// after registration.
//
// Thread-safety: every member of every type here may be called from any
// thread, at any time (registration takes a lock; updates take none). The
// references returned stay valid for the registry's life.
#ifndef URING_HTTP_SRC_METRICS_REGISTRY_H_
#define URING_HTTP_SRC_METRICS_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace uring_http::metrics {

// {{"queue", "a"}, {"kind", "b"}}: label names and values, in the order
// they are rendered.
using Labels = std::vector<std::pair<std::string, std::string>>;

namespace internal {
// Cells per counter or histogram; a thread keeps the one it was given.
inline constexpr size_t kShards = 16;
uint32_t AssignShard();
// Constant-initialized: reading it costs no call once the thread has one.
inline thread_local uint32_t thread_shard = UINT32_MAX;
inline size_t Shard() {
  uint32_t s = thread_shard;
  if (s == UINT32_MAX) s = thread_shard = AssignShard();
  return s;
}
}  // namespace internal

// Only goes up (Prometheus restarts from 0 with the process).
class Counter {
 public:
  void Inc() { Add(1); }
  void Add(uint64_t n) {
    cells_[internal::Shard()].value.fetch_add(n, std::memory_order_relaxed);
  }
  // The sum over every thread's additions so far.
  uint64_t Value() const;

 private:
  friend class Registry;
  Counter() = default;
  struct alignas(64) Cell {
    std::atomic<uint64_t> value{0};
  };
  Cell cells_[internal::kShards];
};

// Goes up and down, or is set.
class Gauge {
 public:
  void Set(double value);
  void Add(double delta);
  void Sub(double delta) { Add(-delta); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  double Value() const;

 private:
  friend class Registry;
  Gauge() = default;
  std::atomic<uint64_t> bits_{0};  // a double's bits (0 is 0.0)
};

// Counts observations into fixed buckets (upper bounds, inclusive), with
// their sum and count: rendered as name_bucket{le="..."}, name_sum and
// name_count.
class Histogram {
 public:
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }

  // The buckets' counts (not cumulative; one more than bounds(): the last
  // counts what is above every bound), their sum and count.
  struct Snapshot {
    std::vector<uint64_t> counts;
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Collect() const;

  ~Histogram();
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

 private:
  friend class Registry;
  explicit Histogram(std::vector<double> bounds);
  std::atomic<uint64_t>* shard(size_t i) const { return cells_.get() + i * stride_; }

  std::vector<double> bounds_;
  // Per shard: one count per bucket, then the sum's bits; each shard
  // starts on its own cache line.
  size_t stride_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> cells_;
};

// Prometheus' default buckets (seconds): .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
std::vector<double> DefaultBuckets();

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  metrics::Counter& Counter(std::string_view name, std::string_view help,
                            const Labels& labels = {});
  metrics::Gauge& Gauge(std::string_view name, std::string_view help,
                        const Labels& labels = {});
  // `buckets`: upper bounds, finite and strictly increasing (+Inf is
  // implied); empty: DefaultBuckets().
  metrics::Histogram& Histogram(std::string_view name, std::string_view help,
                                std::vector<double> buckets, const Labels& labels = {});

  // OK, or the first registration refused (the message names the metric).
  absl::Status status() const;
  // Every family in registration order, appended to *out.
  void Render(std::string* out) const;
  std::string Render() const {
    std::string out;
    Render(&out);
    return out;
  }

 private:
  enum class Type : uint8_t { kCounter, kGauge, kHistogram };
  struct Series;
  struct Family;
  // The series of (name, labels), made if new; null (and status_ set) if
  // the registration breaks a rule.
  Series* Find(Type type, std::string_view name, std::string_view help, const Labels& labels,
               const std::vector<double>* buckets);
  void Refuse(std::string message);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // guarded by mu_
  absl::Status status_;                            // guarded by mu_
  // Metrics handed out for refused registrations: they work, unexported.
  std::vector<std::unique_ptr<Series>> refused_;   // guarded by mu_
};

// Prometheus text format's escapes: a label value's backslash, double
// quote and newline; a help text's backslash and newline.
std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelp(std::string_view help);
// A sample value as Prometheus writes it: the shortest text that reads
// back as the same double, "+Inf", "-Inf" or "NaN".
std::string FormatValue(double value);

}  // namespace uring_http::metrics

#endif  // URING_HTTP_SRC_METRICS_REGISTRY_H_
