// The TLS layer's failures, closing and deadlines: why the layer ends a
// connection itself, the close (our last records and close_notify linked to
// it, or everything cancelled at once), and the handshake's, the
// connection's and the kernel send's deadlines multiplexed onto the loop's
// one per slot (tls_layer.h has the whole picture).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "src/base/check.h"
#include "src/tls/client_cert.h"
#include "src/tls/tls_layer.h"

namespace uring_http::tls {
namespace {

// What plain HTTP sent to the TLS port gets (as nginx answers it), in
// plain text, before the close.
constexpr char kPlainHttpBody[] = "This port speaks HTTPS: the request was sent as plain HTTP.\n";
constexpr char kPlainHttpHead[] =
    "HTTP/1.1 400 Bad Request\r\n"
    "Content-Type: text/plain\r\n"
    "Connection: close\r\n"
    "Content-Length: ";

}  // namespace

// ---------------------------------------------------------------- failures, closing

void TlsLayer::Fail(uint32_t slot, Failure why) {
  Link& l = links_[slot];
  // (Feed marks a session failed before it delivers the plaintext that
  // came with the failure: that one had finished its handshake.)
  const bool handshaking = l.phase == Phase::kHandshake;
  l.phase = Phase::kFailed;
  switch (why) {
    case Failure::kTimeout:
      stats_->failed_timeout.Add();
      break;
    case Failure::kPlainHttp: {
      stats_->failed_plain_http.Add();
      EnsureOutput(slot);
      TlsSession& s = sessions_[slot];
      char answer[256];
      const int n = std::snprintf(answer, sizeof(answer), "%s%zu\r\n\r\n%s", kPlainHttpHead,
                                  sizeof(kPlainHttpBody) - 1, kPlainHttpBody);
      std::memcpy(l.out + s.output_len(), answer, static_cast<size_t>(n));
      s.SetOutput(l.out, buffers_->chunk_size(), s.output_len() + static_cast<size_t>(n));
      break;
    }
    case Failure::kProtocol:
      // OpenSSL wrote its alert into the output: it goes before the close.
      if (handshaking) CountProtocolFailure(slot);
      break;
    case Failure::kPeerClosed:
      stats_->failed_peer_closed.Add();
      break;
    case Failure::kProxyHeader:
      // Not a proxy we can trust, or no proxy at all: closed unanswered,
      // as on a plain --proxy-protocol listener.
      conn_stats_->proxy_header_errors.Add();
      break;
  }
  l.conn->Abort();
}

void TlsLayer::CountProtocolFailure(uint32_t slot) {
  const TlsSession& s = sessions_[slot];
  SSL* ssl = s.ssl();
  const ClientCertFailure why =
      ssl != nullptr && (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0
          ? ClassifyClientCertFailure(s.error_reason(), SSL_get_verify_result(ssl))
          : ClientCertFailure::kNone;
  switch (why) {
    case ClientCertFailure::kNone:
      stats_->failed_protocol.Add();
      return;
    case ClientCertFailure::kMissing:
      stats_->client_cert_missing.Add();
      break;
    case ClientCertFailure::kUntrusted:
      stats_->client_cert_untrusted.Add();
      break;
    case ClientCertFailure::kExpired:
      stats_->client_cert_expired.Add();
      break;
    case ClientCertFailure::kInvalid:
      stats_->client_cert_invalid.Add();
      break;
  }
  stats_->failed_client_cert.Add();
}

void TlsLayer::FinishClose(uint32_t slot) {
  Link& l = links_[slot];
  if (l.close_issued) {
    // The close is with the kernel: nothing more goes out. A send of the
    // connection's that no kernel send will now carry (the last one
    // completed short while the close raced it) is ended as the kernel
    // would end it, after this event; left pending, the connection would
    // wait for it for ever and its slot never be freed. So is its wait
    // for room.
    if (!l.send_inflight && !l.final_send &&
        (l.csend == ConnSend::kWaiting || (l.csend == ConnSend::kEncrypted && l.conn_last))) {
      l.csend = ConnSend::kFailed;
      Owe(slot);
    }
    if (l.poll == Poll::kWaiting) {
      l.poll = Poll::kOwed;
      l.poll_res = -ECANCELED;
      Owe(slot);
    }
    return;
  }
  // A step still queued is abandoned (the worker skips it); one a worker
  // runs comes back to OnJobDone, which comes back here.
  if (l.offloaded && !AbandonStep(slot)) return;
  if (l.real == Recv::kOff && l.virt != Recv::kOff) AskBatch(slot);  // its end is owed
  // The connection gave up on a send (or its wait for room), or the socket
  // failed: everything is cancelled and closed at once.
  const bool abort = (l.csend != ConnSend::kNone && !l.conn_last) || l.poll != Poll::kNone ||
                     l.write_dead;
  if (abort) {
    l.close_issued = true;
    below_->Close(slot, l.real != Recv::kOff, l.send_inflight);
    FinishClose(slot);  // what the connection is owed
    return;
  }
  if (l.send_inflight) return;  // OnSend comes back here
  if (pending_output(slot) > 0) {
    // Our last bytes (the last records and close_notify, an alert, the
    // plain-text 400) go in one send linked to the close, which must have
    // nothing else armed on the socket: the receive is cancelled first.
    if (l.real == Recv::kArmed) {
      below_->CancelRecv(slot);
      l.real = Recv::kCancelling;
    }
    if (l.real != Recv::kOff) return;  // OnRecvEnd comes back here
    l.close_issued = l.final_send = l.send_inflight = true;
    l.send_iov.iov_base = l.out + l.sent;
    l.send_iov.iov_len = pending_output(slot);
    below_->SendLastAndClose(slot, &l.send_iov, 1, &msg_);
    return;
  }
  if (l.csend != ConnSend::kNone) {
    l.csend = ConnSend::kFailed;  // a last send that had nothing to carry it
    Owe(slot);
  }
  l.close_issued = true;
  below_->Close(slot, l.real != Recv::kOff, false);
}

void TlsLayer::OnClosed(uint32_t slot) {
  Link& l = links_[slot];
  l.closed = true;
  l.conn->OnClosed();
}

void TlsLayer::OnDeadline(uint32_t slot) {
  Link& l = links_[slot];
  const uint64_t now = loop_->now_tick;
  l.armed_deadline = 0;  // the loop's entry fired
  if (l.send_deadline != 0 && now >= l.send_deadline) {
    l.send_deadline = 0;
    if (l.send_inflight) {
      // The peer took none of our records for --send-timeout: the send is
      // cancelled, and its end (OnSend, -ECANCELED) ends the connection.
      // The last send, linked to the close, is cut the same way.
      conn_stats_->timeouts.Add();
      below_->CancelSend(slot);
    }
  }
  if (l.phase == Phase::kHandshake && !l.close_asked) {
    if (l.offloaded && l.queue_deadline != 0 && now >= l.queue_deadline && TakeBackStep(slot)) {
      SyncDeadline(slot);
      return;
    }
    if (l.handshake_deadline != 0 && now >= l.handshake_deadline) {
      Fail(slot, Failure::kTimeout);
    } else if (loop_->draining && l.conn_deadline != 0 && now >= l.conn_deadline) {
      // Draining: a connection still in its handshake has sent no request,
      // so it gets the idle connections' grace, not the whole timeout.
      l.phase = Phase::kFailed;
      l.conn->Abort();
    }
  } else if (l.conn_deadline != 0 && now >= l.conn_deadline) {
    l.conn->OnDeadline();
  }
  SyncDeadline(slot);
}

void TlsLayer::SyncDeadline(uint32_t slot) {
  Link& l = links_[slot];
  uint64_t t = l.phase == Phase::kHandshake ? HandshakeDeadline(l) : l.conn_deadline;
  if (l.send_deadline != 0 && (t == 0 || l.send_deadline < t)) t = l.send_deadline;
  if (t == l.armed_deadline) return;
  l.armed_deadline = t;
  below_->SetDeadline(slot, t);
}

uint64_t TlsLayer::HandshakeDeadline(const Link& l) const {
  // While the handshake runs its own deadline is the one armed (or a
  // queued step's, if sooner: tls_layer_offload.cc), and the connection's
  // only while draining (see OnDeadline).
  uint64_t t = l.handshake_deadline;
  if (l.offloaded && l.queue_deadline != 0 && (t == 0 || l.queue_deadline < t)) {
    t = l.queue_deadline;
  }
  if (loop_->draining && l.conn_deadline != 0 && (t == 0 || l.conn_deadline < t)) {
    t = l.conn_deadline;
  }
  return t;
}

}  // namespace uring_http::tls
