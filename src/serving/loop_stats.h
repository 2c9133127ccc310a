// LoopStats: counters of one accept thread. Only that thread writes them
// (relaxed load + store, no read-modify-write and no shared cache line with
// another writer), and anyone may read them; readers sum over threads.
#ifndef URING_HTTP_SRC_SERVING_LOOP_STATS_H_
#define URING_HTTP_SRC_SERVING_LOOP_STATS_H_

#include <atomic>
#include <cstdint>

#include "src/async/runner_stats.h"
#include "src/exchange/connection_env.h"
#include "src/tls/tls_stats.h"

namespace uring_http::serving {

using exchange::Counter;

// Latency histogram bounds (upper, inclusive) in microseconds; one more
// bucket counts everything above the last bound.
inline constexpr uint64_t kLatencyBoundsUs[] = {50,    100,    250,    500,     1000,   2500,
                                                 5000,  10000,  25000,  50000,   100000, 250000,
                                                 500000, 1000000, 2500000, 10000000};
inline constexpr size_t kLatencyBuckets = sizeof(kLatencyBoundsUs) / sizeof(uint64_t) + 1;

// Per route (and one extra entry for requests that matched no route).
struct RouteStats {
  Counter by_class[6];  // index status / 100: 1xx .. 5xx
  Counter latency[kLatencyBuckets];
  Counter latency_sum_us;

  void Record(int status, uint64_t latency_us) {
    const int cls = status / 100;
    by_class[cls >= 1 && cls <= 5 ? cls : 0].Add();
    size_t b = 0;
    while (b < kLatencyBuckets - 1 && latency_us > kLatencyBoundsUs[b]) ++b;
    latency[b].Add();
    latency_sum_us.Add(latency_us);
  }
};

struct alignas(64) LoopStats {
  Counter accepted;
  Counter http2_connections; // connections that became HTTP/2 (ALPN h2, h2c)
  Counter refused;          // pool full: answered 503 and closed
  Counter active;           // connections currently holding a slot
  Counter responses_2xx;
  Counter responses_4xx;
  Counter responses_5xx;
  Counter results_dropped;  // task result for a slot that moved on (never expected)
  Counter recv_nobufs;      // receive ran out of provided buffers
  Counter accept_errors;    // EMFILE/ENFILE and other accept failures
  Counter chunk_heap_fallbacks;
  Counter cq_overflows;     // waits that found completions held beyond the CQ
  Counter mailbox_messages; // worker messages that came through the mailbox
  // The open-file cache's own figures, copied once per tick.
  Counter file_cache_hits;
  Counter file_cache_revalidations;
  Counter file_cache_entries;
  Counter file_cache_content_bytes;
  exchange::ConnectionStats conn;  // what the loop's connections count
  async::RunnerStats async;     // its ASYNC handlers
  tls::TlsStats tls;            // its TLS layer's handshakes
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_LOOP_STATS_H_
