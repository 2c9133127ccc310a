// DeferredAnswer: a whole answer (status, fields, body) given later by any
// thread, for an exchange whose handler has returned without one: a long
// poll answered 200 with the news or 204 when there is none, a result
// another system delivers. Nothing of the answer goes before Send, so its
// status is the sender's to choose (a PushStream's head goes at once).
//
//   later.Answer()->Send(200, body, {{"Content-Type", "application/json"}});
//
// Send returns false, and takes nothing, when the exchange is over: its
// client left, the route's deadline passed (then 503), or it was answered
// already. closed() and stop_reason() say the same at any time, without
// sending. A drain does not close it: like any answer still being made, it
// may come until the shutdown timeout.
//
// The ring awaits it (Exchange::AwaitAnswer); Send stores the answer under
// the handle's lock and posts the exchange's key to its ring's inbox (as a
// PushStream's writes do), and the ring closes the handle, under the same
// lock, before its exchange and its ring may go, so a late Send never
// touches either.
//
// Thread-safety: Send, closed, stop_reason: any thread. The rest: the ring.
#ifndef URING_HTTP_SRC_ASYNC_DEFERRED_ANSWER_H_
#define URING_HTTP_SRC_ASYNC_DEFERRED_ANSWER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "src/async/push_stream.h"
#include "src/http/stop_reason.h"

namespace uring_http::async {

class DeferredAnswer {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;

  DeferredAnswer(RingInbox* inbox, uint64_t user_data) : inbox_(inbox), user_data_(user_data) {}
  DeferredAnswer(const DeferredAnswer&) = delete;
  DeferredAnswer& operator=(const DeferredAnswer&) = delete;

  // The answer, once; its fields are added to those the handler set (the
  // same rules as Response::AddHeader: a refused one makes it a 500).
  bool Send(int status, std::string body = {}, Fields fields = {});
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  http::StopReason stop_reason() const {
    return static_cast<http::StopReason>(reason_.load(std::memory_order_acquire));
  }

  // ---- the ring's side (runner.cc)
  bool sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  // Moves the sent answer out (once sent).
  void Take(int* status, std::string* body, Fields* fields);
  // No answer will be taken any more (`why` kNone: it was taken).
  void Close(http::StopReason why);

 private:
  mutable std::mutex mu_;
  bool sent_ = false;
  int status_ = 200;
  std::string body_;
  Fields fields_;
  std::atomic<bool> closed_{false};
  std::atomic<uint8_t> reason_{0};
  RingInbox* const inbox_;
  const uint64_t user_data_;
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_DEFERRED_ANSWER_H_
