// SlowTask and TaskBuffer: how a SLOW request travels to a worker and its
// response travels back.
//
// The ring thread copies the request's bytes into a TaskBuffer that the
// connection slot owns (a chunk of the thread's arena, or the heap for a
// request larger than a chunk), pushes a small fixed-size SlowTask onto the
// MPMC queue, and forgets about it until the worker's MSG_RING completion
// arrives. The worker re-parses the bytes, runs the handler, serializes the
// response into the same buffer (the request is dead by then) and publishes
// it with a release store on `state` before posting the completion; the ring
// thread's acquire load pairs with it. The syscall between them orders memory
// for the hardware, but neither the C++ memory model nor ThreadSanitizer can
// see that, hence the atomic.
#ifndef URING_HTTP_SRC_WORKER_SLOW_TASK_H_
#define URING_HTTP_SRC_WORKER_SLOW_TASK_H_

#include <atomic>
#include <cstdint>

namespace uring_http::router {
struct Route;
}

namespace uring_http::worker {

struct TaskBuffer {
  enum State : uint32_t { kPending = 0, kDone = 1 };

  std::atomic<uint32_t> state{kPending};
  uint32_t request_len = 0;
  uint32_t capacity = 0;       // bytes available at data()
  uint32_t response_len = 0;
  char* heap_response = nullptr;  // set when the response outgrew capacity (malloc)
  // Ring-thread decisions the ring applies when the response comes back (the
  // worker writes no Connection header).
  bool keep_alive = true;
  bool keep_alive_header = false;  // HTTP/1.0 keep-alive: say so in the response
  bool head_only = false;          // read by the worker
  // Ring-thread bookkeeping, untouched by the worker (metrics).
  uint32_t route_id = 0;
  int64_t started_ns = 0;
  // The request line for the access log, kept past data() + capacity where
  // the worker does not write.
  uint32_t log_len = 0;

  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* response() { return heap_response != nullptr ? heap_response : data(); }
  const char* log_line() { return data() + capacity; }
};

struct SlowTask {
  const router::Route* route = nullptr;
  TaskBuffer* buffer = nullptr;
  int ring_fd = -1;        // the ring that owns the connection
  uint64_t user_data = 0;  // names the connection slot and its generation
  int64_t enqueued_ns = 0; // steady clock, for the queue-wait metric
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_SLOW_TASK_H_
