// PushStream: a response body written from any thread, for answers that
// are not the handler's to finish: server-sent events fanned out from one
// producer thread to thousands of open streams, a long poll answered when
// a message comes, a result that another system delivers later. No thread
// is held while the stream is open, and a slow client costs its stream's
// bound, not the producer's time (as uWebSockets' send with
// maxBackpressure):
//
//   router.Async("GET", "/ticks", [&hub](async::Exchange& ex) -> async::Task<> {
//     http::StartEventStream(ex.response());
//     hub.Add(ex.Push());  // the head goes now; the handler may return
//     co_return;
//   });
//   // any thread:
//   for (auto& stream : subscribers)
//     if (stream->Write(event) == async::PushStream::Result::kClosed) drop it;
//
// Write copies its bytes into the stream's buffer and returns at once:
//   kSent          taken;
//   kBackpressure  taken, but what the client has not read yet is past half
//                  the stream's bound: slow down, OnDrain says when it has
//                  fallen under a quarter;
//   kDropped       not taken: the buffer is full (a write larger than the
//                  bound is taken only into an empty buffer); OnDrain too;
//   kClosed        not taken: the stream ended (End, or the client left,
//                  the server drains, the route's deadline passed; see
//                  stop_reason()).
// The bytes reach the owning ring with one IORING_OP_MSG_RING per ring for
// every burst of writes (the ring's inbox collects which streams have
// bytes; a full CQ falls back to the ring's mailbox, read on its tick), so
// a producer writing to 10,000 streams of one ring sends it one message.
//
// End() ends the body properly (the last chunk, END_STREAM); a stream
// nobody ends lasts until its client leaves, the drain, or the deadline.
// The callbacks run on the ring thread and must not block.
//
// Thread-safety: Write, End, closed, stop_reason, buffered: any thread.
// OnDrain, OnClose: before the stream is shared with other threads.
#ifndef URING_HTTP_SRC_ASYNC_PUSH_STREAM_H_
#define URING_HTTP_SRC_ASYNC_PUSH_STREAM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/stop_reason.h"
#include "src/worker/slow_task.h"

namespace uring_http::async {

// A ring's inbox of streams with bytes for it (internal: the runner's).
class RingInbox {
 public:
  RingInbox(worker::RingAddress ring, uint64_t signal_user_data)
      : ring_(ring), signal_user_data_(signal_user_data) {}
  // Any thread: `exchange_user_data` has bytes; the ring is messaged if
  // it was not already.
  void Post(uint64_t exchange_user_data);
  // The ring, on the message: everything posted since the last take.
  void Take(std::vector<uint64_t>* out);

 private:
  std::mutex mu_;
  std::vector<uint64_t> posted_;
  bool armed_ = false;  // a message is on its way (or queued in the mailbox)
  const worker::RingAddress ring_;
  const uint64_t signal_user_data_;
};

class PushStream {
 public:
  enum class Result : uint8_t { kSent, kBackpressure, kDropped, kClosed };

  PushStream(RingInbox* inbox, uint64_t user_data, size_t bound)
      : inbox_ring_(inbox), user_data_(user_data), bound_(bound) {}
  PushStream(const PushStream&) = delete;
  PushStream& operator=(const PushStream&) = delete;

  Result Write(std::string_view data);
  // Ends the body once what was written has gone; false if it had closed.
  bool End();
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Why it closed other than by End() (kNone: it did not, or End did).
  http::StopReason stop_reason() const {
    return static_cast<http::StopReason>(reason_.load(std::memory_order_acquire));
  }
  // Bytes written that the client has not read yet (as of the ring's last
  // look), and the bound they are held to.
  size_t buffered() const;
  size_t bound() const { return bound_; }

  void OnDrain(std::function<void()> fn) { on_drain_ = std::move(fn); }
  void OnClose(std::function<void(http::StopReason)> fn) { on_close_ = std::move(fn); }

  // ---- the ring's side (runner.cc)
  // Swaps the written bytes into *out (whose own memory the producers
  // reuse: no allocation per take); whether End() was called.
  bool Take(std::string* out);
  // The ring's buffer for Take: the bytes taken from the writers (it and
  // pending_ trade places, so neither allocates once warm). The ring
  // thread's alone; here rather than in the exchange, which every open
  // exchange would hold whether it pushes or not.
  std::string taken;
  // What the ring holds of it now (staged and in the pipe), for
  // buffered(); and whether a writer waits for the drain (the ring looks
  // again after each batch until it is due).
  enum class Drain : uint8_t { kNone, kWaiting, kDue };
  Drain Held(size_t ring_bytes);
  // No more writes: the stream is over (`why` kNone: it ended by End).
  void Close(http::StopReason why);
  void NotifyDrain() {
    if (on_drain_) on_drain_();
  }
  void NotifyClose(http::StopReason why) {
    if (on_close_) on_close_(why);
  }

 private:
  mutable std::mutex mu_;
  std::string pending_;     // written, not yet taken by the ring
  size_t ring_bytes_ = 0;   // held by the ring, as of its last look
  bool signalled_ = false;  // the ring has been told of pending_
  bool ended_ = false;
  bool want_drain_ = false;
  std::atomic<bool> closed_{false};
  std::atomic<uint8_t> reason_{0};
  RingInbox* const inbox_ring_;
  const uint64_t user_data_;
  const size_t bound_;
  std::function<void()> on_drain_;
  std::function<void(http::StopReason)> on_close_;
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_PUSH_STREAM_H_
