// http2::Connection, its output and its life: frames from the session into
// one send at a time, the timers (send, stall, idle, a stream's body), the
// graceful end (GOAWAY, our FIN, the lingering read) and the close. The
// streams' exchanges are connection.cc's.
#include <algorithm>
#include <memory>
#include <vector>

#include "src/base/buffer_shelf.h"
#include "src/base/check.h"
#include "src/http2/connection.h"

namespace uring_http::http2 {
namespace {

// Output buffers (kOutputBytes each) of connections with nothing to send
// wait here for the next that has: an idle connection holds none, and a
// busy loop does not allocate one per answer. Per thread: a loop is one.
thread_local base::BufferShelf spare_output(64);

}  // namespace

std::unique_ptr<char[]> Connection::TakeOutputBuffer() { return spare_output.Take(kOutputBytes); }

void Connection::GiveOutputBuffer(std::unique_ptr<char[]>& b) {
  if (b != nullptr) spare_output.Put(std::move(b), kOutputBytes);
  b.reset();
}

// ---------------------------------------------------------------- output and life

void Connection::Flush() {
  if (send_inflight_ || phase_ != Phase::kOpen) return;
  if (sent_ == out_len_) sent_ = out_len_ = 0;
  if (out_ == nullptr) {
    if (session_ == nullptr || !session_->WantsWrite()) return;
    out_ = TakeOutputBuffer();
  }
  // Bounded per send: a connection with much to say takes its turns. (No
  // session: a refused upgrade's 400 is all there is.)
  while (session_ != nullptr && out_len_ < kOutputBytes && session_->WantsWrite()) {
    const size_t n = session_->Send(out_.get() + out_len_, kOutputBytes - out_len_);
    if (n == 0) break;
    out_len_ += n;
  }
  if (sent_ == out_len_) {
    GiveOutputBuffer(out_);  // nothing to send: the buffer waits for another
    return;
  }
  if (sent_ < out_len_) {
    iov_ = {out_.get() + sent_, out_len_ - sent_};
    send_inflight_ = true;
    send_deadline_ = After(env_->config->send_timeout_ms);
    env_->transport->Send(slot_, &iov_, 1, /*zero_copy=*/false, nullptr, /*dont_wait=*/false);
  }
}

bool Connection::FlowBlocked() const {
  for (const auto& [id, sp] : streams_) {
    if (sp->answered && session_->AnswerPending(id)) return true;
  }
  return false;
}

void Connection::OnSend(int res, bool notification_follows) {
  send_inflight_ = false;
  if (res < 0) {
    sent_ = out_len_ = 0;
    fatal_ = true;  // the peer is gone: nothing more can go
    peer_eof_ = true;
  } else {
    sent_ += static_cast<size_t>(res);
  }
  Sync();
}

void Connection::Sync() {
  if (phase_ != Phase::kOpen) return;
  Flush();
  if (session_ != nullptr && !session_->failure().empty()) {
    fatal_ = true;
    if (!error_counted_) {
      error_counted_ = true;
      const ErrorKind kind = ErrorKindOf(session_->failure());
      // An idle or drained connection's own GOAWAY is not an error.
      if (session_->failure() != "terminated") {
        env_->stats->http2_errors[static_cast<size_t>(kind)].Add();
      }
    }
  }
  const bool want_read = session_ != nullptr && !fatal_ && session_->WantsRead();
  const bool want_write = session_ != nullptr && !fatal_ && session_->WantsWrite();
  const bool output_left = send_inflight_ || sent_ < out_len_;
  // Done: both sides said GOAWAY (or the peer is gone, or the session
  // failed) and what was queued is out.
  if (!output_left && (fatal_ || peer_eof_ || (!want_read && !want_write))) {
    // A client still there gets our FIN and a lingering read; one gone
    // (its FIN, a reset, a failed send) the close at once.
    return peer_eof_ ? StartClose() : StartLinger();
  }
  if (!recv_armed_ && !recv_starved_ && !peer_eof_ && !fatal_ && want_read) {
    recv_armed_ = true;
    env_->transport->ArmRecv(slot_, /*bulk=*/false, /*once=*/false);
  }
  // With output going: --send-timeout from the last send's start (a peer
  // that stops reading is not kept alive by the frames it sends); idle (no
  // stream open): --idle-timeout from the last event.
  timeout_deadline_ = 0;
  if (output_left) {
    timeout_deadline_ = send_deadline_;
    stall_deadline_ = 0;
  } else if (streams_.empty()) {
    timeout_deadline_ = After(env_->draining ? env_->config->drain_idle_ms
                                             : env_->config->idle_timeout_ms);
    stall_deadline_ = 0;
  } else if (FlowBlocked()) {
    // Answers wait for the client's windows and nothing is being sent: the
    // send timeout runs from when that began, and any send that goes ends
    // it (a client that opens no window, or stops opening them, does not
    // hold its streams' answers for ever).
    if (stall_deadline_ == 0) stall_deadline_ = After(env_->config->send_timeout_ms);
    timeout_deadline_ = stall_deadline_;
  } else {
    // Streams whose requests have not ended wait for the client: as
    // HTTP/1's body timeout, a client that stops sending them does not hold
    // the connection for ever.
    stall_deadline_ = 0;
    timeout_deadline_ = ClientDeadline();
  }
  uint64_t deadline = timeout_deadline_;
  // A producer that had nothing is asked again at the next tick.
  if (producer_retry_tick_ != 0 && (deadline == 0 || producer_retry_tick_ < deadline)) {
    deadline = producer_retry_tick_;
  }
  // A file read waiting for a buffer tries again at the next tick.
  if (files_ != nullptr && files_->retry_tick != 0 &&
      (deadline == 0 || files_->retry_tick < deadline)) {
    deadline = files_->retry_tick;
  }
  if (deadline != armed_deadline_) {
    armed_deadline_ = deadline;
    env_->transport->SetDeadline(slot_, deadline);
  }
}

void Connection::OnDeadline() {
  if (phase_ == Phase::kLingering) {
    if (armed_deadline_ != 0 && env_->now_tick >= armed_deadline_) FinishLinger();
    return;
  }
  if (phase_ != Phase::kOpen) return;
  if (files_ != nullptr && files_->retry_tick != 0 && env_->now_tick >= files_->retry_tick) {
    files_->retry_tick = 0;
    NextFileOp();
  }
  if (producer_retry_tick_ != 0 && env_->now_tick >= producer_retry_tick_) RetryProducers();
  if (timeout_deadline_ == 0 || env_->now_tick < timeout_deadline_) return Sync();
  armed_deadline_ = timeout_deadline_ = 0;
  env_->stats->timeouts.Add();
  if (send_inflight_ || stall_deadline_ != 0) {
    // No progress on our output: the peer stopped reading.
    fatal_ = true;
    return StartClose();
  }
  if (!streams_.empty()) {
    ExpireClientWaits();
    return Sync();
  }
  if (session_ == nullptr) {
    fatal_ = true;
    return StartClose();
  }
  // Idle: GOAWAY, then the close once it is out.
  session_->Terminate(kNoError);
  fatal_ = true;
  Sync();
}

uint64_t Connection::ClientDeadline() {
  uint64_t earliest = 0;
  for (auto& [id, sp] : streams_) {
    Stream& s = *sp;
    if (s.client_deadline == 0) continue;
    if (!s.body_waiting.empty()) s.client_deadline = After(env_->config->body_timeout_ms);
    if (earliest == 0 || s.client_deadline < earliest) earliest = s.client_deadline;
  }
  return earliest;
}

void Connection::ExpireClientWaits() {
  for (auto& [id, sp] : streams_) {
    Stream& s = *sp;
    if (s.client_deadline == 0 || env_->now_tick < s.client_deadline) continue;
    s.client_deadline = 0;
    if (!s.answered && !s.streaming) {
      // A buffered body: answered 408 as over HTTP/1; the session resets
      // the stream once the answer has gone (RFC 9113 8.1).
      s.refused = true;
      body_bytes_ -= s.body.size();
      s.body = std::string();
      SubmitError(s, 408);
    } else {
      // A sink or a handler has the body, or an answer has begun: the
      // stream ends (OnStreamClosed tells whoever reads the body).
      session_->ResetStream(s.id, kCancel);
    }
  }
}

void Connection::OnDrain() {
  if (phase_ != Phase::kOpen || session_ == nullptr) return;
  for (const Task& t : tasks_) {
    if (!t.orphaned) env_->host->StopTask(slot_, t.task, http::StopReason::kDraining);
  }
  // GOAWAY: the streams begun finish, no new one starts (session.h).
  session_->Shutdown();
  Sync();
}

void Connection::Abort() {
  if (phase_ == Phase::kLingering) return FinishLinger();
  if (phase_ != Phase::kOpen) return;
  fatal_ = true;
  StartClose();
}

void Connection::StartLinger() {
  if (phase_ != Phase::kOpen) return;
  phase_ = Phase::kLingering;
  DropStreams();
  env_->stats->lingering_closes.Add();
  shutdown_inflight_ = true;
  env_->transport->ShutdownWrite(slot_);
  armed_deadline_ = After(env_->config->linger_timeout_ms);
  timeout_deadline_ = 0;
  env_->transport->SetDeadline(slot_, armed_deadline_);
  if (!recv_armed_ && !recv_starved_) {
    recv_armed_ = true;
    env_->transport->ArmRecv(slot_, /*bulk=*/false, /*once=*/false);
  }
  if (armed_deadline_ == 0) FinishLinger();  // no lingering asked for
}

void Connection::OnShutdownDone() {
  shutdown_inflight_ = false;
  if (linger_done_) {
    linger_done_ = false;
    phase_ = Phase::kCloseSubmitted;
    env_->transport->Close(slot_, recv_armed_, send_inflight_);
  }
}

void Connection::FinishLinger() {
  if (phase_ != Phase::kLingering) return;
  if (armed_deadline_ != 0) {
    armed_deadline_ = 0;
    env_->transport->SetDeadline(slot_, 0);
  }
  if (shutdown_inflight_) {
    // The close waits for the shutdown's completion (OnShutdownDone).
    linger_done_ = true;
    return;
  }
  phase_ = Phase::kCloseSubmitted;
  env_->transport->Close(slot_, recv_armed_, send_inflight_);
}

void Connection::StartClose() {
  if (phase_ != Phase::kOpen) return;
  phase_ = Phase::kCloseSubmitted;
  DropStreams();
  if (armed_deadline_ != 0) {
    armed_deadline_ = timeout_deadline_ = 0;
    env_->transport->SetDeadline(slot_, 0);
  }
  env_->transport->Close(slot_, recv_armed_, send_inflight_);
}

void Connection::DropStreams() {
  // Workers still answering streams of this connection stop soon; their
  // tasks are freed as they return (Freeable waits for them).
  for (auto& [id, sp] : streams_) {
    if (sp->streaming && !sp->body_ended) AbortStreamedBody(*sp, /*stream_open=*/false);
    Orphan(*sp);
    EndFile(*sp);
    ReleaseLimits(*sp);
  }
  producer_retry_tick_ = 0;
  if (files_ != nullptr) {
    files_->waiting.clear();
    files_->retry_tick = 0;
  }
}

void Connection::OnClosed() {
  // The close cancelled what was armed; their completions may still come
  // (Freeable waits for them).
  phase_ = Phase::kClosed;
}

void Connection::Release() {
  URING_CHECK(tasks_.empty());  // Freeable: every task has returned
  URING_CHECK(files_ == nullptr || files_->op == FileOp::kNone);
  for (auto& [id, sp] : streams_) EndFile(*sp);
  files_.reset();
  // The session goes first: it fires no events, and its streams' views
  // (RequestHead) are not read again.
  session_.reset();
  streams_.clear();
  body_bytes_ = 0;
  sent_ = out_len_ = 0;
  GiveOutputBuffer(out_);
  phase_ = Phase::kOpen;
  recv_armed_ = recv_starved_ = peer_eof_ = send_inflight_ = fatal_ = false;
  shutdown_inflight_ = linger_done_ = false;
  error_counted_ = false;
  armed_deadline_ = timeout_deadline_ = send_deadline_ = producer_retry_tick_ = 0;
  stall_deadline_ = 0;
  pipe_written_ = false;
  client_ = http::ClientAddress();
  client_cert_.reset();
  secure_ = false;
}

}  // namespace uring_http::http2
