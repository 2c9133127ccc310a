// The server's error lines: a handler that threw, a response that could not
// be sent as the handler built it. They go to stderr, where the server's
// other diagnostics go (-v, accept and ring errors), one line each, written
// whether or not -v is given.
//
// A client can make a failing handler fail again in a loop, so the lines are
// rate-limited for the whole process: at most kErrorLinesPerSecond in one
// second of the monotonic clock. The lines refused are counted, and the
// count is written as one more line ("N more error lines suppressed") when
// the next second's first line is logged, or when FlushSuppressedErrors()
// finds the second over (each event loop calls it on its timer tick, so the
// count appears within about a second even if no error follows).
//
// A line is cut at kMaxErrorLineBytes, and control bytes in it (a handler's
// what() may hold a newline) are written as '?': one event, one line.
//
// Thread-safety: any thread. A mutex orders the limiter; each line is one
// write(2), so lines from different threads never interleave.
#ifndef URING_HTTP_SRC_BASE_ERROR_LOG_H_
#define URING_HTTP_SRC_BASE_ERROR_LOG_H_

#include <cstdint>
#include <string_view>

namespace uring_http::base {

inline constexpr uint32_t kErrorLinesPerSecond = 10;
inline constexpr size_t kMaxErrorLineBytes = 1024;

// The limiter on its own, with the clock given (for tests): fixed windows of
// one second.
class LineRateLimiter {
 public:
  explicit LineRateLimiter(uint32_t per_second) : per_second_(per_second) {}

  // A line at `now_ns`: true if it may be written. *report: lines refused
  // in windows that have ended and not reported yet (0 if none), to be
  // written before this one; they count as reported once returned.
  bool Admit(int64_t now_ns, uint64_t* report);
  // Lines refused in windows that have ended, not reported yet: taken.
  uint64_t TakeEnded(int64_t now_ns);
  // Refused and not reported, whatever the window.
  uint64_t pending() const { return refused_; }

 private:
  void Roll(int64_t now_ns);

  const uint32_t per_second_;
  int64_t window_ = INT64_MIN;  // the current window's second
  uint32_t admitted_ = 0;       // lines written in it
  uint64_t refused_ = 0;        // lines refused, not reported yet
  int64_t refused_window_ = 0;  // the window of the last refusal
};

// Writes "uring-http: error: <text>\n" to stderr (fd 2), unless the limit
// refuses it.
void LogError(std::string_view text);
// Writes the count of refused lines once their second is over; cheap when
// there are none.
void FlushSuppressedErrors();

}  // namespace uring_http::base

#endif  // URING_HTTP_SRC_BASE_ERROR_LOG_H_
