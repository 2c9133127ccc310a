// StopReason: whether, and why, an exchange's handler should stop before it
// is done: the client left (its connection closed, or its HTTP/2 stream
// was reset), the server is draining (SIGTERM: finish soon, the process
// ends after --shutdown-timeout), or the route's deadline
// (RouteOptions::timeout) passed. The ring sets it; a handler reads it
// (Request::stop_reason() on any thread, async::Exchange on its ring,
// where the first and the last also cancel the operation it awaits).
#ifndef URING_HTTP_SRC_HTTP_STOP_REASON_H_
#define URING_HTTP_SRC_HTTP_STOP_REASON_H_

#include <cstdint>
#include <string_view>

namespace uring_http::http {

enum class StopReason : uint8_t {
  kNone = 0,
  kDraining,    // finish soon: the server is shutting down
  kClientGone,  // nobody will read the answer
  kDeadline,    // the route's timeout passed (503 if nothing was sent)
};

inline std::string_view StopReasonName(StopReason why) {
  switch (why) {
    case StopReason::kNone: return "none";
    case StopReason::kDraining: return "the server is draining";
    case StopReason::kClientGone: return "the client is gone";
    case StopReason::kDeadline: return "the route's deadline passed";
  }
  return "unknown";
}

// A later reason replaces an earlier one only if it says more: a drain
// does not hide a client that left or a deadline.
inline bool StopReasonOutranks(StopReason next, StopReason now) {
  return static_cast<uint8_t>(next) > static_cast<uint8_t>(now);
}

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_STOP_REASON_H_
