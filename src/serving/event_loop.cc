#include "src/serving/event_loop.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/io/msg_ring_sender.h"
#include "src/io/uring_compat.h"

namespace uring_http::serving {
namespace {

constexpr uint16_t kBufferGroup = 0;
constexpr size_t kChunkSize = 4096;
constexpr uint32_t kTickMs = 100;
constexpr uint32_t kTimerBuckets = 1024;  // 102 s per lap
// Slots kept free in the fixed-file table beyond the pool, so that a
// connection arriving at a full pool can still be accepted and refused with a
// 503 instead of waiting unanswered in the backlog.
constexpr uint32_t kRefuseReserve = 64;
// How long a draining server keeps an idle keep-alive connection open.
constexpr uint32_t kDrainIdleGraceMs = 1000;
// Single-shot accepts in flight when the table is nearly full.
constexpr uint32_t kMaxSingleAccepts = 16;
// The slot field of an accept's user_data says which kind it is.
constexpr uint32_t kAcceptMultishot = 0;
constexpr uint32_t kAcceptSingle = 1;
// Stop reading requests off a connection while this much output is unsent:
// a client that pipelines but never reads must not grow our memory.
constexpr uint32_t kOutputHighWater = 64 * 1024;
// Stop receiving while this much input is staged behind a blocked request.
constexpr uint32_t kStagedPauseBytes = 64 * 1024;

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::string_view kRefusal =
    "HTTP/1.1 503 Service Unavailable\r\nServer: uring-http\r\nContent-Type: text/plain\r\n"
    "Content-Length: 24\r\nConnection: close\r\n\r\n503 Service Unavailable\n";

uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Debug(const ServerConfig& config, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Debug(const ServerConfig& config, const char* fmt, ...) {
  if (!config.verbose) return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
}

// IORING_OP_SEND_ZC is 6.0, but its usage report (which the send relies on)
// is 6.2 and has no feature bit: both the opcode probe and the version count.
bool SendZcSupported(io_uring* ring) {
  io_uring_probe* probe = io_uring_get_probe_ring(ring);
  if (probe == nullptr) return false;
  const bool opcode = io_uring_opcode_supported(probe, IORING_OP_SEND_ZC);
  io_uring_free_probe(probe);
  utsname u{};
  unsigned major = 0, minor = 0;
  if (!opcode || uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) {
    return false;
  }
  return major > 6 || (major == 6 && minor >= 2);
}

}  // namespace

EventLoop::EventLoop(int index, const ServerConfig& config, const router::Router& router,
                     worker::WorkerPool* workers, int listen_fd, int signal_fd,
                     std::function<void()> on_signal, int access_log_fd)
    : index_(index),
      config_(config),
      router_(router),
      workers_(workers),
      listen_fd_(listen_fd),
      signal_fd_(signal_fd),
      on_signal_(std::move(on_signal)),
      access_log_fd_(access_log_fd) {}

EventLoop::~EventLoop() {
  if (connections_ != nullptr) {
    for (uint32_t i = 0; i < capacity_; ++i) {
      Connection& c = connections_[i];
      if (c.in != nullptr) chunks_.Release(c.in);
      if (c.out != nullptr) chunks_.Release(c.out);
      if (c.out_retired != nullptr) chunks_.Release(c.out_retired);
      if (c.task != nullptr) {
        std::free(c.task->heap_response);
        chunks_.Release(reinterpret_cast<char*>(c.task));
      }
    }
  }
}

uint64_t EventLoop::NowTick() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000) /
         kTickMs;
}

absl::Status EventLoop::Init() {
  if (config_.pin_cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(index_ % CPU_SETSIZE, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }

  // One ring's fixed-file table holds at most RLIMIT_NOFILE entries (a larger
  // sparse registration fails with EMFILE), so the pool is sized to fit it.
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  const uint64_t table_limit = std::min<uint64_t>(nofile.rlim_cur, kMaxSlots);
  file_table_size_ = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{config_.accept_capacity} + kRefuseReserve, table_limit));
  if (file_table_size_ <= kRefuseReserve) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "RLIMIT_NOFILE (", nofile.rlim_cur, ") leaves no room for connections"));
  }
  capacity_ = std::min<uint32_t>(config_.accept_capacity, file_table_size_ - kRefuseReserve);

  io::RingOptions ring_options;
  // Sized for bursts: every live connection may post a receive completion
  // and a worker result in the same round, plus accepts.
  ring_options.sq_entries = std::clamp<uint32_t>(RoundUpPow2(capacity_), 256, 4096);
  // Worst case per round: a receive completion per live connection, a worker
  // result per connection with a task in flight, plus accepts. Beyond that
  // the kernel keeps overflowed CQEs on its own list (IORING_FEAT_NODROP) and
  // MSG_RING senders retry on -EOVERFLOW, so nothing is lost, only slower.
  ring_options.cq_entries = std::clamp<uint32_t>(RoundUpPow2(capacity_ + 1024), 4096, 32768);
  if (config_.ring_sq_entries != 0) ring_options.sq_entries = config_.ring_sq_entries;
  if (config_.ring_cq_entries != 0) ring_options.cq_entries = config_.ring_cq_entries;
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

  int ret = io_uring_register_files_sparse(r, file_table_size_);
  if (ret < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "registering a sparse fixed-file table of ", file_table_size_,
        " entries: ", strerror(-ret), " (it must not exceed RLIMIT_NOFILE)"));
  }

  // Buffers are busy only between a receive completing and its bytes being
  // parsed (or staged), so a fraction of the capacity suffices; a burst that
  // empties the ring costs an ENOBUFS and a re-arm, not a connection.
  const uint32_t recv_buffers =
      config_.recv_buffer_count != 0
          ? RoundUpPow2(config_.recv_buffer_count)
          : std::clamp<uint32_t>(RoundUpPow2(capacity_ / 16), 256, 1024);
  const uint32_t recv_buffer_size = std::max<uint32_t>(config_.recv_buffer_size, 64);
  const uint32_t chunk_count = std::clamp<uint32_t>(capacity_ / 8, 128, 4096);
  const size_t arena_bytes = size_t{recv_buffers} * recv_buffer_size +
                             recv_buffers * sizeof(io_uring_buf) + chunk_count * kChunkSize +
                             3 * 4096;
  auto arena = io::Arena::Create(arena_bytes);
  if (!arena.ok()) return arena.status();
  arena_ = *std::move(arena);
  if (absl::Status s = buffers_.Init(r, arena_, kBufferGroup, recv_buffers, recv_buffer_size);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = chunks_.Init(arena_, kChunkSize, chunk_count); !s.ok()) return s;

  connections_ = std::make_unique<Connection[]>(capacity_);
  for (uint32_t i = 0; i < capacity_; ++i) connections_[i].next_free = i + 1;
  free_head_ = 0;
  free_count_ = capacity_;
  starved_ = std::make_unique<uint32_t[]>(capacity_);
  access_log_.Init(access_log_fd_, ring_.get(), PackUserData(Op::kLogWrite, 0, 0));
  if (access_log_.enabled()) peers_ = std::make_unique<sockaddr_in[]>(capacity_);
  unmatched_route_ = static_cast<uint32_t>(router_.size());
  route_stats_ = std::make_unique<RouteStats[]>(router_.size() + 1);
  headers_capacity_ = std::max<size_t>(config_.limits.max_headers, 1);
  headers_ = std::make_unique<http::Header[]>(headers_capacity_);
  now_tick_ = NowTick();
  timers_.Init(capacity_, kTimerBuckets, now_tick_);
  tick_interval_.tv_sec = 0;
  tick_interval_.tv_nsec = kTickMs * 1000000LL;
  accept_backoff_.tv_sec = 0;
  accept_backoff_.tv_nsec = 100 * 1000000LL;

  // Multishot while the table has more free entries than the backlog can
  // bring in one go; small tables accept one at a time from the start.
  multishot_headroom_ =
      std::min<uint32_t>(static_cast<uint32_t>(config_.listen_backlog) + kRefuseReserve,
                         file_table_size_ / 2 + 1);
  if (file_table_size_ < 4 * kRefuseReserve) multishot_headroom_ = file_table_size_ + 1;
  send_zc_ = config_.send_zc_min_bytes > 0 && SendZcSupported(r);

  EnsureAccepts();
  ArmTimerTick();
  if (signal_fd_ >= 0) ArmSignalRead();
  ring_fd_.store(ring_->fd(), std::memory_order_release);
  return absl::OkStatus();
}

std::string EventLoop::Features() const {
  std::string f = ring_->features().Describe();
  absl::StrAppend(&f, ",multishot-accept-direct,multishot-recv,provided-buffers(",
                  buffers_.count(), "x", buffers_.buffer_size(), ")");
  if (send_zc_) {
    absl::StrAppend(&f, ",send-zc(>=", config_.send_zc_min_bytes, "B)");
  } else if (config_.send_zc_min_bytes > 0) {
    absl::StrAppend(&f, ",no-send-zc(kernel<6.2)");
  }
  if (workers_ != nullptr) {
    absl::StrAppend(&f, ",msg-ring",
                    io::MsgRingSender::RinglessSupported() ? "(ringless)" : "(per-worker ring)");
  }
  return f;
}

// ---------------------------------------------------------------- arming

// Two ways of accepting. While the fixed-file table has plenty of room, one
// multishot accept takes every connection as it comes. A multishot accept
// drains the whole backlog at once, and a socket it accepts into a full table
// is closed by the kernel without a word (ENFILE), so near the top it gives
// way to a few single-shot accepts, never more than the free entries: every
// connection accepted then gets a slot or a clean 503.
void EventLoop::EnsureAccepts() {
  if (stopping_ || accept_backoff_pending_) return;
  const uint32_t free_entries = file_table_size_ - table_used_;
  if (free_entries >= multishot_headroom_) {
    if (!multishot_armed_) {
      io_uring_sqe* sqe = Sqe();
      // Direct: the socket goes straight into the fixed-file table
      // (IORING_FILE_INDEX_ALLOC picks a free entry), never into the
      // process's descriptor table.
      io_uring_prep_multishot_accept_direct(sqe, listen_fd_, nullptr, nullptr, 0);
      io_uring_sqe_set_data64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, 0));
      multishot_armed_ = true;
    }
    return;
  }
  if (multishot_armed_) {
    if (!multishot_cancelling_) {
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, 0), 0);
      io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
      multishot_cancelling_ = true;
    }
    return;  // single-shot accepts start once the multishot has ended
  }
  while (single_accepts_ < kMaxSingleAccepts && single_accepts_ < free_entries) {
    io_uring_sqe* sqe = Sqe();
    // Not io_uring_prep_accept_direct(..., IORING_FILE_INDEX_ALLOC): liburing
    // 2.3 stores index + 1, which wraps ALLOC to 0, a plain accept.
    io_uring_prep_accept(sqe, listen_fd_, nullptr, nullptr, 0);
    sqe->file_index = IORING_FILE_INDEX_ALLOC;
    io_uring_sqe_set_data64(sqe, PackUserData(Op::kAccept, kAcceptSingle, 0));
    ++single_accepts_;
  }
}

void EventLoop::ArmRecv(Connection& c, uint32_t slot) {
  io_uring_sqe* sqe = Sqe();
  // Multishot receive with buffer selection: the kernel picks a provided
  // buffer per completion, so no memory is committed to an idle connection.
  io_uring_prep_recv_multishot(sqe, static_cast<int>(c.file_index), nullptr, 0, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufferGroup;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kRecv, slot, c.generation));
  c.recv_armed = true;
}

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
    // Submits everything queued and sleeps until at least one completion.
    // With DEFER_TASKRUN this is also where the kernel runs our task work.
    int ret = io_uring_submit_and_wait(r, 1);
    // One clock read per batch of completions serves every timer set in it.
    now_tick_ = NowTick();
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
        case Op::kSend:
        case Op::kShutdown:
        case Op::kClose: {
          const uint32_t slot = UserDataSlot(ud);
          Connection& c = connections_[slot];
          if (!c.in_use || c.generation != UserDataGeneration(ud)) break;  // cannot happen
          if (op == Op::kRecv) {
            OnRecv(c, slot, cqe);
          } else if (op == Op::kSend) {
            // A zero-copy send completes twice: its result (with F_MORE),
            // then a notification once the kernel is done with the bytes.
            if (cqe->flags & IORING_CQE_F_NOTIF) {
              OnSendNotification(c, slot, cqe);
            } else {
              OnSend(c, slot, cqe);
            }
          } else if (op == Op::kShutdown) {
            // Our FIN is out; the receive still runs and sees the peer's. A
            // close requested meanwhile waited for this (see SubmitClose).
            c.shutdown_pending = false;
            if (c.close_deferred) IssueClose(c, slot);
          } else {
            c.close_done = true;
            --table_used_;
            MaybeFree(c, slot);
            EnsureAccepts();
          }
          break;
        }
        case Op::kTaskDone:
          OnTaskDone(UserDataSlot(ud), UserDataGeneration(ud));
          break;
        case Op::kTimerTick:
          OnTimerTick();
          break;
        case Op::kAcceptRetry:
          accept_backoff_pending_ = false;
          EnsureAccepts();
          break;
        case Op::kRefuseClosed:
          --table_used_;
          EnsureAccepts();
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
      Connection& c = connections_[slot];
      if (c.in_use && !c.closing && !c.recv_armed && !c.recv_paused && !c.peer_eof) {
        ArmRecv(c, slot);
      }
    }
  }
  access_log_.FlushAndWait();
  io_uring_submit(r);
}

// ---------------------------------------------------------------- accept

void EventLoop::OnAccept(const io_uring_cqe* cqe) {
  const int res = cqe->res;
  if (UserDataSlot(cqe->user_data) == kAcceptSingle) {
    --single_accepts_;
  } else if (!(cqe->flags & IORING_CQE_F_MORE)) {
    multishot_armed_ = false;  // ended (error, cancel, overflow): re-armed below
    multishot_cancelling_ = false;
  }
  if (res >= 0) {
    ++table_used_;
    if (free_count_ == 0) {
      // Accepted while the pool is full: a clean 503 rather than silence.
      // (Connections accepted while draining are served like the others:
      // their request is answered with Connection: close.)
      stats_.refused.Add();
      Refuse(res);
    } else {
      const uint32_t slot = free_head_;
      Connection& c = connections_[slot];
      free_head_ = c.next_free;
      --free_count_;
      const uint32_t generation = c.generation;
      c = Connection();
      c.generation = generation;
      c.in_use = true;
      c.file_index = static_cast<uint32_t>(res);
      stats_.accepted.Add();
      stats_.active.Add();
      accept_error_logged_ = false;
      Debug(config_, "uring-http: thread %d: accepted slot %u (direct descriptor %d)\n", index_,
            slot, res);
      if (peers_ != nullptr) FetchPeerAddress(slot, c.file_index);
      ArmRecv(c, slot);
      SetTimer(c, slot, kTimerIdle);
    }
  } else if (res != -ECANCELED) {
    stats_.accept_errors.Add();
    if (!accept_error_logged_) {
      // Once per episode: a flood of EMFILE must not become a flood of logs.
      std::fprintf(stderr, "uring-http: thread %d: accept: %s; retrying%s\n", index_,
                   strerror(-res),
                   res == -ENFILE || res == -EMFILE ? " as descriptors free up" : "");
      accept_error_logged_ = true;
    }
    if (!stopping_ && !accept_backoff_pending_) {
      // Back off before accepting again: an immediate retry would spin on
      // the same EMFILE/ENFILE until something closes.
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_timeout(sqe, &accept_backoff_, 0, 0);
      io_uring_sqe_set_data64(sqe, PackUserData(Op::kAcceptRetry, 0, 0));
      accept_backoff_pending_ = true;
    }
  }
  EnsureAccepts();
}

void EventLoop::Refuse(int file_index) {
  // A full pool answers 503 and closes. HARDLINK: the close runs even if the
  // send fails, so the fixed-file entry always comes back (kRefuseClosed).
  ring_->ReserveSqes(2);
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_send(sqe, file_index, kRefusal.data(), kRefusal.size(), MSG_NOSIGNAL);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  sqe = Sqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(file_index));
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kRefuseClosed, 0, 0));
}

// ---------------------------------------------------------------- receive

void EventLoop::OnRecv(Connection& c, uint32_t slot, const io_uring_cqe* cqe) {
  const int res = cqe->res;
  const bool more = cqe->flags & IORING_CQE_F_MORE;
  if (!more) c.recv_armed = false;
  if (res > 0) {
    const uint16_t bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    if (!c.closing && !c.lingering) {
      HandleInput(c, slot, buffers_.Buffer(bid), static_cast<size_t>(res));
    }
    // The bytes are consumed or staged by now: the buffer goes straight back.
    buffers_.Recycle(bid);
    if (!c.recv_armed && !c.closing && !c.recv_paused && !c.peer_eof) ArmRecv(c, slot);
  } else if (res == 0) {
    c.peer_eof = true;
    if (c.lingering) {
      SubmitClose(c, slot);
    } else if (!c.closing) {
      // A half-closed peer still gets answers to what it sent; AfterProgress
      // closes once they are out.
      AfterProgress(c, slot);
    }
  } else if (res == -ENOBUFS) {
    // Every provided buffer was in use: not fatal. Re-armed after this batch
    // returns its buffers (only if the multishot really ended).
    stats_.recv_nobufs.Add();
    if (!c.recv_armed) starved_[starved_count_++] = slot;
  } else if (res == -ECANCELED) {
    // We cancelled it (pause); nothing to do.
  } else if (!c.closing) {
    Abort(c, slot);  // ECONNRESET and friends
  } else if (c.lingering) {
    SubmitClose(c, slot);
  }
  MaybeFree(c, slot);
}

void EventLoop::HandleInput(Connection& c, uint32_t slot, const char* data, size_t len) {
  if (c.in_len == 0 && CanProcess(c)) {
    // Common case: whole requests in one receive, parsed in place.
    const size_t consumed = ProcessRequests(c, slot, data, len);
    if (consumed < len && !c.close_after_send) StageInput(c, data + consumed, len - consumed);
  } else {
    if (!StageInput(c, data, len)) {
      Abort(c, slot);
      return;
    }
    ProcessStaged(c, slot);
  }
  AfterProgress(c, slot);
}

void EventLoop::ProcessStaged(Connection& c, uint32_t slot) {
  if (c.in_len == 0 || !CanProcess(c)) return;
  const size_t consumed = ProcessRequests(c, slot, c.in, c.in_len);
  if (c.close_after_send || consumed >= c.in_len) {
    ReleaseInput(c);
  } else if (consumed > 0) {
    std::memmove(c.in, c.in + consumed, c.in_len - consumed);
    c.in_len -= static_cast<uint32_t>(consumed);
  }
}

std::string_view EventLoop::RequestLine(const http::Request& request) {
  const char* begin = request.method.data();
  const void* lf = std::memchr(begin, '\n', request.head_bytes);
  size_t len = lf != nullptr ? static_cast<size_t>(static_cast<const char*>(lf) - begin) : 0;
  if (len > 0 && begin[len - 1] == '\r') --len;
  return std::string_view(begin, len);
}

void EventLoop::FetchPeerAddress(uint32_t slot, uint32_t file_index) {
  // A direct descriptor has no fd for getpeername(): ask through the ring,
  // getsockopt(SOL_SOCKET, SO_PEERNAME) as an IORING_OP_URING_CMD (Linux
  // 6.7+). On an older kernel it fails and the log shows "-".
  peers_[slot] = sockaddr_in{};
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, static_cast<int>(file_index), nullptr, 0, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  sqe->off = SOCKET_URING_OP_GETSOCKOPT;                          // cmd_op
  sqe->addr = uint64_t{SOL_SOCKET} | (uint64_t{SO_PEERNAME} << 32);  // level, optname
  sqe->splice_fd_in = sizeof(sockaddr_in);                          // optlen
  sqe->addr3 = reinterpret_cast<uint64_t>(&peers_[slot]);           // optval
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
}

void EventLoop::LogResponse(uint32_t slot, std::string_view request_line, int status,
                            const char* response, size_t len, bool head_only) {
  size_t body = 0;
  const void* blank = memmem(response, len, "\r\n\r\n", 4);
  if (blank != nullptr && !head_only) {
    body = len - (static_cast<size_t>(static_cast<const char*>(blank) - response) + 4);
  }
  access_log_.Append(&peers_[slot], request_line, status, body);
}

bool EventLoop::CompleteRequestAt(const char* data, size_t len) {
  if (len == 0) return false;
  http::Request request;
  // Scratch headers: headers_ still holds the request being answered.
  http::Header scratch[32];
  const http::ParseResult r = http::ParseRequest(std::string_view(data, len), config_.limits,
                                                 &request, scratch, 32);
  // An error also counts: it will be answered (and the connection closed).
  return r.status != http::ParseStatus::kIncomplete;
}

bool EventLoop::CanProcess(const Connection& c) const {
  return !c.task_inflight && !c.close_after_send && !c.closing && !c.lingering &&
         c.out_len - c.out_sent < kOutputHighWater;
}

size_t EventLoop::ProcessRequests(Connection& c, uint32_t slot, const char* data, size_t len) {
  size_t off = 0;
  while (off < len && CanProcess(c)) {
    http::Request request;
    const http::ParseResult parsed =
        http::ParseRequest(std::string_view(data + off, len - off), config_.limits, &request,
                           headers_.get(), headers_capacity_);
    if (parsed.status == http::ParseStatus::kIncomplete) {
      if (parsed.head_complete && request.expect_continue && !c.sent_continue) {
        AppendOutput(c, kContinue.data(), kContinue.size());
        c.sent_continue = true;
      }
      break;
    }
    const int64_t started_ns = SteadyNs();
    http::SerializeOptions options;
    if (parsed.status == http::ParseStatus::kError) {
      // The stream cannot be trusted past a bad request: answer and close.
      stats_.bad_requests.Add();
      current_request_line_ = "-";
      Debug(config_, "uring-http: thread %d: slot %u: bad request: %d\n", index_, slot,
            parsed.error_status);
      options.keep_alive = false;
      AppendError(c, parsed.error_status, options, unmatched_route_, started_ns);
      c.close_after_send = true;
      c.linger = true;  // the peer may still be sending the bad request's body
      return len;
    }
    stats_.requests.Add();
    c.sent_continue = false;
    if (peers_ != nullptr) current_request_line_ = RequestLine(request);
    // Draining: the last request already received is answered with
    // "Connection: close"; earlier pipelined ones are answered as usual.
    const bool keep_alive =
        request.keep_alive &&
        !(stopping_ && !CompleteRequestAt(data + off + parsed.consumed,
                                          len - off - parsed.consumed));
    options.keep_alive = keep_alive;
    options.keep_alive_header = keep_alive && request.version == http::Version::kHttp10;
    options.head_only = request.method_id == http::Method::kHead;
    const router::Match match = router_.Find(request.method, request.path);
    if (match.route == nullptr) {
      AppendError(c, match.path_known ? 405 : 404, options, unmatched_route_, started_ns,
                  match.allow);
    } else if (match.route->kind == router::HandlerKind::kSlow && workers_ != nullptr) {
      if (DispatchSlow(c, slot, data + off, parsed.consumed, *match.route, options,
                       started_ns)) {
        off += parsed.consumed;
        if (!keep_alive) {
          c.close_after_send = true;
          c.linger = off < len;
        }
        break;  // later requests wait: responses go out in request order
      }
      stats_.slow_rejected.Add();
      Debug(config_, "uring-http: thread %d: worker queue full: 503\n", index_);
      AppendError(c, 503, options, match.route->id, started_ns);
    } else {
      RunInline(c, request, *match.route, options, started_ns);
    }
    off += parsed.consumed;
    if (!keep_alive) {
      c.close_after_send = true;
      c.linger = off < len;
      return len;  // nothing after a closing request is answered
    }
  }
  return off;
}

void EventLoop::RunInline(Connection& c, const http::Request& request, const router::Route& route,
                          const http::SerializeOptions& options, int64_t started_ns) {
  http::Response response;
  try {
    route.handler(request, response);
  } catch (...) {
    response = http::Response();
    response.set_status(500);
  }
  // Serialize straight into the connection's output; measure first only if
  // the free space is too small.
  char* dst = ReserveOutput(c, 0);
  size_t room = c.out_cap - c.out_len;
  size_t size = http::SerializeResponse(response, options, dst, room);
  if (size > room) {
    dst = ReserveOutput(c, size);
    http::SerializeResponse(response, options, dst, size);
  }
  c.out_len += static_cast<uint32_t>(size);
  CountStatus(route.id, response.status(), started_ns);
  if (peers_ != nullptr) {
    LogResponse(SlotOf(c), current_request_line_, response.status(), c.out + c.out_len - size,
                size, options.head_only);
  }
}

void EventLoop::AppendError(Connection& c, int status, const http::SerializeOptions& options,
                            uint32_t route_id, int64_t started_ns, std::string_view allow) {
  CountStatus(route_id, status, started_ns);
  char buf[512];
  const size_t size = http::SerializeError(status, options, allow, buf, sizeof(buf));
  AppendOutput(c, buf, std::min(size, sizeof(buf)));
  if (peers_ != nullptr) {
    LogResponse(SlotOf(c), current_request_line_, status, buf, std::min(size, sizeof(buf)),
                options.head_only);
  }
}

void EventLoop::CountStatus(uint32_t route_id, int status, int64_t started_ns) {
  const int64_t elapsed_ns = SteadyNs() - started_ns;
  route_stats_[route_id].Record(status, elapsed_ns > 0 ? static_cast<uint64_t>(elapsed_ns) / 1000
                                                       : 0);
  if (status < 400) {
    stats_.responses_2xx.Add();
  } else if (status < 500) {
    stats_.responses_4xx.Add();
  } else {
    stats_.responses_5xx.Add();
  }
}

bool EventLoop::DispatchSlow(Connection& c, uint32_t slot, const char* raw, size_t raw_len,
                             const router::Route& route, const http::SerializeOptions& options,
                             int64_t started_ns) {
  const std::string_view log_line = peers_ != nullptr ? current_request_line_.substr(0, 512)
                                                     : std::string_view();
  const size_t need = sizeof(worker::TaskBuffer) + raw_len + log_line.size();
  char* mem;
  size_t capacity;
  if (need <= chunks_.chunk_size()) {
    mem = chunks_.Acquire();
    capacity = chunks_.chunk_size() - sizeof(worker::TaskBuffer) - log_line.size();
  } else {
    // A request larger than a chunk (a big body): the heap, released through
    // the pool, which tells its own chunks from heap memory by address.
    mem = static_cast<char*>(std::malloc(need));
    if (mem == nullptr) return false;
    capacity = raw_len;
  }
  auto* buf = new (mem) worker::TaskBuffer();
  buf->request_len = static_cast<uint32_t>(raw_len);
  buf->capacity = static_cast<uint32_t>(capacity);
  buf->keep_alive = options.keep_alive;
  buf->keep_alive_header = options.keep_alive_header;
  buf->head_only = options.head_only;
  buf->route_id = route.id;
  buf->started_ns = started_ns;
  std::memcpy(buf->data(), raw, raw_len);
  buf->log_len = static_cast<uint32_t>(log_line.size());
  if (!log_line.empty()) std::memcpy(buf->data() + capacity, log_line.data(), log_line.size());
  worker::SlowTask task;
  task.route = &route;
  task.buffer = buf;
  task.ring_fd = ring_->fd();
  task.user_data = PackUserData(Op::kTaskDone, slot, c.generation);
  task.enqueued_ns = started_ns;
  if (!workers_->Submit(task)) {
    chunks_.Release(mem);
    return false;
  }
  c.task = buf;
  c.task_inflight = true;
  stats_.slow_dispatched.Add();
  return true;
}

void EventLoop::OnTaskDone(uint32_t slot, uint32_t generation) {
  if (slot >= capacity_) return;
  Connection& c = connections_[slot];
  if (!c.in_use || c.generation != generation || !c.task_inflight) {
    // Slots live until their task returns, so this is a stray message.
    stats_.results_dropped.Add();
    return;
  }
  worker::TaskBuffer* buf = c.task;
  // Pairs with the worker's release store (see slow_task.h).
  while (buf->state.load(std::memory_order_acquire) != worker::TaskBuffer::kDone) {
  }
  stats_.slow_completed.Add();
  c.task_inflight = false;
  c.task = nullptr;
  if (!c.closing) {
    // Status for the counters: "HTTP/1.1 NNN" starts every response.
    const char* resp = buf->response();
    const size_t len = buf->response_len;
    if (len > 12) {
      CountStatus(buf->route_id,
                  (resp[9] - '0') * 100 + (resp[10] - '0') * 10 + (resp[11] - '0'),
                  buf->started_ns);
    }
    // Decided now, not at dispatch: if the server began draining while the
    // handler ran, this is the last answer unless more requests are waiting.
    const bool keep_alive =
        buf->keep_alive && !(stopping_ && !CompleteRequestAt(c.in, c.in_len));
    std::string_view connection;
    if (!keep_alive) {
      connection = "Connection: close\r\n";
      if (!c.close_after_send) {
        c.close_after_send = true;
        c.linger = c.in_len > 0;
      }
    } else if (buf->keep_alive_header) {
      connection = "Connection: keep-alive\r\n";
    }
    if (peers_ != nullptr) {
      LogResponse(slot, std::string_view(buf->log_line(), buf->log_len),
                  len > 12 ? (resp[9] - '0') * 100 + (resp[10] - '0') * 10 + (resp[11] - '0') : 0,
                  resp, len, buf->head_only);
    }
    // Header values cannot hold CRLF, so the first blank line ends the head.
    const char* blank = static_cast<const char*>(memmem(resp, len, "\r\n\r\n", 4));
    if (blank != nullptr && !connection.empty()) {
      const size_t head = static_cast<size_t>(blank - resp) + 2;
      AppendOutput(c, resp, head);
      AppendOutput(c, connection.data(), connection.size());
      AppendOutput(c, resp + head, len - head);
    } else {
      AppendOutput(c, resp, len);
    }
  }
  std::free(buf->heap_response);
  buf->~TaskBuffer();
  chunks_.Release(reinterpret_cast<char*>(buf));
  if (c.closing) {
    MaybeFree(c, slot);
    return;
  }
  ProcessStaged(c, slot);
  AfterProgress(c, slot);
}

// ---------------------------------------------------------------- buffers

char* EventLoop::ReserveOutput(Connection& c, size_t bytes) {
  if (c.out == nullptr) {
    if (bytes <= chunks_.chunk_size()) {
      c.out = chunks_.Acquire();
      c.out_cap = static_cast<uint32_t>(chunks_.chunk_size());
    } else {
      c.out = static_cast<char*>(std::malloc(bytes));
      c.out_cap = static_cast<uint32_t>(bytes);
    }
    c.out_len = c.out_sent = 0;
  }
  if (c.out_cap - c.out_len >= bytes) return c.out + c.out_len;
  // Compact, or grow into a heap buffer. A send in flight still reads the old
  // buffer, so it is retired until that send completes, not freed.
  const size_t unsent = c.out_len - c.out_sent;
  if (!c.send_inflight && !OutPinned(c) && c.out_sent > 0 && c.out_cap - unsent >= bytes) {
    std::memmove(c.out, c.out + c.out_sent, unsent);
    c.out_len = static_cast<uint32_t>(unsent);
    c.out_sent = 0;
    return c.out + c.out_len;
  }
  const size_t new_cap = std::max<size_t>(size_t{c.out_cap} * 2, c.out_len + bytes);
  char* grown = static_cast<char*>(std::malloc(new_cap));
  std::memcpy(grown, c.out, c.out_len);
  if (OutPinned(c)) {
    c.zc_hold = c.out;  // the kernel still reads it: released at the notification
  } else if (c.send_inflight && c.out_retired == nullptr) {
    c.out_retired = c.out;
  } else {
    chunks_.Release(c.out);
  }
  c.out = grown;
  c.out_cap = static_cast<uint32_t>(new_cap);
  return c.out + c.out_len;
}

void EventLoop::AppendOutput(Connection& c, const char* data, size_t len) {
  char* dst = ReserveOutput(c, len);
  std::memcpy(dst, data, len);
  c.out_len += static_cast<uint32_t>(len);
}

bool EventLoop::StageInput(Connection& c, const char* data, size_t len) {
  const size_t need = size_t{c.in_len} + len;
  // The parser bounds a request's head and Content-Length; what exceeds that
  // plus the pause threshold is a peer we cannot be serving honestly.
  const size_t hard_limit = config_.limits.max_request_line + config_.limits.max_header_bytes +
                            config_.limits.max_body_bytes + 2 * kStagedPauseBytes;
  if (need > hard_limit) return false;
  if (c.in == nullptr) {
    if (need <= chunks_.chunk_size()) {
      c.in = chunks_.Acquire();
      c.in_cap = static_cast<uint32_t>(chunks_.chunk_size());
    } else {
      c.in = static_cast<char*>(std::malloc(need));
      c.in_cap = static_cast<uint32_t>(need);
    }
  } else if (need > c.in_cap) {
    const size_t new_cap = std::max<size_t>(size_t{c.in_cap} * 2, need);
    char* grown = static_cast<char*>(std::malloc(new_cap));
    std::memcpy(grown, c.in, c.in_len);
    chunks_.Release(c.in);
    c.in = grown;
    c.in_cap = static_cast<uint32_t>(new_cap);
  }
  std::memcpy(c.in + c.in_len, data, len);
  c.in_len = static_cast<uint32_t>(need);
  return true;
}

void EventLoop::ReleaseInput(Connection& c) {
  if (c.in != nullptr) chunks_.Release(c.in);
  c.in = nullptr;
  c.in_len = c.in_cap = 0;
}

// ---------------------------------------------------------------- output

void EventLoop::Flush(Connection& c, uint32_t slot) {
  if (c.send_inflight || c.closing || c.out_sent == c.out_len) return;
  io_uring_sqe* sqe = Sqe();
  const uint32_t len = c.out_len - c.out_sent;
  // One zero-copy send per connection at a time, so one held buffer suffices;
  // output queued meanwhile goes with a plain send.
  c.send_is_zc = send_zc_ && len >= config_.send_zc_min_bytes && !c.zc_notif_pending &&
                 now_tick_ >= zc_paused_until_tick_;
  // MSG_WAITALL: io_uring retries a short send itself before completing.
  if (c.send_is_zc) {
    // REPORT_USAGE: the notification says whether the kernel had to copy
    // after all (it does for loopback), which /metrics shows.
    io_uring_prep_send_zc(sqe, static_cast<int>(c.file_index), c.out + c.out_sent, len,
                          MSG_NOSIGNAL | MSG_WAITALL, IORING_SEND_ZC_REPORT_USAGE);
    c.zc_notif_pending = true;
    stats_.sends_zc.Add();
  } else {
    io_uring_prep_send(sqe, static_cast<int>(c.file_index), c.out + c.out_sent, len,
                       MSG_NOSIGNAL | MSG_WAITALL);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kSend, slot, c.generation));
  c.send_inflight = true;
}

void EventLoop::OnSend(Connection& c, uint32_t slot, const io_uring_cqe* cqe) {
  const int res = cqe->res;
  c.send_inflight = false;
  if (c.send_is_zc && !(cqe->flags & IORING_CQE_F_MORE)) {
    // No notification follows (the send failed before using the bytes).
    c.zc_notif_pending = false;
    ReleaseOutputBuffer(c, std::exchange(c.zc_hold, nullptr));
  }
  const bool was_zc = c.send_is_zc;
  c.send_is_zc = false;
  if (c.out_retired != nullptr) {
    chunks_.Release(c.out_retired);
    c.out_retired = nullptr;
  }
  if (was_zc && res == -ENOMEM && !c.closing) {
    // The pages a zero-copy send pins count against RLIMIT_MEMLOCK unless
    // we hold CAP_IPC_LOCK: at the limit, copy instead (this send at once,
    // the thread's next ones for a second) rather than fail the response.
    stats_.sends_zc_refused.Add();
    zc_paused_until_tick_ = now_tick_ + 1000 / kTickMs;
    Flush(c, slot);
    return;
  }
  if (res < 0) {
    if (!c.closing) Abort(c, slot);  // EPIPE, ECONNRESET: the peer is gone
    MaybeFree(c, slot);
    return;
  }
  c.out_sent += static_cast<uint32_t>(res);
  if (c.out_sent == c.out_len && c.out != nullptr) {
    // Everything is out: the chunk goes back so idle connections hold none.
    ReleaseOutputBuffer(c, c.out);
    c.out = nullptr;
    c.out_len = c.out_sent = c.out_cap = 0;
  }
  if (c.closing) {
    MaybeFree(c, slot);
    return;
  }
  ProcessStaged(c, slot);
  AfterProgress(c, slot);
}

void EventLoop::OnSendNotification(Connection& c, uint32_t slot, const io_uring_cqe* cqe) {
  if (cqe->res & IORING_NOTIF_USAGE_ZC_COPIED) stats_.sends_zc_copied.Add();
  c.zc_notif_pending = false;
  if (c.zc_hold != nullptr) chunks_.Release(std::exchange(c.zc_hold, nullptr));
  MaybeFree(c, slot);  // a closing connection waited for this
}

void EventLoop::ReleaseOutputBuffer(Connection& c, char* buffer) {
  if (buffer == nullptr) return;
  if (OutPinned(c) && buffer == c.out) {
    c.zc_hold = buffer;
    return;
  }
  chunks_.Release(buffer);
}

// Called after anything that may have queued output or unblocked input:
// sends what is pending, closes when done, and sets the right timer.
void EventLoop::AfterProgress(Connection& c, uint32_t slot) {
  if (c.closing || c.lingering) return;
  Flush(c, slot);
  if (c.close_after_send && !c.task_inflight && !c.send_inflight && c.out_len == c.out_sent) {
    StartGracefulClose(c, slot);
    return;
  }
  // Back-pressure: stop receiving while staged input waits behind a blocked
  // request; resume once it drains.
  if (c.in_len > kStagedPauseBytes && !CanProcess(c) && c.recv_armed && !c.recv_paused) {
    c.recv_paused = true;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_cancel64(sqe, PackUserData(Op::kRecv, slot, c.generation), 0);
    io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  } else if (c.recv_paused && c.in_len <= kStagedPauseBytes / 2) {
    c.recv_paused = false;
    if (!c.recv_armed && !c.peer_eof) ArmRecv(c, slot);
  }
  if (c.send_inflight) {
    SetTimer(c, slot, kTimerSend);
  } else if (c.task_inflight) {
    SetTimer(c, slot, kTimerNone);  // the handler's duration is not the peer's fault
  } else if (c.in_len > 0) {
    if (c.timer_kind != kTimerHeader) SetTimer(c, slot, kTimerHeader);
  } else {
    SetTimer(c, slot, kTimerIdle);
  }
  const bool quiet = !c.task_inflight && !c.send_inflight && c.out_len == c.out_sent;
  if (c.peer_eof && quiet && (c.in_len == 0 || CanProcess(c))) {
    // The peer is done sending and everything it asked is answered.
    Abort(c, slot);
  }
  // Draining and quiet after a response that said keep-alive (it went out
  // before the drain began): the peer may already be sending its next
  // request, so the connection waits out the idle grace set above instead of
  // closing under it; that request gets "Connection: close".
}

// ---------------------------------------------------------------- closing

void EventLoop::StartGracefulClose(Connection& c, uint32_t slot) {
  ReleaseInput(c);
  if (!c.linger || c.peer_eof || !c.recv_armed) {
    // The response is with the kernel and nothing more is expected from the
    // peer (the heuristic nginx uses): close now; the FIN follows the data.
    SubmitClose(c, slot);
    return;
  }
  // Lingering close, for a peer whose input we left unread (an error, or
  // requests after "Connection: close"): send our FIN now but keep reading
  // and discarding until the peer's, because closing with unread input sends
  // a RST that can destroy the response still on its way to the peer.
  c.lingering = true;
  c.shutdown_pending = true;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_shutdown(sqe, static_cast<int>(c.file_index), SHUT_WR);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kShutdown, slot, c.generation));
  SetTimer(c, slot, kTimerLinger);
}

void EventLoop::Abort(Connection& c, uint32_t slot) { SubmitClose(c, slot); }

void EventLoop::SubmitClose(Connection& c, uint32_t slot) {
  if (c.closing) return;
  c.closing = true;
  c.lingering = false;
  timers_.Cancel(slot);
  c.timer_kind = kTimerNone;
  ReleaseInput(c);
  if (c.shutdown_pending) {
    // IORING_OP_SHUTDOWN runs asynchronously and resolves the descriptor
    // late: closing now would free the table entry, the next accept could
    // reuse it, and our SHUT_WR would hit that new connection.
    c.close_deferred = true;
    return;
  }
  IssueClose(c, slot);
}

void EventLoop::IssueClose(Connection& c, uint32_t slot) {
  c.close_deferred = false;
  ring_->ReserveSqes(2);
  if (c.recv_armed || c.send_inflight) {
    // A close alone would not end the multishot receive or a pending send
    // (each holds its own reference to the socket), so they are cancelled
    // first; the cancel runs inline, unlike a shutdown. HARDLINK: the close
    // runs whatever the cancel finds.
    io_uring_sqe* sqe = Sqe();
    if (c.send_inflight) {
      io_uring_prep_cancel_fd(sqe, static_cast<int>(c.file_index),
                              IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
    } else {
      // Only the receive is left, the common case (every close after an
      // answer). Matching its user_data is one hash-bucket lookup; matching
      // by descriptor walks every armed request of the ring, which showed
      // in connection-per-request profiles.
      io_uring_prep_cancel64(sqe, PackUserData(Op::kRecv, slot, c.generation), 0);
    }
    sqe->flags |= IOSQE_IO_HARDLINK;
    io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  }
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_close_direct(sqe, c.file_index);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kClose, slot, c.generation));
}

void EventLoop::MaybeFree(Connection& c, uint32_t slot) {
  if (!c.closing || !c.close_done || c.recv_armed || c.send_inflight || c.task_inflight ||
      c.zc_notif_pending) {
    return;
  }
  ReleaseInput(c);
  if (c.out != nullptr) chunks_.Release(c.out);
  if (c.zc_hold != nullptr) chunks_.Release(c.zc_hold);
  if (c.out_retired != nullptr) chunks_.Release(c.out_retired);
  timers_.Cancel(slot);
  Debug(config_, "uring-http: thread %d: closed slot %u\n", index_, slot);
  const uint32_t generation = c.generation + 1;
  c = Connection();
  c.generation = generation;
  c.next_free = free_head_;
  free_head_ = slot;
  ++free_count_;
  stats_.active.Sub();
}

// ---------------------------------------------------------------- timers

void EventLoop::SetTimer(Connection& c, uint32_t slot, TimerKind kind) {
  uint32_t ms = 0;
  switch (kind) {
    case kTimerNone: break;
    case kTimerIdle:
      ms = config_.idle_timeout_ms;
      // Draining: a connection between requests gets a short grace, so that
      // a request already on its way is answered (with Connection: close)
      // instead of lost to our close.
      if (stopping_ && (ms == 0 || ms > kDrainIdleGraceMs)) ms = kDrainIdleGraceMs;
      break;
    case kTimerHeader: ms = config_.header_timeout_ms; break;
    case kTimerSend: ms = config_.send_timeout_ms; break;
    case kTimerLinger: ms = config_.linger_timeout_ms; break;
  }
  const bool same_kind = c.timer_kind == kind;
  c.timer_kind = kind;
  if (ms == 0) {
    timers_.Cancel(slot);
    return;
  }
  // +1: a tick may be just about to fire; never expire early.
  const uint64_t deadline = now_tick_ + (ms + kTickMs - 1) / kTickMs + 1;
  if (same_kind) {
    timers_.Extend(slot, deadline);  // the keep-alive hot path: one store
  } else {
    timers_.Schedule(slot, deadline);
  }
}

void EventLoop::OnTimerTick() {
  const uint64_t now = now_tick_;
  access_log_.Flush();
  timers_.Advance(now, [this](uint32_t slot) { OnTimerExpired(slot); });
  stats_.chunk_heap_fallbacks.Add(chunks_.heap_fallbacks() - stats_.chunk_heap_fallbacks.Get());
  if (stopping_ && now >= stop_deadline_tick_) {
    // Drain time is up: whatever is still open is closed now.
    for (uint32_t slot = 0; slot < capacity_; ++slot) {
      Connection& c = connections_[slot];
      if (c.in_use && !c.closing) Abort(c, slot);
    }
  }
  ArmTimerTick();
}

void EventLoop::OnTimerExpired(uint32_t slot) {
  Connection& c = connections_[slot];
  if (!c.in_use || c.closing) return;
  stats_.timeouts.Add();
  const uint8_t kind = c.timer_kind;
  c.timer_kind = kTimerNone;
  Debug(config_, "uring-http: thread %d: slot %u timed out (kind %d)\n", index_, slot, kind);
  if (kind == kTimerHeader && !c.send_inflight && c.out_len == c.out_sent) {
    // A slowloris client: tell it why, then close.
    http::SerializeOptions options;
    options.keep_alive = false;
    current_request_line_ = "-";
    AppendError(c, 408, options, unmatched_route_, SteadyNs());
    c.close_after_send = true;
    c.linger = true;  // it is still sending its headers
    ReleaseInput(c);
    Flush(c, slot);
    SetTimer(c, slot, kTimerSend);
    return;
  }
  Abort(c, slot);
}

// ---------------------------------------------------------------- stopping

void EventLoop::OnSignal(int res) {
  if (res > 0 && on_signal_) on_signal_();
  if (!stopping_) ArmSignalRead();
}

void EventLoop::OnStop() {
  if (stopping_) return;
  stopping_ = true;
  stop_deadline_tick_ = now_tick_ + (config_.shutdown_timeout_ms + kTickMs - 1) / kTickMs;
  // Stop accepting; connections already accepted are answered below.
  ring_->ReserveSqes(3);
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, 0),
                         IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  sqe = Sqe();
  io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptSingle, 0),
                         IORING_ASYNC_CANCEL_ALL);
  sqe->flags |= IOSQE_IO_HARDLINK;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  // Shutting the listener down takes it out of the SO_REUSEPORT group at
  // once: new connections go to the other listeners (or another process on
  // the same port) instead of waiting in a queue nobody accepts from.
  sqe = Sqe();
  io_uring_prep_shutdown(sqe, listen_fd_, SHUT_RDWR);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  for (uint32_t slot = 0; slot < capacity_; ++slot) {
    Connection& c = connections_[slot];
    if (!c.in_use || c.closing || c.lingering) continue;
    if (!c.task_inflight && !c.send_inflight && c.out_len == c.out_sent && c.in_len == 0) {
      SetTimer(c, slot, kTimerIdle);  // idle: closed after the drain grace
    }
    // The rest finish their current request and get "Connection: close".
  }
}

}  // namespace uring_http::serving
