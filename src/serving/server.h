// Server: ties the pieces together. It binds one SO_REUSEPORT listener per
// accept thread for each TCP address it listens on, and one socket for
// each Unix-domain one (or takes systemd's sockets, or a running server's:
// see ServerConfig::takeover), starts the worker pool, runs one EventLoop
// per accept thread (the calling thread is one of them), plus a small one
// for an admin listener, and stops them all on request, or when a
// successor has taken its sockets over.
//
// Embedding it:
//   router::Router router;
//   router.Fast("GET", "/hello", [](const http::Request&, http::Response& r) {
//     r.set_static_body("hello\n");
//   });
//   serving::Server server(config, std::move(router));
//   server.Run();  // until SIGTERM (config.handle_signals) or Stop()
//
// Thread-safety: Run()/Start()/Wait() from one controlling thread; Stop(),
// port() and the stats from any thread.
#ifndef URING_HTTP_SRC_SERVING_SERVER_H_
#define URING_HTTP_SRC_SERVING_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "src/io/listener.h"
#include "src/router/router.h"
#include "src/serving/config.h"
#include "src/serving/event_loop.h"
#include "src/serving/takeover.h"
#include "src/tls/tls_context.h"
#include "src/worker/worker_pool.h"

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
  uint64_t files_served = 0, file_opens = 0, file_cache_hits = 0, file_cache_revalidations = 0;
  uint64_t file_cache_entries = 0, file_cache_content_bytes = 0, file_splices = 0;
  uint64_t file_truncated = 0;
  uint64_t proxy_header_errors = 0;
  // TLS (src/tls/tls_stats.h): handshakes, resumptions, versions, failures.
  uint64_t tls_handshakes = 0, tls_resumed = 0, tls13 = 0, tls12 = 0, tls_offloaded = 0;
  uint64_t tls_failed_timeout = 0, tls_failed_plain_http = 0, tls_failed_protocol = 0;
  uint64_t tls_failed_peer_closed = 0;
  uint64_t tls_steps_reclaimed = 0, tls_steps_skipped = 0;
  uint64_t tls_reloads = 0, tls_reload_failures = 0;
  worker::WorkerPoolStats workers;
};

class Server {
 public:
  Server(ServerConfig config, router::Router router);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves on the calling thread until stopped; `on_ready` runs once every
  // accept thread is listening. Returns the first start-up error, if any.
  absl::Status Run(const std::function<void(const Server&)>& on_ready = nullptr);

  // Run() on a background thread; returns once ready (or failed).
  absl::Status Start();
  // Asks every accept thread to drain and stop. Any thread; idempotent.
  void Stop();
  // Runs once when the drain begins (signal or Stop()), before the rings are
  // told. Set before Run().
  void set_on_stop(std::function<void()> on_stop) { on_stop_ = std::move(on_stop); }
  // Joins the thread Start() created.
  void Wait();

  uint16_t port() const { return port_.load(std::memory_order_acquire); }
  // The plain-HTTP port beside TLS (ServerConfig::plain_port), 0 if none.
  uint16_t plain_port() const { return plain_port_.load(std::memory_order_acquire); }
  const ServerConfig& config() const { return config_; }
  // Every address listened on, in the order configured (once each, not
  // per accept thread's socket). Fixed once ready.
  const std::vector<ListeningAddress>& listening() const { return listening_; }
  // "listening on 0.0.0.0:9000, 2 accept threads, ..." (after ready).
  std::string ReadyLine() const;
  ServerStats Stats() const;
  // Every counter in the Prometheus text exposition format (GET /metrics).
  std::string RenderMetrics() const;
  bool draining() const { return stop_requested_.load(std::memory_order_relaxed); }
  // The drain began because a successor took the listening sockets over
  // (it then also reports to systemd and owns the pid file).
  bool handed_over() const { return handed_over_.load(std::memory_order_acquire); }
  // Loads the TLS certificates and keys again (SIGHUP does this, on a
  // thread of its own named uring-reload): new connections get the new
  // ones, connections already open keep theirs. On an error the old ones
  // stay. Any thread, after Run() started.
  absl::Status ReloadTls();

 private:
  void SendStop();
  void OnSignal(int signo);
  // The reload thread (SIGHUP): waits for OnSignal, reloads, logs.
  void ReloadMain();
  void StopReloadThread();
  absl::Status AddBuiltinRoutes();
  // listeners_ and plain_listeners_ from systemd, a predecessor (then
  // *successor is the handshake to finish once serving) or bind().
  absl::Status SetUpListeners(std::optional<takeover::Successor>* successor);
  // An address to listen on, with its role (takeover::kRole*) and the
  // configured entry it came from (its addresses share a port 0's pick).
  struct Wanted {
    io::SocketAddress address;
    char role = takeover::kRoleMain;
    size_t entry = 0;
  };
  absl::StatusOr<std::vector<Wanted>> WantedAddresses() const;
  absl::Status TakeOver(takeover::Successor& successor, const std::vector<Wanted>& wanted,
                        std::vector<bool>* have);
  // Binds what `wanted` lists and `have` does not (one socket per accept
  // thread; one for a Unix socket), refusing addresses another process
  // listens on.
  absl::Status BindListeners(const std::vector<Wanted>& wanted, const std::vector<bool>& have);
  std::vector<io::Listener>& ListenersFor(char role);
  // The loop's share of `listeners` (see SetUpListeners).
  std::vector<int> ListenersOf(const std::vector<io::Listener>& listeners, int loop) const;
  void StartControlSocket();
  // The control socket's hooks (on its thread).
  absl::StatusOr<takeover::ControlServer::Offer> OfferListeners();
  void HandOver(int64_t pid);
  void Withdrawn();

  const ServerConfig config_;
  router::Router router_;  // fixed once Run() starts the threads
  absl::Status builtin_routes_;
  std::vector<io::Listener> listeners_;
  std::vector<io::Listener> plain_listeners_;
  std::vector<io::Listener> admin_listeners_;
  std::vector<ListeningAddress> listening_;
  // With an admin listener: the built-in endpoints' routes, served by a
  // ring of their own (admin_loop_) on admin_listeners_ only.
  router::Router admin_router_;
  ServerConfig admin_config_;
  std::unique_ptr<EventLoop> admin_loop_;
  // Where the listeners came from, for the ready line: "bound", "from
  // systemd", "inherited from PID n".
  std::string listeners_origin_ = "bound";
  // The listeners' addresses, for the ready line (fixed before ready).
  std::string listen_address_;
  std::string plain_address_;
  // The loops leave the listeners listening when they stop (Acceptor::Stop):
  // always with systemd's sockets (keep_default_), and while a successor
  // holds them too, from the offer on.
  bool keep_default_ = false;
  std::atomic<bool> keep_listeners_{false};
  std::atomic<bool> handed_over_{false};
  std::unique_ptr<takeover::ControlServer> control_;
  std::atomic<uint16_t> plain_port_{0};
  std::unique_ptr<worker::WorkerPool> workers_;
  std::unique_ptr<worker::WorkerPool> tls_workers_;  // handshake steps
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_requested_{false};
  std::thread background_;
  std::function<void()> on_stop_;
  int signal_fd_ = -1;
  // TLS: the ticket keys (kept across reloads) and the current context.
  std::shared_ptr<tls::TicketKeys> ticket_keys_;
  tls::TlsContextSource tls_source_;
  std::mutex reload_mu_;
  // SIGHUP's reloads run on a thread of their own ("uring-reload"): reading
  // files and building contexts would hold up ring 0, which reads the
  // signals, for as long as they take (a file on a slow or hung mount: for
  // ever).
  std::thread reload_thread_;
  std::mutex reload_wake_mu_;
  std::condition_variable reload_wake_;
  bool reload_pending_ = false;  // guarded by reload_wake_mu_
  bool reload_stop_ = false;     // guarded by reload_wake_mu_
  std::atomic<uint64_t> tls_reloads_{0};
  std::atomic<uint64_t> tls_reload_failures_{0};
  int access_log_fd_ = -1;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_SERVER_H_
