// Transport: where the client's socket operations run. The client is one
// body of coroutine code (call.h); its awaits go either
//   - to an ASYNC exchange's ring (Transport(ex)): each is one SQE
//     (Exchange::Io), no thread waits, and the exchange's stop (the client
//     left, a deadline) cancels it; or
//   - to blocking calls on the calling thread (Transport()): a SLOW
//     handler's worker, or any thread. Each await then completes before
//     it returns, so a task run on such a transport ends inside its
//     Start: the same code is a plain blocking call (RunBlocking).
// Timeouts: the ring links a timeout to the operation; the blocking side
// polls with it. Both say -ETIMEDOUT.
//
// Host names: numeric addresses at once; a name (/etc/hosts, then DNS)
// by getaddrinfo, which blocks, so on a worker for a ring (OnWorker), and
// cached per process for Options::dns_ttl (getaddrinfo reports no TTL).
//
// Thread-safety: a transport belongs to its exchange's ring thread, or to
// the blocking caller's; the name cache is shared (locked).
#ifndef URING_HTTP_SRC_CLIENT_TRANSPORT_H_
#define URING_HTTP_SRC_CLIENT_TRANSPORT_H_

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/async/exchange.h"
#include "src/async/io_op.h"
#include "src/async/task.h"
#include "src/base/check.h"
#include "src/io/socket_address.h"

namespace uring_http::client {

class Transport {
 public:
  // Blocking, on the calling thread.
  Transport() = default;
  // On the exchange's ring (its handler's thread).
  explicit Transport(async::Exchange& ex) : ex_(&ex) {}

  async::Exchange* exchange() const { return ex_; }
  bool cancelled() const { return ex_ != nullptr && ex_->cancelled(); }

  class Awaiter {
   public:
    Awaiter(Transport& t, const async::IoOp& op) : t_(t), op_(op) {}
    bool await_ready() {
      if (t_.ex_ == nullptr) {
        res_ = Blocking(op_);
        return true;
      }
      ring_.emplace(t_.ex_->Io(op_));
      return ring_->await_ready();
    }
    void await_suspend(std::coroutine_handle<> h) { ring_->await_suspend(h); }
    int await_resume() const { return ring_.has_value() ? ring_->await_resume() : res_; }

   private:
    Transport& t_;
    async::IoOp op_;
    int res_ = 0;
    std::optional<async::Exchange::IoAwaiter> ring_;
  };
  // One operation (io_op.h): its result, or -errno (-ETIMEDOUT, and on a
  // ring -ECANCELED when the exchange was stopped).
  Awaiter Do(const async::IoOp& op) { return Awaiter(*this, op); }

  // `host` (a literal, with or without brackets, or a name) and `port` as
  // the addresses to try, in order.
  async::Task<absl::StatusOr<std::vector<io::SocketAddress>>> Resolve(
      std::string host, uint16_t port, std::chrono::seconds ttl);

  // The blocking side of one operation.
  static int Blocking(const async::IoOp& op);

 private:
  async::Exchange* ex_ = nullptr;
};

// Runs `task` on a blocking transport's thread: it ends inside Start (each
// of its awaits completes before returning).
template <typename T>
T RunBlocking(async::Task<T> task) {
  task.Start(nullptr, nullptr);
  URING_CHECK(task.done());
  return task.Result();
}

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_TRANSPORT_H_
