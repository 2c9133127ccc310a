// EventLoop as its connections' host: accepting them into slots, and the
// SQEs their requests become (receives, sends, closes, deadlines, SLOW
// tasks, the exchange's metrics and access log). The ring's dispatch and
// life are in event_loop.cc.
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "src/base/check.h"
#include "src/base/error_log.h"
#include "src/io/socket_ops.h"
#include "src/io/uring_compat.h"
#include "src/serving/event_loop.h"
#include "src/serving/loop_internal.h"

namespace uring_http::serving {

// ---------------------------------------------------------------- accept

void EventLoop::OnAccept(const io_uring_cqe* cqe) {
  const uint32_t listener = Acceptor::Listener(cqe->user_data);
  const bool plain = listener >= plain_begin_;
  Acceptor& acceptor = acceptors_[listener];
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
      internal::Debug(config_, "uring-http: thread %d: accepted slot %u (direct descriptor %d)\n", index_,
            slot, file_index);
      FetchPeerAddress(slot, s.file_index, peer_lengths_[listener]);
      // Every connection starts as HTTP/1.
      s.protocol = &s.http1;
      if (ssl != nullptr) tls_->Attach(slot, s.protocol, ssl);
      // A TLS connection's PROXY header (if the listener expects one) comes
      // in clear before its ClientHello: the TLS layer reads it.
      s.http1.Open(&env_, slot, /*proxy_header_below=*/ssl != nullptr);
    }
  }
  acceptor.Ensure();
}

bool EventLoop::AcceptorsIdle() const {
  for (const Acceptor& acceptor : acceptors_) {
    if (!acceptor.idle()) return false;
  }
  return true;
}

void EventLoop::OnEntryClosed() {
  acceptors_[0].OnEntryClosed();
  for (size_t i = 1; i < acceptors_.size(); ++i) acceptors_[i].Ensure();
}

void EventLoop::FetchPeerAddress(uint32_t slot, uint32_t file_index, uint32_t peer_length) {
  // A direct descriptor has no fd for getpeername(): ask through the ring,
  // getsockopt(SOL_SOCKET, SO_PEERNAME) as an IORING_OP_URING_CMD (Linux
  // 6.7+). On an older kernel it fails and the log shows "-".
  // Handlers see it as Request::client_address, the access log logs it.
  // It completes as it is issued (a socket's getsockopt never waits), so
  // it is written before the receive issued after it can complete.
  http::ClientAddress* peer = slots_[slot].http1.peer_address();
  *peer = http::ClientAddress();
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, static_cast<int>(file_index), nullptr, 0, 0);
  // CQE_SKIP_SUCCESS: a success has nothing to say (the address is in
  // place); only a failure (an older kernel) posts a completion.
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_CQE_SKIP_SUCCESS;
  sqe->off = SOCKET_URING_OP_GETSOCKOPT;                          // cmd_op
  sqe->addr = uint64_t{SOL_SOCKET} | (uint64_t{SO_PEERNAME} << 32);  // level, optname
  // optlen: the listener's family's (see Init()); a Unix client's is its
  // family alone.
  sqe->splice_fd_in = static_cast<int32_t>(peer_length);
  sqe->addr3 = reinterpret_cast<uint64_t>(peer->raw());  // optval
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
}

// ---------------------------------------------------------------- host

void EventLoop::ArmRecv(uint32_t slot, bool bulk, bool once) {
  Slot& s = slots_[slot];
  s.recv_bulk = bulk;
  if (once) {
    io::PrepRecvOnce(Sqe(), s.file_index, bulk ? internal::kBulkBufferGroup : internal::kBufferGroup,
                     RecvUserData(slot));
  } else {
    io::PrepRecvMultishot(Sqe(), s.file_index, bulk ? internal::kBulkBufferGroup : internal::kBufferGroup,
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
  ring_->ReserveSqes(3);
  if (recv_armed || send_inflight) {
    // A close alone would not end the multishot receive or a pending send
    // (each holds its own reference to the socket), so they are cancelled
    // first; the cancel runs inline, unlike a shutdown. HARDLINK: the close
    // runs whatever the cancel finds.
    io_uring_sqe* sqe = Sqe();
    if (send_inflight) {
      // A splice to the socket runs on io-wq, and io_uring resolves its
      // direct descriptor only when a worker starts it: one still queued
      // holds no reference to our socket, so the cancel by descriptor below
      // does not find it, the close frees the entry, the next accept takes
      // it, and the queued splice would send this connection's file bytes
      // to the new client (it did: a stress of clients leaving mid-download
      // beside new ones saw 1 new connection in 100 get another's bytes
      // before its own head). Cancelled by its user_data first, it is
      // taken off the queue (or, already running, holds our socket).
      io::PrepCancel(sqe, UserData(Op::kFileSplice, slot), PackUserData(Op::kIgnore, 0, 0));
      sqe->flags |= IOSQE_IO_HARDLINK;
      sqe = Sqe();
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
  task->notify_user_data = UserData(Op::kStreamNotify, slot);
  if (route.kind == router::HandlerKind::kAsync) {
    // On this ring, as a coroutine; its answer comes back as a kTaskDone
    // like a worker's (Runner::RunReady).
    if (async_->Start(task, route, UserData(Op::kTaskDone, slot), internal::SteadyNs())) {
      return true;
    }
    internal::Debug(config_, "uring-http: thread %d: every ASYNC exchange is taken: 503\n", index_);
    return false;
  }
  if (workers_ == nullptr) return false;
  task->ring.ring_fd = ring_->fd();
  task->ring.mailbox = mailbox_.get();
  task->notify_user_data = UserData(Op::kStreamNotify, slot);
  worker::SlowTask t;
  t.route = &route;
  t.pipeline = &router_.pipeline();
  t.buffer = task;
  t.user_data = UserData(Op::kTaskDone, slot);
  t.stream = task->stream;
  t.enqueued_ns = started_ns;
  if (!workers_->Submit(t)) {
    internal::Debug(config_, "uring-http: thread %d: worker queue full: 503\n", index_);
    return false;
  }
  if (route.options.timeout.count() > 0) {
    const int64_t timeout_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(route.options.timeout).count();
    slow_deadlines_.push_back(
        {started_ns + timeout_ns, slot, slots_[slot].generation, task->stream, task});
  }
  return true;
}

void EventLoop::CheckSlowDeadlines(int64_t now_ns) {
  for (size_t i = 0; i < slow_deadlines_.size();) {
    const SlowDeadline d = slow_deadlines_[i];
    if (now_ns < d.at_ns) {
      ++i;
      continue;
    }
    slow_deadlines_[i] = slow_deadlines_.back();
    slow_deadlines_.pop_back();
    // The entry would have gone at the task's kTaskDone: its slot and
    // task are still the ones it names.
    URING_CHECK(slots_[d.slot].in_use && slots_[d.slot].generation == d.generation);
    StopTask(d.slot, d.task, http::StopReason::kDeadline);
  }
}

void EventLoop::ForgetSlowDeadline(uint32_t slot, uint32_t generation, uint32_t stream) {
  for (size_t i = 0; i < slow_deadlines_.size(); ++i) {
    const SlowDeadline& d = slow_deadlines_[i];
    if (d.slot == slot && d.generation == generation && d.stream == stream) {
      slow_deadlines_[i] = slow_deadlines_.back();
      slow_deadlines_.pop_back();
      return;
    }
  }
}

void EventLoop::StopTask(uint32_t, worker::TaskBuffer* task, http::StopReason why) {
  // A task that has completed has nothing left to stop (and an ASYNC one's
  // exchange may serve another request by now).
  if (task->state.load(std::memory_order_acquire) == worker::TaskBuffer::kDone) return;
  const auto now = static_cast<http::StopReason>(task->stop.load(std::memory_order_relaxed));
  if (!http::StopReasonOutranks(why, now)) return;
  // Release: what the ring knew before is the handler's when it reads it.
  task->stop.store(static_cast<uint32_t>(why), std::memory_order_release);
  if (task->async_exchange != worker::TaskBuffer::kNoExchange) {
    async_->Stop(task, why);
  } else {
    // A SLOW handler may be asleep in Request::WaitForStop: woken now.
    syscall(SYS_futex, &task->stop, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
  }
}

void EventLoop::PrepTimeout(uint64_t user_data, const __kernel_timespec* ts) {
  io_uring_sqe* sqe = Sqe();
  // A relative timeout with no completion count: it ends only when the
  // time is up (-ETIME) or it is cancelled (-ECANCELED).
  // (liburing's prototype is not const-correct: the kernel only reads it.)
  io_uring_prep_timeout(sqe, const_cast<__kernel_timespec*>(ts), 0, 0);
  io_uring_sqe_set_data64(sqe, user_data);
}

void EventLoop::PrepCancel(uint64_t user_data) {
  // ASYNC_CANCEL finds a timeout by its user_data too; the cancelled one
  // completes with -ECANCELED, this request's own result is not needed.
  io::PrepCancel(Sqe(), user_data, PackUserData(Op::kIgnore, 0, 0));
}

void EventLoop::PrepIo(uint64_t user_data, const async::IoOp& op, const __kernel_timespec* ts) {
  // The operation and its linked timeout must go in one submission (a
  // link does not cross one): both SQEs are taken before either is filled.
  ring_->ReserveSqes(ts != nullptr ? 2 : 1);
  io_uring_sqe* sqe = Sqe();
  switch (op.kind) {
    case async::IoOp::Kind::kSocket:
      io_uring_prep_socket(sqe, op.domain, SOCK_STREAM | SOCK_CLOEXEC, 0, 0);
      break;
    case async::IoOp::Kind::kConnect:
      io_uring_prep_connect(sqe, op.fd, op.addr, op.addrlen);
      break;
    case async::IoOp::Kind::kSend:
      // MSG_NOSIGNAL: an upstream that reset is an EPIPE result, not a
      // SIGPIPE; no MSG_WAITALL, the client sends what is left itself.
      io_uring_prep_send(sqe, op.fd, op.buf, op.len, MSG_NOSIGNAL);
      break;
    case async::IoOp::Kind::kRecv:
      io_uring_prep_recv(sqe, op.fd, op.buf, op.len, 0);
      break;
    case async::IoOp::Kind::kOpen:
      io_uring_prep_openat(sqe, AT_FDCWD, op.path, O_RDONLY | O_CLOEXEC, 0);
      break;
    case async::IoOp::Kind::kRead:
      io_uring_prep_read(sqe, op.fd, op.buf, static_cast<unsigned>(op.len), op.offset);
      break;
    case async::IoOp::Kind::kClose:
      io_uring_prep_close(sqe, op.fd);
      break;
  }
  io_uring_sqe_set_data64(sqe, user_data);
  if (ts == nullptr) return;
  // IO_LINK: the timeout below runs while this operation does and cancels
  // it when the time is up (the operation then completes -ECANCELED);
  // the timeout's own completion is nobody's.
  sqe->flags |= IOSQE_IO_LINK;
  io_uring_sqe* timeout = Sqe();
  io_uring_prep_link_timeout(timeout, const_cast<__kernel_timespec*>(ts), 0);
  io_uring_sqe_set_data64(timeout, PackUserData(Op::kIgnore, 0, 0));
}

bool EventLoop::SubmitJob(worker::WorkerJob* job, uint64_t user_data) {
  job->ring.ring_fd = ring_->fd();
  job->ring.mailbox = mailbox_.get();
  worker::SlowTask t;
  t.job = job;
  t.user_data = user_data;
  t.enqueued_ns = internal::SteadyNs();
  return workers_->Submit(t);
}

void EventLoop::HandOff(uint32_t slot, conn::ProtocolId next, const conn::Handoff& handoff) {
  // Only HTTP/1 hands off: to HTTP/2 (an h2c preface or Upgrade, never
  // over TLS, where ALPN chooses), or to a WebSocket after its handshake.
  if (next == conn::ProtocolId::kWebSocket) return StartWebSocket(slot, handoff);
  URING_CHECK(next == conn::ProtocolId::kHttp2 && !Tls(slot));
  StartHttp2(slot, handoff);
}

std::shared_ptr<ws::Sender> EventLoop::MakeSender(uint32_t slot, size_t bound,
                                                  int deflate_window) {
  if (ws_inbox_ == nullptr) {
    ws_inbox_ = std::make_unique<async::RingInbox>(address(), PackUserData(Op::kWsInbox, 0, 0));
  }
  return std::make_shared<ws::Sender>(ws_inbox_.get(),
                                      PackUserData(Op::kWsInbox, slot, slots_[slot].generation),
                                      bound, deflate_window);
}

void EventLoop::RunWsJob(worker::WorkerJob* job) {
  WsJob& j = *static_cast<WsJob*>(job);
  // The application's code on a worker: what it throws is logged, never
  // let through a worker thread (which would end the process).
  try {
    j.work();
  } catch (const std::exception& e) {
    base::LogError(std::string("WebSocket offloaded work threw: ") + e.what());
  } catch (...) {
    base::LogError("WebSocket offloaded work threw");
  }
}

bool EventLoop::Offload(std::function<void()> work) {
  if (workers_ == nullptr || !work) return false;
  uint32_t index;
  if (!ws_jobs_free_.empty()) {
    index = ws_jobs_free_.back();
    ws_jobs_free_.pop_back();
  } else {
    index = static_cast<uint32_t>(ws_jobs_.size());
    if (index >= kMaxSlots) return false;
    ws_jobs_.push_back(std::make_unique<WsJob>());
  }
  WsJob& job = *ws_jobs_[index];
  job.work = std::move(work);
  job.run = &RunWsJob;
  job.busy = true;
  job.Prepare();
  if (!SubmitJob(&job, PackUserData(Op::kWsJob, index, job.generation))) {
    job.work = nullptr;
    job.busy = false;
    ws_jobs_free_.push_back(index);
    return false;
  }
  return true;
}

void EventLoop::OnWsJobDone(uint32_t index, uint32_t generation) {
  URING_CHECK(index < ws_jobs_.size());
  WsJob& job = *ws_jobs_[index];
  URING_CHECK(job.busy && job.generation == generation);
  // The worker stored done (release) after the call, before it posted.
  while (job.done.load(std::memory_order_acquire) == 0) {
  }
  job.work = nullptr;  // what it captured goes now, on the ring
  job.busy = false;
  ++job.generation;
  ws_jobs_free_.push_back(index);
}

void EventLoop::OnWsInbox() {
  if (ws_inbox_ == nullptr) return;
  ws_inbox_->Take(&ws_inbox_taken_);
  for (const uint64_t token : ws_inbox_taken_) {
    // The socket may have ended since (its sender is shut, and its slot
    // perhaps reused: the generation tells).
    const uint32_t slot = UserDataSlot(token);
    if (slot >= capacity_) continue;
    Slot& s = slots_[slot];
    if (!s.in_use || s.generation != UserDataGeneration(token) || s.ws == nullptr ||
        s.protocol != s.ws.get()) {
      continue;
    }
    s.ws->OnPosted();
    MaybeFree(slot);
  }
}

void EventLoop::StartWebSocket(uint32_t slot, const conn::Handoff& handoff) {
  Slot& s = slots_[slot];
  URING_CHECK(s.protocol == &s.http1);
  if (s.ws == nullptr) s.ws = std::make_unique<ws::Connection>();
  s.protocol = s.ws.get();
  s.http1_handed_off = true;
  if (Tls(slot)) tls_->Rebind(slot, s.protocol);
  s.ws->Open(&env_, slot, handoff);
}

void EventLoop::StartHttp2(uint32_t slot, const conn::Handoff& handoff) {
  Slot& s = slots_[slot];
  URING_CHECK(s.protocol == &s.http1);
  if (s.http2 == nullptr) s.http2 = std::make_unique<http2::Connection>();
  s.protocol = s.http2.get();
  s.http1_handed_off = true;
  if (Tls(slot)) tls_->Rebind(slot, s.protocol);
  stats_.http2_connections.Add();
  s.http2->Open(&env_, slot, handoff, s.http1.client_address(), /*secure=*/Tls(slot));
}

void EventLoop::OnAlpnH2(uint32_t slot) {
  // The TLS handshake chose h2: the slot's HTTP/1 connection, which has
  // read nothing yet, gives its (virtual) receive to HTTP/2.
  StartHttp2(slot, slots_[slot].http1.Detach());
}

void EventLoop::ExchangeDone(uint32_t slot, const Exchange& exchange) {
  const int64_t elapsed_ns = internal::SteadyNs() - exchange.started_ns;
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

}  // namespace uring_http::serving
