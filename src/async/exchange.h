// Exchange: what an ASYNC handler is given, one per request, on the ring
// thread that read it (router.Async registers such a handler):
//
//   router.Async("GET", "/report", [](async::Exchange& ex) -> async::Task<> {
//     absl::Status waited = co_await ex.Sleep(std::chrono::milliseconds(30));
//     if (!waited.ok()) co_return;  // the client left
//     absl::StatusOr<std::string> page = co_await ex.OnWorker([] { return RenderReport(); });
//     if (page.ok()) ex.response().set_body(*page);
//   });
//
// With g++ 12 (Debian 12's), never write co_await inside the condition of
// an if, while or switch ("if (!(co_await ex.Sleep(d)).ok())"): g++ 12.2
// sizes that coroutine's frame too small and the await corrupts memory
// (found here, under ASan, on the first such line). Await into a local
// first, as above. test/async:no_await_in_condition_test keeps this
// repository free of the pattern.
//
// The request and the response live as long as the exchange (the whole
// coroutine), and the answer goes when the handler's task ends, with the
// route's middlewares' afters, error pages and gzip as for any handler.
// A throw out of the handler is a logged 500.
//
// Each await is one completion on the ring: no thread is held while it
// waits. An exchange has at most one await in flight (a coroutine awaits
// one thing at a time, and a Task it awaits runs on the same exchange).
// Every await returns a status: OK, or Cancelled when the exchange was
// stopped (http::StopReason: the client left, or the route's deadline
// passed) before or while it waited; the ring cancels the kernel's
// operation then, so the await returns at once. A server drain cancels
// the awaits of a streaming exchange (its head has gone: a stream would
// hold the shutdown) and lets the others finish (an answer being made may
// take up to --shutdown-timeout, when its client is cut): stop_reason()
// says kDraining either way, for a handler that would rather end early.
//
// Thread-safety: the ring thread that runs the handler. OnWorker's
// function runs on a worker thread; a PushStream is written from any.
#ifndef URING_HTTP_SRC_ASYNC_EXCHANGE_H_
#define URING_HTTP_SRC_ASYNC_EXCHANGE_H_

#include <linux/time_types.h>

#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/async/io_op.h"
#include "src/async/push_stream.h"
#include "src/async/deferred_answer.h"
#include "src/async/task.h"
#include "src/http/stop_reason.h"
#include "src/worker/slow_task.h"

namespace uring_http::async {

class Exchange;
class PushStream;

// The ring's side of an exchange's awaits (the runner's, runner.h; a
// test's recorder). Each call starts one operation whose completion comes
// back to the exchange as Exchange::Complete.
class ExchangeOps {
 public:
  // A relative timeout of *ts (valid until it completes).
  virtual void StartTimer(Exchange& ex, const __kernel_timespec* ts) = 0;
  // `job` on a worker (kQueued: its completion follows), or run here
  // before returning when there is no pool (kRanHere), or refused: the
  // worker queue is full (kRefused).
  enum class JobStart : uint8_t { kQueued, kRanHere, kRefused };
  virtual JobStart StartJob(Exchange& ex, worker::WorkerJob* job) = 0;
  // The exchange was stopped while its operation is in flight: cancel it.
  virtual void CancelPending(Exchange& ex) = 0;
  // A socket or file operation (io_op.h; *op and its timeout's timespec `ts`, when
  // op->timeout_ns > 0, valid until it completes).
  virtual void StartIo(Exchange& ex, const IoOp* op, const __kernel_timespec* ts) = 0;
  // Streams `data` as the response body's next bytes (the first call sends
  // the head): kDone when they are all in the response's pipe, kWait when
  // some had to be staged (Complete follows once they are in), kFailed
  // when the stream cannot take them (the client left; a refused header;
  // more than the promised Content-Length).
  enum class WriteStart : uint8_t { kUnset, kDone, kWait, kFailed };
  virtual WriteStart StartWrite(Exchange& ex, std::string_view data) = 0;
  // The response's body goes to writers on any thread (push_stream.h):
  // `made` (from NewPush), or a stream made here when it is null.
  virtual std::shared_ptr<PushStream> StartPush(Exchange& ex, std::shared_ptr<PushStream> made) = 0;
  // A stream for StartPush, made on any thread while the exchange lives
  // (its writes wait in it until the ring takes it).
  virtual std::shared_ptr<PushStream> NewPush(Exchange& ex) = 0;
  // A whole answer given later by any thread (deferred_answer.h), made on
  // any thread while the exchange lives.
  virtual std::shared_ptr<DeferredAnswer> NewAnswer(Exchange& ex) = 0;
  // Waits for `answer`'s Send: false when it was sent already (no wait);
  // else Complete follows once it is (0), or when the exchange is stopped
  // (-ECANCELED, the handle closed).
  virtual bool StartAnswerWait(Exchange& ex, std::shared_ptr<DeferredAnswer> answer) = 0;
  // Reads the request body's next bytes into buf[0..len): >= 0 the count
  // (0 at the end), kReadWait when none are there yet (Complete follows,
  // with the count, once some are), or -1 when the body failed (the
  // connection answers that failure; body_error() says which).
  static constexpr long kReadWait = -2;
  virtual long StartRead(Exchange& ex, char* buf, size_t len) = 0;

 protected:
  ~ExchangeOps() = default;
};

class Exchange {
 public:
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  const http::Request& request() const { return *request_; }
  http::Response& response() { return *response_; }

  // Why the exchange should stop (kNone: it should not).
  http::StopReason stop_reason() const { return stop_; }
  // Stopped in the sense that cancels awaits: the client left or the
  // deadline passed; or the server drains and this exchange is streaming
  // (its head has gone: a stream would hold the shutdown, while an answer
  // still being made may finish).
  bool cancelled() const {
    return stop_ >= http::StopReason::kClientGone ||
           (stop_ == http::StopReason::kDraining && streaming_);
  }
  // The response's head has gone (Write was awaited).
  bool streaming() const { return streaming_; }

  // ---- awaitables
  class SleepAwaiter;
  // Resumes after `duration` (an IORING_OP_TIMEOUT): OK, or Cancelled. A
  // zero (or negative) duration yields: the coroutine goes on after the
  // ring's batch, with no kernel operation.
  SleepAwaiter Sleep(std::chrono::nanoseconds duration);

  class ReadAwaiter;
  // The request body's next bytes, into buf[0..len): their count, 0 at its
  // end. A buffered body (the default) is there already; a streamed one
  // (RouteOptions::body = BodyMode::kStreamed, any size) resumes when its
  // next bytes have arrived, and the connection reads the socket no further
  // ahead than the route's pipe (backpressure: the client is made to wait,
  // not the server's memory). Not OK when the body fails: OutOfRange (too
  // large), InvalidArgument (malformed), DeadlineExceeded (too slow),
  // Cancelled (the client left); the connection answers it (413, 400, 408)
  // whatever the handler does next.
  ReadAwaiter ReadBody(char* buf, size_t len);
  // Why the last ReadBody failed (kNone if none did).
  http::BodyError body_error() const { return body_error_; }

  class WriteAwaiter;
  // Streams `data` as the body's next bytes (the first Write sends the
  // head: status and headers as set by then; chunked in HTTP/1.1 unless
  // set_content_length() promised a length). Resumes once they are in the
  // response's pipe: at once while the client keeps up, after the client
  // has read enough when it does not (backpressure: a stream's unsent
  // bytes stay within its bound, 256 KiB). OK; Cancelled when the client
  // left (or a deadline or a drain stopped the stream); Aborted when the
  // stream cannot go on (more than the promised length, a refused header:
  // the answer is then cut or a 500). `data` is copied as needed: it need
  // only live until the await. After the handler ends, whatever body()
  // holds follows, then the end of the body (trailers with it).
  WriteAwaiter Write(std::string_view data);

  // Hands the response's body to writers on any thread (push_stream.h):
  // the head (status and headers as set by then) goes now, and the
  // exchange lasts, after the handler has ended, until the stream's End(),
  // the client leaving, a drain or the route's deadline. Each call returns
  // the same stream. Not with Write (one writer of a body): after a Write,
  // or when the head cannot be sent (a refused header), the stream returned
  // is closed.
  std::shared_ptr<PushStream> Push() { return ops_->StartPush(*this, nullptr); }
  // The same in two steps, for a handler that runs off the ring
  // (deferral.h): MakePush on the thread the handler runs on (any, while
  // the exchange lives; what is written to it waits in it), then, back on
  // the ring, Push(made) sends the head and moves those bytes on.
  std::shared_ptr<PushStream> MakePush() { return ops_->NewPush(*this); }
  std::shared_ptr<PushStream> Push(std::shared_ptr<PushStream> made) {
    return ops_->StartPush(*this, std::move(made));
  }
  // The stream made must be handed to Push(made), or closed, before the
  // handler ends: it posts to this ring's inbox.

  class AnswerAwaiter;
  // A whole answer from any thread (deferred_answer.h), for an exchange
  // whose handler cannot answer yet: MakeAnswer on any thread, then, on
  // the ring, co_await AwaitAnswer(answer): OK once its Send has come (the
  // status, body and fields are now the response's), Cancelled when the
  // exchange was stopped first (its Send then returns false). As with
  // MakePush, a handle made must be awaited, or closed, before the handler
  // ends.
  std::shared_ptr<DeferredAnswer> MakeAnswer() { return ops_->NewAnswer(*this); }
  AnswerAwaiter AwaitAnswer(std::shared_ptr<DeferredAnswer> answer);

  class IoAwaiter;
  // One socket or file operation on the ring (io_op.h): resumes with its result, a
  // count or a descriptor (>= 0) or -errno; -ETIMEDOUT when its timeout ran
  // out, -ECANCELED when the exchange was stopped (before it began, or
  // while it ran: the ring cancels it). An operation that completed
  // anyway gives its result, so that a socket made is not lost: check
  // cancelled() after.
  IoAwaiter Io(const IoOp& op);

  template <typename F>
  class WorkerCall;
  // Runs fn() on a worker thread (blocking work: a file system walk, a
  // synchronous client library, CPU for milliseconds) while the ring goes
  // on; resumes with its result (absl::StatusOr<R>, absl::Status for a
  // void fn). Cancelled when the exchange was stopped before a worker took
  // it (a call already running is waited for: a thread cannot be
  // interrupted); ResourceExhausted when the worker queue is full. An
  // exception fn throws is rethrown here. Without workers (--workers=0)
  // fn runs on the ring thread. fn is kept in the awaiter, which lives in
  // the coroutine frame until the call is over.
  template <typename F>
  WorkerCall<std::decay_t<F>> OnWorker(F&& fn);

  // ---- the ring's side
  enum class Pending : uint8_t { kNone, kTimer, kJob, kWrite, kRead, kIo, kAnswer };
  Pending pending() const { return pending_; }
  // The worker call in flight (Pending::kJob).
  worker::WorkerJob* job() const { return job_; }
  // The operation in flight completed with `res`: the coroutine resumes.
  void Complete(int res) {
    pending_ = Pending::kNone;
    result_ = res;
    std::exchange(waiter_, {}).resume();
  }
  // Records why the exchange should stop; cancels its await if that makes
  // it cancelled. Returns true if the reason changed.
  bool Stop(http::StopReason why) {
    if (!http::StopReasonOutranks(why, stop_)) return false;
    stop_ = why;
    if (cancelled() && pending_ != Pending::kNone && !cancel_sent_) {
      cancel_sent_ = true;
      if (pending_ == Pending::kJob) {
        // Still queued: no worker will run it (it comes back all the same).
        job_->Abandon();
      } else {
        ops_->CancelPending(*this);
      }
    }
    return true;
  }

 protected:
  friend class Runner;
  Exchange() = default;
  // For the runner, before each handler.
  void Reset(ExchangeOps* ops, http::Response* response) {
    ops_ = ops;
    response_ = response;
    stop_ = http::StopReason::kNone;
    pending_ = Pending::kNone;
    cancel_sent_ = false;
    streaming_ = false;
    body_error_ = http::BodyError::kNone;
    body_read_ = 0;
    job_ = nullptr;
  }
  // Set by the runner before the handler runs: in the task's memory, or
  // the exchange slot's spare (runner.cc).
  http::Request* request_ = nullptr;

 private:
  void Suspend(Pending what, std::coroutine_handle<> waiter) {
    pending_ = what;
    waiter_ = waiter;
    cancel_sent_ = false;
  }
  absl::Status CancelledStatus() const {
    return absl::CancelledError(std::string(http::StopReasonName(stop_)));
  }

  ExchangeOps* ops_ = nullptr;
  http::Response* response_ = nullptr;
  http::StopReason stop_ = http::StopReason::kNone;
  Pending pending_ = Pending::kNone;
  bool cancel_sent_ = false;
  bool streaming_ = false;
  http::BodyError body_error_ = http::BodyError::kNone;
  uint64_t body_read_ = 0;  // of a buffered body, what ReadBody gave
  int result_ = 0;
  std::coroutine_handle<> waiter_;
  worker::WorkerJob* job_ = nullptr;
};

class Exchange::SleepAwaiter {
 public:
  SleepAwaiter(Exchange& ex, std::chrono::nanoseconds d) : ex_(ex) {
    const int64_t ns = d.count() > 0 ? d.count() : 0;
    ts_.tv_sec = ns / 1'000'000'000;
    ts_.tv_nsec = ns % 1'000'000'000;
  }
  bool await_ready() const noexcept { return ex_.cancelled(); }
  void await_suspend(std::coroutine_handle<> h) {
    ex_.Suspend(Pending::kTimer, h);
    ex_.ops_->StartTimer(ex_, &ts_);
  }
  absl::Status await_resume() const {
    // A timeout that ran out completes with -ETIME; a cancelled one with
    // -ECANCELED (and a stop before it began never started it).
    if (ex_.cancelled() && ex_.result_ != -ETIME) return ex_.CancelledStatus();
    return absl::OkStatus();
  }

 private:
  Exchange& ex_;
  __kernel_timespec ts_{};
};

inline Exchange::SleepAwaiter Exchange::Sleep(std::chrono::nanoseconds duration) {
  result_ = 0;
  return SleepAwaiter(*this, duration);
}

class Exchange::AnswerAwaiter {
 public:
  AnswerAwaiter(Exchange& ex, std::shared_ptr<DeferredAnswer> answer)
      : ex_(ex), answer_(std::move(answer)) {}
  bool await_ready() const { return ex_.cancelled() || answer_->sent(); }
  bool await_suspend(std::coroutine_handle<> h) {
    ex_.Suspend(Pending::kAnswer, h);
    if (ex_.ops_->StartAnswerWait(ex_, answer_)) return true;
    ex_.pending_ = Pending::kNone;  // sent meanwhile: no wait
    ex_.waiter_ = {};
    ex_.result_ = 0;
    return false;
  }
  absl::Status await_resume() {
    if (!answer_->sent() || ex_.result_ == -ECANCELED) {
      answer_->Close(ex_.stop_reason());
      return ex_.CancelledStatus();
    }
    answer_->Close(http::StopReason::kNone);
    int status = 200;
    std::string body;
    DeferredAnswer::Fields fields;
    answer_->Take(&status, &body, &fields);
    http::Response& response = *ex_.response_;
    response.set_status(status);
    for (const auto& [name, value] : fields) (void)response.AddHeader(name, value);
    response.set_body(body);
    return absl::OkStatus();
  }

 private:
  Exchange& ex_;
  std::shared_ptr<DeferredAnswer> answer_;
};

inline Exchange::AnswerAwaiter Exchange::AwaitAnswer(std::shared_ptr<DeferredAnswer> answer) {
  result_ = 0;
  return AnswerAwaiter(*this, std::move(answer));
}

class Exchange::ReadAwaiter {
 public:
  ReadAwaiter(Exchange& ex, char* buf, size_t len) : ex_(ex), buf_(buf), len_(len) {}
  bool await_ready() {
    if (ex_.cancelled()) return true;
    got_ = ex_.ops_->StartRead(ex_, buf_, len_);
    return got_ != ExchangeOps::kReadWait;
  }
  void await_suspend(std::coroutine_handle<> h) { ex_.Suspend(Pending::kRead, h); }
  absl::StatusOr<size_t> await_resume() {
    if (got_ == ExchangeOps::kReadWait) got_ = ex_.result_;  // what the ring read for us
    if (ex_.cancelled() && (got_ < 0 || got_ == kUnset)) return ex_.CancelledStatus();
    if (got_ >= 0) return static_cast<size_t>(got_);
    switch (ex_.body_error_) {
      case http::BodyError::kTooLarge:
        return absl::OutOfRangeError("the request body is too large");
      case http::BodyError::kMalformed:
        return absl::InvalidArgumentError("the request body is malformed");
      case http::BodyError::kTimedOut:
        return absl::DeadlineExceededError("the request body came too slowly");
      default:
        return absl::CancelledError("the client is gone");
    }
  }

 private:
  static constexpr long kUnset = -3;
  Exchange& ex_;
  char* buf_;
  size_t len_;
  long got_ = kUnset;
};

inline Exchange::ReadAwaiter Exchange::ReadBody(char* buf, size_t len) {
  result_ = 0;
  return ReadAwaiter(*this, buf, len);
}

class Exchange::WriteAwaiter {
 public:
  WriteAwaiter(Exchange& ex, std::string_view data) : ex_(ex), data_(data) {}
  bool await_ready() {
    if (ex_.cancelled()) return true;
    started_ = ex_.ops_->StartWrite(ex_, data_);
    return started_ != ExchangeOps::WriteStart::kWait;
  }
  void await_suspend(std::coroutine_handle<> h) { ex_.Suspend(Pending::kWrite, h); }
  absl::Status await_resume() const {
    if (started_ == ExchangeOps::WriteStart::kFailed) {
      if (ex_.cancelled()) return ex_.CancelledStatus();
      return absl::AbortedError("the response stream cannot go on");
    }
    // A write that waited is done (0), or was given up (-ECANCELED: the
    // client left or the stream was stopped; its staged bytes dropped).
    if (ex_.cancelled() && (started_ == ExchangeOps::WriteStart::kUnset || ex_.result_ != 0)) {
      return ex_.CancelledStatus();
    }
    return absl::OkStatus();
  }

 private:
  Exchange& ex_;
  std::string_view data_;
  ExchangeOps::WriteStart started_ = ExchangeOps::WriteStart::kUnset;
};

inline Exchange::WriteAwaiter Exchange::Write(std::string_view data) {
  result_ = 0;
  return WriteAwaiter(*this, data);
}

class Exchange::IoAwaiter {
 public:
  IoAwaiter(Exchange& ex, const IoOp& op) : ex_(ex), op_(op) {
    ts_.tv_sec = op.timeout_ns / 1'000'000'000;
    ts_.tv_nsec = op.timeout_ns % 1'000'000'000;
  }
  bool await_ready() const noexcept { return ex_.cancelled(); }
  void await_suspend(std::coroutine_handle<> h) {
    started_ = true;
    ex_.Suspend(Pending::kIo, h);
    ex_.ops_->StartIo(ex_, &op_, op_.timeout_ns > 0 ? &ts_ : nullptr);
  }
  int await_resume() const {
    if (!started_) return -ECANCELED;
    // A linked timeout that ran out cancels the operation: -ECANCELED with
    // no stop of ours is the timeout's.
    if (ex_.result_ == -ECANCELED && !ex_.cancelled()) return -ETIMEDOUT;
    return ex_.result_;
  }

 private:
  Exchange& ex_;
  IoOp op_;
  __kernel_timespec ts_{};
  bool started_ = false;
};

inline Exchange::IoAwaiter Exchange::Io(const IoOp& op) {
  result_ = 0;
  return IoAwaiter(*this, op);
}

template <typename F>
class Exchange::WorkerCall final : private worker::WorkerJob {
 public:
  using R = std::invoke_result_t<F&>;
  using Result = std::conditional_t<std::is_void_v<R>, absl::Status, absl::StatusOr<R>>;

  WorkerCall(Exchange& ex, F fn) : ex_(ex), fn_(std::move(fn)) { run = &Run; }

  bool await_ready() const noexcept { return ex_.cancelled(); }
  bool await_suspend(std::coroutine_handle<> h) {
    Prepare();
    ex_.Suspend(Pending::kJob, h);
    ex_.job_ = this;
    const ExchangeOps::JobStart started = ex_.ops_->StartJob(ex_, this);
    if (started == ExchangeOps::JobStart::kQueued) return true;
    ex_.pending_ = Pending::kNone;
    ex_.waiter_ = {};
    refused_ = started == ExchangeOps::JobStart::kRefused;
    return false;  // not suspended: it ran, or await_resume says why not
  }
  Result await_resume() {
    ex_.job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    if (refused_) {
      refused_ = false;
      return absl::ResourceExhaustedError("the worker queue is full");
    }
    if (!ran_) return ex_.CancelledStatus();
    if constexpr (std::is_void_v<R>) {
      return absl::OkStatus();
    } else {
      return std::move(*value_);
    }
  }

 private:
  static void Run(worker::WorkerJob* job) {
    auto* self = static_cast<WorkerCall*>(job);
    try {
      if constexpr (std::is_void_v<R>) {
        self->fn_();
      } else {
        self->value_.emplace(self->fn_());
      }
    } catch (...) {
      self->error_ = std::current_exception();
    }
    self->ran_ = true;
  }

  Exchange& ex_;
  F fn_;
  std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> value_{};
  std::exception_ptr error_;
  bool ran_ = false;
  bool refused_ = false;
};

template <typename F>
Exchange::WorkerCall<std::decay_t<F>> Exchange::OnWorker(F&& fn) {
  return WorkerCall<std::decay_t<F>>(*this, std::forward<F>(fn));
}

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_EXCHANGE_H_
