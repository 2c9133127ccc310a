#include "src/http1/output_queue.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "src/base/check.h"

namespace uring_http::http1 {

OutputQueue::~OutputQueue() {
  if (table_ == nullptr) return;
  // The loop is going away and the kernel holds nothing any more. External
  // owners may be gone already: their memory is theirs to free.
  for (unsigned i = 0; i < count_; ++i) {
    if (At(i).kind != Kind::kExternal) Free(At(i));
  }
  chunks_->Release(reinterpret_cast<char*>(table_));
}

OutputQueue::Segment* OutputQueue::PushBack() {
  if (table_ == nullptr) {
    URING_CHECK(chunks_ != nullptr && chunks_->chunk_size() >= 2 * kTableBytes);
    char* chunk = chunks_->Acquire();
    table_ = reinterpret_cast<Segment*>(chunk);
    // Entries are set as they are pushed (below); only the first now.
    head_ = 0;
    count_ = 1;
    Segment& first = *new (&table_[0]) Segment();
    first.kind = Kind::kTable;
    first.data = chunk + kTableBytes;
    first.cap = static_cast<uint32_t>(chunks_->chunk_size() - kTableBytes);
    return &first;
  }
  if (count_ == kMaxSegments) return nullptr;
  Segment& s = *new (&At(count_)) Segment();
  ++count_;
  return &s;
}

char* OutputQueue::Reserve(size_t n) {
  URING_CHECK(!discarded_);
  if (table_ != nullptr) {
    Segment& tail = At(count_ - 1);
    if ((tail.kind == Kind::kChunk || tail.kind == Kind::kHeap || tail.kind == Kind::kTable) &&
        tail.cap - tail.len >= n) {
      return tail.data + tail.len;
    }
  }
  Segment* s = PushBack();
  if (s == nullptr) return nullptr;
  if (s->kind == Kind::kTable) {
    if (s->cap >= n) return s->data;
    // Too large for the table chunk's data area: the first segment is a
    // buffer of its own instead (the area goes unused this time).
    s->data = nullptr;
    s->cap = 0;
  }
  URING_CHECK(n <= UINT32_MAX);
  if (n <= chunks_->chunk_size()) {
    s->kind = Kind::kChunk;
    s->data = chunks_->Acquire();
    s->cap = static_cast<uint32_t>(chunks_->chunk_size());
  } else {
    s->kind = Kind::kHeap;
    s->data = static_cast<char*>(std::malloc(n));
    URING_CHECK(s->data != nullptr);
    s->cap = static_cast<uint32_t>(n);
  }
  return s->data;
}

void OutputQueue::Commit(size_t n) {
  Segment& tail = At(count_ - 1);
  URING_CHECK(tail.len + n <= tail.cap);
  tail.len += static_cast<uint32_t>(n);
  pending_ += n;
}

bool OutputQueue::Append(std::string_view data) {
  if (data.empty()) return true;
  char* dst = Reserve(data.size());
  if (dst == nullptr) return false;
  std::memcpy(dst, data.data(), data.size());
  Commit(data.size());
  return true;
}

bool OutputQueue::AppendOwned(std::string&& data) {
  // Copying a small body into the chunk is cheaper than a segment of its own.
  if (data.size() <= 1024 || data.size() > UINT32_MAX) return Append(data);
  URING_CHECK(!discarded_);
  Segment* s = PushBack();
  if (s == nullptr) return false;
  auto owned = std::make_unique<std::string>(std::move(data));
  if (s->kind == Kind::kTable) s->cap = 0;  // nothing appended to this one
  s->kind = Kind::kString;
  s->data = owned->data();
  s->len = static_cast<uint32_t>(owned->size());
  s->cap = s->len;
  s->holder = owned.release();  // back into a unique_ptr in Free()
  pending_ += s->len;
  return true;
}

bool OutputQueue::AppendExternal(const char* data, size_t n, ExternalOwner* owner) {
  URING_CHECK(!discarded_ && n <= UINT32_MAX);
  if (n == 0) return true;
  Segment* s = PushBack();
  if (s == nullptr) return false;
  s->kind = Kind::kExternal;
  s->data = const_cast<char*>(data);  // only ever read (sent)
  s->len = s->cap = static_cast<uint32_t>(n);
  s->holder = owner;
  pending_ += n;
  return true;
}

unsigned OutputQueue::PrepareSend(size_t zc_min_bytes, bool* zero_copy) {
  URING_CHECK(inflight_count_ == 0);
  *zero_copy = false;
  if (discarded_ || pending_ == 0) return 0;
  iovec* iov = space()->iov;
  unsigned n = 0;
  size_t bytes = 0;
  for (unsigned i = 0; i < count_ && n < kMaxIov; ++i) {
    Segment& s = At(i);
    if (s.sent == s.len) continue;  // sent, still held (zero copy) or empty
    const size_t unsent = s.len - s.sent;
    // Not a worker's pipe: its space is the stream's window, and a
    // zero-copy send would hold it until the peer has taken the bytes
    // (measured: a quarter of the throughput on loopback), where a copy
    // frees it at once.
    const bool big = zc_min_bytes > 0 && unsent >= zc_min_bytes && !notification_pending() &&
                     s.kind != Kind::kExternal;
    if (big && n > 0) break;  // it goes alone, next time
    iov[n].iov_base = s.data + s.sent;
    iov[n].iov_len = unsent;
    s.inflight = true;
    ++n;
    bytes += unsent;
    if (big) {
      // The kernel may read these bytes until the notification, after the
      // send's own completion: held until then (see the rule above).
      s.zc_hold = true;
      zc_index_ = static_cast<uint8_t>((head_ + i) % kMaxSegments);
      zc_inflight_ = true;
      *zero_copy = true;
      break;
    }
  }
  inflight_count_ = static_cast<uint8_t>(n);
  inflight_bytes_ = bytes;
  return n;
}

void OutputQueue::OnSent(size_t sent, bool notification_follows) {
  URING_CHECK(inflight_count_ > 0 && sent <= inflight_bytes_);
  if (zc_inflight_ && !notification_follows) {
    // A zero-copy send that ended without a notification never kept the
    // bytes (it failed before using them).
    table_[zc_index_].zc_hold = false;
    zc_index_ = kNoIndex;
  }
  zc_inflight_ = false;
  unsigned seen = 0;
  size_t left = sent;
  for (unsigned i = 0; i < count_ && seen < inflight_count_; ++i) {
    Segment& s = At(i);
    if (!s.inflight) continue;
    s.inflight = false;
    ++seen;
    // Only the last covered segment can have grown since the send was
    // prepared (appends go to the tail): it takes what is left.
    const size_t take = seen == inflight_count_ ? left : std::min<size_t>(left, s.len - s.sent);
    s.sent += static_cast<uint32_t>(take);
    left -= take;
    if (discarded_) s.sent = s.len;
  }
  URING_CHECK(seen == inflight_count_ && left == 0);
  inflight_count_ = 0;
  inflight_bytes_ = 0;
  if (!discarded_) pending_ -= sent;
  ReleaseFront();
}

void OutputQueue::OnNotification() {
  URING_CHECK(zc_index_ != kNoIndex);
  table_[zc_index_].zc_hold = false;
  zc_index_ = kNoIndex;
  ReleaseFront();
}

void ExternalOwner::TakeBackOutput(size_t) {
  URING_CHECK(false && "TakeBack() of an owner that cannot produce its bytes again");
}

size_t OutputQueue::TakeBack(ExternalOwner* owner) {
  URING_CHECK(inflight_count_ == 0 && !discarded_);
  size_t taken = 0;
  while (count_ > 0) {
    Segment& s = At(count_ - 1);
    if (s.kind != Kind::kExternal || s.holder != owner || s.sent == s.len || s.zc_hold) break;
    const size_t unsent = s.len - s.sent;
    owner->TakeBackOutput(unsent);
    taken += unsent;
    pending_ -= unsent;
    if (s.sent > 0) {
      s.len = s.sent;  // the sent part is released as usual, with its new length
      break;
    }
    s = Segment();
    --count_;
  }
  ReleaseFront();
  return taken;
}

void OutputQueue::DiscardUnsent() {
  if (table_ == nullptr) return;
  discarded_ = true;
  pending_ = 0;
  for (unsigned i = 0; i < count_; ++i) {
    Segment& s = At(i);
    if (!s.inflight) s.sent = s.len;
  }
  ReleaseFront();
}

void OutputQueue::ReleaseFront() {
  while (count_ > 0) {
    Segment& s = At(0);
    if (s.sent != s.len || s.inflight || s.zc_hold) break;
    Free(s);
    head_ = static_cast<uint8_t>((head_ + 1) % kMaxSegments);
    --count_;
  }
  if (count_ == 0 && table_ != nullptr) {
    chunks_->Release(reinterpret_cast<char*>(table_));
    table_ = nullptr;
    head_ = 0;
    discarded_ = false;
  }
}

void OutputQueue::Free(Segment& s) {
  switch (s.kind) {
    case Kind::kChunk:
      chunks_->Release(s.data);
      break;
    case Kind::kHeap:
      std::free(s.data);
      break;
    case Kind::kString:
      std::unique_ptr<std::string>(static_cast<std::string*>(s.holder)).reset();
      break;
    case Kind::kExternal:
      static_cast<ExternalOwner*>(s.holder)->ReleaseOutput(s.len);
      break;
    case Kind::kTable:
      break;  // the table's own chunk, released with the table
  }
  s = Segment();
}

}  // namespace uring_http::http1
