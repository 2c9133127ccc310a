#include "src/async/push_stream.h"

#include <utility>

#include "src/worker/ring_post.h"

namespace uring_http::async {

void RingInbox::Post(uint64_t exchange_user_data) {
  bool send;
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(exchange_user_data);
    send = !armed_;
    armed_ = true;
  }
  // One message per burst: writes to many streams before the ring looks
  // share it.
  if (send) worker::PostToRing(ring_, signal_user_data_, 0);
}

void RingInbox::Take(std::vector<uint64_t>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(posted_, *out);
  armed_ = false;
}

PushStream::Result PushStream::Write(std::string_view data) {
  // The post to the ring's inbox is made under the stream's lock: once the
  // ring has closed the stream (under that lock, before its exchange and
  // its ring may go), no writer touches the inbox any more. (The ring never
  // holds the inbox's lock while it takes a stream's.)
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_ || closed_.load(std::memory_order_relaxed)) return Result::kClosed;
  // What the client has not read, as of the ring's last look (which it
  // repeats while a writer waits for the drain).
  const size_t buffered = pending_.size() + ring_bytes_;
  if (buffered > 0 && buffered + data.size() > bound_) {
    want_drain_ = true;
    return Result::kDropped;
  }
  pending_.append(data);
  Result result = Result::kSent;
  if (pending_.size() + ring_bytes_ > bound_ / 2) {
    want_drain_ = true;
    result = Result::kBackpressure;
  }
  // One message per burst: the first write the ring has not taken yet.
  if (!signalled_) {
    signalled_ = true;
    inbox_ring_->Post(user_data_);
  }
  return result;
}

bool PushStream::End() {
  std::lock_guard<std::mutex> lock(mu_);  // (the post too: see Write)
  if (ended_ || closed_.load(std::memory_order_relaxed)) return false;
  ended_ = true;
  if (!signalled_) {
    signalled_ = true;
    inbox_ring_->Post(user_data_);
  }
  return true;
}

size_t PushStream::buffered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size() + ring_bytes_;
}

bool PushStream::Take(std::string* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(pending_, *out);
  signalled_ = false;
  return ended_;
}

PushStream::Drain PushStream::Held(size_t ring_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_bytes_ = ring_bytes;
  if (!want_drain_) return Drain::kNone;
  if (pending_.size() + ring_bytes_ > bound_ / 4) return Drain::kWaiting;
  want_drain_ = false;
  return Drain::kDue;
}

void PushStream::Close(http::StopReason why) {
  std::lock_guard<std::mutex> lock(mu_);
  reason_.store(static_cast<uint8_t>(why), std::memory_order_release);
  closed_.store(true, std::memory_order_release);
  pending_.clear();
  pending_.shrink_to_fit();
}

}  // namespace uring_http::async
