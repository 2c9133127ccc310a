// The TLS layer: a connection's life on it and its input (the kernel's
// receive and the connection's, the PROXY header in clear). Output and the
// completions the connection is owed are in tls_layer_output.cc, failures,
// closing and deadlines in tls_layer_close.cc, the handshake offload in
// tls_layer_offload.cc.
#include "src/tls/tls_layer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/base/check.h"
#include "src/conn/proxy_header.h"
#include "src/tls/client_cert.h"

namespace uring_http::tls {
namespace {

// Plaintext decrypted per pass; a receive buffer's worth plus a record
// OpenSSL kept from before always fits, so one pass is the common case.
constexpr size_t kScratchBytes = 64 * 1024;

// A TLS connection starts with a handshake record (0x16); a plain HTTP
// request starts with its method's first letter.
bool LooksLikeHttp(char c) { return c >= 'A' && c <= 'Z'; }

}  // namespace

TlsLayer::TlsLayer(conn::Transport* below, uint32_t capacity, io::ChunkPool* buffers,
                   const conn::TransportConfig& config, const conn::LoopState* loop,
                   conn::TransportStats* conn_stats, TlsStats* stats,
                   uint32_t handshake_timeout_ms, HandshakeGate::Mode gate, SubmitJob submit,
                   bool adaptive)
    : below_(below),
      capacity_(capacity),
      buffers_(buffers),
      config_(config),
      loop_(loop),
      conn_stats_(conn_stats),
      stats_(stats),
      handshake_timeout_ms_(handshake_timeout_ms),
      links_(std::make_unique<Link[]>(capacity)),
      sessions_(std::make_unique<TlsSession[]>(capacity)),
      jobs_(std::make_unique<HandshakeJob[]>(capacity)),
      gate_mode_(submit ? gate : HandshakeGate::Mode::kInline),
      submit_(std::move(submit)),
      adaptive_(adaptive),
      owed_(std::make_unique<uint32_t[]>(capacity)),
      scratch_(std::make_unique<char[]>(kScratchBytes)),
      scratch_bytes_(kScratchBytes),
      gather_(std::make_unique<char[]>(kGatherBytes)) {
  URING_CHECK(buffers_->chunk_size() >= kMinBufferBytes);
}

TlsLayer::~TlsLayer() {
  for (uint32_t i = 0; i < capacity_; ++i) {
    if (links_[i].out != nullptr) buffers_->Release(links_[i].out);
    if (links_[i].stash != nullptr) buffers_->Release(links_[i].stash);
    ReleaseProxyBuffer(links_[i]);
  }
}

void TlsLayer::Attach(uint32_t slot, conn::Protocol* conn, SSL* ssl) {
  Link& l = links_[slot];
  URING_CHECK(l.conn == nullptr);
  l = Link();
  l.conn = conn;
  l.proxy_pending = config_.proxy_protocol;
  sessions_[slot].Start(ssl);
  HandshakeJob& job = jobs_[slot];
  job.gate.mode = gate_mode_;
  job.gate.on_worker = false;
  job.session = &sessions_[slot];
  TlsContext::SetGate(ssl, &job.gate);
  const uint32_t timeout_ms = handshake_timeout_ms_;
  if (timeout_ms > 0) {
    l.handshake_deadline = loop_->now_tick + (timeout_ms + config_.tick_ms - 1) / config_.tick_ms + 1;
    SyncDeadline(slot);
  }
}

bool TlsLayer::Freeable(uint32_t slot) const {
  const Link& l = links_[slot];
  return l.real == Recv::kOff && !l.send_inflight && !l.shutdown_inflight && !l.batch_asked &&
         !l.owed_queued && !l.job_out && l.csend == ConnSend::kNone && l.poll == Poll::kNone &&
         (!l.close_issued || l.closed);
}

void TlsLayer::Release(uint32_t slot) {
  Link& l = links_[slot];
  sessions_[slot].Reset();
  if (l.out != nullptr) buffers_->Release(l.out);
  if (l.stash != nullptr) buffers_->Release(l.stash);
  ReleaseProxyBuffer(l);
  l = Link();
}

// ---------------------------------------------------------------- input

void TlsLayer::OnRecv(uint32_t slot, const char* data, size_t len, bool more) {
  Link& l = links_[slot];
  if (!more) l.real = Recv::kOff;  // a multishot receive that ended with bytes
  if (l.close_asked || l.phase == Phase::kFailed) {
    // Closing: the bytes are dropped (the close cancels this receive).
    if (l.close_asked && !more) FinishClose(slot);
    return;
  }
  if (l.offloaded) {
    // The worker owns the session: the bytes wait (a client has nothing to
    // send before our flight, so this is rare and small).
    if (l.stash == nullptr) l.stash = buffers_->Acquire();
    if (l.stash_len + len > buffers_->chunk_size()) {
      Fail(slot, Failure::kProtocol);
      return;
    }
    std::memcpy(l.stash + l.stash_len, data, len);
    l.stash_len += len;
    return;
  }
  if (l.proxy_pending) {
    // Behind a proxy the PROXY header comes first, in clear, as every
    // proxy sends it: read here, before a byte reaches OpenSSL, so that a
    // direct client cannot name its own address inside TLS either.
    size_t used = 0;
    if (!ReadProxyHeader(slot, data, len, &used)) {
      if (l.close_asked) {
        FinishClose(slot);
      } else {
        SyncRecv(slot);  // reads on for the rest of it
      }
      return;
    }
    data += used;
    len -= used;
    if (len == 0) {
      SyncRecv(slot);
      return;
    }
  }
  if (!l.seen_bytes) {
    l.seen_bytes = true;
    if (len > 0 && LooksLikeHttp(data[0])) {
      Fail(slot, Failure::kPlainHttp);
      return;
    }
  }
  Feed(slot, data, len);
  if (l.close_asked) {
    FinishClose(slot);
    return;
  }
  SyncRecv(slot);
  Flush(slot);
  MaybeReleaseOutput(slot);
}

void TlsLayer::Feed(uint32_t slot, const char* data, size_t len) {
  Link& l = links_[slot];
  TlsSession& s = sessions_[slot];
  EnsureOutput(slot);
  const bool handshaking = !s.handshake_done();
  if (handshaking && adaptive_ && gate_mode_ != HandshakeGate::Mode::kInline) {
    // A signature on the ring holds up the requests of connections that
    // are being reused (keep-alive, streams); when new connections are all
    // the ring serves, running it here saves the worker round trip and is
    // faster for everyone (README, HTTPS).
    const bool reuse_lately = loop_->now_tick <= last_reuse_tick_ + kReuseWindowTicks;
    jobs_[slot].gate.mode = reuse_lately ? gate_mode_ : HandshakeGate::Mode::kInline;
  }
  const size_t output_before = s.output_len();
  const char* in = data;
  for (;;) {
    size_t plain = 0;
    const TlsSession::Status st = s.Feed(in, len, scratch_.get(), scratch_bytes_, &plain);
    in = nullptr;
    if (handshaking && !l.offloaded && s.output_len() > output_before) submit_now_ = true;
    if (s.TakeHandshakeCompleted()) HandshakeDone(slot);
    // What ended the input is recorded before the plaintext that came with
    // it reaches the connection: the connection answers inside Deliver
    // (Send -> EncryptConn), and must find the session as it now is. A
    // request followed in the same receive by the client's fatal alert, or
    // by a record that does not decrypt, is still delivered (as a request
    // followed by a reset is over plain TCP), but its answer finds the
    // session failed and the send fails; it never reaches Encrypt.
    if (st == TlsSession::Status::kFailed && plain > 0) {
      l.phase = Phase::kFailed;  // Fail() below does the rest
    } else if (st == TlsSession::Status::kPeerClosed) {
      // The peer's close_notify: its end of the stream, as a FIN would be.
      l.peer_done = true;
      l.peer_res = 0;
    }
    if (plain > 0) Deliver(slot, plain);
    if (l.close_asked) return;
    switch (st) {
      case TlsSession::Status::kPlainFull:
        continue;
      case TlsSession::Status::kNeedMore:
        return;
      case TlsSession::Status::kPeerClosed:
        if (l.virt != Recv::kOff) EndVirtual(slot, 0);
        return;
      case TlsSession::Status::kFailed:
        Fail(slot, Failure::kProtocol);
        return;
      case TlsSession::Status::kSuspended:
        if (Offload(slot)) return;
        continue;  // on the ring after all: the gate lets it through now
    }
  }
}

void TlsLayer::Deliver(uint32_t slot, size_t len) {
  Link& l = links_[slot];
  // The connection's single-shot receive ends with its first bytes; bytes
  // that come while its receive is off or being cancelled are staged by it
  // like the ones a cancelled kernel receive still delivers.
  const bool ended = l.virt == Recv::kArmed && l.virt_once;
  if (ended) l.virt = Recv::kOff;
  // Bytes on a connection that had bytes before: it is being reused.
  if (l.delivered) last_reuse_tick_ = loop_->now_tick;
  l.delivered = true;
  l.conn->OnRecv(scratch_.get(), len, ended);
}

void TlsLayer::HandshakeDone(uint32_t slot) {
  Link& l = links_[slot];
  l.phase = Phase::kOpen;
  SSL* ssl = sessions_[slot].ssl();
  stats_->handshakes.Add();
  if (SSL_session_reused(ssl)) stats_->resumed.Add();
  if (SSL_version(ssl) == TLS1_3_VERSION) {
    stats_->tls13.Add();
  } else {
    stats_->tls12.Add();
  }
  // HTTP/2 by ALPN: the slot's protocol changes before it hears anything.
  if (on_h2_ && NegotiatedH2(ssl)) on_h2_(slot);
  if (std::shared_ptr<const http::ClientCertificate> cert = VerifiedClientCertificate(ssl)) {
    stats_->client_certs_verified.Add();
    l.conn->SetClientCertificate(std::move(cert));
  }
  // The connection's own deadlines run from here.
  SyncDeadline(slot);
}

void TlsLayer::OnRecvEnd(uint32_t slot, int res) {
  Link& l = links_[slot];
  l.real = Recv::kOff;
  if (res == -ENOBUFS && !l.close_asked) {
    // No provided buffer: not the connection's business. The loop calls
    // OnBuffersAvailable once buffers are back.
    l.starved = true;
    if (l.virt == Recv::kCancelling) EndVirtual(slot, -ECANCELED);
    return;
  }
  if (res != -ECANCELED && res != -ENOBUFS && !l.peer_done) {
    l.peer_done = true;  // the peer's FIN, or the socket failed
    l.peer_res = res;
    if (l.phase == Phase::kHandshake && !l.close_asked) stats_->failed_peer_closed.Add();
  }
  if (l.virt != Recv::kOff) {
    if (l.peer_done) {
      EndVirtual(slot, l.peer_res);
    } else if (l.virt == Recv::kCancelling || l.close_asked) {
      EndVirtual(slot, -ECANCELED);
    }
    // else: cancelled while the connection did not want bytes, and it wants
    // them again now: re-armed below.
  }
  if (l.close_asked) {
    FinishClose(slot);
    return;
  }
  SyncRecv(slot);
}

void TlsLayer::OnBuffersAvailable(uint32_t slot) {
  Link& l = links_[slot];
  if (!l.starved) return;
  l.starved = false;
  SyncRecv(slot);
}

void TlsLayer::EndVirtual(uint32_t slot, int res) {
  Link& l = links_[slot];
  l.virt = Recv::kOff;
  l.conn->OnRecvEnd(res);
}

void TlsLayer::SyncRecv(uint32_t slot) {
  Link& l = links_[slot];
  if (l.close_asked) return;
  // The handshake reads whatever the connection wants; after it, the
  // kernel's receive follows the connection's.
  const bool want = !l.peer_done && !l.starved && l.phase != Phase::kFailed &&
                    (l.phase == Phase::kHandshake || l.virt == Recv::kArmed);
  if (want && l.real == Recv::kOff) {
    // Always multishot: a single-shot receive that brings half a record
    // would have to be armed again before the connection sees a byte.
    below_->ArmRecv(slot, l.bulk, /*once=*/false);
    l.real = Recv::kArmed;
  } else if (!want && l.real == Recv::kArmed) {
    below_->CancelRecv(slot);
    l.real = Recv::kCancelling;
  }
}

void TlsLayer::AskBatch(uint32_t slot) {
  Link& l = links_[slot];
  if (l.batch_asked) return;
  l.batch_asked = true;
  below_->AfterBatch(slot);
}

void TlsLayer::OnBatchEnd(uint32_t slot) {
  Link& l = links_[slot];
  l.batch_asked = false;
  // What the connection is owed, as completions it would have had from the
  // kernel, delivered outside the call that caused them.
  DeliverOwedTo(slot);
  if (l.virt != Recv::kOff && (l.real == Recv::kOff || l.phase == Phase::kHandshake)) {
    if (l.peer_done) {
      EndVirtual(slot, l.peer_res);
    } else if (l.virt == Recv::kCancelling || l.close_asked) {
      EndVirtual(slot, -ECANCELED);
    }
  }
  if (l.conn_batch) {
    l.conn_batch = false;
    l.conn->OnBatchEnd();
  }
  if (l.close_asked) FinishClose(slot);
}

bool TlsLayer::ReadProxyHeader(uint32_t slot, const char* data, size_t len, size_t* used) {
  Link& l = links_[slot];
  // Longer than any header the parser accepts (v2's fixed part and its
  // largest payload): parsing that much always ends in kDone or kError.
  constexpr size_t kMax = conn::kProxyV2FixedBytes + conn::kProxyV2MaxPayload;
  const size_t before = l.proxy_len;
  conn::ProxyHeader header;
  if (before > 0) {
    // A header split across receives: what came so far is staged, and at
    // most the rest of a header's worth more is appended.
    const size_t n = std::min(len, kMax - before);
    std::memcpy(l.proxy_buf + before, data, n);
    l.proxy_len = static_cast<uint16_t>(before + n);
    header = conn::ParseProxyHeader(std::string_view(l.proxy_buf, l.proxy_len));
  } else {
    header = conn::ParseProxyHeader(std::string_view(data, len));
  }
  switch (header.status) {
    case conn::ProxyStatus::kIncomplete:
      if (before == 0 && len < kMax) {
        l.proxy_buf = buffers_->Acquire();
        std::memcpy(l.proxy_buf, data, len);
        l.proxy_len = static_cast<uint16_t>(len);
        return false;
      }
      if (before > 0 && l.proxy_len < kMax) return false;
      [[fallthrough]];  // (cannot be: the parser decides within kMax)
    case conn::ProxyStatus::kError:
      ReleaseProxyBuffer(l);
      Fail(slot, Failure::kProxyHeader);
      return false;
    case conn::ProxyStatus::kDone:
      break;
  }
  URING_CHECK(header.consumed > before && header.consumed - before <= len);
  *used = header.consumed - before;
  ReleaseProxyBuffer(l);
  l.proxy_pending = false;
  if (!header.local) l.conn->SetProxiedClient(header.source);
  return true;
}

void TlsLayer::ReleaseProxyBuffer(Link& l) {
  if (l.proxy_buf != nullptr) buffers_->Release(l.proxy_buf);
  l.proxy_buf = nullptr;
  l.proxy_len = 0;
}

// ---------------------------------------------------------------- ConnectionHost

void TlsLayer::ArmRecv(uint32_t slot, bool bulk, bool once) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->ArmRecv(slot, bulk, once);
  l.virt = Recv::kArmed;
  l.virt_once = once;
  l.bulk = bulk;
  if (l.peer_done) {
    AskBatch(slot);  // ends at once, as the kernel's would after EOF
    return;
  }
  SyncRecv(slot);
}

void TlsLayer::CancelRecv(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->CancelRecv(slot);
  if (l.virt != Recv::kArmed) return;
  l.virt = Recv::kCancelling;
  if (l.real == Recv::kArmed && l.phase == Phase::kOpen) {
    SyncRecv(slot);  // the kernel's end becomes the connection's
  } else if (l.real != Recv::kCancelling) {
    AskBatch(slot);  // nothing of the kernel's to end: its end is owed
  }
}

void TlsLayer::Close(uint32_t slot, bool recv_armed, bool send_inflight) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->Close(slot, recv_armed, send_inflight);
  l.close_asked = true;
  if (l.phase == Phase::kOpen && !l.write_dead && !l.send_inflight &&
      l.csend == ConnSend::kNone && l.poll == Poll::kNone) {
    EnsureOutput(slot);
    sessions_[slot].CloseNotify();  // a graceful end, not a truncation
  }
  FinishClose(slot);
}

void TlsLayer::SetDeadline(uint32_t slot, uint64_t tick) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->SetDeadline(slot, tick);
  l.conn_deadline = tick;
  SyncDeadline(slot);
}

bool TlsLayer::AcquirePipe(Pipe* pipe) {
  // A pipe is asked for by a connection about to splice a file to its
  // socket: over TLS the file is read (and encrypted) instead. Plain slots
  // of the same loop read too.
  (void)pipe;
  return false;
}

void TlsLayer::SpliceToSocket(uint32_t slot, int pipe_read, uint32_t len, bool more) {
  URING_CHECK(links_[slot].conn == nullptr);  // never given a pipe
  below_->SpliceToSocket(slot, pipe_read, len, more);
}

void TlsLayer::AfterBatch(uint32_t slot) {
  Link& l = links_[slot];
  if (l.conn == nullptr) return below_->AfterBatch(slot);
  l.conn_batch = true;
  AskBatch(slot);
}

}  // namespace uring_http::tls
