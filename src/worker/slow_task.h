// SlowTask and TaskBuffer: how a SLOW request travels to a worker and its
// response travels back.
//
// The ring thread copies the request's head (and its buffered body) into a
// TaskBuffer that the connection owns (NewTaskBuffer: a block as large as
// the request needs, from the thread's size classes), pushes a small fixed-size SlowTask onto the MPMC queue,
// and forgets about it until the worker's MSG_RING completion arrives. The
// worker parses the head again (into views of the TaskBuffer), runs the
// handler and leaves the result in the TaskBuffer as structured data (a
// Response: status, headers, body), published with a release store on
// `state` before posting the completion; the ring thread's acquire load pairs
// with it and serializes the response itself (it alone decides keep-alive and
// framing). The syscall between them orders memory for the hardware, but
// neither the C++ memory model nor ThreadSanitizer can see that, hence the
// atomic.
//
// Streams cross in BodyPipes: a streamed request body in `request_body`
// (created by the ring), a streamed response in `response_body` (created by
// the worker at the handler's first Write, then owned by the ring). Progress
// on either is announced with a kStreamNotify MSG_RING to `notify_user_data`.
// A response pipe carries body bytes only: the worker leaves the head
// (status, fields, a promised length) and later the trailers in a
// StreamHead, and the ring's codec frames them (HTTP/1 chunks, or HTTP/2
// frames), so that nothing of a protocol runs on a worker.
//
// An ASYNC route's request travels in the same TaskBuffer, but its loop
// hands it to its coroutine runner (src/async/runner.h) instead of the
// queue: the handler runs on the ring thread, its answer is published the
// same way and its completion delivered as if a worker had posted it, so
// a connection treats both alike. `stop` and `async_exchange` below are
// how the connection's StopTask reaches either.
#ifndef URING_HTTP_SRC_WORKER_SLOW_TASK_H_
#define URING_HTTP_SRC_WORKER_SLOW_TASK_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

#include "src/base/size_class_memory.h"
#include "src/http/client_address.h"
#include "src/http/client_certificate.h"
#include "src/http/header.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/worker/body_pipe.h"

namespace uring_http::router {
struct Route;
class Pipeline;
}

namespace uring_http::worker {

class Mailbox;

// Where a worker's messages for a ring go: MSG_RING to ring_fd, or the
// ring's mailbox when the kernel refuses (see Mailbox).
struct RingAddress {
  int ring_fd = -1;
  Mailbox* mailbox = nullptr;
};

// The head of a streamed response as the worker fixed it at the first
// Write: written before `response_body` is published (release), read by the
// ring after it loads the pipe (acquire), which frees it once the head is
// serialized: the worker never touches it again (its trailers go apart, in
// TaskBuffer::stream_trailers), and an open stream does not keep it.
struct StreamHead {
  int status = 200;
  http::HeaderTable fields;
  bool length_known = false;  // a Content-Length the body keeps (not gzipped)
  uint64_t length = 0;
};

struct TaskBuffer {
  enum State : uint32_t { kPending = 0, kDone = 1 };

  std::atomic<uint32_t> state{kPending};

  // ---- request, written by the ring thread before the push
  uint32_t head_len = 0;    // the request head at data()
  uint64_t body_len = 0;    // a buffered body right after it
  // Bytes at data(): those above, or more (the rest of its size-class block,
  // where an ASYNC exchange puts its parsed request).
  uint32_t capacity = 0;
  // Request::allowed_methods, right after the body (route_tree.h's text can
  // live in a ring thread's scratch: copied).
  uint16_t allow_len = 0;
  bool head_only = false;   // HEAD: a streamed response sends no body
  bool keep_alive = true;   // the request allows keep-alive (the ring decides at the end)
  BodyPipe* request_body = nullptr;  // streamed request body, or null
  http::ClientAddress client_address;  // Request::client_address
  // Request::client_certificate: the task holds it, so it outlives a
  // connection that closes while the handler runs.
  std::shared_ptr<const http::ClientCertificate> client_certificate;
  RingAddress ring;
  uint64_t notify_user_data = 0;     // kStreamNotify for this connection
  // The exchange's stream within its connection (HTTP/2's stream id;
  // HTTP/1: 0), carried by the completion and every notification as the
  // CQE's res, so the ring goes to that stream and looks through no others.
  uint32_t stream = 0;
  // Whether the handler should stop (http::StopReason): stored by the ring
  // (release) when its client leaves, the server drains or the route's
  // deadline passes; Request::stop points here.
  // 32 bits: a SLOW handler waits on it (Request::WaitForStop, a futex).
  std::atomic<uint32_t> stop{0};
  // An ASYNC route's task: its exchange on the ring (async/runner.h), so
  // that the connection's cancel finds it. kNoExchange for a worker's.
  static constexpr uint32_t kNoExchange = UINT32_MAX;
  uint32_t async_exchange = kNoExchange;
  bool secure = false;                 // Request::secure
  // A result, written by the worker (here beside the small fields above:
  // a task is kept by every open stream). The stream ended without a
  // complete body (the handler threw, or wrote fewer bytes than its
  // Content-Length): the ring closes the connection after what was sent,
  // since the client cannot tell the body is short.
  bool stream_broken = false;

  // ---- result, written by the worker
  http::Response response;  // sent by the ring unless the body was streamed
  // A streamed response: the pipe the worker writes its body bytes into,
  // published with a release store. Owned by the ring once seen.
  std::atomic<BodyPipe*> response_body{nullptr};
  // Its head, set before the pipe is published (one allocation per
  // streamed response, beside the pipe's own); the ring's once seen.
  std::unique_ptr<StreamHead> stream_head;
  // Its trailers (null: none), written before the pipe's Finish()
  // (release), read by the ring once the task has completed.
  std::unique_ptr<http::HeaderTable> stream_trailers;

  char* data() { return reinterpret_cast<char*>(this + 1); }
};

// A TaskBuffer with room for at least `data_bytes` at data() (its
// `capacity` says how much: the rest of its block), or null when the heap
// refuses. The block comes from the ring thread's size classes
// (base/size_class_memory.h): a warm ring makes tasks without malloc, and
// a task takes no more memory than its request needs (one an open stream
// keeps, for the stream's life). Made and deleted on the ring thread.
inline TaskBuffer* NewTaskBuffer(size_t data_bytes) {
  const size_t bytes = sizeof(TaskBuffer) + data_bytes;
  void* memory = base::SizeClassMemory::Allocate(bytes, nullptr);
  if (memory == nullptr) return nullptr;
  auto* task = new (memory) TaskBuffer();
  task->capacity = static_cast<uint32_t>(
      std::min<size_t>(base::SizeClassMemory::BlockBytes(bytes) - sizeof(TaskBuffer), UINT32_MAX));
  return task;
}

inline void DeleteTaskBuffer(TaskBuffer* task) {
  task->~TaskBuffer();
  base::SizeClassMemory::Free(task);
}

// What an ASYNC exchange's request takes when it is parsed into its task,
// past the `copied` bytes the connection copied (async/runner.cc,
// PlaceRequest): the Request, aligned, and a Header for each field line of
// the head (its lines but the request line and the blank one). The
// connection asks for this much more room, so that the request lives in
// the task's block rather than one of its own. (A block starts aligned for
// anything, so the padding before the Request is known here.)
inline size_t ParsedRequestBytes(std::string_view head, size_t copied) {
  static_assert(sizeof(TaskBuffer) % alignof(http::Request) == 0 &&
                alignof(http::Request) <= alignof(std::max_align_t));
  const size_t misaligned = copied % alignof(http::Request);
  const size_t pad = misaligned == 0 ? 0 : alignof(http::Request) - misaligned;
  size_t lines = 0;
  const char* const end = head.data() + head.size();
  for (const char* at = head.data(); at < end; ++at, ++lines) {
    at = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
    if (at == nullptr) break;
  }
  const size_t fields = lines > 2 ? lines - 2 : 0;
  return pad + sizeof(http::Request) + fields * sizeof(http::Header);
}

// Work for a worker that is not a handler (a TLS handshake step that signs
// with an RSA key): the worker calls run(job), then posts the task's
// user_data to `ring` like a handler's completion. `done` is stored with
// release after run returns, for the ring's acquire load (what the job
// wrote is then visible to the ring thread, and to ThreadSanitizer).
//
// The ring may give a job up while it waits in the queue (its connection
// is gone, or the ring ran the step itself): `state` goes from kQueued to
// kRunning (the worker, Claim) or to kAbandoned (the ring, Abandon), and
// whichever compare-exchange comes first wins, so a worker never runs a
// job the ring took back and the ring knows at once whether it may touch
// what the job would have. An abandoned job still comes back (the worker
// skips run, stores done and posts as usual): its memory is the ring's
// again only then.
struct WorkerJob {
  enum State : uint32_t { kQueued = 0, kRunning = 1, kAbandoned = 2 };

  void (*run)(WorkerJob* job) = nullptr;
  RingAddress ring;
  std::atomic<uint32_t> state{kQueued};
  std::atomic<uint32_t> done{0};

  // The ring, before each Submit (the queue's push publishes both).
  void Prepare() {
    state.store(kQueued, std::memory_order_relaxed);
    done.store(0, std::memory_order_relaxed);
  }
  // The worker, before run: false if the ring abandoned the job (skip it).
  // Acquire: what the ring wrote before the push is the worker's to read
  // (the queue already orders it; this keeps the claim self-contained).
  bool Claim() {
    uint32_t expected = kQueued;
    return state.compare_exchange_strong(expected, kRunning, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }
  // The ring: true if no worker has started the job and none will (what
  // it would have touched is the ring's again now); false if one runs it
  // (wait for done). acq_rel: ordered with the worker's Claim either way.
  bool Abandon() {
    uint32_t expected = kQueued;
    return state.compare_exchange_strong(expected, kAbandoned, std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }
};

struct SlowTask {
  // A job instead of a handler: route, pipeline and buffer are unused.
  WorkerJob* job = nullptr;
  const router::Route* route = nullptr;
  // The router's middleware and error pages; null: the handler alone.
  const router::Pipeline* pipeline = nullptr;
  TaskBuffer* buffer = nullptr;
  uint64_t user_data = 0;  // kTaskDone: names the connection slot and its generation
  uint32_t stream = 0;     // ... and the stream (TaskBuffer::stream), its res
  int64_t enqueued_ns = 0; // steady clock, for the queue-wait metric
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_SLOW_TASK_H_
