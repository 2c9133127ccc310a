#include "src/ws/sender.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/async/push_stream.h"
#include "src/ws/deflate.h"
#include "src/ws/frame.h"

namespace uring_http::ws {

PreparedMessage::PreparedMessage(std::string_view message, MessageKind kind) : kind_(kind) {
  frame_.resize(kMaxServerFrameHeader + message.size());
  header_ = WriteFrameHeader(frame_.data(),
                             kind == MessageKind::kBinary ? Opcode::kBinary : Opcode::kText,
                             /*fin=*/true, /*rsv1=*/false, message.size());
  std::copy(message.begin(), message.end(), frame_.begin() + static_cast<std::ptrdiff_t>(header_));
  frame_.resize(header_ + message.size());
}

std::string_view PreparedMessage::FrameFor(int window_bits) const {
  if (payload().size() < kDeflateMinBytes || window_bits < 9 || window_bits > 15) return frame_;
  const size_t w = static_cast<size_t>(window_bits - 9);
  // Acquire: the bytes it points to were written before it was published.
  if (const std::string* done = deflated_[w].load(std::memory_order_acquire)) {
    return done->empty() ? std::string_view(frame_) : std::string_view(*done);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<const std::string>& slot = made_[w];
  if (slot == nullptr) {
    // The thread's shared compressor for that window, which keeps no
    // context: any socket of that window can inflate the result alone.
    thread_local std::string compressed;
    compressed.clear();
    auto made = std::make_unique<std::string>();
    if (ThreadDeflater(window_bits).Compress(payload(), &compressed) &&
        compressed.size() + kMaxServerFrameHeader < payload().size()) {
      made->resize(kMaxServerFrameHeader + compressed.size());
      const size_t h = WriteFrameHeader(made->data(),
                                        kind_ == MessageKind::kBinary ? Opcode::kBinary : Opcode::kText,
                                        /*fin=*/true, /*rsv1=*/true, compressed.size());
      std::memcpy(made->data() + h, compressed.data(), compressed.size());
      made->resize(h + compressed.size());
    }  // else left empty: the plain frame
    if (compressed.capacity() > 1024 * 1024) std::string().swap(compressed);
    slot = std::move(made);
    deflated_[w].store(slot.get(), std::memory_order_release);
  }
  return slot->empty() ? std::string_view(frame_) : std::string_view(*slot);
}

Frame MakeFrame(std::string_view message, MessageKind kind) {
  return std::make_shared<const PreparedMessage>(message, kind);
}

std::string_view Sender::Wire(const PreparedMessage& frame) const {
  return deflate_window_ == 0 ? frame.frame() : frame.FrameFor(deflate_window_);
}

SendResult Sender::Send(std::string_view message, MessageKind kind) {
  if (closed()) return SendResult::kClosed;
  return SendFrame(MakeFrame(message, kind));
}

SendResult Sender::SendFrame(const Frame& frame) {
  // Compressed here (once per window, whoever asks first), in the sending
  // thread rather than on the ring.
  const size_t bytes = Wire(*frame).size();
  return Queue(frame, bytes);
}

SendResult Sender::Queue(Frame frame, size_t bytes) {
  // The post to the ring's inbox is made under this lock: once the ring
  // has shut the sender (under it, before the inbox may go), nobody posts.
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.load(std::memory_order_relaxed) || close_) return SendResult::kClosed;
  const size_t buffered = pending_bytes_ + ring_bytes_;
  SendResult result;
  if (buffered > bound_) {
    // Counted, and the drain owed, by the ring at its next take (posted
    // for it like a send).
    ++dropped_;
    drain_owed_ = true;
    result = SendResult::kDropped;
  } else {
    pending_.push_back(std::move(frame));
    pending_bytes_ += bytes;
    result = buffered + bytes > bound_ ? SendResult::kBackpressure : SendResult::kQueued;
    if (result == SendResult::kBackpressure) drain_owed_ = true;
  }
  if (!signalled_) {
    signalled_ = true;
    inbox_->Post(token_);
  }
  return result;
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
  out->dropped = dropped_;
  out->drain_owed = drain_owed_;
  dropped_ = 0;
  drain_owed_ = false;
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

void Topics::Topic::Remove(size_t i) {
  // Order within a topic does not matter: the last one takes i's place.
  at.erase(subs[i].get());
  if (i + 1 != subs.size()) {
    subs[i] = std::move(subs.back());
    at[subs[i].get()] = i;
  }
  subs.pop_back();
}

void Topics::Subscribe(std::string_view topic, std::shared_ptr<Sender> sender) {
  if (sender == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  Topic& t = topics_[std::string(topic)];
  if (!t.at.emplace(sender.get(), t.subs.size()).second) return;  // once only
  t.subs.push_back(std::move(sender));
}

void Topics::Unsubscribe(std::string_view topic, const Sender* sender) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  if (it == topics_.end()) return;
  Topic& t = it->second;
  auto found = t.at.find(sender);
  if (found == t.at.end()) return;
  t.Remove(found->second);
  if (t.subs.empty()) topics_.erase(it);
}

size_t Topics::Publish(std::string_view topic, std::string_view message, MessageKind kind) {
  // One message for every subscriber: framed here, once, outside the lock;
  // compressed (once per window) by the first subscriber that needs it.
  const Frame frame = MakeFrame(message, kind);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  if (it == topics_.end()) return 0;
  size_t reached = 0;
  Topic& t = it->second;
  for (size_t i = 0; i < t.subs.size();) {
    const SendResult r = t.subs[i]->SendFrame(frame);
    if (r == SendResult::kClosed) {
      t.Remove(i);  // gone: dropped here; i now holds the last one
      continue;
    }
    if (r == SendResult::kQueued || r == SendResult::kBackpressure) ++reached;
    ++i;
  }
  if (t.subs.empty()) topics_.erase(it);
  return reached;
}

size_t Topics::subscribers(std::string_view topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(std::string(topic));
  return it == topics_.end() ? 0 : it->second.subs.size();
}

}  // namespace uring_http::ws
