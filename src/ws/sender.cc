#include "src/ws/sender.h"

#include <algorithm>
#include <utility>

#include "src/async/push_stream.h"
#include "src/ws/frame.h"

namespace uring_http::ws {

Frame MakeFrame(std::string_view message, MessageKind kind) {
  auto frame = std::make_shared<std::string>();
  frame->resize(kMaxServerFrameHeader + message.size());
  const size_t h = WriteFrameHeader(frame->data(),
                                    kind == MessageKind::kBinary ? Opcode::kBinary : Opcode::kText,
                                    /*fin=*/true, /*rsv1=*/false, message.size());
  std::copy(message.begin(), message.end(), frame->begin() + static_cast<std::ptrdiff_t>(h));
  frame->resize(h + message.size());
  return frame;
}

SendResult Sender::Send(std::string_view message, MessageKind kind) {
  if (closed()) return SendResult::kClosed;
  return SendFrame(MakeFrame(message, kind));
}

SendResult Sender::SendFrame(const Frame& frame) { return Queue(frame, frame->size()); }

SendResult Sender::Queue(Frame frame, size_t bytes) {
  // The post to the ring's inbox is made under this lock: once the ring
  // has shut the sender (under it, before the inbox may go), nobody posts.
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.load(std::memory_order_relaxed) || close_) return SendResult::kClosed;
  const size_t buffered = pending_bytes_ + ring_bytes_;
  if (buffered > bound_) return SendResult::kDropped;
  pending_.push_back(std::move(frame));
  pending_bytes_ += bytes;
  if (!signalled_) {
    signalled_ = true;
    inbox_->Post(token_);
  }
  return buffered + bytes > bound_ ? SendResult::kBackpressure : SendResult::kQueued;
}

void Sender::Close(uint16_t code, std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.load(std::memory_order_relaxed) || close_) return;
  close_ = true;
  close_code_ = code;
  close_reason_.assign(reason);
  if (!signalled_) {
    signalled_ = true;
    inbox_->Post(token_);
  }
}

size_t Sender::buffered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_bytes_ + ring_bytes_;
}

void Sender::Take(Taken* out) {
  out->frames.clear();
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(pending_, out->frames);
  ring_bytes_ += pending_bytes_;  // until the ring's Held() says otherwise
  pending_bytes_ = 0;
  signalled_ = false;
  out->close = close_;
  out->code = close_code_;
  out->reason = close_reason_;
}

void Sender::Held(size_t ring_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_bytes_ = ring_bytes;
}

void Sender::Shut() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_.store(true, std::memory_order_release);
  pending_.clear();
  pending_.shrink_to_fit();
  pending_bytes_ = ring_bytes_ = 0;
}

void Topics::Subscribe(std::string_view topic, std::shared_ptr<Sender> sender) {
  if (sender == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Sender>>& subs = topics_[std::string(topic)];
  for (const auto& s : subs) {
    if (s == sender) return;
  }
  subs.push_back(std::move(sender));
}

void Topics::Unsubscribe(std::string_view topic, const Sender* sender) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  if (it == topics_.end()) return;
  auto& subs = it->second;
  subs.erase(std::remove_if(subs.begin(), subs.end(),
                            [sender](const auto& s) { return s.get() == sender; }),
             subs.end());
  if (subs.empty()) topics_.erase(it);
}

size_t Topics::Publish(std::string_view topic, std::string_view message, MessageKind kind) {
  // One frame for every subscriber: framed here, once, outside the lock.
  const Frame frame = MakeFrame(message, kind);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  if (it == topics_.end()) return 0;
  size_t reached = 0;
  auto& subs = it->second;
  for (size_t i = 0; i < subs.size();) {
    const SendResult r = subs[i]->SendFrame(frame);
    if (r == SendResult::kClosed) {
      // Gone: dropped here (order within a topic does not matter).
      subs[i] = std::move(subs.back());
      subs.pop_back();
      continue;
    }
    if (r == SendResult::kQueued || r == SendResult::kBackpressure) ++reached;
    ++i;
  }
  if (subs.empty()) topics_.erase(it);
  return reached;
}

size_t Topics::subscribers(std::string_view topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  return it == topics_.end() ? 0 : it->second.size();
}

}  // namespace uring_http::ws
