// Deferred answers for handlers written as FAST or SLOW ones: the handler
// keeps a handle to its exchange (a PushStream) and the body is written
// later, from any thread, after the handler has returned; no thread is
// held meanwhile.
//
//   router.Async("GET", "/poll", async::Deferrable(
//       [&hub](const http::Request& req, http::Response& res, async::Deferral& later) {
//         res.set_content_type("text/plain");
//         hub.Add(later.Stream());  // written, and ended, by another thread
//       }));
//
// Deferrable(h) runs h inline on the ring thread, as a FAST handler runs
// (it must not block); DeferrableOnWorker(h) runs it on a worker thread,
// as a SLOW handler runs (it may block; the thread is let go when it
// returns, however long the stream stays open). Either way the route is
// served by the ring's ASYNC runner (runner.h): middleware, path params,
// deadlines and gzip as for any route. A handler that never calls Stream()
// answers as usual with what it left in the Response.
//
// Two ways to answer later. Answer() leaves the whole answer to another
// thread's DeferredAnswer::Send(status, body, fields) (a long poll that
// says 200 or 204 when it knows): nothing goes before it, and the fields
// the handler set are kept. Stream() leaves the body to a PushStream:
// the head (the status and headers the handler leaves)
// goes when the handler returns, and the exchange lasts until the
// stream's End(), the client leaving, a drain or the route's deadline
// (push_stream.h: Write's outcomes, OnDrain, OnClose). Writes made before
// the handler returns wait in the stream and go right after the head. A
// handler that throws after Stream() or Answer() is a 500 as usual; its
// stream or answer is closed (Write says kClosed, Send false).
//
// Thread-safety: Stream() and Answer() on the thread the handler runs on,
// during the handler. What they return: push_stream.h, deferred_answer.h.
#ifndef URING_HTTP_SRC_ASYNC_DEFERRAL_H_
#define URING_HTTP_SRC_ASYNC_DEFERRAL_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "src/async/deferred_answer.h"
#include "src/async/exchange.h"
#include "src/async/push_stream.h"
#include "src/async/task.h"
#include "src/http/request.h"
#include "src/http/response.h"

namespace uring_http::async {

class Deferral {
 public:
  explicit Deferral(Exchange& ex) : ex_(ex) {}
  Deferral(const Deferral&) = delete;
  Deferral& operator=(const Deferral&) = delete;

  // The response's body will come from writers on any thread; its head
  // goes when the handler returns. Each call returns the same stream (a
  // closed one after Answer()).
  std::shared_ptr<PushStream> Stream() {
    if (stream_ == nullptr) {
      stream_ = ex_.MakePush();
      if (way_ == Way::kAnswer) {
        stream_->Close(http::StopReason::kNone);
      } else {
        way_ = Way::kStream;
      }
    }
    return stream_;
  }
  // The whole answer will come from any thread (deferred_answer.h): nothing
  // goes before its Send. Each call returns the same handle (a closed one
  // after Stream()).
  std::shared_ptr<DeferredAnswer> Answer() {
    if (answer_ == nullptr) {
      answer_ = ex_.MakeAnswer();
      if (way_ == Way::kStream) {
        answer_->Close(http::StopReason::kNone);
      } else {
        way_ = Way::kAnswer;
      }
    }
    return answer_;
  }
  bool deferred() const { return way_ != Way::kNone; }

  // ---- for Deferrable's coroutine, on the ring after the handler
  bool answer_due() const { return way_ == Way::kAnswer; }
  std::shared_ptr<DeferredAnswer> answer() const { return answer_; }
  // Hands the stream to the ring (the head goes now).
  void Settle() {
    if (way_ == Way::kStream) (void)ex_.Push(stream_);
  }
  // The handler failed (or the exchange stopped before the ring took them):
  // nobody will take the stream or the answer.
  void Abandon(http::StopReason why = http::StopReason::kNone) {
    if (stream_ != nullptr && !stream_->closed()) stream_->Close(why);
    if (answer_ != nullptr) answer_->Close(why);
  }

 private:
  // Whichever of Stream() and Answer() came first is the answer's way.
  enum class Way : uint8_t { kNone, kStream, kAnswer };
  Exchange& ex_;
  Way way_ = Way::kNone;
  std::shared_ptr<PushStream> stream_;
  std::shared_ptr<DeferredAnswer> answer_;
};

using DeferringHandler =
    std::function<void(const http::Request&, http::Response&, Deferral&)>;

// An ASYNC route's handler (Router::Async) that runs `handler` inline on
// the ring thread.
std::function<Task<void>(Exchange&)> Deferrable(DeferringHandler handler);
// ... that runs `handler` on a worker thread (Exchange::OnWorker): 503 when
// the worker queue is full; not run at all when the client left before a
// worker took it.
std::function<Task<void>(Exchange&)> DeferrableOnWorker(DeferringHandler handler);

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_DEFERRAL_H_
