#include "src/http2/peer_frame_check.h"

#include <algorithm>
#include <cstring>

namespace uring_http::http2::internal {

namespace {

// RFC 9113 6 and 7 (nghttp2.h stays in session_impl.h and its two .cc files).
constexpr uint8_t kData = 0x0;
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kPriority = 0x2;
constexpr uint8_t kRstStream = 0x3;
constexpr uint8_t kContinuation = 0x9;
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint32_t kEnhanceYourCalm = 0xb;
constexpr uint32_t kProtocolError = 0x1;
constexpr uint32_t kStreamClosed = 0x5;

uint32_t StreamId(const uint8_t* p) {
  return ((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]) & 0x7fffffff;
}

}  // namespace

size_t PeerFrameCheck::Scan(const char* data, size_t len, Violation* v) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  const uint64_t base = scanned_;
  scanned_ += len;
  // The frame at fault is cut off with all that follows; if it began in an
  // earlier Scan, nghttp2 has its first bytes, which do nothing alone.
  auto cut = [&] { return frame_start_ > base ? static_cast<size_t>(frame_start_ - base) : 0; };
  size_t at = std::min(len, preface_left_);
  preface_left_ -= at;
  while (at < len) {
    if (payload_left_ > 0) {
      const size_t n = std::min<size_t>(payload_left_, len - at);
      if (want_dependency_) {
        const size_t take = std::min(n, sizeof(dependency_) - dependency_have_);
        std::memcpy(dependency_ + dependency_have_, p + at, take);
        dependency_have_ += take;
        if (dependency_have_ == sizeof(dependency_)) {
          want_dependency_ = false;
          if (StreamId(dependency_) == stream_) {
            *v = {kProtocolError, "PRIORITY: a stream depending on itself"};
            return cut();
          }
        }
      }
      at += n;
      payload_left_ -= static_cast<uint32_t>(n);
      continue;
    }
    const uint8_t* head = p + at;
    if (head_have_ == 0) {
      frame_start_ = base + at;
      if (len - at >= sizeof(head_)) {  // the common case: read in place
        at += sizeof(head_);
        if (!OnFrameHead(head, v)) return cut();
        continue;
      }
    }
    const size_t take = std::min(len - at, sizeof(head_) - head_have_);
    std::memcpy(head_ + head_have_, p + at, take);
    head_have_ += take;
    at += take;
    if (head_have_ < sizeof(head_)) break;
    head_have_ = 0;
    if (!OnFrameHead(head_, v)) return cut();
  }
  return len;
}

void PeerFrameCheck::UpgradedStreamOne() {
  Open(1);
  ended_.set(Slot(1));
}

bool PeerFrameCheck::OnFrameHead(const uint8_t* head, Violation* v) {
  const uint32_t length = (uint32_t{head[0]} << 16) | (uint32_t{head[1]} << 8) | head[2];
  const uint8_t type = head[3];
  const bool end_stream = (head[4] & kEndStream) != 0;
  stream_ = StreamId(head + 5);
  payload_left_ = length;
  // Stream 0 and our (even) ids in DATA and HEADERS: nghttp2 ends those
  // itself, as it does DATA on an idle stream and a new stream's HEADERS
  // that depends on itself.
  const bool client_stream = stream_ % 2 == 1;
  if (type == kHeaders) {
    continuations_ = 0;  // a new header block (one without END_HEADERS goes on)
  } else if (type == kContinuation) {
    if (++continuations_ > max_continuations_) {
      *v = {kEnhanceYourCalm, "flood: CONTINUATION"};
      return false;
    }
  }
  switch (type) {
    case kData:
    case kHeaders:
      if (!client_stream) return true;
      if (type == kHeaders && stream_ > highest_) {
        Open(stream_);
        if (end_stream) ended_.set(Slot(stream_));
        return true;
      }
      switch (State(stream_)) {
        case Known::kSkipped:
          // No race can explain it: the client chose its ids in order.
          *v = {kProtocolError, "stream id: a lower one never opened"};
          return false;
        case Known::kEnded:
          *v = {kStreamClosed, type == kData ? "DATA on a stream the client closed"
                                             : "HEADERS on a stream the client closed"};
          return false;
        case Known::kOpen:
          if (end_stream) ended_.set(Slot(stream_));  // trailers or the body's end
          return true;
        case Known::kIdle:
        case Known::kForgotten:
          return true;
      }
      return true;
    case kPriority:
      if (stream_ == 0) {
        *v = {kProtocolError, "PRIORITY on stream 0"};
        return false;
      }
      // Another length is nghttp2's FRAME_SIZE_ERROR.
      want_dependency_ = length == 5;
      dependency_have_ = 0;
      return true;
    case kRstStream:
      if (client_stream && State(stream_) == Known::kOpen) ended_.set(Slot(stream_));
      return true;
    default:
      return true;
  }
}

void PeerFrameCheck::Open(uint32_t id) {
  // The ids jumped over are closed without ever opening (5.1.1).
  const uint32_t next = highest_ == 0 ? 1 : highest_ + 2;
  if ((id - next) / 2 >= kIds) {
    opened_.reset();
    ended_.reset();
  } else {
    for (uint32_t skipped = next; skipped < id; skipped += 2) {
      opened_.reset(Slot(skipped));
      ended_.reset(Slot(skipped));
    }
  }
  opened_.set(Slot(id));
  ended_.reset(Slot(id));
  highest_ = id;
}

PeerFrameCheck::Known PeerFrameCheck::State(uint32_t id) const {
  if (id > highest_) return Known::kIdle;
  if ((highest_ - id) / 2 >= kIds) return Known::kForgotten;
  if (!opened_.test(Slot(id))) return Known::kSkipped;
  return ended_.test(Slot(id)) ? Known::kEnded : Known::kOpen;
}

}  // namespace uring_http::http2::internal
