// Upstreams: the proxy's servers (--upstream=HOST:PORT, or
// https://HOST:PORT for one spoken to over TLS; repeatable), taken
// in turn (round-robin); one that could not be reached is skipped for
// --upstream-fail-timeout, unless every one is down (then they are all
// tried again rather than none).
//
// Thread-safety: Pick and MarkFailed from any ring at once (atomics).
#ifndef URING_HTTP_EXAMPLES_PROXY_UPSTREAMS_H_
#define URING_HTTP_EXAMPLES_PROXY_UPSTREAMS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace proxy {

struct Upstream {
  bool tls = false;       // https://: TLS, verified for `host`
  std::string host;       // a literal or a name (resolved by the client)
  uint16_t port = 0;
  std::string authority;  // "host:port", for logs
  // Steady-clock nanoseconds before which it is skipped (0: up).
  std::atomic<int64_t> down_until{0};
};

class Upstreams {
 public:
  // Each "HOST:PORT" ("[::1]:8080" for an IPv6 literal), optionally after
  // "http://" or "https://"; InvalidArgument naming the one that is not.
  static absl::StatusOr<std::unique_ptr<Upstreams>> Parse(const std::vector<std::string>& specs,
                                                          std::chrono::milliseconds fail_timeout);

  // At most 64 (a request's tries are a bit mask).
  static constexpr size_t kMaxUpstreams = 64;
  // The next upstream for a request to try: from its turn (set on the
  // first call, *tried == 0) on, the first up and not tried yet, else the
  // first not tried; null once each has been. Marks it in *tried.
  Upstream* Pick(uint64_t* tried, size_t* turn);
  void MarkFailed(Upstream& u);
  size_t size() const { return list_.size(); }

 private:
  std::vector<std::unique_ptr<Upstream>> list_;
  std::chrono::milliseconds fail_timeout_{10000};
  std::atomic<uint64_t> next_{0};
};

}  // namespace proxy

#endif  // URING_HTTP_EXAMPLES_PROXY_UPSTREAMS_H_
