// Connection, part one's second half: the connection's clocks and its end.
// One deadline at a time is armed with the loop (the earliest of the head,
// body, rate, send, idle and linger clocks), and what its expiry means
// depends on what the connection was doing; a drain, an abort or a peer's
// close lead to the graceful close (the answer in flight sent, then the
// lingering read) or the abrupt one, then the slot's release; a hand-off
// gives the socket and the bytes already read to another protocol.
#include <cstring>
#include <utility>

#include "src/base/check.h"
#include "src/http1/connection.h"

namespace uring_http::http1 {

namespace {

// The earlier of two deadlines, 0 meaning none.
inline uint64_t Earlier(uint64_t a, uint64_t b) { return a == 0 || (b != 0 && b < a) ? b : a; }

}  // namespace

void Connection::SyncDeadline() {
  const bool idle = phase_ == Phase::kOpen && input_ == Input::kHead && in_.len == 0 &&
                    Quiet();
  if (!idle) {
    idle_deadline_ = 0;
  } else if (idle_deadline_ == 0) {
    uint32_t ms = env_->config->idle_timeout_ms;
    // Draining: a connection between requests gets a short grace, so that
    // a request already on its way is answered (with Connection: close)
    // instead of lost to our close.
    if (env_->draining && (ms == 0 || ms > env_->config->drain_idle_ms)) {
      ms = env_->config->drain_idle_ms;
    }
    idle_deadline_ = After(ms);
  }
  if (send_deadline_ != 0 && !out_.send_inflight() && out_.empty() && !FileOwnsSocket()) {
    send_deadline_ = 0;
  }
  // A body's clocks run only while its bytes are read.
  if (input_ != Input::kBody) StopBodyClocks();
  MaybeReleaseStreams();
  const uint64_t next =
      Earlier(Earlier(Earlier(head_deadline_, body_deadline_), Earlier(send_deadline_, idle_deadline_)),
              Earlier(Earlier(linger_deadline_, producer_retry_), rate_deadline_));
  if (next != armed_deadline_) {
    armed_deadline_ = next;
    env_->transport->SetDeadline(slot_, next);
  }
}

void Connection::OnDeadline() {
  armed_deadline_ = 0;  // the loop's entry fired
  const uint64_t now = env_->now_tick;
  auto due = [now](uint64_t& d) {
    if (d == 0 || d > now) return false;
    d = 0;
    return true;
  };
  if (phase_ == Phase::kCloseSubmitted && out_.send_inflight() && due(send_deadline_)) {
    // A last send linked to its close (SendLastAndClose) that the peer
    // does not take: cancelled, and the close runs.
    env_->stats->timeouts.Add();
    env_->transport->CancelSend(slot_);
    return;
  }
  if (phase_ >= Phase::kClosing) return;
  if (due(linger_deadline_)) {
    env_->stats->timeouts.Add();
    phase_ = Phase::kClosing;
    if (!shutdown_inflight_) IssueClose();
    return;
  }
  if (phase_ == Phase::kLingering) {
    SyncDeadline();
    return;
  }
  if (due(send_deadline_)) {
    // The peer has taken none of our output for --send-timeout.
    env_->stats->timeouts.Add();
    Abort();
    return;
  }
  if (proxy_pending_ && due(head_deadline_)) {
    // No whole PROXY header in time: closed without an answer, like a
    // malformed one.
    env_->stats->timeouts.Add();
    env_->stats->proxy_header_errors.Add();
    Abort();
    return;
  }
  size_t scanned = 0;
  if (due(head_deadline_) && input_ == Input::kHead &&
      !(in_.len > 0 && http::FindHeadEnd(in_.view(), &scanned) != 0)) {
    // A slowloris client: tell it why, then close (lingering: it is still
    // sending its head). A whole head waiting behind our own output is not
    // late: it is read once the output drains.
    env_->stats->timeouts.Add();
    ReleaseBuffer(in_);
    head_scanned_ = 0;
    AnswerError(408, /*close=*/true);
    input_ = Input::kDone;
    phase_ = Phase::kFinishing;
    linger_ = true;
  }
  if (due(body_deadline_) && input_ == Input::kBody) {
    // No byte for --body-timeout. A worker's handler reading the body is
    // told so; the answer is 408 unless the handler's has begun.
    env_->stats->timeouts.Add();
    BodyFailed(408, http::BodyError::kTimedOut);
  }
  if (due(rate_deadline_) && input_ == Input::kBody) CheckBodyRate();
  if (due(idle_deadline_)) {
    StartClose(/*graceful=*/true);
    return;
  }
  if (due(producer_retry_)) {
    if (ex_.answer == Answer::kProducer) PumpProducer();
    if (FileBusy()) PumpFile();  // a file buffer may be free now
  }
  Sync();
}

void Connection::OnDrain() {
  if (task_inflight_) env_->host->StopTask(slot_, task_, http::StopReason::kDraining);
  idle_deadline_ = 0;  // recomputed with the drain's grace
  Sync();
}

void Connection::Abort() {
  if (phase_ >= Phase::kClosing) return;
  out_.DiscardUnsent();
  if (phase_ == Phase::kLingering) {
    // Lingering: the wait for the peer's FIN is cut short.
    phase_ = Phase::kClosing;
    if (!shutdown_inflight_) IssueClose();
    return;
  }
  StartClose(/*graceful=*/false);
}

void Connection::StartClose(bool graceful) {
  if (phase_ >= Phase::kLingering) return;
  // Anything staged, or a body not read to its end, is input left unread.
  if (in_.len > 0 || (ex_.answer != Answer::kNone && !ex_.body_done)) linger_ = true;
  ReleaseBuffer(in_);
  head_scanned_ = 0;
  // A worker blocked on one of this connection's pipes gives up now (a
  // reader of the request body is told the client is gone).
  const bool live_stream = (req_pipe() != nullptr && !req_pipe()->finished()) ||
                           (resp_pipe() != nullptr && !resp_pipe()->finished()) ||
                           sink() != nullptr || ex_.answer == Answer::kProducer;
  if (live_stream && (!graceful || !Quiet())) env_->stats->aborted_streams.Add();
  // A file answer stops here: a statx, open or read in flight still
  // completes (Freeable waits for it) and lets go of what it got.
  if (FileBusy()) st_->file->aborted = true;
  if (req_pipe() != nullptr) req_pipe()->Abort(static_cast<uint8_t>(http::BodyError::kClientGone));
  if (resp_pipe() != nullptr) resp_pipe()->Abort();
  if (task_ != nullptr && !task_inflight_) FreeTask();
  // A handler still running hears that its answer has nowhere to go.
  if (task_inflight_) env_->host->StopTask(slot_, task_, http::StopReason::kClientGone);
  if (sink() != nullptr) {
    sink()->OnAbort();
    if (st_) st_->sink.reset();
  }
  if (st_) {
    st_->producer = nullptr;
    st_->gzip.reset();
  }
  head_deadline_ = body_deadline_ = idle_deadline_ = producer_retry_ = 0;
  StopBodyClocks();
  if (graceful && linger_ && !peer_eof_ && !recv_failed_) {
    // Lingering close, for a peer whose input we left unread: our FIN goes
    // now, but we keep reading and discarding until the peer's, because
    // closing with unread input sends a reset that can destroy the response
    // still on its way to the peer. The receive is re-armed if it was
    // paused or being cancelled (WantRecv).
    env_->stats->lingering_closes.Add();
    phase_ = Phase::kLingering;
    shutdown_inflight_ = true;
    env_->transport->ShutdownWrite(slot_);
    linger_deadline_ = After(env_->config->linger_timeout_ms);
    send_deadline_ = 0;
    SyncRecv();
    SyncDeadline();
    return;
  }
  phase_ = Phase::kClosing;
  // IORING_OP_SHUTDOWN runs asynchronously and resolves the descriptor late:
  // closing before it completes would free the table entry, the next accept
  // could reuse it, and our SHUT_WR would hit that new connection.
  if (!shutdown_inflight_) IssueClose();
}

void Connection::OnShutdownDone() {
  shutdown_inflight_ = false;
  if (phase_ == Phase::kClosing) IssueClose();
}

void Connection::IssueClose() {
  if (phase_ >= Phase::kCloseSubmitted) return;
  if (shutdown_inflight_) {
    phase_ = Phase::kClosing;  // OnShutdownDone() comes back here
    return;
  }
  phase_ = Phase::kCloseSubmitted;
  ReleaseBuffer(in_);
  if (req_pipe() != nullptr) req_pipe()->Abort(static_cast<uint8_t>(http::BodyError::kClientGone));
  if (resp_pipe() != nullptr) resp_pipe()->Abort();
  out_.DiscardUnsent();
  head_deadline_ = body_deadline_ = send_deadline_ = idle_deadline_ = 0;
  StopBodyClocks();
  linger_deadline_ = producer_retry_ = 0;
  if (armed_deadline_ != 0) {
    armed_deadline_ = 0;
    env_->transport->SetDeadline(slot_, 0);
  }
  env_->transport->Close(slot_, recv_ != Recv::kOff, out_.send_inflight() || FileOwnsSocket());
}

void Connection::OnClosed() {
  phase_ = Phase::kClosed;
  // A close cancels what was armed; their completions are still to come.
}

conn::Handoff Connection::Detach() {
  // Only a connection that has answered nothing is handed on: nothing has
  // been sent or given to a worker.
  URING_CHECK(out_.empty() && !out_.send_inflight() && !task_inflight_ && !shutdown_inflight_);
  conn::Handoff handoff;
  // A receive being cancelled (a pause) ends with -ECANCELED at the next
  // protocol, which arms its own.
  handoff.recv_armed = recv_ != Recv::kOff;
  handoff.recv_bulk = recv_bulk_;
  handoff.peer_eof = peer_eof_;
  // Closed as far as this connection knows: nothing of it runs again, and
  // the loop releases it without touching the socket.
  phase_ = Phase::kClosed;
  input_ = Input::kDone;
  recv_ = Recv::kOff;
  head_deadline_ = idle_deadline_ = 0;
  return handoff;
}

void Connection::HandOff(conn::ProtocolId next, std::string_view bytes) {
  conn::Handoff handoff = Detach();
  handoff.bytes = bytes;
  env_->host->HandOff(slot_, next, handoff);
}

void Connection::Release() {
  URING_CHECK(!task_inflight_);
  ReleaseBuffer(in_);
  ReleaseBuffer(req_);
  FreeTask();
  out_.DiscardUnsent();  // frees the rest: nothing is in flight any more
  URING_CHECK(out_.idle());
  ReleaseLimits();  // an exchange the connection's end cut short
  ex_ = Exchange();
  if (FileBusy()) EndFile();  // its bytes were released just now
  if (st_ != nullptr) {
    st_->req_pipe.reset();
    st_->resp_pipe.reset();
    st_->sink.reset();
    st_->producer = nullptr;
    st_->gzip.reset();
    env_->streams->Release(std::move(st_));
  }
  ex_ = Exchange();
  unparsed_ = {};
  phase_ = Phase::kOpen;
  input_ = Input::kHead;
  recv_ = Recv::kOff;
  recv_starved_ = peer_eof_ = recv_failed_ = shutdown_inflight_ = recv_bulk_ = false;
  recv_used_ = false;
  linger_ = in_staged_source_ = zc_inflight_ = batch_hook_ = false;
  proxy_pending_ = false;
  proxied_ = http::ClientAddress();
  client_cert_.reset();
  head_scanned_ = 0;
  head_line_checked_ = false;
  began_ = false;
  head_deadline_ = body_deadline_ = send_deadline_ = idle_deadline_ = 0;
  linger_deadline_ = producer_retry_ = armed_deadline_ = 0;
  StopBodyClocks();
}

}  // namespace uring_http::http1
