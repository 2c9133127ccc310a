// ws::Connection, its life: the handoff from HTTP/1 and the 101, the
// phases after every event (Sync), the timers, the closing handshake's end,
// the lingering close, the slot's release. Its messages both ways are
// connection_messages.cc's.
#include "src/ws/connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "src/base/check.h"

namespace uring_http::ws {

static_assert(kCloseCodeBuckets == exchange::ConnectionStats::kWsCloseCodes);

size_t CloseCodeBucket(uint16_t code) {
  switch (code) {
    case close_code::kNormal: return 0;
    case close_code::kGoingAway: return 1;
    case close_code::kProtocolError: return 2;
    case close_code::kAbnormal: return 3;
    case close_code::kInvalidPayload: return 4;
    case close_code::kTooBig: return 5;
    case close_code::kNoStatus: return 6;
    default: return 7;
  }
}

const char* CloseCodeBucketName(size_t bucket) {
  static constexpr const char* kNames[kCloseCodeBuckets] = {
      "1000", "1001", "1002", "1006", "1007", "1009", "1005", "other"};
  return bucket < kCloseCodeBuckets ? kNames[bucket] : "other";
}

std::string SwitchingProtocols(std::string_view accept, std::string_view protocol,
                               std::string_view extensions) {
  std::string head =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: ";
  head.append(accept);
  head.append("\r\n");
  if (!protocol.empty()) {
    head.append("Sec-WebSocket-Protocol: ");
    head.append(protocol);
    head.append("\r\n");
  }
  if (!extensions.empty()) {
    head.append("Sec-WebSocket-Extensions: ");
    head.append(extensions);
    head.append("\r\n");
  }
  head.append("\r\n");
  return head;
}

uint64_t Connection::After(uint32_t ms) const {
  if (ms == 0) return 0;
  const uint32_t tick = env_->config->tick_ms;
  return env_->now_tick + (ms + tick - 1) / tick + 1;
}

void Connection::Open(exchange::ConnectionEnv* env, uint32_t slot, const conn::Handoff& handoff) {
  URING_CHECK(handoff.websocket != nullptr && handoff.websocket->behavior != nullptr);
  const Accepted& accepted = *handoff.websocket;
  env_ = env;
  slot_ = slot;
  behavior_ = accepted.behavior;
  const exchange::ConnectionConfig& config = *env->config;
  const Behavior& b = *behavior_;
  max_message_ = b.max_message != 0 ? b.max_message : config.ws_max_message;
  max_backpressure_ = b.max_backpressure != 0 ? b.max_backpressure : config.ws_max_backpressure;
  idle_timeout_ms_ = b.idle_timeout_ms != 0 ? b.idle_timeout_ms : config.ws_idle_timeout_ms;
  ping_interval_ms_ = b.ping_interval_ms != 0 ? b.ping_interval_ms : config.ws_ping_interval_ms;
  FrameParser::Options options;
  options.max_message = max_message_;
  if (accepted.deflate.has_value()) {
    deflate_ = *accepted.deflate;
    deflate_on_ = true;
    dedicated_ = accepted.dedicated;
    options.deflate = true;  // RSV1 marks a compressed message
  }
  parser_.emplace(options);
  out_.Init(env->chunks);
  recv_armed_ = handoff.recv_armed;
  peer_eof_ = handoff.peer_eof;
  if (accepted.upgrade != nullptr) {
    protocol_ = std::move(accepted.upgrade->protocol);
    user_ = std::move(accepted.upgrade->user);
  }
  const std::string head = SwitchingProtocols(
      accepted.accept, protocol_, deflate_on_ ? DeflateResponse(deflate_) : std::string());
  URING_CHECK(out_.Append(head));
  last_rx_tick_ = env_->now_tick;
  env_->stats->ws_opened.Add();
  ++in_event_;
  opened_ = true;
  if (behavior_->open) behavior_->open(*this);
  // What the client sent after its handshake (it may not wait for the
  // 101) is HTTP/1's receive buffer, ours to unmask during this call.
  if (!handoff.bytes.empty() && (phase_ == Phase::kOpen || phase_ == Phase::kClosing)) {
    Feed(const_cast<char*>(handoff.bytes.data()), handoff.bytes.size());
  }
  --in_event_;
  Sync();
}

// ---------------------------------------------------------------- life

void Connection::Sync() {
  if (phase_ == Phase::kCloseSubmitted || phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kLingering) {
    if (!recv_armed_ && !recv_starved_ && !peer_eof_) ArmRecv(/*bulk=*/false);
    return;
  }
  Flush();
  if (fatal_) return StartClose();
  const bool output_left = send_inflight_ || !out_.empty();
  if (peer_eof_ && !close_received_) {
    // The client's FIN without its close: it went (1006). What we queued
    // still goes (it may read on), then the close.
    if (!close_queued_) close_code_ = close_code::kAbnormal;
    if (!output_left) return StartClose();
  }
  if (close_queued_ && !output_left && !close_frame_pending_ && (close_received_ || fail_)) {
    // Both closes exchanged, or ours ends it: the server closes the TCP
    // connection first (RFC 6455 7.1.1), with a lingering read so that
    // what the client still sends does not turn our close into a reset.
    return StartLinger();
  }
  // Reading: until the client's close, unless its answers wait unread.
  const bool over = out_.pending() > bound() / 2 || out_.room() <= kSpareSegments;
  if (over && !recv_paused_ && phase_ == Phase::kOpen) {
    recv_paused_ = true;
  } else if (!over) {
    recv_paused_ = false;
  }
  // Bulk only while the output is low: a bulk receive brings eight times
  // the bytes per completion, and what the kernel has posted before a
  // pause's cancel lands is still answered, against the bound.
  const bool bulk = bulk_wanted_ && out_.pending() <= bound() / 8;
  if (recv_armed_ && !recv_cancelling_ && phase_ == Phase::kOpen &&
      (recv_paused_ || recv_bulk_ != bulk)) {
    // Paused, or moving to the other buffer group: the receive's last
    // completion (-ECANCELED, OnRecvEnd) arms it again as it should be.
    recv_cancelling_ = true;
    env_->transport->CancelRecv(slot_);
  }
  if (!recv_armed_ && !recv_starved_ && !recv_paused_ && !peer_eof_ && !close_received_ &&
      !fail_) {
    ArmRecv(bulk);
  }
  uint64_t deadline = 0;
  if (output_left) {
    deadline = send_deadline_;  // no progress on our output: the client stopped reading
  } else if (phase_ == Phase::kClosing) {
    deadline = close_deadline_;
  } else {
    const uint32_t tick = env_->config->tick_ms;
    auto at = [&](uint32_t ms) { return last_rx_tick_ + (ms + tick - 1) / tick + 1; };
    if (idle_timeout_ms_ != 0) deadline = at(idle_timeout_ms_);
    if (ping_interval_ms_ != 0 && !ping_sent_ && (deadline == 0 || at(ping_interval_ms_) < deadline)) {
      deadline = at(ping_interval_ms_);
    }
    if (env_->draining) deadline = env_->now_tick + 1;
  }
  if (close_queued_ && close_deadline_ != 0 && (deadline == 0 || close_deadline_ < deadline)) {
    deadline = close_deadline_;
  }
  if (deadline != armed_deadline_) {
    armed_deadline_ = deadline;
    env_->transport->SetDeadline(slot_, deadline);
  }
  UpdateSender();
}

void Connection::OnDeadline() {
  if (phase_ == Phase::kLingering) {
    if (armed_deadline_ != 0 && env_->now_tick >= armed_deadline_) FinishLinger();
    return;
  }
  if (phase_ != Phase::kOpen && phase_ != Phase::kClosing) return;
  if (armed_deadline_ == 0 || env_->now_tick < armed_deadline_) return Sync();
  armed_deadline_ = 0;
  const bool output_left = send_inflight_ || !out_.empty();
  if ((output_left && env_->now_tick >= send_deadline_) ||
      (close_queued_ && close_deadline_ != 0 && env_->now_tick >= close_deadline_)) {
    // The client reads nothing, or never answered our close.
    env_->stats->timeouts.Add();
    if (!close_queued_) close_code_ = close_code::kAbnormal;
    fatal_ = true;
    return StartClose();
  }
  if (phase_ == Phase::kOpen) {
    const uint32_t tick = env_->config->tick_ms;
    auto at = [&](uint32_t ms) { return last_rx_tick_ + (ms + tick - 1) / tick + 1; };
    if (env_->draining) {
      ++in_event_;
      CloseWith(close_code::kGoingAway, "server shutting down");
      --in_event_;
    } else if (idle_timeout_ms_ != 0 && env_->now_tick >= at(idle_timeout_ms_)) {
      env_->stats->timeouts.Add();
      close_code_ = close_code::kGoingAway;
      close_reason_ = "idle";
      QueueClose(close_code::kGoingAway, close_reason_);
    } else if (ping_interval_ms_ != 0 && !ping_sent_ && env_->now_tick >= at(ping_interval_ms_)) {
      // Quiet for a while: a ping, which a live client answers (and which
      // keeps NAT and proxies from forgetting the connection).
      ping_sent_ = true;
      QueueFrame(Opcode::kPing, {});
    }
  }
  Sync();
}

void Connection::ArmRecv(bool bulk) {
  recv_armed_ = true;
  recv_bulk_ = bulk;
  recv_cancelling_ = false;
  env_->transport->ArmRecv(slot_, bulk, /*once=*/false);
}

void Connection::OnRecvEnd(int res) {
  recv_armed_ = recv_cancelling_ = false;
  if (res == -ENOBUFS && recv_bulk_ && phase_ == Phase::kOpen) {
    // The bulk buffers are all taken (many large messages at once): the
    // small ones, at once, rather than waiting for a bulk one.
    bulk_wanted_ = false;
    small_receives_ = 0;
    return Sync();
  }
  if (phase_ == Phase::kLingering) {
    if (res == -ENOBUFS) {
      recv_starved_ = true;
      return;
    }
    if (res == -ECANCELED) return Sync();  // a pause's cancel: read on
    return FinishLinger();  // the client's FIN (or its reset): done
  }
  if (res == 0) {
    peer_eof_ = true;
  } else if (res == -ENOBUFS) {
    recv_starved_ = true;
  } else if (res < 0 && res != -ECANCELED) {
    peer_eof_ = true;
    fatal_ = true;
  }
  Sync();
}

void Connection::OnBuffersAvailable() {
  recv_starved_ = false;
  Sync();
}

void Connection::OnDrain() {
  if (phase_ != Phase::kOpen) return;
  ++in_event_;
  CloseWith(close_code::kGoingAway, "server shutting down");
  --in_event_;
  Sync();
}

void Connection::Abort() {
  if (phase_ == Phase::kLingering) return FinishLinger();
  if (phase_ != Phase::kOpen && phase_ != Phase::kClosing) return;
  if (!close_queued_) close_code_ = close_code::kAbnormal;
  fatal_ = true;
  StartClose();
}

void Connection::NotifyClosed() {
  if (sender_ != nullptr) sender_->Shut();  // the socket has ended
  if (!opened_ || notified_) return;
  notified_ = true;
  env_->stats->ws_closed.Add();
  env_->stats->ws_closes[CloseCodeBucket(close_code_)].Add();
  if (behavior_->close) {
    ++in_event_;
    behavior_->close(*this, close_code_, close_reason_);
    --in_event_;
  }
}

void Connection::StartLinger() {
  phase_ = Phase::kLingering;
  NotifyClosed();
  shutdown_inflight_ = true;
  env_->transport->ShutdownWrite(slot_);
  if (peer_eof_) return FinishLinger();  // its FIN is here: nothing to wait for
  armed_deadline_ = After(env_->config->linger_timeout_ms);
  env_->transport->SetDeadline(slot_, armed_deadline_);
  if (armed_deadline_ == 0) return FinishLinger();
  Sync();  // the lingering read
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
    linger_done_ = true;  // the close follows the shutdown's completion
    return;
  }
  phase_ = Phase::kCloseSubmitted;
  env_->transport->Close(slot_, recv_armed_, send_inflight_);
}

void Connection::StartClose() {
  if (phase_ != Phase::kOpen && phase_ != Phase::kClosing) return;
  // Ended first: a send from the `close` callback is kClosed.
  phase_ = Phase::kCloseSubmitted;
  out_.DiscardUnsent();
  NotifyClosed();
  if (armed_deadline_ != 0) {
    armed_deadline_ = 0;
    env_->transport->SetDeadline(slot_, 0);
  }
  env_->transport->Close(slot_, recv_armed_, send_inflight_);
}

void Connection::OnClosed() {
  // The close cancelled what was armed; their completions may still come
  // (Freeable waits for them).
  phase_ = Phase::kClosed;
}

void Connection::Release() {
  out_.DiscardUnsent();
  URING_CHECK(out_.idle());
  parser_.reset();
  utf8_.Reset();
  std::string().swap(message_);
  std::string().swap(protocol_);
  std::string().swap(close_reason_);
  user_.reset();
  deflater_.reset();
  inflater_.reset();
  deflate_on_ = dedicated_ = message_compressed_ = false;
  deflate_ = DeflateParams();
  if (sender_ != nullptr) sender_->Shut();
  sender_.reset();
  held_told_ = 0;
  taken_since_told_ = false;
  behavior_ = nullptr;
  phase_ = Phase::kOpen;
  recv_armed_ = recv_starved_ = recv_paused_ = peer_eof_ = fatal_ = false;
  recv_bulk_ = recv_cancelling_ = bulk_wanted_ = false;
  small_receives_ = 0;
  send_inflight_ = shutdown_inflight_ = linger_done_ = false;
  close_queued_ = close_received_ = fail_ = opened_ = notified_ = want_drain_ = false;
  ping_sent_ = message_begun_ = false;
  close_code_ = close_code::kAbnormal;
  in_event_ = 0;
  last_rx_tick_ = send_deadline_ = close_deadline_ = armed_deadline_ = 0;
}

}  // namespace uring_http::ws
