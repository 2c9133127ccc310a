// TokenBuckets: one token bucket per client (ClientKey) for one RateLimit,
// in a table of fixed size shared by every ring thread, so that a client's
// requests count against one bucket whichever thread accepted its
// connections (SO_REUSEPORT spreads one client's connections over them).
//
// The table is split into 64 shards, each behind its own mutex held for a
// lookup and a few arithmetic operations (as nginx's limit_req holds its
// shared zone's lock across worker processes): two rings contend only when
// they look up clients of the same shard at the same moment. Within a
// shard, entries are 8-way set-associative: a new client takes a free way
// of its set, else the way used least recently (a bucket left alone for
// burst/rate has refilled and is worth no more than a free way; an
// eviction before that gives the evicted client a full bucket when it
// comes back, and is counted). Memory is fixed at construction: 32 bytes
// per entry.
//
// Thread-safety: any thread.
#ifndef URING_HTTP_SRC_LIMITS_TOKEN_BUCKETS_H_
#define URING_HTTP_SRC_LIMITS_TOKEN_BUCKETS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "src/limits/client_key.h"
#include "src/limits/rate_limit.h"

namespace uring_http::limits {

class TokenBuckets {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kWays = 8;

  // Room for about `capacity` clients (rounded up to whole sets; at least
  // one set per shard). `limit` must be enabled().
  TokenBuckets(RateLimit limit, size_t capacity);
  TokenBuckets(const TokenBuckets&) = delete;
  TokenBuckets& operator=(const TokenBuckets&) = delete;

  // Takes a token from `key`'s bucket at `now_ns` (a steady clock): true.
  // False when it is empty; *retry_after_s is then how long until it
  // holds a token again, in whole seconds (at least 1).
  bool Take(const ClientKey& key, int64_t now_ns, uint32_t* retry_after_s);

  size_t capacity() const { return kShards * sets_ * kWays; }
  // Entries evicted while their bucket was not yet full again.
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    uint64_t bits = 0;
    int64_t last_ns = 0;   // when `tokens` was last brought up to date
    double tokens = 0;
    ClientKey::Kind kind = ClientKey::kNone;  // kNone: free
  };
  struct alignas(64) Shard {
    std::mutex mu;
    std::unique_ptr<Entry[]> entries;  // sets_ * kWays
  };

  const double rate_;    // tokens a nanosecond
  const double bucket_;  // the bucket's size
  const double per_second_;
  size_t sets_ = 1;      // per shard
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace uring_http::limits

#endif  // URING_HTTP_SRC_LIMITS_TOKEN_BUCKETS_H_
