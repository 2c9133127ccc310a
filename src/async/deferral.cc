#include "src/async/deferral.h"

#include <exception>
#include <utility>

#include "absl/status/status.h"

namespace uring_http::async {

std::function<Task<void>(Exchange&)> Deferrable(DeferringHandler handler) {
  return [handler = std::move(handler)](Exchange& ex) -> Task<void> {
    Deferral later(ex);
    try {
      handler(ex.request(), ex.response(), later);
    } catch (...) {
      later.Abandon();
      throw;  // the runner's 500
    }
    if (later.answer_due()) {
      // (An await stopped first closes the handle: Send returns false.)
      (void)co_await ex.AwaitAnswer(later.answer());
      co_return;
    }
    later.Settle();
  };
}

std::function<Task<void>(Exchange&)> DeferrableOnWorker(DeferringHandler handler) {
  return [handler = std::move(handler)](Exchange& ex) -> Task<void> {
    Deferral later(ex);
    // The request and response are the worker's until the call is over:
    // the ring touches neither while it waits.
    auto run = [&handler, &ex, &later] { handler(ex.request(), ex.response(), later); };
    absl::Status ran;
    try {
      ran = co_await ex.OnWorker(run);
    } catch (...) {
      later.Abandon();
      throw;  // the runner's 500
    }
    if (absl::IsResourceExhausted(ran)) {
      ex.response().set_status(503);
      co_return;
    }
    if (!ran.ok()) co_return;  // cancelled before a worker took it: nobody reads the answer
    if (later.answer_due()) {
      (void)co_await ex.AwaitAnswer(later.answer());
      co_return;
    }
    later.Settle();
  };
}

}  // namespace uring_http::async
