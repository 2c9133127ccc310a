// ServerCore: what Server (server.h, the public facade) runs. It binds one
// SO_REUSEPORT listener per accept thread for each TCP address it listens
// on, and one socket for each Unix-domain one (or takes systemd's sockets,
// or a running server's: see ServerConfig::takeover), starts the worker
// pool, runs one EventLoop per accept thread (the calling thread is one of
// them), plus a small one for an admin listener, and stops them all on
// request, or when a successor has taken its sockets over.
//
// Internal: it names the ring, the loops, the listeners and OpenSSL's
// contexts, which a program embedding the server never sees (server.h
// keeps a pointer to one of these and includes none of them).
//
// Thread-safety: Run()/Start()/Wait() from one controlling thread; Stop(),
// port() and the stats from any thread.
#ifndef URING_HTTP_SRC_SERVING_SERVER_CORE_H_
#define URING_HTTP_SRC_SERVING_SERVER_CORE_H_

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
#include "src/limits/request_limits.h"
#include "src/router/router.h"
#include "src/serving/config.h"
#include "src/serving/event_loop.h"
#include "src/serving/server_stats.h"
#include "src/serving/takeover.h"
#include "src/tls/tls_context.h"
#include "src/worker/worker_pool.h"

namespace uring_http::serving {


class ServerCore {
 public:
  ServerCore(ServerConfig config, router::Router router);
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  // Serves on the calling thread until stopped; `on_ready` runs once every
  // accept thread is listening. Returns the first start-up error, if any.
  absl::Status Run(const std::function<void(const ServerCore&)>& on_ready = nullptr);

  // Run() on a background thread; returns once ready (or failed).
  absl::Status Start();
  // Asks every accept thread to drain and stop. Any thread; idempotent.
  void Stop();
  // Runs once when the drain begins (signal or Stop()), before the rings are
  // told. Set before Run().
  void set_on_stop(std::function<void()> on_stop) { on_stop_ = std::move(on_stop); }
  // Joins the thread Start() created.
  void Wait();
  // Run() returned leaving a handler that had not returned by
  // --shutdown-timeout: its thread still runs on this core's memory, so
  // the core must not be destroyed (Server leaks it).
  bool abandoned() const { return abandoned_; }

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
  // Every counter in the Prometheus text exposition format (GET /metrics),
  // the application's (metrics()) last.
  std::string RenderMetrics() const;
  // The application's metrics: ServerConfig::metrics, or the server's own
  // registry when that is null. Any thread, any time.
  metrics::Registry& metrics() const { return *metrics_; }
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
  // limits_ from the configuration and the routes' options (null when
  // nothing is limited).
  void MakeLimits();
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
  // ServerConfig::metrics, or own_metrics_.
  std::unique_ptr<metrics::Registry> own_metrics_;
  metrics::Registry* metrics_ = nullptr;
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
  std::unique_ptr<limits::RequestLimits> limits_;  // fixed once Run() starts the loops
  std::unique_ptr<worker::WorkerPool> workers_;
  std::unique_ptr<worker::WorkerPool> tls_workers_;  // handshake steps
  std::vector<std::unique_ptr<EventLoop>> loops_;
  // Run() left handlers that had not returned by --shutdown-timeout: this
  // core must never be destroyed (see abandoned()).
  bool abandoned_ = false;
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

#endif  // URING_HTTP_SRC_SERVING_SERVER_CORE_H_
