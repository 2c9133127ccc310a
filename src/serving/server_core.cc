#include "src/serving/server_core.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/io/msg_ring_sender.h"
#include "src/worker/ring_post.h"

namespace uring_http::serving {

namespace {
// --http2 reaches the TLS context too: ALPN offers h2.
ServerConfig WithAlpn(ServerConfig config) {
  config.tls.http2 = config.http2;
  return config;
}
}  // namespace

ServerCore::ServerCore(ServerConfig config, router::Router router)
    : config_(WithAlpn(std::move(config))),
      own_metrics_(config_.metrics == nullptr ? std::make_unique<metrics::Registry>() : nullptr),
      metrics_(config_.metrics != nullptr ? config_.metrics : own_metrics_.get()),
      router_(std::move(router)) {
  builtin_routes_ = AddBuiltinRoutes();
}

absl::Status ServerCore::AddBuiltinRoutes() {
  // With an admin listener they are its alone (not on the public port).
  const bool admin = std::any_of(config_.listen.begin(), config_.listen.end(),
                                 [](const ListenAddress& l) { return l.admin; });
  router::Router& router = admin ? admin_router_ : router_;
  if (!config_.metrics_path.empty()) {
    absl::Status s = router.Fast("GET", config_.metrics_path,
                                  [this](const http::Request&, http::Response& response) {
                                    response.set_content_type(
                                        "text/plain; version=0.0.4; charset=utf-8");
                                    response.set_body(RenderMetrics());
                                  });
    if (!s.ok()) return s;
  }
  if (!config_.health_path.empty()) {
    absl::Status s = router.Fast("GET", config_.health_path,
                                  [this](const http::Request&, http::Response& response) {
                                    response.set_content_type("text/plain");
                                    if (draining()) {
                                      response.set_status(503);
                                      response.set_static_body("draining\n");
                                    } else {
                                      response.set_static_body("ok\n");
                                    }
                                  });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void ServerCore::MakeLimits() {
  std::vector<limits::RouteLimitConfig> routes;
  for (const router::Route* r : router_.Routes()) {
    limits::RouteLimitConfig c;
    c.max_in_flight = r->options.max_in_flight;
    c.rate_per_client = r->options.rate_per_client;
    // A scrape or a health check gets through a flood.
    const bool builtin = r->method == "GET" && r->mount == nullptr &&
                         ((!config_.metrics_path.empty() && r->path == config_.metrics_path) ||
                          (!config_.health_path.empty() && r->path == config_.health_path));
    c.server_wide = !builtin;
    routes.push_back(c);
  }
  auto limits = std::make_unique<limits::RequestLimits>(
      std::move(routes), config_.max_in_flight, config_.rate_limit,
      std::max<uint32_t>(config_.rate_limit_clients, 1));
  if (!limits->none()) limits_ = std::move(limits);
}

ServerCore::~ServerCore() {
  Stop();
  Wait();
  StopReloadThread();
  if (signal_fd_ >= 0) close(signal_fd_);
  if (access_log_fd_ >= 0) close(access_log_fd_);
}

absl::Status ServerCore::Run(const std::function<void(const ServerCore&)>& on_ready) {
  if (config_.accept_threads < 1) return absl::InvalidArgumentError("accept_threads < 1");
  if (!builtin_routes_.ok()) return builtin_routes_;
  // A registration the program did not check (a duplicate route) must not
  // be lost silently.
  if (absl::Status s = router_.registration_error(); !s.ok()) return s;
  // A metric the app could not register would be missing from /metrics
  // without a word: refused here, named.
  if (absl::Status s = metrics_->status(); !s.ok()) return s;
  // A peer that resets mid-send must not kill the process (sends also pass
  // MSG_NOSIGNAL; this covers everything else).
  signal(SIGPIPE, SIG_IGN);

  if (config_.handle_signals) {
    // Blocked before any thread starts, so every thread inherits the mask
    // and the signals are read only through the signalfd on loop 0's ring.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);  // reloads TLS certificates
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC);
    if (signal_fd_ < 0) return absl::InternalError("signalfd failed");
  }

  if (!config_.access_log_path.empty()) {
    access_log_fd_ = open(config_.access_log_path.c_str(),
                          O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (access_log_fd_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot open --access-log ", config_.access_log_path, ": ", strerror(errno)));
    }
  }

  if (config_.tls.enabled()) {
    ticket_keys_ = std::make_shared<tls::TicketKeys>(config_.tls.ticket_key_rotation_s);
    auto context = tls::TlsContext::Create(config_.tls, ticket_keys_);
    if (!context.ok()) return context.status();
    tls_source_.Set(*std::move(context));
  }

  // Listeners first, on this thread.
  std::optional<takeover::Successor> successor;
  if (absl::Status s = SetUpListeners(&successor); !s.ok()) {
    if (successor.has_value()) successor->Abort(std::string(s.message()));
    return s;
  }

  if (config_.workers > 0) {
    // Each connection has at most one task in flight, so the queue never
    // needs more cells than there are connection slots in all.
    const uint64_t slots = uint64_t{config_.accept_capacity} * config_.accept_threads;
    const size_t queue_capacity = std::clamp<uint64_t>(slots, 1024, 1 << 16);
    workers_ = std::make_unique<worker::WorkerPool>(config_.workers, queue_capacity,
                                                   config_.limits, config_.workers_batch_sched);
    workers_->set_compression(config_.compression);
    io::MsgRingSender::RinglessSupported();  // probe once, before the workers race to
    workers_->Start();
  }

  if (config_.tls.enabled() && config_.tls.offload != tls::TlsSettings::Offload::kOff) {
    const int n = config_.tls.workers < 0 ? config_.accept_threads : config_.tls.workers;
    if (n > 0) {
      // At most one handshake step in flight per connection.
      const uint64_t slots = uint64_t{config_.accept_capacity} * config_.accept_threads;
      tls_workers_ = std::make_unique<worker::WorkerPool>(
          static_cast<size_t>(n), std::clamp<uint64_t>(slots, 1024, 1 << 16), config_.limits,
          /*batch_sched=*/true, config_.tls.workers_nice, "uring-tls");
      tls_workers_->Start();
    }
  }

  MakeLimits();
  for (int i = 0; i < config_.accept_threads; ++i) {
    loops_.push_back(std::make_unique<EventLoop>(
        i, config_, router_, workers_.get(), ListenersOf(listeners_, i),
        i == 0 ? signal_fd_ : -1, [this](int signo) { OnSignal(signo); }, access_log_fd_,
        config_.tls.enabled() ? &tls_source_ : nullptr, ListenersOf(plain_listeners_, i),
        tls_workers_.get(), &keep_listeners_));
    loops_.back()->set_limits(limits_.get());
  }
  std::vector<EventLoop*> rings;
  for (auto& loop : loops_) rings.push_back(loop.get());
  if (!admin_listeners_.empty()) {
    // A ring of its own, small: a scraper and a health checker, never the
    // public load, and none of its connection slots taken from it.
    admin_config_ = config_;
    admin_config_.accept_threads = 1;
    admin_config_.accept_capacity = std::min<uint32_t>(config_.accept_capacity, 256);
    admin_config_.pin_cpus = false;
    admin_config_.proxy_protocol = false;
    std::vector<int> fds;
    for (const io::Listener& l : admin_listeners_) fds.push_back(l.fd());
    admin_loop_ = std::make_unique<EventLoop>(
        config_.accept_threads, admin_config_, admin_router_, /*workers=*/nullptr,
        std::move(fds), /*signal_fd=*/-1, [](int) {}, /*access_log_fd=*/-1, /*tls=*/nullptr,
        std::vector<int>{}, /*tls_workers=*/nullptr, &keep_listeners_);
    rings.push_back(admin_loop_.get());
  }

  if (config_.tls.enabled() && config_.handle_signals) {
    // Started here, after the last early return, and stopped below.
    reload_thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "uring-reload");
      ReloadMain();
    });
  }

  // Each ring is created on the thread that owns it (SINGLE_ISSUER).
  std::vector<std::promise<absl::Status>> inits(rings.size());
  std::vector<std::future<absl::Status>> init_results;
  for (auto& p : inits) init_results.push_back(p.get_future());
  std::promise<bool> go_promise;
  std::shared_future<bool> go = go_promise.get_future().share();
  std::vector<std::thread> threads;
  for (size_t i = 1; i < rings.size(); ++i) {
    threads.emplace_back([this, i, &inits, &rings, go] {
      pthread_setname_np(pthread_self(), i < loops_.size() ? "uring-accept" : "uring-admin");
      absl::Status s = rings[i]->Init();
      const bool ok = s.ok();
      inits[i].set_value(std::move(s));
      if (ok && go.get()) rings[i]->Run();
    });
  }
  inits[0].set_value(loops_[0]->Init());

  absl::Status first_error;
  for (auto& f : init_results) {
    absl::Status s = f.get();
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  go_promise.set_value(first_error.ok());
  if (successor.has_value()) {
    if (!first_error.ok()) {
      successor->Abort(std::string(first_error.message()));
    } else {
      // Every other loop accepts already; loop 0 does once this thread runs
      // it, and connections wait in the shared queues meanwhile: nothing
      // is lost while the old server is told to drain.
      absl::Status s = successor->Complete();
      if (!s.ok()) {
        std::fprintf(stderr,
                     "uring-http: --takeover: PID %lld did not confirm that it drains (%s); "
                     "serving on its sockets all the same\n",
                     static_cast<long long>(successor->pid()), std::string(s.message()).c_str());
      }
      keep_listeners_.store(keep_default_);  // ours alone from now on
    }
    successor.reset();
  }
  if (first_error.ok()) {
    if (config_.accept_takeover) StartControlSocket();
    ready_.store(true, std::memory_order_release);
    if (on_ready) on_ready(*this);
    if (stop_requested_.load(std::memory_order_acquire)) {
      if (control_ != nullptr) control_->Shutdown();
      SendStop();
    }
    loops_[0]->Run();
  }
  for (std::thread& t : threads) t.join();
  StopReloadThread();
  // Before the listeners go: a handshake under way reads them.
  if (control_ != nullptr) control_->Close();
  for (const auto& loop : loops_) abandoned_ = abandoned_ || loop->abandoned();
  if (!abandoned_) {
    // Every connection is closed, so no task is queued any more.
    if (workers_ != nullptr) workers_->Stop();
    if (tls_workers_ != nullptr) tls_workers_->Stop();
  } else {
    // A handler has not returned by --shutdown-timeout: its worker is let
    // go (the others leave at once), and everything it may touch stays
    // allocated (Server does not destroy an abandoned core).
    const auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    size_t left = 0;
    if (workers_ != nullptr) left += workers_->Stop(soon);
    if (tls_workers_ != nullptr) left += tls_workers_->Stop(soon);
    std::fprintf(stderr, "uring-http: %zu worker thread(s) abandoned in a handler that did not return\n",
                 left);
  }
  // Sockets a successor (or systemd) holds too lose this descriptor only.
  const bool keep = keep_listeners_.load();
  for (io::Listener& l : listeners_) keep ? l.CloseDescriptor() : l.Close();
  for (io::Listener& l : plain_listeners_) keep ? l.CloseDescriptor() : l.Close();
  for (io::Listener& l : admin_listeners_) keep ? l.CloseDescriptor() : l.Close();
  return first_error;
}

void ServerCore::StartControlSocket() {
  if (config_.control_socket.empty() && keep_default_) return;  // systemd's sockets
  const std::string name = config_.control_socket.empty()
                               ? takeover::DefaultControlSocket(listen_address_, port())
                               : config_.control_socket;
  takeover::ControlServer::Hooks hooks;
  hooks.offer = [this] { return OfferListeners(); };
  hooks.handed_over = [this](int64_t pid) { HandOver(pid); };
  hooks.withdrawn = [this] { Withdrawn(); };
  auto control = takeover::ControlServer::Listen(name, std::move(hooks));
  if (!control.ok()) {
    std::fprintf(stderr, "uring-http: no control socket (%s): --takeover cannot replace this "
                 "server\n", std::string(control.status().message()).c_str());
    return;
  }
  control_ = *std::move(control);
  control_->Serve();  // its hooks may use control_ from now on
}

absl::StatusOr<takeover::ControlServer::Offer> ServerCore::OfferListeners() {
  // Kept before the check: a stop that comes after the check reads it and
  // leaves the sockets listening for the successor (both are seq_cst).
  keep_listeners_.store(true);
  if (stop_requested_.load()) {
    keep_listeners_.store(keep_default_);
    return absl::FailedPreconditionError("it is draining already");
  }
  takeover::ControlServer::Offer offer;
  for (const io::Listener& l : listeners_) {
    offer.roles.push_back(takeover::kRoleMain);
    offer.fds.push_back(l.fd());
  }
  for (const io::Listener& l : plain_listeners_) {
    offer.roles.push_back(takeover::kRolePlain);
    offer.fds.push_back(l.fd());
  }
  for (const io::Listener& l : admin_listeners_) {
    offer.roles.push_back(takeover::kRoleAdmin);
    offer.fds.push_back(l.fd());
  }
  return offer;
}

void ServerCore::HandOver(int64_t pid) {
  std::fprintf(stderr, "uring-http: PID %lld took the listening sockets over: draining\n",
               static_cast<long long>(pid));
  handed_over_.store(true, std::memory_order_release);
  Stop();
}

void ServerCore::Withdrawn() {
  // A stop that already read "keep" keeps the sockets open until exit;
  // harmless, the successor is gone.
  if (!stop_requested_.load()) keep_listeners_.store(keep_default_);
}

absl::Status ServerCore::Start() {
  // Shared with the background thread, which reports again when Run()
  // returns, long after Start() has.
  struct Report {
    std::promise<absl::Status> promise;
    std::atomic<bool> done{false};
    void Set(absl::Status s) {
      if (!done.exchange(true)) promise.set_value(std::move(s));
    }
  };
  auto report = std::make_shared<Report>();
  std::future<absl::Status> result = report->promise.get_future();
  background_ = std::thread([this, report] {
    absl::Status s = Run([&report](const ServerCore&) { report->Set(absl::OkStatus()); });
    report->Set(s.ok() ? absl::InternalError("server stopped before it was ready") : s);
  });
  absl::Status s = result.get();
  if (!s.ok()) Wait();
  return s;
}

void ServerCore::Stop() {
  if (stop_requested_.exchange(true)) return;
  if (on_stop_) on_stop_();
  if (ready_.load(std::memory_order_acquire)) {
    // A draining server hands nothing over: its control socket goes first.
    if (control_ != nullptr) control_->Shutdown();
    SendStop();
  }
}

void ServerCore::OnSignal(int signo) {
  if (signo != SIGHUP) {
    Stop();
    return;
  }
  if (!config_.tls.enabled()) return;
  // On ring 0's thread: the reload thread does the work. Signals that come
  // while it reloads give one more reload after it.
  {
    std::lock_guard<std::mutex> lock(reload_wake_mu_);
    reload_pending_ = true;
  }
  reload_wake_.notify_one();
}

void ServerCore::ReloadMain() {
  std::unique_lock<std::mutex> lock(reload_wake_mu_);
  for (;;) {
    reload_wake_.wait(lock, [this] { return reload_pending_ || reload_stop_; });
    if (reload_stop_) return;
    reload_pending_ = false;
    lock.unlock();
    absl::Status s = ReloadTls();
    if (s.ok()) {
      std::fprintf(stderr, "uring-http: TLS reloaded: %s\n",
                   tls_source_.Get()->Describe().c_str());
    } else {
      std::fprintf(stderr, "uring-http: TLS reload failed, the old certificates stay: %s\n",
                   std::string(s.message()).c_str());
    }
    lock.lock();
  }
}

void ServerCore::StopReloadThread() {
  if (!reload_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(reload_wake_mu_);
    reload_stop_ = true;
  }
  reload_wake_.notify_one();
  // A reload under way finishes first (it takes milliseconds unless a
  // file hangs).
  reload_thread_.join();
}

absl::Status ServerCore::ReloadTls() {
  if (!config_.tls.enabled()) return absl::FailedPreconditionError("TLS is not configured");
  std::lock_guard<std::mutex> lock(reload_mu_);
  // Built on this thread (the reload thread for SIGHUP), off every ring: a
  // loop only swaps a pointer.
  auto context = tls::TlsContext::Create(config_.tls, ticket_keys_);
  if (!context.ok()) {
    tls_reload_failures_.fetch_add(1, std::memory_order_relaxed);
    return context.status();
  }
  tls_source_.Set(*std::move(context));
  tls_reloads_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

void ServerCore::SendStop() {
  // Like a worker's result, the stop must not be lost to a MSG_RING the
  // kernel refuses: the mailbox carries it then (within a tick).
  for (auto& loop : loops_) {
    worker::PostToRing(worker::RingAddress{loop->ring_fd(), loop->mailbox()},
                       PackUserData(Op::kStop, 0, 0));
  }
  if (admin_loop_ != nullptr) {
    worker::PostToRing(worker::RingAddress{admin_loop_->ring_fd(), admin_loop_->mailbox()},
                       PackUserData(Op::kStop, 0, 0));
  }
}

void ServerCore::Wait() {
  if (background_.joinable()) background_.join();
}

std::string ServerCore::ReadyLine() const {
  const EventLoop& first = *loops_[0];
  // Each address; with TLS the plain-HTTP ones are marked (those of
  // --plain-port are named at the end, as they always were).
  std::vector<std::string> addresses;
  for (const ListeningAddress& a : listening_) {
    if (!a.admin && !a.tls && config_.tls.enabled() && config_.listen.empty()) continue;
    addresses.push_back(absl::StrCat(a.text, a.admin                             ? " (admin)"
                                             : !a.tls && config_.tls.enabled() ? " (plain HTTP)"
                                                                               : ""));
  }
  return absl::StrCat(
      "uring-http ready: listening on ", absl::StrJoin(addresses, ", "), ", ",
      listeners_.size() + plain_listeners_.size() + admin_listeners_.size(), " socket(s) ",
      listeners_origin_, ", ", config_.accept_threads,
      " accept thread(s), ", config_.workers, " worker(s), ",
      first.capacity(), " connections per thread (fixed-file table ", first.file_table_size(),
      router_.mount_count() > 0
          ? " = min(accept-capacity + 64 reserve + open-file cache + 1024, hard RLIMIT_NOFILE)"
          : " = min(accept-capacity + 64 reserve, hard RLIMIT_NOFILE)",
      "), io_uring: ", first.Features(),
      !config_.http2           ? ""
      : config_.tls.enabled() ? ", HTTP/2: h2 (ALPN), h2c on plain HTTP (prior knowledge, Upgrade)"
                              : ", HTTP/2: h2c (prior knowledge, Upgrade)",
      config_.tls.enabled() ? absl::StrCat(", TLS: ", tls_source_.Get()->Describe()) : "",
      config_.listen.empty() && plain_port() != 0
          ? absl::StrCat(", plain HTTP on ", plain_address_)
          : "");
}

ServerStats ServerCore::Stats() const {
  ServerStats s;
  for (const auto& loop : loops_) {
    const LoopStats& l = loop->stats();
    const exchange::ConnectionStats& c = l.conn;
    s.accepted += l.accepted.Get();
    s.refused += l.refused.Get();
    s.active += l.active.Get();
    s.responses_2xx += l.responses_2xx.Get();
    s.responses_4xx += l.responses_4xx.Get();
    s.responses_5xx += l.responses_5xx.Get();
    s.results_dropped += l.results_dropped.Get();
    s.recv_nobufs += l.recv_nobufs.Get();
    s.accept_errors += l.accept_errors.Get();
    s.chunk_heap_fallbacks += l.chunk_heap_fallbacks.Get();
    s.cq_overflows += l.cq_overflows.Get();
    s.mailbox_messages += l.mailbox_messages.Get();
    s.async_started += l.async.started.Get();
    s.async_active += l.async.active.Get();
    s.async_cancelled += l.async.cancelled.Get();
    s.async_deadlines += l.async.deadlines.Get();
    s.async_refused += l.async.refused.Get();
    s.async_worker_calls += l.async.worker_calls.Get();
    s.async_frame_slabs += l.async.frame_slabs.Get();
    s.requests += c.requests.Get();
    s.bad_requests += c.bad_requests.Get();
    s.slow_dispatched += c.slow_dispatched.Get();
    s.slow_completed += c.slow_completed.Get();
    s.slow_rejected += c.slow_rejected.Get();
    s.timeouts += c.timeouts.Get();
    s.sends_zc += c.sends_zc.Get();
    s.sends_zc_copied += c.sends_zc_copied.Get();
    s.sends_zc_refused += c.sends_zc_refused.Get();
    s.chunked_bodies += c.chunked_bodies.Get();
    s.streamed_requests += c.streamed_requests.Get();
    s.streamed_responses += c.streamed_responses.Get();
    s.aborted_streams += c.aborted_streams.Get();
    s.lingering_closes += c.lingering_closes.Get();
    s.files_served += c.files_served.Get();
    s.file_opens += c.file_opens.Get();
    s.file_splices += c.file_splices.Get();
    s.file_truncated += c.file_truncated.Get();
    s.proxy_header_errors += c.proxy_header_errors.Get();
    const tls::TlsStats& t = l.tls;
    s.tls_handshakes += t.handshakes.Get();
    s.tls_resumed += t.resumed.Get();
    s.tls13 += t.tls13.Get();
    s.tls12 += t.tls12.Get();
    s.tls_offloaded += t.offloaded.Get();
    s.tls_steps_reclaimed += t.steps_reclaimed.Get();
    s.tls_failed_timeout += t.failed_timeout.Get();
    s.tls_failed_plain_http += t.failed_plain_http.Get();
    s.tls_failed_protocol += t.failed_protocol.Get();
    s.tls_failed_peer_closed += t.failed_peer_closed.Get();
    s.tls_failed_client_cert += t.failed_client_cert.Get();
    s.tls_client_certs_verified += t.client_certs_verified.Get();
    s.tls_client_cert_missing += t.client_cert_missing.Get();
    s.tls_client_cert_untrusted += t.client_cert_untrusted.Get();
    s.tls_client_cert_expired += t.client_cert_expired.Get();
    s.tls_client_cert_invalid += t.client_cert_invalid.Get();
    s.file_cache_hits += l.file_cache_hits.Get();
    s.file_cache_revalidations += l.file_cache_revalidations.Get();
    s.file_cache_entries += l.file_cache_entries.Get();
    s.file_cache_content_bytes += l.file_cache_content_bytes.Get();
  }
  s.tls_reloads = tls_reloads_.load(std::memory_order_relaxed);
  s.tls_reload_failures = tls_reload_failures_.load(std::memory_order_relaxed);
  if (workers_ != nullptr) s.workers = workers_->Stats();
  if (tls_workers_ != nullptr) s.tls_steps_skipped = tls_workers_->Stats().jobs_skipped;
  return s;
}

}  // namespace uring_http::serving
