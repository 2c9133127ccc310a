#include "src/base/error_log.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace uring_http::base {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

int64_t FloorSecond(int64_t ns) { return ns / kNsPerSecond - (ns % kNsPerSecond < 0 ? 1 : 0); }

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSecond + ts.tv_nsec;
}

struct ErrorLog {
  std::mutex mu;
  LineRateLimiter limiter{kErrorLinesPerSecond};
  // Set while the limiter holds refused lines: the timer's check reads
  // only this, without the mutex.
  std::atomic<bool> refused{false};
};

ErrorLog& Log() {
  // Trivially destructible in effect (std::mutex's destructor does nothing
  // on Linux): a thread may still log while the process exits.
  static ErrorLog log;
  return log;
}

void WriteLine(const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, len);
    if (n <= 0) return;  // nowhere to report that: the line is lost
    data += n;
    len -= static_cast<size_t>(n);
  }
}

void WriteSuppressed(uint64_t count) {
  char line[128];
  const int n = std::snprintf(line, sizeof(line),
                              "uring-http: error: %llu more error lines suppressed (at most %u "
                              "a second are written)\n",
                              static_cast<unsigned long long>(count), kErrorLinesPerSecond);
  if (n > 0) WriteLine(line, static_cast<size_t>(n));
}

}  // namespace

void LineRateLimiter::Roll(int64_t now_ns) {
  const int64_t second = FloorSecond(now_ns);
  if (second != window_) {
    window_ = second;
    admitted_ = 0;
  }
}

bool LineRateLimiter::Admit(int64_t now_ns, uint64_t* report) {
  Roll(now_ns);
  *report = 0;
  if (admitted_ >= per_second_) {
    ++refused_;
    refused_window_ = window_;
    return false;
  }
  ++admitted_;
  // Lines are refused only once a window is full, so any refused now were
  // refused in a window that has ended.
  *report = refused_;
  refused_ = 0;
  return true;
}

uint64_t LineRateLimiter::TakeEnded(int64_t now_ns) {
  Roll(now_ns);
  if (refused_ == 0 || refused_window_ >= window_) return 0;
  const uint64_t n = refused_;
  refused_ = 0;
  return n;
}

void LogError(std::string_view text) {
  static constexpr std::string_view kPrefix = "uring-http: error: ";
  char line[kMaxErrorLineBytes + kPrefix.size() + 1];
  std::memcpy(line, kPrefix.data(), kPrefix.size());
  size_t len = kPrefix.size();
  const size_t n = std::min(text.size(), kMaxErrorLineBytes);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    line[len++] = c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  line[len++] = '\n';

  ErrorLog& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  uint64_t report = 0;
  const bool admitted = log.limiter.Admit(MonotonicNs(), &report);
  if (report > 0) WriteSuppressed(report);
  if (admitted) WriteLine(line, len);
  log.refused.store(log.limiter.pending() > 0, std::memory_order_relaxed);
}

void FlushSuppressedErrors() {
  ErrorLog& log = Log();
  if (!log.refused.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(log.mu);
  const uint64_t report = log.limiter.TakeEnded(MonotonicNs());
  if (report > 0) WriteSuppressed(report);
  log.refused.store(log.limiter.pending() > 0, std::memory_order_relaxed);
}

}  // namespace uring_http::base
