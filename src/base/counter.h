// Counter: a statistic one thread writes and any thread reads (/metrics
// sums the loops' counters). A relaxed load and store, not an atomic
// add: the single writer makes the read-modify-write safe and keeps a
// locked instruction off the hot path.
//
// Thread-safety: Add/Sub/Set from one thread (a loop's ring thread); Get
// from any.
#ifndef URING_HTTP_SRC_BASE_COUNTER_H_
#define URING_HTTP_SRC_BASE_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace uring_http::base {

class Counter {
 public:
  void Add(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Sub(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  void Set(uint64_t n) { value_.store(n, std::memory_order_relaxed); }
  uint64_t Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace uring_http::base

#endif  // URING_HTTP_SRC_BASE_COUNTER_H_
