// WorkerPool: threads that run SLOW handlers, fed by one bounded lock-free
// MPMC queue shared by all accept threads.
//
// Idle workers sleep on a POSIX semaphore (a futex): an idle server with 300
// workers uses no CPU. Each Submit() adds one token and wakes at most one
// sleeping worker; a worker takes a token, pops a task (tasks are served
// FIFO), runs it, and posts the result to the ring named in the task with
// IORING_OP_MSG_RING (or that ring's mailbox, see ring_post.h). (std::counting_semaphore in libstdc++ 12 spins and
// yields before it sleeps and wakes every waiter on release: with hundreds of
// workers that herd cost more CPU than the requests.)
//
// Thread-safety: Submit() from any thread (the ring threads); Start() and
// Stop() from the thread that owns the pool.
#ifndef URING_HTTP_SRC_WORKER_WORKER_POOL_H_
#define URING_HTTP_SRC_WORKER_WORKER_POOL_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <semaphore.h>
#include <thread>
#include <vector>

#include "src/http/compress.h"
#include "src/http/parser.h"
#include "src/worker/mpmc_queue.h"
#include "src/worker/worker_pool_stats.h"
#include "src/worker/slow_task.h"

namespace uring_http::worker {


class WorkerPool {
 public:
  // `batch_sched`: the workers run as SCHED_BATCH (see WorkerMain).
  // `nice` > 0: and at that lower priority (a pool whose jobs must yield
  // the CPU to the rings, such as TLS handshakes). `name`: the threads'.
  WorkerPool(size_t threads, size_t queue_capacity, const http::ParseLimits& limits,
             bool batch_sched = false, int nice = 0, const char* name = "uring-worker");
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // gzip for SLOW answers, compressed here on the worker (before Start()).
  void set_compression(const http::CompressionOptions& compression) {
    compression_ = compression;
  }
  void Start();
  // False when the queue is full (the caller answers 503).
  bool Submit(const SlowTask& task);
  // Runs every task already queued, then joins the threads.
  void Stop();
  // The same, but a thread still busy at `deadline` (a handler that does
  // not return) is detached and abandoned; returns how many were. The
  // pool must then never be destroyed (the owner leaks it: the process is
  // on its way out).
  size_t Stop(std::chrono::steady_clock::time_point deadline);


  size_t threads() const { return num_threads_; }
  size_t queue_capacity() const { return queue_.capacity(); }
  WorkerPoolStats Stats() const;

  // Runs `task`'s handler on the calling thread and leaves its response in
  // the TaskBuffer (exposed for workers and for tests). Headers: room for
  // limits.max_headers, as the ring thread allowed.
  static void RunTask(const SlowTask& task, const http::ParseLimits& limits,
                      const http::CompressionOptions& compression = {});

 private:
  struct alignas(64) WorkerStats {
    std::atomic<uint64_t> completed{0};
    std::atomic<uint64_t> queue_wait_ns{0};
    std::atomic<uint64_t> msg_ring_sent{0};
    std::atomic<uint64_t> msg_ring_retries{0};
    std::atomic<uint64_t> results_dropped{0};
    std::atomic<uint64_t> mailbox_posts{0};
    std::atomic<uint64_t> jobs_skipped{0};
    std::atomic<bool> running{false};
    std::atomic<bool> exited{false};  // WorkerMain has returned
  };

  void WorkerMain(size_t index);

  const size_t num_threads_;
  const http::ParseLimits limits_;
  const bool batch_sched_;
  const int nice_;
  const char* const name_;
  http::CompressionOptions compression_;
  MpmcQueue<SlowTask> queue_;
  sem_t tokens_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> submitted_{0};
  std::unique_ptr<WorkerStats[]> stats_;
  std::vector<std::thread> threads_;
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_WORKER_POOL_H_
