// ServerStats: a snapshot of the server's counters, summed over all accept
// threads and the worker pool (Server::Stats(); /metrics renders the same),
// and ListeningAddress, an address the server listens on.
#ifndef URING_HTTP_SRC_SERVING_SERVER_STATS_H_
#define URING_HTTP_SRC_SERVING_SERVER_STATS_H_

#include <cstdint>
#include <string>

#include "src/worker/worker_pool_stats.h"

namespace uring_http::serving {

// One address the server listens on, as bound (Server::listening()).
struct ListeningAddress {
  std::string text;   // "127.0.0.1:8080", "[::]:8080", "unix:/run/app.sock"
  std::string host;   // "127.0.0.1", "::", "unix:/run/app.sock"
  uint16_t port = 0;  // the real one after port 0; 0 for a Unix socket
  bool tls = false;
  bool admin = false;  // the built-in endpoints only (ListenAddress::admin)
};

// Sums over all accept threads (and the worker pool).
struct ServerStats {
  uint64_t accepted = 0, refused = 0, active = 0, requests = 0;
  uint64_t responses_2xx = 0, responses_4xx = 0, responses_5xx = 0, bad_requests = 0;
  uint64_t slow_dispatched = 0, slow_completed = 0, slow_rejected = 0, results_dropped = 0;
  uint64_t timeouts = 0, recv_nobufs = 0, accept_errors = 0, chunk_heap_fallbacks = 0;
  uint64_t sends_zc = 0, sends_zc_copied = 0, sends_zc_refused = 0, cq_overflows = 0;
  uint64_t chunked_bodies = 0, streamed_requests = 0, streamed_responses = 0;
  uint64_t aborted_streams = 0, lingering_closes = 0, mailbox_messages = 0;
  // ASYNC handlers (async/runner_stats.h): started, in progress now,
  // stopped early (client gone or deadline), of those by a deadline,
  // refused (every exchange taken), worker calls, frame slabs from the heap.
  uint64_t async_started = 0, async_active = 0, async_cancelled = 0, async_deadlines = 0;
  uint64_t async_refused = 0, async_worker_calls = 0, async_frame_slabs = 0;
  uint64_t files_served = 0, file_opens = 0, file_cache_hits = 0, file_cache_revalidations = 0;
  uint64_t file_cache_entries = 0, file_cache_content_bytes = 0, file_splices = 0;
  uint64_t file_truncated = 0;
  uint64_t proxy_header_errors = 0;
  // TLS (src/tls/tls_stats.h): handshakes, resumptions, versions, failures.
  uint64_t tls_handshakes = 0, tls_resumed = 0, tls13 = 0, tls12 = 0, tls_offloaded = 0;
  uint64_t tls_failed_timeout = 0, tls_failed_plain_http = 0, tls_failed_protocol = 0;
  uint64_t tls_failed_peer_closed = 0, tls_failed_client_cert = 0;
  // Client certificates (--tls-client-ca): verified, and failures by reason.
  uint64_t tls_client_certs_verified = 0, tls_client_cert_missing = 0;
  uint64_t tls_client_cert_untrusted = 0, tls_client_cert_expired = 0;
  uint64_t tls_client_cert_invalid = 0;
  uint64_t tls_steps_reclaimed = 0, tls_steps_skipped = 0;
  uint64_t tls_reloads = 0, tls_reload_failures = 0;
  worker::WorkerPoolStats workers;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_SERVER_STATS_H_
