// Task<T>: the coroutine type of ASYNC handlers (C++20), as in Seastar's
// coroutines or cppcoro's task: lazy (it runs when awaited, or when its
// ring starts it), owning its frame, and resumed on the ring thread by the
// completion of whatever it awaits. Awaiting another Task runs it with
// symmetric transfer (no stack growth however deep the chain), and its
// result or exception comes back to the awaiter.
//
// Frames come from the thread's FramePool (frame_pool.h).
//
// (The pattern is cppcoro's task and Lewis Baker's "symmetric transfer"
// notes; what is ours is the inline start in the awaiter, see there.)
//
//   async::Task<int> Answer(async::Exchange& ex) { co_await ex.Sleep(5ms); co_return 42; }
//   async::Task<> Handler(async::Exchange& ex) { int n = co_await Answer(ex); ... }
//
// Thread-safety: a task belongs to the ring thread that runs it.
#ifndef URING_HTTP_SRC_ASYNC_TASK_H_
#define URING_HTTP_SRC_ASYNC_TASK_H_

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <utility>

#include "src/async/frame_pool.h"

namespace uring_http::async {

template <typename T>
class Task;

namespace internal {

// What a task's end does: resume whoever awaited it, or (the root of a
// chain, started by its ring) call `on_done`.
struct PromiseBase {
  std::coroutine_handle<> continuation;
  std::exception_ptr exception;
  // The task runs inside its awaiter's await_suspend (see Task's
  // Awaiter): if it ends there, it returns to that call rather than
  // resume the awaiter.
  bool inline_start = false;
  void (*on_done)(void* arg) = nullptr;
  void* on_done_arg = nullptr;

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.inline_start) return std::noop_coroutine();  // back into await_suspend
      if (p.continuation) return p.continuation;
      // The root: its owner learns it ended (and destroys it later, never
      // from here: the frame is still on this call's way out).
      if (p.on_done != nullptr) p.on_done(p.on_done_arg);
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { exception = std::current_exception(); }

  static void* operator new(size_t n) { return FramePool::Allocate(n); }
  static void operator delete(void* frame) noexcept { FramePool::Free(frame); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T Take() {
    if (exception) std::rethrow_exception(exception);
    return std::move(*value);
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void Take() {
    if (exception) std::rethrow_exception(exception);
  }
};

}  // namespace internal

template <typename T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle h) : h_(h) {}
  Task(Task&& other) noexcept : h_(std::exchange(other.h_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Reset();
      h_ = std::exchange(other.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Reset(); }

  bool valid() const { return static_cast<bool>(h_); }
  bool done() const { return h_ && h_.done(); }

  // Awaiting a task runs it until it ends; its result (or its exception)
  // is the await's.
  auto operator co_await() && noexcept {
    struct Awaiter {
      Handle h;
      bool await_ready() noexcept { return !h || h.done(); }
      // The task runs now, inside this call. If it ends without waiting
      // (a cached value, an early co_return) the awaiter goes on without
      // suspending: a loop of such awaits uses no stack per turn, even
      // where the compiler makes no tail call of a symmetric transfer
      // (sanitizer builds). If it waits, the awaiter suspends, and the
      // task's end resumes it (symmetric transfer, FinalAwaiter).
      bool await_suspend(std::coroutine_handle<> waiter) {
        internal::PromiseBase& p = h.promise();
        p.continuation = waiter;
        p.inline_start = true;
        h.resume();
        p.inline_start = false;
        return !h.done();
      }
      T await_resume() { return h.promise().Take(); }
    };
    return Awaiter{h_};
  }

  // ---- for the task's owner (the ring's runner), the root of a chain
  // Runs it until its first suspension; `on_done(arg)` is called when it
  // ends, from its last resumption.
  void Start(void (*on_done)(void*), void* arg) {
    h_.promise().on_done = on_done;
    h_.promise().on_done_arg = arg;
    h_.resume();
  }
  // After it ended: its result, or its exception rethrown.
  T Result() { return h_.promise().Take(); }
  // Destroys the frame (a suspended task's too: its locals' destructors
  // run, the operation it awaited must be over by then).
  void Reset() {
    if (h_) std::exchange(h_, {}).destroy();
  }

 private:
  Handle h_;
};

namespace internal {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace internal

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_TASK_H_
