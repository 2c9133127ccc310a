// FloodGuard: counts the frames an HTTP/2 peer can send that cost us work
// but carry no request (RFC 9113 10.5; CVE-2019-9512 ping, -9515 settings,
// -9516 empty frames, -9513 priority, CVE-2023-44487 rapid reset) within a
// fixed time window per connection, and says when one kind passes its
// limit. The Session then ends the connection with ENHANCE_YOUR_CALM. It
// knows nothing of nghttp2; the time comes from the caller (Tick), so tests
// decide when a window ends.
//
// Thread-safety: none; part of a Session, on its connection's thread.
#ifndef URING_HTTP_SRC_HTTP2_FLOOD_GUARD_H_
#define URING_HTTP_SRC_HTTP2_FLOOD_GUARD_H_

#include <cstddef>
#include <cstdint>

namespace uring_http::http2 {

// Per connection and window. Generous for browsers and gRPC clients (which
// send a handful of each per second), tight for a loop sending them.
struct FloodLimits {
  int64_t window_ms = 1000;
  uint32_t max_ping = 100;
  uint32_t max_settings = 100;
  uint32_t max_priority = 1000;
  uint32_t max_rst_stream = 200;  // frames from the peer: Rapid Reset opens and resets streams
  // WINDOW_UPDATEs a peer may send besides this many per DATA frame we sent
  // in the window: a fast download legitimately earns more of them.
  uint32_t max_window_update = 1000;
  uint32_t window_update_per_data_sent = 4;
  uint32_t max_empty_data = 100;  // DATA without payload nor END_STREAM
  // nghttp2's own caps, given to it at creation: CONTINUATION frames after
  // one HEADERS (CVE-2024-28182), and SETTINGS/PING acks queued unsent
  // (a peer that does not read, CVE-2019-9512/9515).
  uint32_t max_continuations = 8;
  uint32_t max_outbound_ack = 1000;
  // Our cap on all control frames queued and not sent (RST_STREAMs we owe
  // for bad streams, CVE-2019-9514, and the acks): checked after each Receive.
  uint32_t max_outbound_frames = 10000;
};

enum class FloodKind : uint8_t {
  kPing,
  kSettings,
  kPriority,
  kRstStream,
  kWindowUpdate,
  kEmptyData,
  kCount,
};

class FloodGuard {
 public:
  explicit FloodGuard(const FloodLimits& limits) : limits_(limits) {}

  // The time now (ms, monotonic): starts a new window when the old one ran
  // out. Called once per Receive; Count uses the window it set.
  void Tick(int64_t now_ms);
  // One more frame of `kind`; false when that passes its limit (and from
  // then on: a flooding connection stays flagged).
  bool Count(FloodKind kind);
  void OnDataSent() { ++data_sent_; }

  // "flood: PING" and so on, for Session::failure().
  static const char* Name(FloodKind kind);

 private:
  uint32_t Limit(FloodKind kind) const;

  FloodLimits limits_;
  int64_t window_start_ = 0;
  bool started_ = false;
  bool flooded_ = false;
  uint32_t counts_[static_cast<size_t>(FloodKind::kCount)] = {};
  uint64_t data_sent_ = 0;  // DATA frames we sent in the window
};

}  // namespace uring_http::http2

#endif  // URING_HTTP_SRC_HTTP2_FLOOD_GUARD_H_
