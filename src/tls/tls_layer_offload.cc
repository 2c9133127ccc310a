// The TLS layer's handshake offload: a full handshake's expensive step
// (key exchange and signature), paused by the certificate callback, runs on
// a TLS worker and comes back by MSG_RING (tls_layer.h, README: HTTPS).
#include <atomic>
#include <cstring>

#include "src/base/check.h"
#include "src/tls/tls_layer.h"

namespace uring_http::tls {

bool TlsLayer::Offload(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  TlsSession& s = sessions_[slot];
  // Input left over after the ClientHello lives in a receive buffer the
  // loop takes back after this event: then the step runs here.
  if (s.input_left() == 0 && submit_) {
    job.run = &TlsLayer::RunHandshake;
    job.done.store(0, std::memory_order_relaxed);
    job.gate.on_worker = true;
    l.offloaded = true;
    // The push onto the queue publishes the session (and everything the
    // ring wrote to it) to the worker.
    if (submit_(slot, &job)) {
      stats_->offloaded.Add();
      return true;
    }
    l.offloaded = false;
  }
  job.gate.on_worker = true;  // Feed's next Handshake() goes through the gate
  return false;
}

void TlsLayer::RunHandshake(worker::WorkerJob* j) {
  auto* job = static_cast<HandshakeJob*>(j);
  // The expensive step: the ServerHello flight, its signature included.
  job->result = job->session->Handshake();
}

void TlsLayer::OnJobDone(uint32_t slot) {
  Link& l = links_[slot];
  HandshakeJob& job = jobs_[slot];
  // Pairs with the worker's release store: its writes to the session and
  // the output are visible from here on.
  URING_CHECK(l.offloaded && job.done.load(std::memory_order_acquire) == 1);
  l.offloaded = false;
  job.gate.on_worker = false;
  TlsSession& s = sessions_[slot];
  if (!l.close_asked) {
    if (s.TakeHandshakeCompleted()) HandshakeDone(slot);
    if (job.result == TlsSession::Status::kFailed) {
      Fail(slot, Failure::kProtocol);
    } else if (job.result == TlsSession::Status::kSuspended) {
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
  SyncRecv(slot);
  Flush(slot);
  MaybeReleaseOutput(slot);
}

}  // namespace uring_http::tls
