#include "src/serving/event_loop.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/error_log.h"
#include "src/io/kernel_features.h"
#include "src/io/msg_ring_sender.h"
#include "src/io/socket_ops.h"
#include "src/io/uring_compat.h"
#include "src/serving/loop_plan.h"

namespace uring_http::serving {
namespace {

constexpr uint16_t kBufferGroup = 0;
constexpr uint16_t kBulkBufferGroup = 1;
constexpr uint32_t kTimerBuckets = 1024;  // 102 s per lap
// Acceptor numbers (Acceptor::Listener).
constexpr uint32_t kMainListener = 0;
constexpr uint32_t kPlainListener = 1;

int64_t SteadyNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void Debug(const ServerConfig& config, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Debug(const ServerConfig& config, const char* fmt, ...) {
  if (!config.verbose) return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
}

}  // namespace

EventLoop::EventLoop(int index, const ServerConfig& config, const router::Router& router,
                     worker::WorkerPool* workers, int listen_fd, int signal_fd,
                     std::function<void(int)> on_signal, int access_log_fd,
                     const tls::TlsContextSource* tls, int plain_listen_fd,
                     worker::WorkerPool* tls_workers)
    : index_(index),
      config_(config),
      router_(router),
      workers_(workers),
      listen_fd_(listen_fd),
      signal_fd_(signal_fd),
      on_signal_(std::move(on_signal)),
      plain_listen_fd_(plain_listen_fd),
      tls_workers_(tls_workers),
      tls_source_(tls),
      access_log_fd_(access_log_fd) {}

// Slots (and their connections, which give their chunks back to chunks_) go
// before the pool they came from.
EventLoop::~EventLoop() {
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
          buffers_.Init(r, arena_, kBufferGroup, plan.recv_buffers, plan.recv_buffer_size);
      !s.ok()) {
    return s;
  }
  // The bulk group's pages are touched only when a large body arrives.
  if (plan.bulk_buffers > 0) {
    if (absl::Status s = bulk_buffers_.Init(r, arena_, kBulkBufferGroup, plan.bulk_buffers,
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
  access_log_.Init(access_log_fd_, ring_.get(), PackUserData(Op::kLogWrite, 0, 0));
  route_stats_ = std::make_unique<RouteStats[]>(router_.size() + 1);
  const size_t headers_capacity = std::max<size_t>(config_.limits.max_headers, 1);
  headers_ = std::make_unique<http::Header[]>(headers_capacity);
  // A connection can hold a task, so the mailbox never needs more room than
  // that (plus stream messages, which are bounded by one per pipe).
  mailbox_ = std::make_unique<worker::Mailbox>(std::clamp<size_t>(2 * capacity_, 64, 1 << 16));

  send_zc_ = config_.send_zc_min_bytes > 0 && io::SendZcSupported(r);
  conn_config_ = ConnectionConfigFor(config_, plan);
  // Stream states come and go with bodies; a few hundred are kept for reuse.
  streams_ = std::make_unique<http1::StreamStatePool>(conn_config_.chunked, 256);
  if (tls_source_ != nullptr) {
    if (absl::Status st = InitTls(); !st.ok()) return st;
  }
  env_.config = &conn_config_;
  env_.streams = streams_.get();
  env_.router = &router_;
  env_.chunks = &chunks_;
  env_.host = tls_ != nullptr ? static_cast<http1::ConnectionHost*>(tls_.get()) : this;
  env_.stats = &stats_.conn;
  env_.headers = headers_.get();
  env_.headers_capacity = headers_capacity;
  env_.unmatched_route = static_cast<uint32_t>(router_.size());
  env_.has_workers = workers_ != nullptr;
  env_.access_log = access_log_.enabled();
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
  acceptor_.Init(ring_.get(), listen_fd_, file_table_size_, config_.listen_backlog, index_,
                 &table_used_, kMainListener);
  acceptor_.Ensure();
  if (plain_listen_fd_ >= 0) {
    plain_acceptor_.Init(ring_.get(), plain_listen_fd_, file_table_size_, config_.listen_backlog,
                         index_, &table_used_, kPlainListener, /*multishot=*/false);
    plain_acceptor_.Ensure();
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

// ---------------------------------------------------------------- arming

void EventLoop::ArmTimerTick() {
  io_uring_sqe* sqe = Sqe();
  // One relative timeout drives the whole timer wheel; re-armed on expiry.
  io_uring_prep_timeout(sqe, &tick_interval_, 0, 0);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kTimerTick, 0, 0));
}

void EventLoop::ArmSignalRead() {
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_read(sqe, signal_fd_, signal_buf_, sizeof(signal_buf_), 0);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kSignal, 0, 0));
}

// ---------------------------------------------------------------- main loop

void EventLoop::Run() {
  io_uring* r = ring_->raw();
  for (;;) {
    if (stopping_ && stats_.active.Get() == 0) break;
    int ret;
    if (after_batch_count_ > 0) {
      // Workers are owed the bytes of a streamed body that came in small
      // pieces. Look for more completions first (no sleep): while the body
      // keeps arriving, each worker is woken only once it has a good share
      // of its pipe; once the ring would sleep, it gets what there is.
      ret = io_uring_submit_and_get_events(r);
      if (io_uring_cq_ready(r) == 0) {
        RunAfterBatch();
        ret = io_uring_submit_and_wait(r, 1);
      }
    } else {
      // Submits everything queued and sleeps until at least one completion.
      // With DEFER_TASKRUN this is also where the kernel runs our task work.
      ret = io_uring_submit_and_wait(r, 1);
    }
    // One clock read per batch of completions serves every timer set in it.
    env_.now_tick = NowTick();
    // The kernel kept completions the CQ had no room for (IORING_FEAT_NODROP):
    // they come in on the next enter, but the CQ is too small for the load.
    if (io_uring_cq_has_overflow(r)) [[unlikely]] {
      stats_.cq_overflows.Add();
    }
    if (ret < 0 && ret != -EINTR && ret != -ETIME && ret != -EAGAIN && ret != -EBUSY) {
      std::fprintf(stderr, "uring-http: thread %d: io_uring_enter: %s\n", index_,
                   strerror(-ret));
      if (ret == -EBADR) continue;  // completions were lost; keep serving
      break;
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(r, head, cqe) {
      ++seen;
      const uint64_t ud = cqe->user_data;
      const Op op = UserDataOp(ud);
      switch (op) {
        case Op::kAccept:
          OnAccept(cqe);
          break;
        case Op::kRecv:
        case Op::kRecvBulk:
        case Op::kSend:
        case Op::kShutdown:
        case Op::kClose:
        case Op::kFileStat:
        case Op::kFileOpen:
        case Op::kFileRead:
        case Op::kFileSplice:
        case Op::kFileWritable: {
          const uint32_t slot = UserDataSlot(ud);
          // A slot lives until every completion naming it has come back.
          URING_CHECK(slot < capacity_ && slots_[slot].in_use &&
                      slots_[slot].generation == UserDataGeneration(ud));
          OnConnectionEvent(op, slot, cqe);
          break;
        }
        case Op::kTaskDone:
        case Op::kStreamNotify:
        case Op::kTlsJob:
          OnWorkerMessage(op, UserDataSlot(ud), UserDataGeneration(ud));
          break;
        case Op::kTimerTick:
          OnTimerTick();
          break;
        case Op::kAcceptRetry:
          (Acceptor::Listener(ud) == kPlainListener ? plain_acceptor_ : acceptor_).OnBackoffDone();
          break;
        case Op::kRefuseClosed:
          OnEntryClosed();
          break;
        case Op::kSignal:
          OnSignal(cqe->res);
          break;
        case Op::kStop:
          OnStop();
          break;
        case Op::kLogWrite:
          access_log_.OnWritten(cqe->res);
          break;
        case Op::kIgnore:
          break;
      }
    }
    io_uring_cq_advance(r, seen);
    // Receives that ran out of provided buffers restart now that this batch
    // has handed its buffers back.
    while (starved_count_ > 0) {
      const uint32_t slot = starved_[--starved_count_];
      if (slots_[slot].in_use) {
        if (Tls(slot)) {
          tls_->OnBuffersAvailable(slot);
        } else {
          slots_[slot].conn.OnBuffersAvailable();
        }
        MaybeFree(slot);
      }
    }
  }
  access_log_.FlushAndWait();
  io_uring_submit(r);
}

void EventLoop::OnConnectionEvent(Op op, uint32_t slot, const io_uring_cqe* cqe) {
  http1::Connection& conn = slots_[slot].conn;
  const int res = cqe->res;
  // The socket's own events on a TLS connection go through the TLS layer.
  if (Tls(slot) && OnTlsSocketEvent(op, slot, cqe)) return;
  switch (op) {
    case Op::kRecv:
    case Op::kRecvBulk: {
      const bool more = cqe->flags & IORING_CQE_F_MORE;
      if (res > 0) {
        io::BufferRing& group = op == Op::kRecvBulk ? bulk_buffers_ : buffers_;
        const uint16_t bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        // Without F_MORE the receive ended with these bytes (a single-shot
        // one always does): OnRecv is told, instead of an OnRecvEnd.
        conn.OnRecv(group.Buffer(bid), static_cast<size_t>(res), /*ended=*/!more);
        // Consumed or staged by now: the buffer goes straight back.
        group.Recycle(bid);
      } else if (!more) {
        if (res == -ENOBUFS) {
          // Every provided buffer was in use: not fatal. Re-armed after this
          // batch returns its buffers.
          stats_.recv_nobufs.Add();
          starved_[starved_count_++] = slot;
        }
        conn.OnRecvEnd(res);
      }
      break;
    }
    case Op::kSend:
      // A zero-copy send completes twice: its result (with F_MORE), then a
      // notification once the kernel is done with the bytes.
      if (cqe->flags & IORING_CQE_F_NOTIF) {
        conn.OnSendNotification(res & IORING_NOTIF_USAGE_ZC_COPIED);
      } else {
        conn.OnSend(res, cqe->flags & IORING_CQE_F_MORE);
      }
      break;
    case Op::kShutdown:
      conn.OnShutdownDone();
      break;
    case Op::kClose:
      conn.OnClosed();
      OnEntryClosed();
      break;
    case Op::kFileStat:
      conn.OnFileStat(res);
      break;
    case Op::kFileOpen:
      conn.OnFileOpen(res);
      break;
    case Op::kFileRead:
      conn.OnFileRead(res);
      break;
    case Op::kFileSplice:
      conn.OnFileSplice(res);
      break;
    case Op::kFileWritable:
      conn.OnFileWritable(res);
      break;
    default:
      break;
  }
  MaybeFree(slot);
}

void EventLoop::OnWorkerMessage(Op op, uint32_t slot, uint32_t generation) {
  if (slot >= capacity_ || !slots_[slot].in_use || slots_[slot].generation != generation) {
    // A slot lives until its task returns, so a completion cannot miss it;
    // a stream message may arrive after the stream ended, harmlessly.
    if (op == Op::kTaskDone || op == Op::kTlsJob) stats_.results_dropped.Add();
    return;
  }
  if (op == Op::kTlsJob) {
    // A slot lives until its handshake step returns (TlsLayer::Freeable).
    URING_CHECK(Tls(slot));
    tls_->OnJobDone(slot);
  } else if (op == Op::kTaskDone) {
    slots_[slot].conn.OnTaskDone();
  } else {
    slots_[slot].conn.OnStreamNotify();
  }
  MaybeFree(slot);
}

void EventLoop::MaybeFree(uint32_t slot) {
  Slot& s = slots_[slot];
  if (!s.in_use || !s.conn.Freeable()) return;
  if (Tls(slot)) {
    if (!tls_->Freeable(slot)) return;
    tls_->Release(slot);
  }
  s.conn.Release();
  timers_.Cancel(slot);
  Debug(config_, "uring-http: thread %d: closed slot %u\n", index_, slot);
  s.in_use = false;
  ++s.generation;
  s.next_free = free_head_;
  free_head_ = slot;
  ++free_count_;
  stats_.active.Sub();
}

void EventLoop::RunAfterBatch() {
  // Connections that asked to hear when the ring goes quiet (a worker
  // reading a streamed body gets what arrived, in one wake-up).
  for (uint32_t i = 0; i < after_batch_count_; ++i) {
    const uint32_t slot = after_batch_[i];
    if (slots_[slot].in_use) {
      if (Tls(slot)) {
        tls_->OnBatchEnd(slot);
      } else {
        slots_[slot].conn.OnBatchEnd();
      }
      MaybeFree(slot);
    }
  }
  after_batch_count_ = 0;
}

// ---------------------------------------------------------------- accept

void EventLoop::OnAccept(const io_uring_cqe* cqe) {
  const bool plain = Acceptor::Listener(cqe->user_data) == kPlainListener;
  Acceptor& acceptor = plain ? plain_acceptor_ : acceptor_;
  const int file_index = acceptor.OnAccept(cqe, stats_);
  if (file_index >= 0) {
    SSL* ssl = nullptr;
    if (tls_ != nullptr && !plain && free_count_ > 0 && (ssl = NewSsl()) == nullptr) {
      // OpenSSL is out of memory: refused like a full pool.
      stats_.refused.Add();
      acceptor.Refuse(file_index);
    } else if (free_count_ == 0) {
      // Accepted while the pool is full: a clean 503 rather than silence.
      // (Connections accepted while draining are served like the others:
      // their request is answered with Connection: close.)
      stats_.refused.Add();
      acceptor.Refuse(file_index);
    } else {
      const uint32_t slot = free_head_;
      Slot& s = slots_[slot];
      free_head_ = s.next_free;
      --free_count_;
      s.in_use = true;
      s.file_index = static_cast<uint32_t>(file_index);
      stats_.accepted.Add();
      stats_.active.Add();
      Debug(config_, "uring-http: thread %d: accepted slot %u (direct descriptor %d)\n", index_,
            slot, file_index);
      FetchPeerAddress(slot, s.file_index);
      if (ssl != nullptr) tls_->Attach(slot, &s.conn, ssl);
      s.conn.Open(&env_, slot);
    }
  }
  acceptor.Ensure();
}

void EventLoop::OnEntryClosed() {
  acceptor_.OnEntryClosed();
  if (plain_listen_fd_ >= 0) plain_acceptor_.Ensure();
}

void EventLoop::FetchPeerAddress(uint32_t slot, uint32_t file_index) {
  // A direct descriptor has no fd for getpeername(): ask through the ring,
  // getsockopt(SOL_SOCKET, SO_PEERNAME) as an IORING_OP_URING_CMD (Linux
  // 6.7+). On an older kernel it fails and the log shows "-".
  // Handlers see it as Request::client_address, the access log logs it.
  // It completes as it is issued (a socket's getsockopt never waits), so
  // it is written before the receive issued after it can complete.
  http::ClientAddress* peer = slots_[slot].conn.peer_address();
  *peer = http::ClientAddress();
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, static_cast<int>(file_index), nullptr, 0, 0);
  // CQE_SKIP_SUCCESS: a success has nothing to say (the address is in
  // place); only a failure (an older kernel) posts a completion.
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_CQE_SKIP_SUCCESS;
  sqe->off = SOCKET_URING_OP_GETSOCKOPT;                          // cmd_op
  sqe->addr = uint64_t{SOL_SOCKET} | (uint64_t{SO_PEERNAME} << 32);  // level, optname
  // optlen: the listener is IPv4, and SO_PEERNAME refuses a length longer
  // than the address.
  sqe->splice_fd_in = sizeof(sockaddr_in);
  sqe->addr3 = reinterpret_cast<uint64_t>(peer->raw());  // optval
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
}

// ---------------------------------------------------------------- host

void EventLoop::ArmRecv(uint32_t slot, bool bulk, bool once) {
  Slot& s = slots_[slot];
  s.recv_bulk = bulk;
  if (once) {
    io::PrepRecvOnce(Sqe(), s.file_index, bulk ? kBulkBufferGroup : kBufferGroup,
                     RecvUserData(slot));
  } else {
    io::PrepRecvMultishot(Sqe(), s.file_index, bulk ? kBulkBufferGroup : kBufferGroup,
                          RecvUserData(slot));
  }
}

void EventLoop::CancelRecv(uint32_t slot) {
  io::PrepCancel(Sqe(), RecvUserData(slot), PackUserData(Op::kIgnore, 0, 0));
}

void EventLoop::Send(uint32_t slot, const iovec* iov, unsigned count, bool zero_copy,
                     msghdr* msg, bool dont_wait) {
  Slot& s = slots_[slot];
  if (zero_copy) {
    URING_CHECK(count == 1);
    io::PrepSendZc(Sqe(), s.file_index, iov[0], UserData(Op::kSend, slot));
  } else {
    io::PrepSend(Sqe(), s.file_index, iov, count, msg, dont_wait, UserData(Op::kSend, slot));
  }
}

void EventLoop::SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count,
                                 msghdr* msg) {
  const uint32_t file_index = slots_[slot].file_index;
  // A linked chain is never split by GetSqe()'s flush on a full SQ.
  ring_->ReserveSqes(2);
  io_uring_sqe* sqe = Sqe();
  io::PrepSendWhole(sqe, file_index, iov, count, msg, UserData(Op::kSend, slot));
  // HARDLINK: the close runs however the send ends (a plain link would
  // cancel it on a failed send, leaving the entry open).
  sqe->flags |= IOSQE_IO_HARDLINK;
  io::PrepCloseDirect(Sqe(), file_index, UserData(Op::kClose, slot));
}

void EventLoop::CancelSend(uint32_t slot) {
  io::PrepCancel(Sqe(), UserData(Op::kSend, slot), PackUserData(Op::kIgnore, 0, 0));
}

void EventLoop::ShutdownWrite(uint32_t slot) {
  io::PrepShutdownWrite(Sqe(), slots_[slot].file_index, UserData(Op::kShutdown, slot));
}

void EventLoop::Close(uint32_t slot, bool recv_armed, bool send_inflight) {
  const uint32_t file_index = slots_[slot].file_index;
  // A linked chain is never split by GetSqe()'s flush on a full SQ.
  ring_->ReserveSqes(2);
  if (recv_armed || send_inflight) {
    // A close alone would not end the multishot receive or a pending send
    // (each holds its own reference to the socket), so they are cancelled
    // first; the cancel runs inline, unlike a shutdown. HARDLINK: the close
    // runs whatever the cancel finds.
    io_uring_sqe* sqe = Sqe();
    if (send_inflight) {
      io::PrepCancelAll(sqe, file_index, PackUserData(Op::kIgnore, 0, 0));
    } else {
      // Only the receive is left, the common case (every close after an
      // answer): matched by user_data, one hash lookup.
      io::PrepCancel(sqe, RecvUserData(slot), PackUserData(Op::kIgnore, 0, 0));
    }
    sqe->flags |= IOSQE_IO_HARDLINK;
  }
  io::PrepCloseDirect(Sqe(), file_index, UserData(Op::kClose, slot));
}

void EventLoop::SetDeadline(uint32_t slot, uint64_t tick) {
  if (tick == 0) {
    timers_.Cancel(slot);
  } else {
    // Later than before: one store (the keep-alive hot path); earlier: moved.
    timers_.Extend(slot, tick);
  }
}

bool EventLoop::Dispatch(uint32_t slot, worker::TaskBuffer* task, const router::Route& route,
                         int64_t started_ns) {
  if (workers_ == nullptr) return false;
  task->ring.ring_fd = ring_->fd();
  task->ring.mailbox = mailbox_.get();
  task->notify_user_data = UserData(Op::kStreamNotify, slot);
  worker::SlowTask t;
  t.route = &route;
  t.pipeline = &router_.pipeline();
  t.buffer = task;
  t.user_data = UserData(Op::kTaskDone, slot);
  t.enqueued_ns = started_ns;
  if (!workers_->Submit(t)) {
    Debug(config_, "uring-http: thread %d: worker queue full: 503\n", index_);
    return false;
  }
  return true;
}

void EventLoop::ExchangeDone(uint32_t slot, const Exchange& exchange) {
  const int64_t elapsed_ns = SteadyNs() - exchange.started_ns;
  route_stats_[exchange.route_id].Record(
      exchange.status, elapsed_ns > 0 ? static_cast<uint64_t>(elapsed_ns) / 1000 : 0);
  if (exchange.status < 400) {
    stats_.responses_2xx.Add();
  } else if (exchange.status < 500) {
    stats_.responses_4xx.Add();
  } else {
    stats_.responses_5xx.Add();
  }
  if (access_log_.enabled()) {
    access_log_.Append(exchange.client, exchange.request_line, exchange.status,
                       exchange.body_bytes, exchange.request_id);
  }
}

// ---------------------------------------------------------------- timers

void EventLoop::OnTimerTick() {
  const uint64_t now = env_.now_tick;
  access_log_.Flush();
  base::FlushSuppressedErrors();  // the count of error lines over the rate limit
  // Messages a worker could not post with MSG_RING (see worker::Mailbox).
  stats_.mailbox_messages.Add(mailbox_->Drain([this](uint64_t ud) {
    if (UserDataOp(ud) == Op::kStop) {
      OnStop();
    } else {
      OnWorkerMessage(UserDataOp(ud), UserDataSlot(ud), UserDataGeneration(ud));
    }
  }));
  timers_.Advance(now, [this](uint32_t slot) {
    if (!slots_[slot].in_use) return;
    if (Tls(slot)) {
      tls_->OnDeadline(slot);
    } else {
      slots_[slot].conn.OnDeadline();
    }
    MaybeFree(slot);
  });
  stats_.chunk_heap_fallbacks.Add(chunks_.heap_fallbacks() - stats_.chunk_heap_fallbacks.Get());
  if (files_ != nullptr) {
    const files::OpenFileCache::Stats& c = files_->cache()->stats();
    stats_.file_cache_hits.Set(c.hits);
    stats_.file_cache_revalidations.Set(c.revalidations);
    stats_.file_cache_entries.Set(c.open_entries);
    stats_.file_cache_content_bytes.Set(c.content_bytes);
  }
  if (stopping_ && now >= stop_deadline_tick_) {
    // Drain time is up: whatever is still open is closed now.
    for (uint32_t slot = 0; slot < capacity_; ++slot) {
      if (!slots_[slot].in_use) continue;
      slots_[slot].conn.Abort();
      MaybeFree(slot);
    }
  }
  ArmTimerTick();
}

// ---------------------------------------------------------------- stopping

void EventLoop::OnSignal(int res) {
  if (res > 0 && on_signal_) {
    signalfd_siginfo info;
    std::memcpy(&info, signal_buf_, sizeof(info));
    on_signal_(static_cast<int>(info.ssi_signo));
  }
  if (!stopping_) ArmSignalRead();
}

void EventLoop::OnStop() {
  if (stopping_) return;
  stopping_ = true;
  env_.draining = true;
  stop_deadline_tick_ = env_.now_tick + (config_.shutdown_timeout_ms + kTickMs - 1) / kTickMs;
  // Stop accepting; connections already accepted are answered below.
  acceptor_.Stop();
  if (plain_listen_fd_ >= 0) plain_acceptor_.Stop();
  // Idle connections get the drain's short grace; the rest finish their
  // current request, answered with "Connection: close".
  for (uint32_t slot = 0; slot < capacity_; ++slot) {
    if (!slots_[slot].in_use) continue;
    slots_[slot].conn.OnDrain();
    MaybeFree(slot);
  }
}

}  // namespace uring_http::serving
