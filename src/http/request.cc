// Request's own members (see request.h); the parser fills the rest.
#include "src/http/request.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace uring_http::http {
namespace {

inline char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

}  // namespace

std::string_view Request::FindHeader(std::string_view name) const {
  for (size_t i = 0; i < num_headers; ++i) {
    const std::string_view n = headers[i].name;
    if (n.size() != name.size()) continue;
    size_t j = 0;
    while (j < n.size() && AsciiLower(n[j]) == AsciiLower(name[j])) ++j;
    if (j == n.size()) return headers[i].value;
  }
  return {};
}

StopReason Request::WaitForStop(std::chrono::nanoseconds timeout) const {
  if (stop == nullptr) {
    if (timeout.count() > 0) std::this_thread::sleep_for(timeout);
    return StopReason::kNone;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const uint32_t now = stop->load(std::memory_order_acquire);
    if (now != 0) return static_cast<StopReason>(now);
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left.count() <= 0) return StopReason::kNone;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    // Sleeps while the word is still 0; the ring's store wakes it
    // (worker::WakeStopWaiters). EINTR, EAGAIN, ETIMEDOUT: look again.
    syscall(SYS_futex, stop, FUTEX_WAIT_PRIVATE, 0, &ts, nullptr, 0);
  }
}

long Request::ReadBody(char* buf, size_t len) const {
  if (body_reader != nullptr) return body_reader->Read(buf, len);
  const size_t n = len < body.size() - body_read_ ? len : body.size() - body_read_;
  if (n > 0) std::memcpy(buf, body.data() + body_read_, n);
  body_read_ += n;
  return static_cast<long>(n);
}

BodyError Request::body_error() const {
  return body_reader != nullptr ? body_reader->error() : BodyError::kNone;
}

const char* BodyErrorName(BodyError error) {
  switch (error) {
    case BodyError::kNone:
      return "none";
    case BodyError::kClientGone:
      return "client gone";
    case BodyError::kMalformed:
      return "malformed";
    case BodyError::kTooLarge:
      return "too large";
    case BodyError::kTimedOut:
      return "timed out";
  }
  return "unknown";
}

}  // namespace uring_http::http
