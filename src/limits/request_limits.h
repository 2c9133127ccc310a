// RequestLimits: load shedding and per-client rate limits, decided for a
// request once its route is known, on the ring thread that read it.
//
//   in flight   a route's RouteOptions::max_in_flight, and the server's
//               --max-in-flight over every route: a request past either is
//               answered 503 with Retry-After: 1. A request is in flight
//               from its route's match to the end of its response (a FAST
//               handler's call, a SLOW task until its worker is done, a
//               stream or a file until its last byte is queued).
//   rate        a route's RouteOptions::rate_per_client, and the server's
//               --rate-limit over every route: one token bucket per client
//               (ClientKey) each; a request finding either empty is
//               answered 429 with Retry-After (whole seconds until a
//               token is back).
// The server's own /metrics and /healthz routes are under neither of the
// server-wide limits (a scrape or a health check must get through a
// flood), only under limits of their own, which they do not have.
//
// The in-flight counts are atomics shared by every ring (one per limited
// route and one for the server, each on its own cache line), so a limit of
// N holds across threads exactly: an add when a request is admitted, a
// subtract when it ends; routes with no limit, on a server with none,
// touch nothing. The buckets are shared too (TokenBuckets).
//
// Thread-safety: Admit and Release from any ring thread; the counters from
// any thread. Built once before the rings start.
#ifndef URING_HTTP_SRC_LIMITS_REQUEST_LIMITS_H_
#define URING_HTTP_SRC_LIMITS_REQUEST_LIMITS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/http/client_address.h"
#include "src/limits/rate_limit.h"
#include "src/limits/token_buckets.h"

namespace uring_http::limits {

// What a route is under (the server builds one per route id).
struct RouteLimitConfig {
  uint32_t max_in_flight = 0;  // 0: none of its own
  RateLimit rate_per_client;   // per_second 0: none of its own
  bool server_wide = true;     // the server's limits apply (false: /metrics, /healthz)
};

class RequestLimits {
 public:
  // `routes` indexed by route id. `server_in_flight` 0 and `server_rate`
  // disabled: no server-wide limit. `clients`: each bucket table's size.
  RequestLimits(std::vector<RouteLimitConfig> routes, uint32_t server_in_flight,
                RateLimit server_rate, size_t clients);
  RequestLimits(const RequestLimits&) = delete;
  RequestLimits& operator=(const RequestLimits&) = delete;

  // Nothing is limited anywhere: the server need not ask.
  bool none() const { return none_; }

  enum class Verdict : uint8_t { kAdmit, kInFlight, kRate };
  struct Decision {
    Verdict verdict = Verdict::kAdmit;
    bool holds = false;         // kAdmit: Release(route) owed at the end
    uint32_t retry_after_s = 0; // kInFlight, kRate
  };
  // A request for `route` from `client` at `now_ns` (steady clock).
  Decision Admit(uint32_t route, const http::ClientAddress& client, int64_t now_ns);
  // The end of a request Admit admitted with `holds`.
  void Release(uint32_t route);

  // For /metrics.
  struct RouteCounts {
    bool limited_in_flight = false;  // the route has a max_in_flight
    uint64_t in_flight = 0;          // now (limited routes)
    uint64_t shed_in_flight = 0;     // 503s
    uint64_t shed_rate = 0;          // 429s
  };
  RouteCounts Counts(uint32_t route) const;
  size_t routes() const { return route_count_; }
  bool server_in_flight_limited() const { return server_in_flight_ > 0; }
  uint64_t server_in_flight() const { return server_count_.load(std::memory_order_relaxed); }
  // Bucket entries evicted before they had refilled, over every table.
  uint64_t rate_evictions() const;

 private:
  struct alignas(64) Route {
    RouteLimitConfig config;
    bool counts = false;                    // an in-flight limit covers it
    std::atomic<uint64_t> in_flight{0};
    std::atomic<uint64_t> shed_in_flight{0};
    std::atomic<uint64_t> shed_rate{0};
    std::unique_ptr<TokenBuckets> buckets;  // rate_per_client
  };
  bool TryEnter(std::atomic<uint64_t>& count, uint32_t limit);

  std::unique_ptr<Route[]> routes_;  // by route id
  size_t route_count_ = 0;
  const uint32_t server_in_flight_;
  alignas(64) std::atomic<uint64_t> server_count_{0};
  std::unique_ptr<TokenBuckets> server_buckets_;
  bool none_ = true;
};

}  // namespace uring_http::limits

#endif  // URING_HTTP_SRC_LIMITS_REQUEST_LIMITS_H_
