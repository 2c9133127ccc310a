// What the files of EventLoop share (event_loop.cc, event_loop_host.cc,
// event_loop_tls.cc): the provided-buffer groups, the clock of queue-wait
// and latency figures, and -v's debug lines. Not for other users.
#ifndef URING_HTTP_SRC_SERVING_LOOP_INTERNAL_H_
#define URING_HTTP_SRC_SERVING_LOOP_INTERNAL_H_

#include <time.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "src/serving/config.h"

namespace uring_http::serving::internal {

// The receive buffers' groups (ArmRecv's `bulk` picks the second).
inline constexpr uint16_t kBufferGroup = 0;
inline constexpr uint16_t kBulkBufferGroup = 1;

inline int64_t SteadyNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A line on stderr with -v (--verbose).
inline void Debug(const ServerConfig& config, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
inline void Debug(const ServerConfig& config, const char* fmt, ...) {
  if (!config.verbose) return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
}

}  // namespace uring_http::serving::internal

#endif  // URING_HTTP_SRC_SERVING_LOOP_INTERNAL_H_
