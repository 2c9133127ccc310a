// EventLoop's start-up and end: the ring, the arena and the pools carved
// from it (provided receive buffers, output chunks, file buffers), the
// slots, the timer wheel, the accepts armed on the listeners; what the loop
// reports it runs on (Features); and, at the end, what must go in order.
// The loop itself (Run, the completions' dispatch, the tick) is
// event_loop.cc's.
#include "src/serving/event_loop.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/error_log.h"
#include "src/io/kernel_features.h"
#include "src/io/msg_ring_sender.h"
#include "src/io/socket_ops.h"
#include "src/io/uring_compat.h"
#include "src/serving/loop_internal.h"
#include "src/serving/loop_plan.h"

namespace uring_http::serving {
namespace {

constexpr uint32_t kTimerBuckets = 1024;  // 102 s per lap

}  // namespace

EventLoop::EventLoop(int index, const ServerConfig& config, const router::Router& router,
                     worker::WorkerPool* workers, std::vector<int> listen_fds, int signal_fd,
                     std::function<void(int)> on_signal, int access_log_fd,
                     const tls::TlsContextSource* tls, std::vector<int> plain_listen_fds,
                     worker::WorkerPool* tls_workers, const std::atomic<bool>* keep_listeners)
    : index_(index),
      config_(config),
      router_(router),
      workers_(workers),
      signal_fd_(signal_fd),
      on_signal_(std::move(on_signal)),
      listen_fds_(std::move(listen_fds)),
      plain_listen_fds_(std::move(plain_listen_fds)),
      tls_workers_(tls_workers),
      keep_listeners_(keep_listeners),
      tls_source_(tls),
      access_log_fd_(access_log_fd) {}

// Slots (and their connections, which give their chunks back to chunks_) go
// before the pool they came from.
EventLoop::~EventLoop() {
  if (abandoned_) {
    // A handler still runs on memory of ours (its task, its pipes, its
    // exchange): none of it is freed. (Server does not destroy an
    // abandoned loop; this is for any other owner.)
    (void)async_.release();
    (void)slots_.release();
    (void)streams_.release();
    (void)mailbox_.release();
    (void)tls_.release();
    arena_.Leak();
  }
  // WebSocket senders outlive their sockets: none posts to this loop's
  // inbox (or its mailbox) once the loop is gone.
  for (uint32_t i = 0; slots_ != nullptr && i < capacity_; ++i) {
    if (slots_[i].ws != nullptr) slots_[i].ws->ShutSender();
  }
  // Offloaded work still queued is dropped; work a worker runs is waited
  // for (it may send through a sender, which is shut: kClosed).
  for (const auto& job : ws_jobs_) {
    if (!job->busy || job->Abandon()) continue;
    while (job->done.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  // Coroutines first: their frames may view their connections' tasks.
  async_.reset();
  slots_.reset();
  tls_.reset();
  streams_.reset();
  // The ring (and its file table) goes too: nothing left to close.
  if (files_ != nullptr) files_->Shutdown();
}

uint64_t EventLoop::NowTick() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000) /
         kTickMs;
}

absl::Status EventLoop::Init() {
  // Every Response made on this thread (a FAST handler's, an error page's,
  // a SLOW task's, built here before it goes to a worker) takes the limit.
  http::Response::SetThreadMaxHeaderBytes(
      std::max(config_.max_response_header_bytes, http::Response::kInlineHeaderBytes));
  if (config_.tls.enabled() && config_.tls.ring_slice_us > 0) SetRingSlice();
  if (config_.pin_cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(index_ % CPU_SETSIZE, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }

  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  const bool files = router_.mount_count() > 0;
  auto planned = PlanLoop(config_, files, io::FileTableLimit(), nofile.rlim_cur, nofile.rlim_max);
  if (!planned.ok()) return planned.status();
  const LoopPlan& plan = *planned;
  file_table_size_ = plan.file_table_size;
  capacity_ = plan.capacity;

  io::RingOptions ring_options;
  ring_options.sq_entries = plan.sq_entries;
  ring_options.cq_entries = plan.cq_entries;
  ring_options.sqpoll = config_.sqpoll;
  ring_options.sqpoll_cpu = config_.sqpoll && config_.pin_cpus ? index_ : -1;
  ring_options.single_issuer = config_.ring_single_issuer;
  ring_options.defer_taskrun = config_.ring_defer_taskrun;
  ring_options.coop_taskrun = config_.ring_coop_taskrun;
  ring_options.registered_ring_fd = config_.ring_registered_fd;
  auto ring = io::Ring::Create(ring_options);
  if (!ring.ok()) return ring.status();
  ring_ = *std::move(ring);
  io_uring* r = ring_->raw();

  if (absl::Status st = io::RegisterFileTable(r, file_table_size_); !st.ok()) return st;

  auto arena = io::Arena::Create(plan.arena_bytes);
  if (!arena.ok()) return arena.status();
  arena_ = *std::move(arena);
  if (absl::Status s =
          buffers_.Init(r, arena_, internal::kBufferGroup, plan.recv_buffers, plan.recv_buffer_size);
      !s.ok()) {
    return s;
  }
  // The bulk group's pages are touched only when a large body arrives.
  if (plan.bulk_buffers > 0) {
    if (absl::Status s = bulk_buffers_.Init(r, arena_, internal::kBulkBufferGroup, plan.bulk_buffers,
                                            plan.bulk_buffer_size);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = chunks_.Init(arena_, kChunkSize, plan.chunks); !s.ok()) return s;
  if (files) {
    files_ = std::make_unique<FileService>();
    if (absl::Status s =
            files_->Init(ring_.get(), plan.file_service, PackUserData(Op::kIgnore, 0, 0));
        !s.ok()) {
      return s;
    }
  }

  slots_ = std::make_unique<Slot[]>(capacity_);
  for (uint32_t i = 0; i < capacity_; ++i) slots_[i].next_free = i + 1;
  free_head_ = 0;
  free_count_ = capacity_;
  starved_ = std::make_unique<uint32_t[]>(capacity_);
  after_batch_ = std::make_unique<uint32_t[]>(capacity_);
  after_batch_running_ = std::make_unique<uint32_t[]>(capacity_);
  access_log_.Init(access_log_fd_, ring_.get(), PackUserData(Op::kLogWrite, 0, 0));
  route_stats_ = std::make_unique<RouteStats[]>(router_.size() + 1);
  const size_t headers_capacity = std::max<size_t>(config_.limits.max_headers, 1);
  headers_ = std::make_unique<http::Header[]>(headers_capacity);
  // A connection can hold a task, so the mailbox never needs more room than
  // that (plus stream messages, which are bounded by one per pipe).
  mailbox_ = std::make_unique<worker::Mailbox>(std::clamp<size_t>(2 * capacity_, 64, 1 << 16));

  send_zc_ = config_.send_zc_min_bytes > 0 && io::SendZcSupported(r);
  conn_config_ = ConnectionConfigFor(config_, plan);
  if (router_.has_async()) {
    async::Runner::Options async_options;
    async_options.limits = config_.limits;
    async_options.compression = conn_config_.compression;
    // Each exchange is a request in flight: a few per connection (HTTP/2
    // streams), made as they are first needed.
    async_options.max_exchanges = std::clamp<uint32_t>(capacity_ * 4, 64, 1u << 20);
    async_options.stats = &stats_.async;
    async_ = std::make_unique<async::Runner>(static_cast<async::Runner::Ring*>(this),
                                            &router_.pipeline(), async_options);
  }
  // Stream states come and go with bodies; a few hundred are kept for reuse.
  streams_ = std::make_unique<http1::StreamStatePool>(conn_config_.chunked, 256);
  if (tls_source_ != nullptr) {
    if (absl::Status st = InitTls(); !st.ok()) return st;
  }
  env_.config = &conn_config_;
  env_.streams = streams_.get();
  env_.router = &router_;
  env_.chunks = &chunks_;
  env_.transport = tls_ != nullptr ? static_cast<conn::Transport*>(tls_.get()) : this;
  env_.host = this;
  env_.stats = &stats_.conn;
  env_.limits = limits_;
  env_.headers = headers_.get();
  env_.headers_capacity = headers_capacity;
  env_.unmatched_route = static_cast<uint32_t>(router_.size());
  env_.has_workers = workers_ != nullptr;
  env_.access_log = access_log_.enabled();
  env_.h2c = config_.http2;
  env_.send_zc = send_zc_;
  env_.now_tick = NowTick();
  if (files_ != nullptr) {
    env_.file_cache = files_->cache();
    env_.file_closer = files_.get();
    env_.file_buffers = files_->buffers();
  }

  timers_.Init(capacity_, kTimerBuckets, env_.now_tick);
  tick_interval_.tv_sec = 0;
  tick_interval_.tv_nsec = kTickMs * 1000000LL;
  // Every listener takes connections with a multishot accept while the
  // table has room for what all of their backlogs can bring at once, and
  // one at a time near the top; the single-shot budget and the table's
  // reserve for refusals are shared.
  acceptors_.resize(listen_fds_.size() + plain_listen_fds_.size());
  peer_lengths_.resize(acceptors_.size());
  plain_begin_ = static_cast<uint32_t>(listen_fds_.size());
  const size_t n = acceptors_.size();
  const int backlogs = static_cast<int>(std::min<int64_t>(
      int64_t{config_.listen_backlog} * static_cast<int64_t>(n), 1 << 30));
  for (uint32_t i = 0; i < n; ++i) {
    const bool plain = i >= plain_begin_;
    const int fd = plain ? plain_listen_fds_[i - plain_begin_] : listen_fds_[i];
    // SO_PEERNAME copies exactly the length asked for, and refuses one
    // longer than the peer's address: the listener's family says which.
    int domain = AF_INET;
    socklen_t len = sizeof(domain);
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
    peer_lengths_[i] = domain == AF_INET6  ? sizeof(sockaddr_in6)
                       : domain == AF_UNIX ? sizeof(sa_family_t)
                                           : sizeof(sockaddr_in);
    acceptors_[i].Init(ring_.get(), fd, file_table_size_, backlogs, index_, &table_used_, i,
                       /*multishot=*/true,
                       static_cast<uint32_t>(Acceptor::kMaxSingleAccepts / n));
    acceptors_[i].Ensure();
  }
  ArmTimerTick();
  if (signal_fd_ >= 0) ArmSignalRead();
  ring_fd_.store(ring_->fd(), std::memory_order_release);
  return absl::OkStatus();
}

std::string EventLoop::Features() const {
  std::string f = ring_->features().Describe();
  absl::StrAppend(&f, ",multishot-accept-direct,multishot-recv,provided-buffers(",
                  buffers_.count(), "x", buffers_.buffer_size());
  if (bulk_buffers_.count() > 0) {
    absl::StrAppend(&f, "+", bulk_buffers_.count(), "x", bulk_buffers_.buffer_size());
  }
  absl::StrAppend(&f, ")");
  if (send_zc_) {
    absl::StrAppend(&f, ",send-zc(>=", config_.send_zc_min_bytes, "B)");
  } else if (config_.send_zc_min_bytes > 0) {
    absl::StrAppend(&f, ",no-send-zc(kernel<6.2)");
  }
  if (files_ != nullptr) {
    absl::StrAppend(&f, ",files(openat2-beneath+statx+open-file-cache=",
                    files_->cache()->limits().max_entries, "+read",
                    files_->fixed_buffers() ? "-fixed" : "", "=", files_->buffers()->count(), "x",
                    files_->buffers()->chunk_size());
    if (config_.file_splice_min_bytes > 0) {
      absl::StrAppend(&f, "+splice>=", config_.file_splice_min_bytes);
    }
    absl::StrAppend(&f, ")");
  }
  if (config_.tls.enabled() && config_.tls.ring_slice_us > 0) {
    absl::StrAppend(&f, ring_slice_ ? ",sched-slice=" : ",no-sched-slice(kernel<6.12)=",
                    config_.tls.ring_slice_us, "us");
  }
  if (workers_ != nullptr) {
    absl::StrAppend(&f, ",msg-ring",
                    io::MsgRingSender::RinglessSupported() ? "(ringless)" : "(per-worker ring)");
  }
  return f;
}

}  // namespace uring_http::serving
