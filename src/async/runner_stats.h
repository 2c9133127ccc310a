// RunnerStats: a ring's ASYNC figures (runner.h), apart so that the loop's
// statistics can hold them without the runner's dependencies.
#ifndef URING_HTTP_SRC_ASYNC_RUNNER_STATS_H_
#define URING_HTTP_SRC_ASYNC_RUNNER_STATS_H_

#include "src/base/counter.h"

namespace uring_http::async {

// A ring's figures (one writer: the ring thread; the server sums them).
struct RunnerStats {
  base::Counter started;       // ASYNC handlers started
  base::Counter active;        // exchanges in progress now (gauge)
  base::Counter cancelled;     // stopped while in progress (client gone, deadline)
  base::Counter deadlines;     // of those, by their route's timeout (answered 503)
  base::Counter refused;       // every exchange taken: 503
  base::Counter worker_calls;  // OnWorker calls handed to the pool
  base::Counter frame_slabs;   // coroutine-frame slabs and oversized frames taken from the heap
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_RUNNER_STATS_H_
