#include "src/limits/token_buckets.h"

#include <algorithm>
#include <cmath>

namespace uring_http::limits {

TokenBuckets::TokenBuckets(RateLimit limit, size_t capacity)
    : rate_(limit.per_second / 1e9),
      bucket_(static_cast<double>(limit.bucket())),
      per_second_(limit.per_second) {
  const size_t per_shard = (capacity + kShards - 1) / kShards;
  sets_ = std::max<size_t>(1, (per_shard + kWays - 1) / kWays);
  shards_ = std::make_unique<Shard[]>(kShards);
  for (size_t i = 0; i < kShards; ++i) shards_[i].entries = std::make_unique<Entry[]>(sets_ * kWays);
}

bool TokenBuckets::Take(const ClientKey& key, int64_t now_ns, uint32_t* retry_after_s) {
  const uint64_t h = key.Hash();
  Shard& shard = shards_[h % kShards];
  Entry* set = shard.entries.get() + (h / kShards) % sets_ * kWays;
  std::lock_guard<std::mutex> lock(shard.mu);
  Entry* e = nullptr;
  Entry* oldest = set;
  for (size_t w = 0; w < kWays; ++w) {
    Entry& c = set[w];
    if (c.kind == key.kind && c.bits == key.bits) {
      e = &c;
      break;
    }
    if (oldest->kind != ClientKey::kNone &&
        (c.kind == ClientKey::kNone || c.last_ns < oldest->last_ns)) {
      oldest = &c;
    }
  }
  if (e == nullptr) {
    e = oldest;
    if (e->kind != ClientKey::kNone) {
      const double refilled = e->tokens + static_cast<double>(now_ns - e->last_ns) * rate_;
      if (refilled < bucket_) evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    e->bits = key.bits;
    e->kind = key.kind;
    e->tokens = bucket_;
    e->last_ns = now_ns;
  } else if (now_ns > e->last_ns) {
    e->tokens = std::min(bucket_, e->tokens + static_cast<double>(now_ns - e->last_ns) * rate_);
    e->last_ns = now_ns;
  }
  if (e->tokens >= 1) {
    e->tokens -= 1;
    return true;
  }
  // Whole seconds until a token is back, as Retry-After counts them.
  const double wait_s = (1 - e->tokens) / per_second_;
  *retry_after_s = static_cast<uint32_t>(std::clamp(std::ceil(wait_s), 1.0, 86400.0));
  return false;
}

}  // namespace uring_http::limits
