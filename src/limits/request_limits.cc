#include "src/limits/request_limits.h"

#include "src/limits/client_key.h"

namespace uring_http::limits {

RequestLimits::RequestLimits(std::vector<RouteLimitConfig> routes, uint32_t server_in_flight,
                             RateLimit server_rate, size_t clients)
    : routes_(std::make_unique<Route[]>(routes.size())),
      route_count_(routes.size()),
      server_in_flight_(server_in_flight) {
  if (server_rate.enabled()) server_buckets_ = std::make_unique<TokenBuckets>(server_rate, clients);
  none_ = server_in_flight_ == 0 && server_buckets_ == nullptr;
  for (size_t i = 0; i < routes.size(); ++i) {
    Route& r = routes_[i];
    r.config = routes[i];
    r.counts = r.config.max_in_flight > 0 || (r.config.server_wide && server_in_flight_ > 0);
    if (r.config.rate_per_client.enabled()) {
      r.buckets = std::make_unique<TokenBuckets>(r.config.rate_per_client, clients);
    }
    if (r.config.max_in_flight > 0 || r.buckets != nullptr) none_ = false;
  }
}

bool RequestLimits::TryEnter(std::atomic<uint64_t>& count, uint32_t limit) {
  // Add first, then look: two rings racing for the last place cannot both
  // get it (one sees the other's add and backs out).
  if (count.fetch_add(1, std::memory_order_relaxed) < limit) return true;
  count.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

RequestLimits::Decision RequestLimits::Admit(uint32_t route, const http::ClientAddress& client,
                                             int64_t now_ns) {
  Decision d;
  if (route >= route_count_) return d;  // unmatched: 404s are not limited
  Route& r = routes_[route];
  const bool server_wide = r.config.server_wide;
  // Rates first: a refused request must not have held a place in flight.
  TokenBuckets* tables[2] = {r.buckets.get(), server_wide ? server_buckets_.get() : nullptr};
  if (tables[0] != nullptr || tables[1] != nullptr) {
    const ClientKey key = KeyOf(client);
    if (key.known()) {
      for (TokenBuckets* t : tables) {
        if (t != nullptr && !t->Take(key, now_ns, &d.retry_after_s)) {
          r.shed_rate.fetch_add(1, std::memory_order_relaxed);
          d.verdict = Verdict::kRate;
          return d;
        }
      }
    }
  }
  if (!r.counts) return d;
  const bool route_limit = r.config.max_in_flight > 0;
  const bool server_limit = server_wide && server_in_flight_ > 0;
  if (route_limit && !TryEnter(r.in_flight, r.config.max_in_flight)) {
    r.shed_in_flight.fetch_add(1, std::memory_order_relaxed);
    d.verdict = Verdict::kInFlight;
    d.retry_after_s = 1;
    return d;
  }
  if (server_limit && !TryEnter(server_count_, server_in_flight_)) {
    if (route_limit) r.in_flight.fetch_sub(1, std::memory_order_relaxed);
    r.shed_in_flight.fetch_add(1, std::memory_order_relaxed);
    d.verdict = Verdict::kInFlight;
    d.retry_after_s = 1;
    return d;
  }
  d.holds = true;
  return d;
}

void RequestLimits::Release(uint32_t route) {
  Route& r = routes_[route];
  if (r.config.max_in_flight > 0) r.in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (r.config.server_wide && server_in_flight_ > 0) {
    server_count_.fetch_sub(1, std::memory_order_relaxed);
  }
}

RequestLimits::RouteCounts RequestLimits::Counts(uint32_t route) const {
  const Route& r = routes_[route];
  RouteCounts c;
  c.limited_in_flight = r.config.max_in_flight > 0;
  c.in_flight = r.in_flight.load(std::memory_order_relaxed);
  c.shed_in_flight = r.shed_in_flight.load(std::memory_order_relaxed);
  c.shed_rate = r.shed_rate.load(std::memory_order_relaxed);
  return c;
}

uint64_t RequestLimits::rate_evictions() const {
  uint64_t n = server_buckets_ != nullptr ? server_buckets_->evictions() : 0;
  for (size_t i = 0; i < route_count_; ++i) {
    if (routes_[i].buckets != nullptr) n += routes_[i].buckets->evictions();
  }
  return n;
}

}  // namespace uring_http::limits
