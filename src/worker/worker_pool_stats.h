// WorkerPoolStats: the worker pool's counters as a snapshot (a plain
// struct, public through ServerStats::workers).
#ifndef URING_HTTP_SRC_WORKER_WORKER_POOL_STATS_H_
#define URING_HTTP_SRC_WORKER_WORKER_POOL_STATS_H_

#include <cstdint>

namespace uring_http::worker {

struct WorkerPoolStats {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  uint64_t running = 0;
  uint64_t queued = 0;            // approximate
  uint64_t queue_wait_ns = 0;     // summed over completed tasks
  uint64_t msg_ring_sent = 0;
  uint64_t msg_ring_retries = 0;  // target CQ was full; retried
  uint64_t results_dropped = 0;   // target ring gone (shutdown)
  uint64_t mailbox_posts = 0;     // MSG_RING refused: left in the ring's mailbox
  uint64_t jobs_skipped = 0;      // WorkerJobs their ring abandoned in the queue: not run
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_WORKER_POOL_STATS_H_
