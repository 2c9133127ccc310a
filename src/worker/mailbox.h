// Mailbox: where a worker leaves a message for a ring thread when MSG_RING
// cannot deliver it (the kernel refused for a reason that retrying does not
// cure, e.g. persistent ENOMEM). The ring drains it on every timer tick, so
// such a message arrives late (within a tick) but is never lost: a SLOW task
// whose completion went missing would hold its connection slot forever and
// keep a draining server from ever finishing.
//
// Thread-safety: Post() from any thread; Drain() from the owning ring thread.
#ifndef URING_HTTP_SRC_WORKER_MAILBOX_H_
#define URING_HTTP_SRC_WORKER_MAILBOX_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "src/worker/mpmc_queue.h"

namespace uring_http::worker {

class Mailbox {
 public:
  explicit Mailbox(size_t capacity) : queue_(capacity) {}

  // Leaves `user_data` for the ring; waits (briefly sleeping) while full.
  void Post(uint64_t user_data) {
    while (!queue_.TryPush(user_data)) std::this_thread::sleep_for(std::chrono::microseconds(100));
    posted_.fetch_add(1, std::memory_order_release);
  }

  // Calls deliver(user_data) for every message waiting; returns how many.
  template <typename F>
  size_t Drain(F&& deliver) {
    if (posted_.load(std::memory_order_acquire) == drained_) return 0;
    size_t n = 0;
    uint64_t user_data;
    while (queue_.TryPop(user_data)) {
      deliver(user_data);
      ++n;
    }
    drained_ += n;
    return n;
  }

  uint64_t posted() const { return posted_.load(std::memory_order_relaxed); }

 private:
  MpmcQueue<uint64_t> queue_;
  std::atomic<uint64_t> posted_{0};
  uint64_t drained_ = 0;  // the ring thread's own count
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_MAILBOX_H_
