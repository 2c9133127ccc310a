// The TLS layer's handshake offload: a full handshake's expensive step
// (key exchange and signature), paused by the certificate callback, runs on
// a TLS worker and comes back by MSG_RING (tls_layer.h, README: HTTPS).
//
// A step waits in the queue for a bounded time only. The server chose to
// queue it (to keep signatures off the ring), so queue time alone must not
// fail the handshake: when no worker has started it after kMaxQueueWaitMs
// (or half of what is left of the handshake timeout, if that is less), the
// ring takes it back and runs it itself, as --tls-offload=off would. A
// burst the workers cannot keep up with spills back onto the ring instead
// of piling up behind them, and a client that comes after the burst waits
// no longer than the bound. The other choice, starting the handshake clock
// when the step runs, would let the queue grow without limit under a flood
// (every queued step holding a slot) and put a new client behind all of
// it. A step the ring took back, or whose connection closed meanwhile, is
// abandoned (WorkerJob::Abandon): the worker that dequeues it skips it, so
// no worker signs for a connection that is gone. The slot stays until the
// job comes back all the same: the job's memory is the slot's.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "src/base/check.h"
#include "src/tls/tls_layer.h"

namespace uring_http::tls {
namespace {

constexpr uint32_t kMaxQueueWaitMs = 1000;

}  // namespace

bool TlsLayer::Offload(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  TlsSession& s = sessions_[slot];
  // Input left over after the ClientHello lives in a receive buffer the
  // loop takes back after this event: then the step runs here. So does a
  // second step (after a HelloRetryRequest) while the job of a first one,
  // taken back, is still queued: that memory is not free yet.
  if (s.input_left() == 0 && submit_ && !l.job_out) {
    job.run = &TlsLayer::RunHandshake;
    job.Prepare();
    job.gate.on_worker = true;
    l.offloaded = l.job_out = true;
    // The push onto the queue publishes the session (and everything the
    // ring wrote to it) to the worker.
    if (submit_(slot, &job)) {
      stats_->offloaded.Add();
      const uint64_t now = loop_->now_tick;
      const uint32_t tick_ms = config_.tick_ms;
      uint64_t wait = (kMaxQueueWaitMs + tick_ms - 1) / tick_ms;
      if (l.handshake_deadline > now) {
        wait = std::min<uint64_t>(wait, std::max<uint64_t>(1, (l.handshake_deadline - now) / 2));
      }
      l.queue_deadline = now + wait;
      SyncDeadline(slot);
      return true;
    }
    l.offloaded = l.job_out = false;
  }
  job.gate.on_worker = true;  // Feed's next Handshake() goes through the gate
  return false;
}

void TlsLayer::RunHandshake(worker::WorkerJob* j) {
  auto* job = static_cast<HandshakeJob*>(j);
  // The expensive step: the ServerHello flight, its signature included.
  job->result = job->session->Handshake();
}

bool TlsLayer::TakeBackStep(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  l.queue_deadline = 0;
  if (!job.Abandon()) return false;  // a worker has it: OnJobDone soon
  // No worker will touch the session now: the step runs here.
  l.offloaded = false;
  stats_->steps_reclaimed.Add();
  job.gate.on_worker = true;
  const TlsSession::Status result = sessions_[slot].Handshake();
  job.gate.on_worker = false;
  AfterStep(slot, result);
  return true;
}

bool TlsLayer::AbandonStep(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  if (!job.Abandon()) return false;
  l.offloaded = false;
  l.queue_deadline = 0;
  job.gate.on_worker = false;
  return true;
}

void TlsLayer::OnJobDone(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  // Pairs with the worker's release store: its writes to the session and
  // the output are visible from here on (and it is done with the job).
  URING_CHECK(l.job_out && job.done.load(std::memory_order_acquire) == 1);
  l.job_out = false;
  // Abandoned before a worker started it (the worker skipped it): the
  // ring went on without it; only the slot's release waited for this.
  if (!l.offloaded) return;
  l.offloaded = false;
  l.queue_deadline = 0;
  job.gate.on_worker = false;
  AfterStep(slot, job.result);
}

void TlsLayer::AfterStep(uint32_t slot, TlsSession::Status result) {
  Link& l = links_[slot];
  TlsSession& s = sessions_[slot];
  if (!l.close_asked) {
    if (s.TakeHandshakeCompleted()) HandshakeDone(slot);
    if (result == TlsSession::Status::kFailed) {
      Fail(slot, Failure::kProtocol);
    } else if (result == TlsSession::Status::kSuspended) {
      Fail(slot, Failure::kProtocol);  // the gate paused a worker: cannot happen twice
    } else if (l.stash_len > 0) {
      const size_t n = l.stash_len;
      l.stash_len = 0;
      Feed(slot, l.stash, n);
    }
  }
  if (l.stash != nullptr) {
    buffers_->Release(l.stash);
    l.stash = nullptr;
    l.stash_len = 0;
  }
  if (l.close_asked) {
    FinishClose(slot);
    return;
  }
  // Still handshaking: its own deadline again (the queue's is gone).
  SyncDeadline(slot);
  SyncRecv(slot);
  Flush(slot);
  MaybeReleaseOutput(slot);
}

}  // namespace uring_http::tls
