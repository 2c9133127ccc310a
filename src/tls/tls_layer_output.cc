// The TLS layer's output: what the connection sends, encrypted into the
// link's output chunk and handed to the ring one kernel send at a time, our
// FIN after close_notify, and the completions the connection is owed
// (tls_layer.h has the whole picture).
#include <poll.h>

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
  if (l.out == nullptr || l.send_inflight || l.csend == ConnSend::kWaiting || l.close_issued ||
      l.offloaded) {
    return;
  }
  if (!l.write_dead && sessions_[slot].output_len() > l.sent) return;
  buffers_->Release(l.out);
  l.out = nullptr;
  l.sent = 0;
  sessions_[slot].SetOutput(nullptr, 0, 0);
}

bool TlsLayer::OutputHasRoom(uint32_t slot) const {
  const Link& l = links_[slot];
  return l.out == nullptr || sessions_[slot].CanEncrypt();
}

void TlsLayer::EncryptConn(uint32_t slot) {
  Link& l = links_[slot];
  if (l.csend != ConnSend::kWaiting) return;
  if (l.phase != Phase::kOpen || l.write_dead) {
    // Nothing can carry it (no handshake, or the socket failed): the send
    // fails, as the kernel's would, after this event.
    l.csend = ConnSend::kFailed;
    Owe(slot);
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
    l.csend = ConnSend::kFailed;
    Owe(slot);
    return;
  }
  if (taken == 0) {
    // No room until the send in flight completes. A send that must not
    // wait (file bytes, which the connection takes back and reads again
    // once there is room, rather than hold the loop's file buffers for a
    // reader that may never read) is refused now, as MSG_DONTWAIT on a
    // full socket would be; others wait for the room.
    if (l.conn_dont_wait && !l.conn_last) {
      l.csend = ConnSend::kAgain;
      Owe(slot);
    }
    return;
  }
  l.conn_taken = taken;
  l.csend = ConnSend::kEncrypted;
  // Encrypted is as good as sent for the connection, as bytes in a socket
  // buffer are: its buffers are free from here, whatever the peer does (a
  // reader that never reads must not keep the loop's file buffers), and its
  // send deadline measures each bit of room the peer makes in our output,
  // not whole batches of records. It hears so after this event (DeliverOwed).
  // A last send completes with the final kernel send, which carries the close.
  if (!l.conn_last) Owe(slot);
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
  StartSendClock(slot);
}

void TlsLayer::StartSendClock(uint32_t slot) {
  Link& l = links_[slot];
  const uint32_t ms = config_.send_timeout_ms;
  if (l.send_deadline != 0 || ms == 0) return;
  const uint32_t tick_ms = config_.tick_ms;
  l.send_deadline = loop_->now_tick + (ms + tick_ms - 1) / tick_ms + 1;
  SyncDeadline(slot);
}

void TlsLayer::OnSend(uint32_t slot, int res) {
  Link& l = links_[slot];
  URING_CHECK(l.send_inflight);
  l.send_inflight = false;
  l.send_deadline = 0;  // progress, or the end: the clock starts again with the next send
  if (l.final_send) {
    // The last send, linked to the close: OnClosed follows.
    if (l.csend == ConnSend::kEncrypted && l.conn_last) {
      l.csend = ConnSend::kNone;
      const int n = res == static_cast<int>(l.send_iov.iov_len) ? static_cast<int>(l.conn_taken)
                    : res < 0                                 ? res
                                                              : -EPIPE;
      l.conn->OnSend(n, false);
    } else if (l.csend == ConnSend::kWaiting) {
      l.csend = ConnSend::kNone;
      l.conn->OnSend(res < 0 ? res : -EPIPE, false);
    }
    SyncDeadline(slot);
    return;
  }
  if (res < 0) {
    l.write_dead = true;
    if (l.phase == Phase::kHandshake && !l.close_asked) stats_->failed_peer_closed.Add();
    if (l.csend == ConnSend::kWaiting || l.csend == ConnSend::kEncrypted) {
      // The peer is gone: the connection hears it from its send (an
      // encrypted one's completion was still owed).
      l.csend = ConnSend::kNone;
      l.conn->OnSend(res, false);
    } else if (l.poll == Poll::kWaiting) {
      l.poll = Poll::kNone;
      l.conn->OnWritable(res);
    } else if (!l.close_asked && l.csend == ConnSend::kNone) {
      l.conn->Abort();  // a handshake flight or an alert could not go: the peer is gone
    }
    if (l.close_asked) {
      FinishClose(slot);
    } else {
      // A lingering connection waits for its shutdown before it closes:
      // nothing more will go out, so the shutdown goes now (it was held for
      // the output) or the connection would wait for it for ever.
      MaybeShutdown(slot);
    }
    SyncDeadline(slot);
    return;
  }
  l.sent += static_cast<size_t>(res);
  if (l.offloaded) {
    SyncDeadline(slot);
    return;  // the worker appends to the output: Flush after OnJobDone
  }
  if (l.out != nullptr && sessions_[slot].output_len() == l.sent) {
    // Everything out: appends start at the front again.
    sessions_[slot].ClearOutput();
    l.sent = 0;
  }
  EncryptConn(slot);  // a send waiting for room may fit now
  if (l.csend == ConnSend::kEncrypted && !l.conn_last) {
    // The peer took records: the connection's send is done (see EncryptConn).
    l.csend = ConnSend::kNone;
    l.conn->OnSend(static_cast<int>(l.conn_taken), false);  // may send again
  }
  if (l.poll == Poll::kWaiting && OutputHasRoom(slot)) {
    l.poll = Poll::kOwed;
    l.poll_res = POLLOUT;
    Owe(slot);
  }
  if (l.close_asked) {
    FinishClose(slot);
    SyncDeadline(slot);
    return;
  }
  Flush(slot);
  MaybeShutdown(slot);
  MaybeReleaseOutput(slot);
  SyncDeadline(slot);
}

void TlsLayer::PollWritable(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->PollWritable(slot);
  URING_CHECK(l.poll == Poll::kNone);
  if (l.phase != Phase::kOpen || l.write_dead || l.close_asked) {
    l.poll = Poll::kOwed;
    l.poll_res = -EPIPE;
    Owe(slot);
  } else if (OutputHasRoom(slot)) {
    l.poll = Poll::kOwed;
    l.poll_res = POLLOUT;
    Owe(slot);
  } else {
    l.poll = Poll::kWaiting;  // OnSend answers it once the output has room
  }
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
  // Zero-copy is ignored: the kernel sends our ciphertext, not the
  // connection's pages, and the plaintext is free once encrypted.
  URING_CHECK(l.csend == ConnSend::kNone);
  l.csend = ConnSend::kWaiting;
  l.conn_last = false;
  l.conn_dont_wait = dont_wait;
  l.conn_iov = iov;
  l.conn_count = count;
  l.conn_taken = 0;
  EncryptConn(slot);
  Flush(slot);
}

void TlsLayer::SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count, msghdr* msg) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->SendLastAndClose(slot, iov, count, msg);
  URING_CHECK(l.csend == ConnSend::kNone);
  l.csend = ConnSend::kWaiting;
  l.conn_last = true;
  l.conn_dont_wait = false;
  l.conn_iov = iov;
  l.conn_count = count;
  l.conn_taken = 0;
  l.close_asked = true;
  EncryptConn(slot);
  if (l.phase == Phase::kOpen && !l.write_dead) sessions_[slot].CloseNotify();
  FinishClose(slot);
}

void TlsLayer::CancelSend(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->CancelSend(slot);
  // The connection gives up on its send (its deadline): a send still
  // waiting for room ends now; records already made go or are cut with
  // the kernel's send, which is cancelled too (the peer is not reading).
  if (l.csend == ConnSend::kWaiting) {
    l.csend = ConnSend::kFailed;
    Owe(slot);
  }
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

// ---------------------------------------------------------------- owed completions

void TlsLayer::Owe(uint32_t slot) {
  Link& l = links_[slot];
  if (l.owed_queued) return;
  l.owed_queued = true;
  owed_[owed_count_++] = slot;
}

uint32_t TlsLayer::DeliverOwed() {
  URING_CHECK(owed_count_ > 0);
  // Last in, first out: each slot is in the list once, so a delivery that
  // owes again (the connection sends more, encrypted at once) goes back
  // on the list, bounded by the room in its output.
  const uint32_t slot = owed_[--owed_count_];
  Link& l = links_[slot];
  l.owed_queued = false;
  DeliverOwedTo(slot);
  if (l.close_asked) FinishClose(slot);
  return slot;
}

void TlsLayer::DeliverOwedTo(uint32_t slot) {
  Link& l = links_[slot];
  switch (l.csend) {
    case ConnSend::kEncrypted:
      if (!l.conn_last) {
        l.csend = ConnSend::kNone;
        l.conn->OnSend(static_cast<int>(l.conn_taken), false);  // may send again
      }
      break;
    case ConnSend::kAgain:
      l.csend = ConnSend::kNone;
      l.conn->OnSend(-EAGAIN, false);
      break;
    case ConnSend::kFailed:
      l.csend = ConnSend::kNone;
      l.conn->OnSend(-EPIPE, false);
      break;
    case ConnSend::kNone:
    case ConnSend::kWaiting:
      break;
  }
  if (l.poll == Poll::kOwed) {
    l.poll = Poll::kNone;
    l.conn->OnWritable(l.poll_res);
  }
}

}  // namespace uring_http::tls
