// Connection, part one: the connection's life and its I/O (events from the
// loop, output, the receive; its deadlines and its end are in
// connection_close.cc). Part two, requests.cc, reads requests; part three,
// answers.cc, puts their answers into the output queue.
#include "src/http1/connection.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "src/base/check.h"

namespace uring_http::http1 {

Connection::~Connection() {
  // The loop is going away (its ring is gone, and with it everything the
  // kernel held); the output queue frees its own buffers.
  if (env_ == nullptr) return;
  ReleaseBuffer(in_);
  ReleaseBuffer(req_);
  if (!task_inflight_) {
    FreeTask();
    if (st_) st_->req_pipe.reset();
  }
}

void Connection::Open(exchange::ConnectionEnv* env, uint32_t slot, bool proxy_header_below) {
  env_ = env;
  slot_ = slot;
  out_.Init(env->chunks);
  phase_ = Phase::kOpen;
  input_ = Input::kHead;
  proxy_pending_ = env->config->proxy_protocol && !proxy_header_below;
  // Only the TLS layer reads the PROXY header below us.
  secure_ = proxy_header_below;
  // The header is due within the head's time, not the idle one: a proxy
  // sends it at once, and a connection that sends nothing is not a proxy.
  if (proxy_pending_) head_deadline_ = After(env->config->header_timeout_ms);
  Sync();
}

uint64_t Connection::After(uint32_t ms) const {
  if (ms == 0) return 0;
  // +1: the tick in progress may be about to fire; never expire early.
  const uint32_t tick = env_->config->tick_ms;
  return env_->now_tick + (ms + tick - 1) / tick + 1;
}

// ---------------------------------------------------------------- receive

void Connection::OnRecv(const char* data, size_t len, bool ended) {
  // `ended`: the completion also ends the receive (a single-shot one, or a
  // multishot one's last). Known before the bytes are processed, so that
  // their answer can see that nothing is armed (CloseFollowsThisSend).
  if (ended) recv_ = Recv::kOff;
  if (phase_ >= Phase::kLingering) {
    // Reading only to see the peer's FIN.
    if (ended) Sync();  // reads on
    return;
  }
  if (input_ == Input::kDone) {
    // Bytes after the last request we will answer: dropped, and the close
    // must linger, or they would turn it into a reset.
    linger_ = true;
    Sync();
    return;
  }
  if (proxy_pending_ && !ReadProxyHeader(&data, &len)) {
    if (phase_ == Phase::kOpen) Sync();  // reads on for the rest of it
    return;
  }
  if (in_.len == 0) {
    // The common case: whole requests in one receive, parsed in place.
    const size_t used = Process(data, len, /*staged=*/false);
    if (used < len && !StageInput(data + used, len - used)) {
      Abort();
      return;
    }
  } else {
    if (len > 0 && !StageInput(data, len)) {
      Abort();
      return;
    }
    ProcessStaged();
  }
  Sync();
}

void Connection::OnRecvEnd(int res) {
  recv_ = Recv::kOff;
  if (res == 0) {
    peer_eof_ = true;
    if (phase_ == Phase::kLingering) {
      IssueClose();
      return;
    }
    // A client that ends its side while its handler runs has, as far as
    // anyone can tell, gone (as Go's server takes it): the handler is told,
    // and an answer it still makes is sent all the same.
    if (task_inflight_) env_->host->StopTask(slot_, task_, http::StopReason::kClientGone);
    if (phase_ <= Phase::kFinishing) PeerEndedBody();
  } else if (res == -ENOBUFS) {
    recv_starved_ = true;  // re-armed by OnBuffersAvailable()
  } else if (res < 0 && res != -ECANCELED) {
    recv_failed_ = true;  // ECONNRESET and friends: nobody to answer
    if (phase_ == Phase::kLingering) {
      IssueClose();
      return;
    }
    if (phase_ <= Phase::kFinishing) {
      Abort();
      return;
    }
  }
  // A cancel that lands after the pause was lifted, or after the close
  // began lingering, re-arms here: Sync() wants a receive again.
  Sync();
}

void Connection::OnBuffersAvailable() {
  if (!recv_starved_) return;
  recv_starved_ = false;
  Sync();
}

bool Connection::WantRecv() const {
  if (peer_eof_ || recv_failed_ || recv_starved_) return false;
  switch (phase_) {
    case Phase::kOpen:
    case Phase::kFinishing:
      if (recv_ == Recv::kOff && OnlyStrayBytesToRead()) return false;
      // Too much staged behind a request being answered, or behind a
      // worker's full pipe: stop until it drains.
      return in_.len <= (recv_ == Recv::kOff ? kStagedPauseBytes / 2 : kStagedPauseBytes);
    case Phase::kLingering:
      return true;  // read and discard until the peer's FIN
    default:
      return false;
  }
}

bool Connection::CloseFollowsThisSend() const {
  // Once this send is done, Sync() would close at once (StartClose, no
  // linger): the last answer is all in it, nothing else is read, sent or
  // left unread. Only a small answer, which goes into the socket at once
  // (and not after a send came back short, the socket full).
  return phase_ == Phase::kFinishing && input_ == Input::kDone && recv_ == Recv::kOff &&
         !linger_ && in_.len == 0 && !shutdown_inflight_ &&
         ex_.answer == Answer::kNone && !task_inflight_ && (st_ == nullptr || st_->idle()) &&
         out_.pending() == out_.inflight_bytes() && out_.pending() <= kSmallLastAnswerBytes;
}

void Connection::SendLastAndClose(unsigned iov_count) {
  // The close goes with the send, linked, in the same submission: the
  // peer's FIN follows its answer without a round through the loop (a
  // connection-per-request client waits for it). The send deadline still
  // runs: a peer that does not read could hold the send, and with it the
  // close (OnDeadline cancels the send; the close then runs).
  zc_inflight_ = send_dont_wait_ = false;
  phase_ = Phase::kCloseSubmitted;
  ReleaseBuffer(in_);
  head_deadline_ = body_deadline_ = idle_deadline_ = linger_deadline_ = producer_retry_ = 0;
  rate_deadline_ = 0;
  send_deadline_ = After(env_->config->send_timeout_ms);
  if (send_deadline_ != armed_deadline_) {
    armed_deadline_ = send_deadline_;
    env_->transport->SetDeadline(slot_, send_deadline_);
  }
  env_->transport->SendLastAndClose(slot_, out_.send_iov(), iov_count, out_.send_msghdr());
}

bool Connection::OnlyStrayBytesToRead() const {
  // The last request has been answered (it closes the connection), so a
  // receive would only see bytes a client sends after it anyway (RFC 9112
  // 9.6 says it must not), to make the close linger instead of resetting
  // the answer. Worth it while a long answer goes out (or while a worker
  // prepares one: its time is a window too, and the receive stays armed
  // from then); not for a small one, which the close follows at once
  // (SendLastAndClose): there a receive would cost every
  // connection-per-request client a poll and a cancel, to watch a window
  // of one send (nginx and h2o leave it).
  return input_ == Input::kDone && ex_.answer == Answer::kNone && !task_inflight_ &&
         out_.pending() <= kSmallLastAnswerBytes && (st_ == nullptr || st_->idle());
}

bool Connection::WantBulk() const {
  // Until the end of a body found large (see FeedBody): switching back
  // for its last few kilobytes would cost more than it saves.
  return env_->config->bulk_receives && input_ == Input::kBody && ex_.bulk;
}

void Connection::SyncRecv() {
  // The keep-alive case, armed as it should be: nothing to do.
  if (recv_ == Recv::kArmed && !recv_bulk_ && input_ == Input::kHead &&
      phase_ == Phase::kOpen && in_.len <= kStagedPauseBytes && !peer_eof_ && !recv_failed_) {
    return;
  }
  const bool want = WantRecv();
  if (want && recv_ == Recv::kOff) {
    recv_bulk_ = WantBulk();
    env_->transport->ArmRecv(slot_, recv_bulk_, /*once=*/!recv_used_);
    recv_used_ = true;
    recv_ = Recv::kArmed;
  } else if (recv_ == Recv::kArmed && phase_ < Phase::kClosing &&
             (!want || recv_bulk_ != WantBulk())) {
    // Paused, or moving to the other buffer group: the final completion of
    // this receive re-arms it (OnRecvEnd) as it should be then.
    env_->transport->CancelRecv(slot_);
    recv_ = Recv::kCancelling;
  }
}

// ---------------------------------------------------------------- output

void Connection::Flush() {
  if (out_.send_inflight() || out_.empty() || phase_ >= Phase::kCloseSubmitted) return;
  if (FileOwnsSocket()) return;  // a file splices to it, or waits for its room
  const bool zc_allowed = env_->send_zc && env_->now_tick >= env_->zc_paused_until_tick;
  bool zero_copy = false;
  const unsigned n =
      out_.PrepareSend(zc_allowed ? env_->config->send_zc_min_bytes : 0, &zero_copy);
  if (n == 0) return;
  if (!zero_copy && CloseFollowsThisSend()) {
    SendLastAndClose(n);
    return;
  }
  zc_inflight_ = zero_copy;
  send_dont_wait_ = FileSendsMustNotWait();
  if (zero_copy) env_->stats->sends_zc.Add();
  env_->transport->Send(slot_, out_.send_iov(), n, zero_copy, out_.send_msghdr(), send_dont_wait_);
  if (send_deadline_ == 0) send_deadline_ = After(env_->config->send_timeout_ms);
}

void Connection::OnSend(int res, bool notification_follows) {
  const bool was_zc = std::exchange(zc_inflight_, false);
  const bool dont_wait = std::exchange(send_dont_wait_, false);
  const size_t asked = out_.inflight_bytes();
  if (dont_wait && res == -EAGAIN) res = 0;  // no room at all: a short send of nothing
  if (was_zc && res == -ENOMEM && phase_ < Phase::kCloseSubmitted) {
    // The pages a zero-copy send pins count against RLIMIT_MEMLOCK unless we
    // hold CAP_IPC_LOCK: at the limit, copy instead (this send at once, the
    // loop's next ones for a second) rather than fail the response.
    env_->stats->sends_zc_refused.Add();
    env_->zc_paused_until_tick = env_->now_tick + 1000 / env_->config->tick_ms;
    // The refusal still comes with a notification (F_MORE): until then the
    // bytes stay held, and the plain send below reads them meanwhile.
    out_.OnSent(0, notification_follows);
    Sync();
    return;
  }
  if (res < 0) {
    out_.OnSent(0, notification_follows);
    if (phase_ < Phase::kClosing) {
      Abort();  // EPIPE, ECONNRESET: the peer is gone
      return;
    }
    return;
  }
  out_.OnSent(static_cast<size_t>(res), notification_follows);
  if (dont_wait && static_cast<size_t>(res) < asked && phase_ < Phase::kClosing) {
    YieldFileOutput();
  }
  // Progress on our output is what the send deadline measures: it moves on
  // with every byte the peer takes, and never with what the peer sends.
  send_deadline_ = res > 0 && !out_.empty() ? After(env_->config->send_timeout_ms)
                                            : send_deadline_;
  // (A file waiting for room, its bytes taken back, is still our output.)
  if (out_.empty() && !FileOwnsSocket()) send_deadline_ = 0;
  Sync();
}

void Connection::OnSendNotification(bool copied) {
  if (copied) env_->stats->sends_zc_copied.Add();
  out_.OnNotification();
  if (phase_ < Phase::kClosing) Sync();
}

// ---------------------------------------------------------------- the rest

void Connection::Sync() {
  if (phase_ >= Phase::kLingering) {
    if (phase_ == Phase::kLingering) {
      SyncRecv();
      SyncDeadline();
    }
    return;
  }
  // A staging buffer kept empty for a streamed body (ProcessStaged) goes
  // once the body is over.
  if (in_.len == 0 && in_.data != nullptr && input_ != Input::kBody && !in_staged_source_) {
    ReleaseBuffer(in_);
  }
  // A file whose last bytes the kernel is done with ends its exchange, so
  // that a request staged behind it starts below.
  MaybeEndFile();
  // Staged input that was waiting (for an answer, for output to drain, for
  // room in a worker's pipe) may go on now.
  if (in_.len > 0 && !in_staged_source_) ProcessStaged();
  if (ex_.answer == Answer::kProducer) PumpProducer();
  if (resp_pipe() != nullptr || (task_ != nullptr && ex_.answer == Answer::kTask)) PumpPipe();
  // (A file's body may still be read after its exchange counts as
  // answered: bytes a full socket gave back are read again.)
  if (FileBusy()) PumpFile();
  if (phase_ >= Phase::kLingering) {
    if (phase_ == Phase::kLingering) {
      SyncRecv();
      SyncDeadline();
    }
    return;
  }
  Flush();
  if (phase_ == Phase::kFinishing && Quiet()) {
    StartClose(/*graceful=*/true);
    return;
  }
  if (peer_eof_ && phase_ == Phase::kOpen && Quiet() && input_ == Input::kHead) {
    // The peer is done sending and everything it asked is answered (a
    // partial request it left can never complete).
    StartClose(/*graceful=*/true);
    return;
  }
  SyncRecv();
  SyncDeadline();
}

void Connection::OnBatchEnd() {
  batch_hook_ = false;
  if (worker::BodyPipe* pipe = req_pipe()) pipe->WakeReader();
}

// ---------------------------------------------------------------- buffers

bool Connection::Reserve(Buffer& b, size_t total) {
  if (total <= b.cap) return true;
  if (total > UINT32_MAX) return false;
  io::ChunkPool* chunks = env_->chunks;
  if (b.data == nullptr && total <= chunks->chunk_size()) {
    b.data = chunks->Acquire();
    b.cap = static_cast<uint32_t>(chunks->chunk_size());
    return true;
  }
  size_t cap = b.cap == 0 ? total : std::max<size_t>(size_t{b.cap} * 2, total);
  if (cap > UINT32_MAX) cap = total;
  char* grown = static_cast<char*>(std::malloc(cap));
  if (grown == nullptr) return false;
  if (b.len > 0) std::memcpy(grown, b.data, b.len);
  if (b.data != nullptr) chunks->Release(b.data);  // the pool tells heap from chunks
  b.data = grown;
  b.cap = static_cast<uint32_t>(cap);
  return true;
}

void Connection::ReleaseBuffer(Buffer& b) {
  if (b.data != nullptr) env_->chunks->Release(b.data);
  b = Buffer();
}

bool Connection::StageInput(const char* data, size_t len) {
  // Bounded by what a head may take plus the pause threshold and what the
  // receives already completed when it paused may bring (at most every
  // provided buffer of the loop); beyond that the peer is not one we can be
  // serving honestly.
  const http::ParseLimits& limits = env_->config->limits;
  const size_t hard_limit = limits.max_request_line + limits.max_header_bytes +
                            2 * kStagedPauseBytes + env_->config->recv_pool_bytes;
  const size_t need = size_t{in_.len} + len;
  if (need > hard_limit || !Reserve(in_, need)) return false;
  std::memcpy(in_.data + in_.len, data, len);
  in_.len = static_cast<uint32_t>(need);
  return true;
}

}  // namespace uring_http::http1
