// EventLoop's TLS parts: setting up the TLS layer, the socket completions
// of TLS connections (to the layer rather than to the connection), a new
// connection's SSL, and the ring thread's short scheduler slice.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "src/serving/event_loop.h"
#include "src/serving/loop_internal.h"

namespace uring_http::serving {
namespace {


// Asks for a scheduler slice of `us` for the calling thread (EEVDF's custom
// slice, Linux 6.12+: sched_attr.sched_runtime of a SCHED_OTHER thread).
// A thread with a shorter slice than the one running preempts it when it
// wakes (PREEMPT_SHORT), so a ring that wakes on a CPU where a TLS worker
// is signing gets the CPU back at once instead of after the worker's
// slice. False where the kernel refuses it.
bool SetSchedulerSlice(uint32_t us) {
  // struct sched_attr (linux/sched/types.h, which clashes with glibc's
  // sched.h).
  struct {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
  } attr{};
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  attr.sched_runtime = uint64_t{us} * 1000;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

}  // namespace

absl::Status EventLoop::InitTls() {
  // Files over TLS are read and encrypted, never spliced.
  conn_config_.splice_min_bytes = 0;
  // Output chunks, one per connection with bytes to send: carved at
  // start-up; beyond them the pool falls back to the heap.
  const uint32_t tls_chunks = std::clamp<uint32_t>(capacity_ / 4, 16, 256);
  auto tls_arena = io::Arena::Create(size_t{tls_chunks} * tls::TlsLayer::kMinBufferBytes);
  if (!tls_arena.ok()) return tls_arena.status();
  tls_arena_ = *std::move(tls_arena);
  if (absl::Status s = tls_buffers_.Init(tls_arena_, tls::TlsLayer::kMinBufferBytes, tls_chunks);
      !s.ok()) {
    return s;
  }
  // A full handshake's expensive step (key exchange, and the signature:
  // 20 us for ECDSA P-256, 0.3-1 ms for RSA-2048) would hold up every
  // connection of this ring: it runs on a TLS worker, like a SLOW request,
  // as --tls-offload says (README, HTTPS).
  using Offload = tls::TlsSettings::Offload;
  using Gate = tls::HandshakeGate::Mode;
  const Offload offload = config_.tls.offload;
  const Gate gate = offload == Offload::kOff   ? Gate::kInline
                    : offload == Offload::kRsa ? Gate::kOffloadRsa
                                               : Gate::kOffloadAll;
  tls::TlsLayer::SubmitJob submit;
  if (tls_workers_ != nullptr) {
    submit = [this](uint32_t slot, worker::WorkerJob* job) {
      job->ring = worker::RingAddress{ring_->fd(), mailbox_.get()};
      worker::SlowTask t;
      t.job = job;
      t.user_data = UserData(Op::kTlsJob, slot);
      t.enqueued_ns = internal::SteadyNs();
      return tls_workers_->Submit(t);
    };
  }
  tls_ = std::make_unique<tls::TlsLayer>(
      static_cast<conn::Transport*>(this), capacity_, &tls_buffers_, conn_config_, &env_,
      &stats_.conn, &stats_.tls,
      tls::TlsLayer::HandshakeTimeoutMs(config_.tls.handshake_timeout_ms,
                                        conn_config_.header_timeout_ms,
                                        conn_config_.idle_timeout_ms),
      gate, std::move(submit), offload == Offload::kAuto);
  tls_->set_on_h2([this](uint32_t slot) { OnAlpnH2(slot); });
  tls_context_ = tls_source_->Get();
  tls_generation_ = tls_source_->generation();
  return absl::OkStatus();
}

void EventLoop::SetRingSlice() { ring_slice_ = SetSchedulerSlice(config_.tls.ring_slice_us); }

bool EventLoop::OnTlsSocketEvent(Op op, uint32_t slot, const io_uring_cqe* cqe) {
  const int res = cqe->res;
  switch (op) {
    case Op::kRecv:
    case Op::kRecvBulk: {
      const bool more = cqe->flags & IORING_CQE_F_MORE;
      if (res > 0) {
        io::BufferRing& group = op == Op::kRecvBulk ? bulk_buffers_ : buffers_;
        const uint16_t bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        tls_->OnRecv(slot, group.Buffer(bid), static_cast<size_t>(res), more);
        group.Recycle(bid);  // decrypted or dropped by now
        // A handshake step just ran here (~0.2-0.7 ms): its flight goes
        // to the kernel now rather than after the rest of this batch,
        // which may hold more of them, so the client works meanwhile.
        if (tls_->TakeSubmitNow()) io_uring_submit(ring_->raw());
      } else if (!more) {
        if (res == -ENOBUFS) {
          stats_.recv_nobufs.Add();
          starved_[starved_count_++] = slot;
        }
        tls_->OnRecvEnd(slot, res);
      }
      MaybeFree(slot);
      return true;
    }
    case Op::kSend:
      tls_->OnSend(slot, res);  // never zero-copy: no notification
      MaybeFree(slot);
      return true;
    case Op::kShutdown:
      tls_->OnShutdownDone(slot);
      MaybeFree(slot);
      return true;
    case Op::kClose:
      tls_->OnClosed(slot);
      OnEntryClosed();
      MaybeFree(slot);
      return true;
    default:
      return false;  // file events are the connection's
  }
}

SSL* EventLoop::NewSsl() {
  // A reload swapped the context: take the new one for this and later
  // connections (the old one lives on in the SSLs it made).
  const uint64_t generation = tls_source_->generation();
  if (generation != tls_generation_) {
    tls_context_ = tls_source_->Get();
    tls_generation_ = generation;
  }
  return tls_context_->NewSsl();
}

}  // namespace uring_http::serving
