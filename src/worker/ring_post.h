// PostToRing: a worker's message to the ring that owns a connection (a task's
// completion, or progress on one of its streams): MSG_RING, or the ring's
// mailbox when the kernel will not take it.
//
// Thread-safety: any worker thread (each keeps its own MsgRingSender).
#ifndef URING_HTTP_SRC_WORKER_RING_POST_H_
#define URING_HTTP_SRC_WORKER_RING_POST_H_

#include <cstdint>

#include "src/worker/slow_task.h"

namespace uring_http::worker {

enum class PostResult { kSent, kMailbox, kTargetGone };

// `stream` arrives as the CQE's res (MSG_RING's len), or beside the
// user_data in the mailbox: the stream of the connection it is about.
PostResult PostToRing(const RingAddress& ring, uint64_t user_data, uint32_t stream = 0);

// Per-thread counters of what PostToRing did (summed into the pool's stats).
struct PostCounters {
  uint64_t sent = 0;
  uint64_t mailbox = 0;
  uint64_t dropped = 0;  // the ring was gone (shutdown)
  uint64_t overflow_retries = 0;
};
const PostCounters& ThreadPostCounters();

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_RING_POST_H_
