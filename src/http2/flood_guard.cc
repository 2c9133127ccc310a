#include "src/http2/flood_guard.h"

namespace uring_http::http2 {

void FloodGuard::Tick(int64_t now_ms) {
  // A fixed window rather than a sliding one: a peer can at most double a
  // limit across a boundary, and the state stays a few counters.
  if (!started_ || now_ms - window_start_ >= limits_.window_ms || now_ms < window_start_) {
    started_ = true;
    window_start_ = now_ms;
    for (uint32_t& c : counts_) c = 0;
    data_sent_ = 0;
  }
}

uint32_t FloodGuard::Limit(FloodKind kind) const {
  switch (kind) {
    case FloodKind::kPing: return limits_.max_ping;
    case FloodKind::kSettings: return limits_.max_settings;
    case FloodKind::kPriority: return limits_.max_priority;
    case FloodKind::kRstStream: return limits_.max_rst_stream;
    case FloodKind::kWindowUpdate: {
      const uint64_t earned = data_sent_ * limits_.window_update_per_data_sent;
      const uint64_t limit = limits_.max_window_update + earned;
      return limit > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(limit);
    }
    case FloodKind::kEmptyData: return limits_.max_empty_data;
    case FloodKind::kCount: break;
  }
  return 0;
}

bool FloodGuard::Count(FloodKind kind) {
  if (flooded_) return false;
  uint32_t& count = counts_[static_cast<size_t>(kind)];
  if (count < UINT32_MAX) ++count;
  if (count > Limit(kind)) flooded_ = true;
  return !flooded_;
}

const char* FloodGuard::Name(FloodKind kind) {
  switch (kind) {
    case FloodKind::kPing: return "flood: PING";
    case FloodKind::kSettings: return "flood: SETTINGS";
    case FloodKind::kPriority: return "flood: PRIORITY";
    case FloodKind::kRstStream: return "flood: RST_STREAM";
    case FloodKind::kWindowUpdate: return "flood: WINDOW_UPDATE";
    case FloodKind::kEmptyData: return "flood: empty DATA";
    case FloodKind::kCount: break;
  }
  return "flood";
}

}  // namespace uring_http::http2
