// ServerConfig: everything the server needs to know at start-up. The command
// line (options.h) fills it for the shipped binary; a program embedding the
// server fills it directly. Its initializers are the defaults of both: a
// flag's default is the field's (--help prints it from there), so a config
// built by hand and one parsed from an empty command line are the same.
// Thread-safety: a plain value; the server copies it at construction.
#ifndef URING_HTTP_SRC_SERVING_CONFIG_H_
#define URING_HTTP_SRC_SERVING_CONFIG_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "src/http/compress.h"
#include "src/http/parser.h"
#include "src/limits/rate_limit.h"
#include "src/metrics/registry.h"
#include "src/tls/tls_settings.h"
#include "src/ws/websocket.h"

namespace uring_http::serving {

// The CPUs of the machine (at least 1): the default number of accept
// threads and of workers.
inline int CpuCount() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// One address to listen on (ServerConfig::listen).
struct ListenAddress {
  // "HOST:PORT": HOST an IPv4 or IPv6 literal ("127.0.0.1", "[::1]"), a
  // name ("localhost": ::1 and 127.0.0.1; others resolved once, at start),
  // or empty for every address (":8080": dual-stack [::], or 0.0.0.0
  // without IPv6); PORT 0 picks a free one. Or "unix:PATH": a Unix-domain
  // socket at an absolute PATH (mode 0660), or "unix:@NAME" (abstract).
  std::string address;
  bool tls = false;    // speaks TLS (needs ServerConfig::tls)
  // Serves the built-in endpoints (metrics_path, health_path) and nothing
  // else; with one, those are served on no other listener.
  bool admin = false;
};

struct ServerConfig {
  // Where to listen unless `listen` names addresses: "" is every address
  // (dual-stack [::] where the kernel has IPv6, as Go's net/http does; else
  // 0.0.0.0); a literal ("::1", "127.0.0.1") or a name ("localhost").
  std::string address = "";
  uint16_t port = 9000;          // 0: an ephemeral port (tests)
  // Listen here instead of address:port (and plain_port): each entry its
  // own address, plain HTTP or TLS, or the admin endpoints (--listen,
  // --admin-listen).
  std::vector<ListenAddress> listen;
  int accept_threads = CpuCount();  // one ring and one listener each
  uint32_t accept_capacity = 100000;  // connection slots per accept thread
  int workers = CpuCount();      // 0: SLOW handlers run inline like FAST ones
  // Workers run as SCHED_BATCH: waking, they do not preempt a busy ring
  // thread (see WorkerPool). false: SCHED_OTHER, like the rings.
  bool workers_batch_sched = true;
  int listen_backlog = 4096;
  // TCP_DEFER_ACCEPT: a connection is accepted when its first bytes arrive,
  // or after about this many seconds if none do (0: at once). Until then
  // it is the kernel's, not ours: a drain that begins meanwhile never sees
  // it (like a connection still in the backlog).
  uint32_t defer_accept_s = 1;
  http::ParseLimits limits;
  // The most bytes of header lines ("Name: value\r\n" each) a handler's
  // response may carry, and apart from them its trailer lines; a header
  // past it is refused and the response answered 500 (Response::AddHeader).
  // Up to 1 KiB they cost no allocation. At least 1024 (less is taken as
  // 1024).
  size_t max_response_header_bytes = 64 * 1024;

  // Timeouts in milliseconds (0 disables one).
  uint32_t header_timeout_ms = 10'000;    // first byte to end of headers: 408
  uint32_t body_timeout_ms = 60'000;      // no byte of a request body for this long: 408
  // A request body slower than body_min_rate bytes a second over a window
  // of body_rate_window_ms (the first is its grace): 408 (0: no minimum).
  uint32_t body_min_rate = 1024;
  uint32_t body_rate_window_ms = 10'000;
  uint32_t idle_timeout_ms = 60'000;      // keep-alive between requests
  uint32_t send_timeout_ms = 30'000;      // peer not reading our response
  uint32_t shutdown_timeout_ms = 30'000;  // drain on stop
  uint32_t linger_timeout_ms = 5'000;     // after our FIN, wait for the peer's

  // Load shedding and rate limits over every route but the built-in
  // endpoints (src/limits/request_limits.h; routes add their own in
  // RouteOptions). max_in_flight: requests in flight at once, from the
  // route's match to the end of the response; one more is answered 503
  // with Retry-After: 1 (0: none). rate_limit: a token bucket per client
  // (IPv4 address, IPv6 /64); an empty one is answered 429 with
  // Retry-After (off unless per_second > 0). rate_limit_clients: the
  // clients each bucket table holds (32 bytes each; past it, the least
  // recently seen are forgotten).
  uint32_t max_in_flight = 0;
  limits::RateLimit rate_limit;
  uint32_t rate_limit_clients = 65536;

  // Built-in endpoints; an empty path turns one off.
  std::string metrics_path = "/metrics";  // Prometheus text format
  std::string health_path = "/healthz";   // 200 while serving, 503 while draining
  // The application's metrics, rendered on metrics_path after the server's
  // own (src/metrics/registry.h); it must outlive the server. Null: the
  // server has a registry of its own (Server::metrics()).
  metrics::Registry* metrics = nullptr;

  // Provided receive buffers per accept thread (a power of two; 0: sized from
  // the capacity) and their size. Shared by all of the thread's connections.
  uint32_t recv_buffer_count = 0;
  uint32_t recv_buffer_size = 2048;
  // A second group of larger buffers for connections reading a large
  // request body: a 16 KiB receive costs what a 2 KiB one does, so a body
  // crosses in an eighth of the completions (0 count: none).
  uint32_t bulk_buffer_count = 128;
  uint32_t bulk_buffer_size = 16384;

  // Ring sizes; 0: sized from the capacity so the CQ does not overflow.
  // Tests set tiny ones to force overflows (nothing may be lost then).
  uint32_t ring_sq_entries = 0;
  uint32_t ring_cq_entries = 0;

  // Static files (routers with Static() mounts; --root), per accept thread:
  // open files kept (0: none: every request opens its file), how long an
  // entry is trusted before a statx checks it again, the memory for small
  // files' contents (files up to file_cache_max_file bytes), and the buffers
  // larger files are read into (0 count: sized from the capacity).
  uint32_t open_file_cache_entries = 1000;
  uint32_t open_file_cache_valid_ms = 1000;
  uint64_t file_cache_bytes = 32u << 20;
  uint32_t file_cache_max_file = 64u << 10;
  uint32_t file_buffer_count = 0;
  uint32_t file_buffer_size = 64u << 10;
  // File bodies at least this large are spliced (file -> pipe -> socket: no
  // copy through user space) in pipes of file_splice_pipe_bytes; 0: never.
  // Smaller ones are answered from the cache's memory or read: below this
  // the io-wq round trips of a splice cost more than the copy (README,
  // Static files, for the measurements).
  uint64_t file_splice_min_bytes = 64u << 10;
  uint32_t file_splice_pipe_bytes = 1u << 20;

  // gzip of compressible responses (--gzip, --gzip-min-bytes,
  // --gzip-level; the rules are in src/http/compress.h). Off by default.
  http::CompressionOptions compression;

  // Access log in Common Log Format; empty: none.
  std::string access_log_path;
  // Every connection starts with a PROXY protocol header (v1 or v2) naming
  // the client (behind HAProxy's send-proxy-v2 or a load balancer); one
  // without a valid header is closed unanswered.
  bool proxy_protocol = false;
  // HTTP/2 (src/http2/): ALPN offers h2 before http/1.1 on TLS listeners,
  // and on a plain listener a connection whose first bytes are the HTTP/2
  // preface speaks it (h2c with prior knowledge), as does one whose first
  // request asks with Upgrade: h2c. false: HTTP/1.1 only.
  bool http2 = true;
  // HTTP/2's own limits (our SETTINGS, src/http2/session.h): streams a
  // client may have open at once, the window each request body (and all of
  // a connection's together) may run ahead of the handler, and the largest
  // frame we take. Header lists are held to limits.max_header_bytes and
  // max_headers, as HTTP/1 heads are.
  uint32_t http2_max_streams = 128;
  uint32_t http2_stream_window = 65535;
  uint32_t http2_connection_window = 1u << 20;
  uint32_t http2_max_frame = 16384;

  // WebSocket routes (src/ws/; a route's ws::Behavior may set its own): a
  // larger message closes its connection with 1009; past this many bytes
  // queued for a client, sends are refused (ws::SendResult) and its
  // receive pauses at half; nothing received for this long closes with
  // 1001; a ping after this long without a frame (0: never).
  uint64_t ws_max_message = 16 * 1024 * 1024;
  uint64_t ws_max_backpressure = 1024 * 1024;
  uint32_t ws_idle_timeout_ms = 120'000;
  uint32_t ws_ping_interval_ms = 30'000;
  // permessage-deflate for routes that leave it to the server
  // (ws::Behavior::compression): off, shared or dedicated (websocket.h).
  ws::Compression ws_deflate = ws::Compression::kOff;

  // HTTPS on the listeners (--tls-cert/--tls-key; src/tls/). Empty
  // certificates: plain HTTP.
  tls::TlsSettings tls;
  // With TLS: a plain-HTTP listener on this port too (health checks, a
  // redirect); -1: none, 0: a free port (tests). Same routes.
  int plain_port = -1;

  // Where the listening sockets come from, and where they go on a restart
  // (src/serving/takeover.h). With none of these, the server binds its
  // listeners, and refuses a port another process listens on.
  // systemd_sockets: use the sockets of systemd's socket activation
  // (LISTEN_FDS) when it passed any; with plain_port, those on that port
  // are the plain-HTTP ones.
  bool systemd_sockets = false;
  // takeover: receive the listening sockets of the server whose control
  // socket is takeover_from ("": the default one of address:port), which
  // then drains; if nobody answers there, start as usual.
  bool takeover = false;
  std::string takeover_from;
  // accept_takeover: listen on control_socket ("": the default one of the
  // listeners' address and port, see takeover::DefaultControlSocket) so
  // that a successor can take the sockets over. With systemd's sockets only
  // if control_socket is named: systemd keeps them across restarts itself.
  bool accept_takeover = false;
  std::string control_socket;

  bool verbose = false;
  bool handle_signals = false;  // SIGINT/SIGTERM stop the server (the binary)
  bool sqpoll = false;          // kernel submission-queue polling thread
  bool pin_cpus = false;        // accept thread i on CPU i
  // Sends of at least this many bytes use IORING_OP_SEND_ZC (the kernel sends
  // from our pages instead of copying them); 0: never. Ignored, and said so
  // in the ready line, where the kernel lacks it. The default is where it
  // won in perf/compare's body-size runs; below it, pinning pages and the
  // second completion cost as much as the copy (README, Performance).
  uint32_t send_zc_min_bytes = 131072;
  // io_uring set-up features, all on (where the kernel has them); off only to
  // measure what each gives (--io-uring-disable).
  bool ring_single_issuer = true;
  bool ring_defer_taskrun = true;
  bool ring_coop_taskrun = true;
  bool ring_registered_fd = true;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_CONFIG_H_
