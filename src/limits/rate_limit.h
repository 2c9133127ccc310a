// RateLimit: how many requests a second one client may make (a token
// bucket: `burst` tokens, refilled at `per_second`; a request takes one).
// Plain data: ServerConfig::rate_limit (--rate-limit) sets it for every
// route, RouteOptions::rate_per_client for one route; src/limits/ applies
// it.
//
// Thread-safety: a value.
#ifndef URING_HTTP_SRC_LIMITS_RATE_LIMIT_H_
#define URING_HTTP_SRC_LIMITS_RATE_LIMIT_H_

#include <cstdint>

namespace uring_http::limits {

struct RateLimit {
  double per_second = 0;  // 0: no limit
  // Requests a client may make at once before the rate applies (the
  // bucket's size); 0: one second's worth (per_second rounded up, at least 1).
  uint32_t burst = 0;

  bool enabled() const { return per_second > 0; }
  uint32_t bucket() const {
    if (burst > 0) return burst;
    if (per_second >= 4e9) return UINT32_MAX;
    const auto whole = static_cast<uint32_t>(per_second);
    return per_second > whole ? whole + 1 : (whole > 0 ? whole : 1);
  }
};

}  // namespace uring_http::limits

#endif  // URING_HTTP_SRC_LIMITS_RATE_LIMIT_H_
