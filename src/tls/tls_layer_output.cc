// The TLS layer's output: what the connection sends, encrypted into the
// link's output chunk and handed to the ring one kernel send at a time, and
// our FIN after close_notify (tls_layer.h has the whole picture).
#include <cerrno>
#include <cstring>

#include "src/base/check.h"
#include "src/tls/tls_layer.h"

namespace uring_http::tls {

void TlsLayer::EnsureOutput(uint32_t slot) {
  Link& l = links_[slot];
  if (l.out != nullptr) return;
  l.out = buffers_->Acquire();
  l.sent = 0;
  sessions_[slot].SetOutput(l.out, buffers_->chunk_size(), 0);
}

void TlsLayer::MaybeReleaseOutput(uint32_t slot) {
  // A keep-alive connection between requests holds no output chunk.
  Link& l = links_[slot];
  if (l.out == nullptr || l.send_inflight || l.conn_send || l.close_issued || l.offloaded) {
    return;
  }
  if (!l.write_dead && sessions_[slot].output_len() > l.sent) return;
  buffers_->Release(l.out);
  l.out = nullptr;
  l.sent = 0;
  sessions_[slot].SetOutput(nullptr, 0, 0);
}

void TlsLayer::EncryptConn(uint32_t slot) {
  Link& l = links_[slot];
  if (!l.conn_send || l.conn_encrypted) return;
  if (l.phase != Phase::kOpen || l.write_dead) {
    // Nothing can carry it (no handshake, or the socket failed): the send
    // fails, as the kernel's would, after this event.
    l.send_fail_owed = true;
    AskBatch(slot);
    return;
  }
  EnsureOutput(slot);
  TlsSession& s = sessions_[slot];
  size_t total = 0;
  for (unsigned i = 0; i < l.conn_count; ++i) total += l.conn_iov[i].iov_len;
  size_t taken = 0;
  if (l.conn_count > 1 && total <= kGatherBytes) {
    char* p = gather_.get();
    for (unsigned i = 0; i < l.conn_count; ++i) {
      std::memcpy(p, l.conn_iov[i].iov_base, l.conn_iov[i].iov_len);
      p += l.conn_iov[i].iov_len;
    }
    taken = s.Encrypt(gather_.get(), total);
  } else {
    for (unsigned i = 0; i < l.conn_count; ++i) {
      const size_t len = l.conn_iov[i].iov_len;
      const size_t t = s.Encrypt(static_cast<const char*>(l.conn_iov[i].iov_base), len);
      taken += t;
      if (t < len) break;
    }
  }
  if (s.failed()) {
    l.write_dead = true;
    l.send_fail_owed = true;
    AskBatch(slot);
    return;
  }
  if (taken == 0) return;  // no room until the send in flight completes
  l.conn_taken = taken;
  l.conn_encrypted = true;
  l.conn_end = s.output_len();
}

void TlsLayer::Flush(uint32_t slot) {
  Link& l = links_[slot];
  if (l.send_inflight || l.close_issued || l.write_dead || l.offloaded) return;
  const size_t n = pending_output(slot);
  if (n == 0) return;
  l.send_iov.iov_base = l.out + l.sent;
  l.send_iov.iov_len = n;
  l.send_inflight = true;
  // One kernel send at a time: two on one socket could complete out of
  // order, and records must leave in order.
  below_->Send(slot, &l.send_iov, 1, /*zero_copy=*/false, &msg_, /*dont_wait=*/false);
}

void TlsLayer::OnSend(uint32_t slot, int res) {
  Link& l = links_[slot];
  URING_CHECK(l.send_inflight);
  l.send_inflight = false;
  if (l.final_send) {
    // The last send, linked to the close: OnClosed follows.
    if (l.conn_send) {
      l.conn_send = false;
      const int n = res == static_cast<int>(l.send_iov.iov_len) ? static_cast<int>(l.conn_taken)
                    : res < 0                                 ? res
                                                              : -EPIPE;
      l.conn->OnSend(n, false);
    }
    return;
  }
  if (res < 0) {
    l.write_dead = true;
    if (l.phase == Phase::kHandshake && !l.close_asked) stats_->failed_peer_closed.Add();
    if (l.conn_send) {
      l.conn_send = false;
      l.conn->OnSend(res, false);
    } else if (!l.close_asked) {
      l.conn->Abort();  // a handshake flight or an alert could not go: the peer is gone
    }
    if (l.close_asked) FinishClose(slot);
    return;
  }
  l.sent += static_cast<size_t>(res);
  if (l.offloaded) return;  // the worker appends to the output: Flush after OnJobDone
  if (l.conn_send && l.conn_encrypted && l.sent >= l.conn_end) {
    l.conn_send = false;
    l.conn->OnSend(static_cast<int>(l.conn_taken), false);  // may send again
  }
  if (!l.send_inflight && l.out != nullptr && sessions_[slot].output_len() == l.sent) {
    // Everything out: appends start at the front again.
    sessions_[slot].ClearOutput();
    l.sent = 0;
  }
  if (l.conn_send && !l.conn_encrypted) EncryptConn(slot);
  if (l.close_asked) {
    FinishClose(slot);
    return;
  }
  Flush(slot);
  MaybeShutdown(slot);
  MaybeReleaseOutput(slot);
}

void TlsLayer::MaybeShutdown(uint32_t slot) {
  Link& l = links_[slot];
  if (!l.shutdown_asked || l.send_inflight || l.offloaded || pending_output(slot) > 0) return;
  l.shutdown_asked = false;
  l.shutdown_inflight = true;
  below_->ShutdownWrite(slot);
}

void TlsLayer::OnShutdownDone(uint32_t slot) {
  Link& l = links_[slot];
  l.shutdown_inflight = false;
  l.conn->OnShutdownDone();
}

void TlsLayer::Send(uint32_t slot, const iovec* iov, unsigned count, bool zero_copy,
                    msghdr* msg, bool dont_wait) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->Send(slot, iov, count, zero_copy, msg, dont_wait);
  // Zero-copy and don't-wait are ignored: the kernel sends our ciphertext,
  // not the connection's pages, and the plaintext is ours once encrypted.
  URING_CHECK(!l.conn_send);
  l.conn_send = true;
  l.conn_last = l.conn_encrypted = false;
  l.conn_iov = iov;
  l.conn_count = count;
  l.conn_taken = l.conn_end = 0;
  EncryptConn(slot);
  Flush(slot);
}

void TlsLayer::SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count, msghdr* msg) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->SendLastAndClose(slot, iov, count, msg);
  URING_CHECK(!l.conn_send);
  l.conn_send = l.conn_last = true;
  l.conn_encrypted = false;
  l.conn_iov = iov;
  l.conn_count = count;
  l.conn_taken = l.conn_end = 0;
  l.close_asked = true;
  EncryptConn(slot);
  if (l.phase == Phase::kOpen && !l.write_dead) sessions_[slot].CloseNotify();
  FinishClose(slot);
}

void TlsLayer::CancelSend(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->CancelSend(slot);
  if (l.send_inflight && !l.final_send) below_->CancelSend(slot);
}

void TlsLayer::ShutdownWrite(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->ShutdownWrite(slot);
  l.shutdown_asked = true;
  if (l.phase == Phase::kOpen && !l.write_dead) {
    EnsureOutput(slot);
    sessions_[slot].CloseNotify();  // before our FIN
  }
  Flush(slot);
  MaybeShutdown(slot);
}

}  // namespace uring_http::tls
