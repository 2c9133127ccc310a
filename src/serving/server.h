// Server: the server a program embeds. It ties the pieces together (one
// SO_REUSEPORT listener and io_uring event loop per accept thread, the
// worker pool, TLS) and serves a Router until stopped.
//
// Embedding it:
//   router::Router router;
//   router.Fast("GET", "/hello", [](const http::Request&, http::Response& r) {
//     r.set_static_body("hello\n");
//   });
//   serving::Server server(config, std::move(router));
//   server.Run();  // until SIGTERM (config.handle_signals) or Stop()
//
// This header names the C++ standard library, abseil's Status and the
// public types only: the rings, loops, listeners and OpenSSL contexts are
// behind a pointer (ServerCore, server_core.h, internal), so a program
// that embeds the server compiles without liburing's or OpenSSL's headers.
//
// Thread-safety: Run()/Start()/Wait() from one controlling thread; Stop(),
// port() and the stats from any thread.
#ifndef URING_HTTP_SRC_SERVING_SERVER_H_
#define URING_HTTP_SRC_SERVING_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "src/router/router.h"
#include "src/serving/config.h"
#include "src/serving/server_stats.h"

namespace uring_http::serving {

class ServerCore;

class Server {
 public:
  Server(ServerConfig config, router::Router router);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves on the calling thread until stopped; `on_ready` runs once every
  // accept thread is listening. Returns the first start-up error, if any.
  // With config.handle_signals, Run() blocks SIGINT, SIGTERM and SIGHUP in
  // the calling thread (they are read through a signalfd), and the threads
  // started after inherit that. A thread of the program's own started
  // before Run() does not: it must block them itself, or be started from
  // on_ready, else a SIGTERM the kernel hands to it kills the process.
  absl::Status Run(const std::function<void(const Server&)>& on_ready = nullptr);

  // Run() on a background thread; returns once ready (or failed).
  absl::Status Start();
  // Asks every accept thread to drain and stop. Any thread; idempotent.
  void Stop();
  // Runs once when the drain begins (signal or Stop()), before the rings are
  // told. Set before Run().
  void set_on_stop(std::function<void()> on_stop);
  // Joins the thread Start() created.
  void Wait();

  uint16_t port() const;
  // The plain-HTTP port beside TLS (ServerConfig::plain_port), 0 if none.
  uint16_t plain_port() const;
  const ServerConfig& config() const;
  // Every address listened on, in the order configured (once each, not
  // per accept thread's socket). Fixed once ready.
  const std::vector<ListeningAddress>& listening() const;
  // "listening on 0.0.0.0:9000, 2 accept threads, ..." (after ready).
  std::string ReadyLine() const;
  ServerStats Stats() const;
  // Every counter in the Prometheus text exposition format (GET /metrics),
  // the application's (metrics()) last.
  std::string RenderMetrics() const;
  // The application's metrics: ServerConfig::metrics, or the server's own
  // registry when that is null. Any thread, any time.
  metrics::Registry& metrics() const;
  bool draining() const;
  // The drain began because a successor took the listening sockets over
  // (it then also reports to systemd and owns the pid file).
  bool handed_over() const;
  // Loads the TLS certificates and keys again (SIGHUP does this, on a
  // thread of its own named uring-reload): new connections get the new
  // ones, connections already open keep theirs. On an error the old ones
  // stay. Any thread, after Run() started.
  absl::Status ReloadTls();

 private:
  std::unique_ptr<ServerCore> core_;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_SERVER_H_
