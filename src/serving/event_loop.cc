#include "src/serving/event_loop.h"

#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "src/base/check.h"
#include "src/base/error_log.h"
#include "src/io/kernel_features.h"
#include "src/io/socket_ops.h"
#include "src/io/uring_compat.h"
#include "src/serving/loop_internal.h"
#include "src/serving/loop_plan.h"

namespace uring_http::serving {
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
    // Not before every accept has ended: one still armed when the ring is
    // left would take a connection's wake-up with it (see Acceptor).
    if (stopping_ && (stats_.active.Get() == 0 || abandoned_) && AcceptorsIdle()) break;
    int ret;
    if (after_batch_count_ > 0) {
      // Workers are owed the bytes of a streamed body that came in small
      // pieces. Look for more completions first (no sleep): while the body
      // keeps arriving, each worker is woken only once it has a good share
      // of its pipe; once the ring would sleep, it gets what there is.
      ret = io_uring_submit_and_get_events(r);
      if (io_uring_cq_ready(r) == 0) {
        RunAfterBatch();
        DeliverTlsOwed();
        // A slot asked again while it ran (what it was owed made it send,
        // and that is owed too): another round before any sleep.
        RunAsyncReady();
        ret = after_batch_count_ > 0 ? io_uring_submit_and_get_events(r)
                                     : io_uring_submit_and_wait(r, 1);
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
          // A worker's MSG_RING carries the stream it is about as res.
          OnWorkerMessage(op, UserDataSlot(ud), UserDataGeneration(ud),
                          static_cast<uint32_t>(cqe->res));
          break;
        case Op::kAsync:
          async_->OnCompletion(UserDataSlot(ud), UserDataGeneration(ud), cqe->res);
          break;
        case Op::kAsyncInbox:
          async_->OnInbox();
          break;
        case Op::kWsInbox:
          OnWsInbox();
          break;
        case Op::kWsJob:
          OnWsJobDone(UserDataSlot(ud), UserDataGeneration(ud));
          break;
        case Op::kTimerTick:
          OnTimerTick();
          break;
        case Op::kAcceptRetry:
          acceptors_[Acceptor::Listener(ud)].OnBackoffDone();
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
          slots_[slot].protocol->OnBuffersAvailable();
        }
        MaybeFree(slot);
      }
    }
    DeliverTlsOwed();
    // ASYNC answers made during the batch reach their connections now,
    // outside any connection's own call.
    RunAsyncReady();
  }
  access_log_.FlushAndWait();
  io_uring_submit(r);
  // No coroutine starts on this thread after its loop: its frames would
  // otherwise come from a pool that goes with the loop.
  if (async_ != nullptr && async::FramePool::Current() == &async_->frames()) {
    async::FramePool::SetCurrent(nullptr);
  }
}

void EventLoop::OnConnectionEvent(Op op, uint32_t slot, const io_uring_cqe* cqe) {
  // The socket's own events on a TLS connection go through the TLS layer.
  if (Tls(slot) && OnTlsSocketEvent(op, slot, cqe)) return;
  Slot& s = slots_[slot];
  // HTTP/1 (final) is called directly, the common case without a virtual
  // call; any other protocol through conn::Protocol.
  if (s.protocol == &s.http1) {
    Deliver(s.http1, op, slot, cqe);
  } else {
    Deliver(*s.protocol, op, slot, cqe);
  }
  MaybeFree(slot);
}

template <typename P>
void EventLoop::Deliver(P& conn, Op op, uint32_t slot, const io_uring_cqe* cqe) {
  const int res = cqe->res;
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
      conn.OnWritable(res);
      break;
    default:
      break;
  }
}

void EventLoop::OnWorkerMessage(Op op, uint32_t slot, uint32_t generation, uint32_t stream) {
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
    if (!slow_deadlines_.empty()) ForgetSlowDeadline(slot, generation, stream);
    slots_[slot].protocol->OnTaskDone(stream);
  } else {
    slots_[slot].protocol->OnStreamNotify(stream);
  }
  MaybeFree(slot);
}

void EventLoop::MaybeFree(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.http1_handed_off) {
    s.http1_handed_off = false;
    s.http1.Release();
  }
  if (!s.in_use) return;
  if (s.protocol == &s.http1 ? !s.http1.Freeable() : !s.protocol->Freeable()) return;
  if (Tls(slot)) {
    if (!tls_->Freeable(slot)) return;
    tls_->Release(slot);
  }
  s.protocol->Release();
  s.protocol = nullptr;
  timers_.Cancel(slot);
  internal::Debug(config_, "uring-http: thread %d: closed slot %u\n", index_, slot);
  s.in_use = false;
  ++s.generation;
  s.next_free = free_head_;
  free_head_ = slot;
  ++free_count_;
  stats_.active.Sub();
}

void EventLoop::DeliverTlsOwed() {
  // What TLS connections were owed during the batch (a send encrypted is a
  // send done), as the kernel's completions would have come.
  if (tls_ == nullptr) return;
  while (tls_->has_owed()) MaybeFree(tls_->DeliverOwed());
}

void EventLoop::RunAfterBatch() {
  // Connections that asked to hear when the ring goes quiet (a worker
  // reading a streamed body gets what arrived, in one wake-up).
  // Each slot is called once per round. One that asks again while this
  // runs (a TLS connection whose send completion made it send more) is in
  // the next round's list: appending to the list being walked could pass
  // its capacity, and a slot that kept asking would never let the ring
  // sleep or see its completions.
  const uint32_t n = after_batch_count_;
  std::swap(after_batch_, after_batch_running_);
  after_batch_count_ = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = after_batch_running_[i];
    slots_[slot].after_batch = false;
    if (slots_[slot].in_use) {
      if (Tls(slot)) {
        tls_->OnBatchEnd(slot);
      } else {
        slots_[slot].protocol->OnBatchEnd();
      }
      MaybeFree(slot);
    }
  }
}

// ---------------------------------------------------------------- timers

void EventLoop::OnTimerTick() {
  const uint64_t now = env_.now_tick;
  access_log_.Flush();
  base::FlushSuppressedErrors();  // the count of error lines over the rate limit
  // Messages a worker could not post with MSG_RING (see worker::Mailbox).
  stats_.mailbox_messages.Add(mailbox_->Drain([this](uint64_t ud, uint32_t stream) {
    if (UserDataOp(ud) == Op::kStop) {
      OnStop();
    } else if (UserDataOp(ud) == Op::kAsyncInbox) {
      async_->OnInbox();
    } else if (UserDataOp(ud) == Op::kWsInbox) {
      OnWsInbox();
    } else if (UserDataOp(ud) == Op::kWsJob) {
      OnWsJobDone(UserDataSlot(ud), UserDataGeneration(ud));
    } else if (UserDataOp(ud) == Op::kAsync) {
      // An ASYNC handler's worker call (its res is not used).
      async_->OnCompletion(UserDataSlot(ud), UserDataGeneration(ud), static_cast<int>(stream));
    } else {
      OnWorkerMessage(UserDataOp(ud), UserDataSlot(ud), UserDataGeneration(ud), stream);
    }
  }));
  // ASYNC routes' deadlines (their awaits are cancelled; the answers
  // are delivered after this batch).
  if (async_ != nullptr) async_->OnTick(internal::SteadyNs());
  // SLOW routes' deadlines: their handlers are told (they cannot be
  // interrupted); the worker answers 503 once the handler returns.
  if (!slow_deadlines_.empty()) CheckSlowDeadlines(internal::SteadyNs());
  timers_.Advance(now, [this](uint32_t slot) {
    if (!slots_[slot].in_use) return;
    if (Tls(slot)) {
      tls_->OnDeadline(slot);
    } else {
      slots_[slot].protocol->OnDeadline();
    }
    MaybeFree(slot);
  });
  stats_.chunk_heap_fallbacks.Add(chunks_.heap_fallbacks() - stats_.chunk_heap_fallbacks.Get());
  chunks_.Trim();
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
      slots_[slot].protocol->Abort();
      MaybeFree(slot);
    }
    // The closes and cancels complete within the grace; a slot still held
    // after it waits for a handler (a SLOW one, or an ASYNC one's worker
    // call) that does not return. The drain is bounded by what the operator
    // asked for: the loop leaves it, and the thread running it is abandoned
    // (Server keeps all of it allocated: nothing is reused under it).
    if (!abandoned_ && now >= stop_deadline_tick_ + kAbandonGraceTicks &&
        stats_.active.Get() > 0) {
      abandoned_ = true;
      std::fprintf(stderr,
                   "uring-http: thread %d: --shutdown-timeout passed with %llu connection(s) "
                   "still waiting for a handler that has not returned: left to it\n",
                   index_, static_cast<unsigned long long>(stats_.active.Get()));
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
  const bool keep = keep_listeners_ != nullptr && keep_listeners_->load();
  for (Acceptor& acceptor : acceptors_) acceptor.Stop(/*shutdown_listener=*/!keep);
  // Idle connections get the drain's short grace; the rest finish their
  // current request, answered with "Connection: close".
  for (uint32_t slot = 0; slot < capacity_; ++slot) {
    if (!slots_[slot].in_use) continue;
    slots_[slot].protocol->OnDrain();
    MaybeFree(slot);
  }
}

}  // namespace uring_http::serving
