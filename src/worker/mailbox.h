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

  // Leaves `user_data` (and the stream it names, what MSG_RING would have
  // carried as res) for the ring; waits (briefly sleeping) while full.
  void Post(uint64_t user_data, uint32_t stream = 0) {
    while (!queue_.TryPush(Message{user_data, stream})) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    posted_.fetch_add(1, std::memory_order_release);
  }

  // Calls deliver(user_data, stream) for every message waiting; returns
  // how many.
  template <typename F>
  size_t Drain(F&& deliver) {
    if (posted_.load(std::memory_order_acquire) == drained_) return 0;
    size_t n = 0;
    Message m;
    while (queue_.TryPop(m)) {
      deliver(m.user_data, m.stream);
      ++n;
    }
    drained_ += n;
    return n;
  }

  uint64_t posted() const { return posted_.load(std::memory_order_relaxed); }

 private:
  struct Message {
    uint64_t user_data = 0;
    uint32_t stream = 0;
  };
  MpmcQueue<Message> queue_;
  std::atomic<uint64_t> posted_{0};
  uint64_t drained_ = 0;  // the ring thread's own count
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_MAILBOX_H_
