// ws::Connection, its messages: frames in (parsed in the receive buffer,
// assembled, inflated, checked as UTF-8, answered when they are control
// frames) and out (framed, compressed, queued against the bound, and what
// the socket's sender brings from other threads). Its life (the phases,
// the timers, the closes) is connection.cc's.
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "src/base/check.h"
#include "src/ws/connection.h"

namespace uring_http::ws {
// ---------------------------------------------------------------- receiving

void Connection::OnRecv(const char* data, size_t len, bool ended) {
  if (ended) recv_armed_ = recv_cancelling_ = false;
  if (phase_ == Phase::kOpen || phase_ == Phase::kClosing) {
    last_rx_tick_ = env_->now_tick;
    ping_sent_ = false;
    env_->stats->ws_bytes_in.Add(len);
    // The loop's provided buffer (or the TLS layer's plaintext): memory we
    // own until the call returns, so the payload is unmasked where it lies.
    ++in_event_;
    Feed(const_cast<char*>(data), len);
    --in_event_;
    if (env_->config->bulk_receives && parser_.has_value()) NoteReceive(len);
  }
  // kLingering: dropped, the connection has ended.
  Sync();
}

void Connection::NoteReceive(size_t len) {
  if (parser_->payload_left() >= kBulkFrameBytes) {
    bulk_wanted_ = true;
    small_receives_ = 0;
  } else if (bulk_wanted_ && len <= kSmallReceiveBytes) {
    // Small messages again: back to the small buffers, after a few in a
    // row (a large message's last receive is often short).
    if (++small_receives_ >= kSmallReceivesToLeaveBulk) bulk_wanted_ = false;
  } else {
    small_receives_ = 0;
  }
}

void Connection::Feed(char* data, size_t len) {
  while (len > 0 && !close_received_ && !fail_ && !fatal_) {
    const FrameParser::Event e = parser_->Feed(data, len);
    URING_CHECK(e.consumed <= len);
    data += e.consumed;
    len -= e.consumed;
    switch (e.kind) {
      case FrameParser::Kind::kNeedMore:
        URING_CHECK(len == 0);  // the parser takes all it is given
        break;
      case FrameParser::Kind::kData:
        OnData(e);
        break;
      case FrameParser::Kind::kControl:
        OnControl(e);
        break;
      case FrameParser::Kind::kError:
        Fail(e.close_code, e.error);
        return;
    }
  }
}

void Connection::OnData(const FrameParser::Event& e) {
  const bool first = !message_begun_;
  message_begun_ = true;
  if (first) {
    message_kind_ = e.opcode == Opcode::kBinary ? MessageKind::kBinary : MessageKind::kText;
    message_compressed_ = e.compressed;
  }
  if (message_compressed_) return OnCompressedData(e, first);
  if (message_kind_ == MessageKind::kText) {
    // Checked as it arrives: a bad byte fails the connection now, not at
    // the message's end (Autobahn 6.4: "fail fast").
    if (!utf8_.Feed(e.data) || (e.message_end && !utf8_.complete())) {
      return Fail(close_code::kInvalidPayload, "text that is not UTF-8");
    }
  }
  if (e.message_end && first) {
    // The message's one piece: it arrived whole in this receive, and the
    // route reads it there.
    Deliver(e.data, message_kind_);
  } else {
    message_.append(e.data);
    if (e.message_end) {
      Deliver(message_, message_kind_);
      // A large message's memory is not kept by a connection that may now
      // idle for hours.
      if (message_.capacity() > 64 * 1024) {
        std::string().swap(message_);
      } else {
        message_.clear();
      }
    }
  }
  if (e.message_end) {
    utf8_.Reset();
    message_begun_ = false;
  }
}

void Connection::OnCompressedData(const FrameParser::Event& e, bool first) {
  // Inflated whole at the message's end (bounded by max_message: a small
  // message that would inflate to gigabytes stops at the bound), then
  // checked as UTF-8 if text.
  std::string_view compressed = e.data;
  if (!(e.message_end && first)) {
    message_.append(e.data);
    if (!e.message_end) return;
    compressed = message_;
  }
  message_begun_ = false;
  Inflater* inflater = &ThreadInflater();
  if (dedicated_ && !deflate_.client_no_context_takeover) {
    if (inflater_ == nullptr) {
      inflater_ = std::make_unique<Inflater>(/*context_takeover=*/true,
                                             deflate_.client_max_window_bits);
    }
    inflater = inflater_.get();
  }
  thread_local std::string inflated;
  const Inflater::Result r = inflater->Inflate(compressed, max_message_, &inflated);
  if (message_.capacity() > 64 * 1024) {
    std::string().swap(message_);
  } else {
    message_.clear();
  }
  if (r == Inflater::Result::kTooBig) return Fail(close_code::kTooBig, "message over the size limit");
  if (r != Inflater::Result::kOk) return Fail(close_code::kInvalidPayload, "not DEFLATE");
  if (message_kind_ == MessageKind::kText) {
    utf8_.Reset();
    if (!utf8_.Feed(inflated) || !utf8_.complete()) {
      utf8_.Reset();
      return Fail(close_code::kInvalidPayload, "text that is not UTF-8");
    }
    utf8_.Reset();
  }
  Deliver(inflated, message_kind_);
  if (inflated.capacity() > 1024 * 1024) std::string().swap(inflated);
}

void Connection::Deliver(std::string_view message, MessageKind kind) {
  env_->stats->ws_messages_in.Add();
  if (phase_ != Phase::kOpen) return;  // we are closing: the client's data is dropped
  if (behavior_->message) behavior_->message(*this, message, kind);
}

void Connection::OnControl(const FrameParser::Event& e) {
  switch (e.opcode) {
    case Opcode::kPing:
      // Answered with its payload, unless our close has gone: nothing
      // follows a close (RFC 6455 5.5.1).
      if (!close_queued_) QueueFrame(Opcode::kPong, e.data);
      return;
    case Opcode::kPong:
      return;  // a live client: OnRecv noted it
    case Opcode::kClose:
      close_received_ = true;
      if (!close_queued_) {
        // The client closes: its code is echoed (none when it sent none),
        // and the route hears its code and reason.
        close_code_ = e.close_code;
        close_reason_.assign(e.data);
        if (e.close_code == close_code::kNoStatus) {
          QueueClose(0, {});
        } else {
          QueueClose(e.close_code, {});
        }
        close_code_ = e.close_code;
      }
      return;
    default:
      return;
  }
}

void Connection::Fail(uint16_t code, const char* why) {
  (void)why;
  env_->stats->ws_errors.Add();
  if (!close_queued_) {
    QueueClose(code, {});
    close_code_ = code;
  }
  fail_ = true;
}

// ---------------------------------------------------------------- sending

size_t Connection::ReserveSize(size_t need) const {
  if (need <= out_.tail_room() || out_.room() > kSpareSegments) return need;
  return std::max(need, kCoalesceBytes);
}

bool Connection::QueueFrame(Opcode opcode, std::string_view payload, bool compressed) {
  // The queue has 16 segments: a burst of messages that each start a new
  // chunk would run out of them long before the bound. When few are left,
  // a new segment is a large buffer that the next frames fill too.
  const size_t need = kMaxServerFrameHeader + payload.size();
  char* p = out_.Reserve(ReserveSize(need));
  if (p == nullptr) return false;
  const size_t h = WriteFrameHeader(p, opcode, /*fin=*/true, compressed, payload.size());
  if (!payload.empty()) std::memcpy(p + h, payload.data(), payload.size());
  out_.Commit(h + payload.size());
  env_->stats->ws_bytes_out.Add(h + payload.size());
  return true;
}

int Connection::SharedDeflateWindow() const {
  // Compressed without a context of ours: by the thread's compressor for
  // the window, on the ring or by whoever prepared the message.
  if (!deflate_on_ || (dedicated_ && !deflate_.server_no_context_takeover)) return 0;
  return deflate_.server_max_window_bits;
}

SendResult Connection::Send(std::string_view message, MessageKind kind) {
  if (phase_ != Phase::kOpen || close_queued_ || fatal_) return SendResult::kClosed;
  if (out_.pending() > bound()) {
    // A client that reads nothing holds at most the bound and one message.
    want_drain_ = true;
    env_->stats->ws_backpressure_drops.Add();
    return SendResult::kDropped;
  }
  switch (QueueMessage(kind == MessageKind::kBinary ? Opcode::kBinary : Opcode::kText, message)) {
    case Queued::kLost:
      return SendResult::kClosed;
    case Queued::kNoRoom:
      want_drain_ = true;  // the queue's segments are all taken: as full
      env_->stats->ws_backpressure_drops.Add();
      return SendResult::kDropped;
    case Queued::kYes:
      break;
  }
  env_->stats->ws_messages_out.Add();
  if (in_event_ == 0) Sync();
  if (out_.pending() > bound()) {
    want_drain_ = true;
    return SendResult::kBackpressure;
  }
  return SendResult::kQueued;
}

Connection::Queued Connection::QueueMessage(Opcode opcode, std::string_view message) {
  if (!deflate_on_ || message.size() < kDeflateMinBytes) {
    return QueueFrame(opcode, message) ? Queued::kYes : Queued::kNoRoom;
  }
  // Compressed (RSV1) into the thread's scratch, then framed from there.
  Deflater* deflater = &ThreadDeflater(deflate_.server_max_window_bits);
  if (SharedDeflateWindow() == 0) {
    // Its context keeps what it compresses: a message that might then
    // not be queued would corrupt the client's next one. With no segment
    // left, it is refused before it is compressed.
    if (out_.room() == 0) return Queued::kNoRoom;
    if (deflater_ == nullptr) {
      deflater_ = std::make_unique<Deflater>(deflate_.server_max_window_bits, kDedicatedMemLevel,
                                             /*context_takeover=*/true);
    }
    deflater = deflater_.get();
  }
  thread_local std::string compressed;
  compressed.clear();
  Queued queued;
  if (deflater->Compress(message, &compressed)) {
    queued = QueueFrame(opcode, compressed, /*compressed=*/true) ? Queued::kYes : Queued::kNoRoom;
    if (queued == Queued::kNoRoom && deflater == deflater_.get()) {
      // (A segment was there: Reserve cannot fail. Should it ever, the
      // context holds a message the client will not see.)
      CloseWith(close_code::kInternalError, "compression context lost");
      queued = Queued::kLost;
    }
  } else if (deflater == deflater_.get()) {
    // The dedicated context is lost: the client's would no longer match.
    CloseWith(close_code::kInternalError, "compression failed");
    queued = Queued::kLost;
  } else {
    queued = QueueFrame(opcode, message) ? Queued::kYes : Queued::kNoRoom;
  }
  if (compressed.capacity() > 1024 * 1024) std::string().swap(compressed);
  return queued;
}

bool Connection::QueueBytes(std::string_view frame) {
  char* p = out_.Reserve(ReserveSize(frame.size()));
  if (p == nullptr) return false;
  std::memcpy(p, frame.data(), frame.size());
  out_.Commit(frame.size());
  env_->stats->ws_bytes_out.Add(frame.size());
  return true;
}

void Connection::Close(uint16_t code, std::string_view reason) {
  if (phase_ != Phase::kOpen || close_queued_) return;
  // Only a code a peer may receive (RFC 6455 7.4: 1000-1003, 1007-1014,
  // the application's 3000-4999); anything else is sent as 1000. A reason
  // is cut to fit a control frame.
  if (!CloseCodeValid(code)) code = close_code::kNormal;
  CloseWith(code, reason);
}

void Connection::CloseWith(uint16_t code, std::string_view reason) {
  if (phase_ != Phase::kOpen || close_queued_) return;
  reason = reason.substr(0, kMaxControlPayload - 2);
  close_code_ = code;
  close_reason_.assign(reason);
  QueueClose(code, reason);
  if (in_event_ == 0) Sync();
}

void Connection::QueueClose(uint16_t code, std::string_view reason) {
  if (close_queued_) return;
  close_queued_ = true;
  if (phase_ == Phase::kOpen) phase_ = Phase::kClosing;
  close_deadline_ = After(env_->config->linger_timeout_ms);
  // Our close goes even past the bound; if the queue has no segment left
  // for it, it goes as soon as a send frees one (Flush).
  close_frame_code_ = code;
  close_frame_reason_ = !reason.empty();
  close_frame_pending_ = true;
  TryQueueCloseFrame();
}

void Connection::TryQueueCloseFrame() {
  // The reason, when there is one, is close_reason_ (CloseWith, idle).
  const bool queued =
      close_frame_code_ == 0
          ? QueueFrame(Opcode::kClose, {})
          : QueueFrame(Opcode::kClose,
                       ClosePayload(close_frame_code_,
                                    close_frame_reason_ ? std::string_view(close_reason_)
                                                        : std::string_view()));
  if (queued) close_frame_pending_ = false;
}

void Connection::Flush() {
  if (send_inflight_ || fatal_) return;
  if (close_frame_pending_) TryQueueCloseFrame();
  bool zero_copy = false;
  const unsigned n = out_.PrepareSend(/*zc_min_bytes=*/0, &zero_copy);
  if (n == 0) return;
  send_inflight_ = true;
  send_deadline_ = After(env_->config->send_timeout_ms);
  env_->transport->Send(slot_, out_.send_iov(), n, /*zero_copy=*/false, out_.send_msghdr(),
                        /*dont_wait=*/false);
}

void Connection::OnSend(int res, bool notification_follows) {
  send_inflight_ = false;
  if (res < 0) {
    out_.OnSent(0, notification_follows);
    fatal_ = true;  // the client is gone: nothing more can go
    peer_eof_ = true;
  } else {
    out_.OnSent(static_cast<size_t>(res), notification_follows);
  }
  MaybeDrain();
  Sync();
}

std::shared_ptr<Sender> Connection::sender() {
  if (sender_ == nullptr) {
    sender_ = env_->host->MakeSender(slot_, max_backpressure_, SharedDeflateWindow());
    if (sender_ != nullptr && phase_ != Phase::kOpen) sender_->Shut();
  }
  return sender_;
}

void Connection::OnPosted() {
  if (sender_ == nullptr) return;
  // The ring thread's, its memory reused from socket to socket (an idle
  // socket should not carry it).
  thread_local Sender::Taken taken;
  sender_->Take(&taken);
  taken_since_told_ = true;
  ++in_event_;
  for (const Frame& f : taken.frames) {
    // Taken already (the sender counted it against the bound): copied into
    // the output as the ring's own sends are, compressed already when the
    // socket keeps no context (PreparedMessage::FrameFor), else compressed
    // here with the socket's own.
    if (phase_ != Phase::kOpen || close_queued_ || fatal_) break;
    Queued queued;
    if (deflate_on_ && sender_->deflate_window() == 0) {
      queued = QueueMessage(f->kind() == MessageKind::kBinary ? Opcode::kBinary : Opcode::kText,
                            f->payload());
    } else {
      queued = QueueBytes(sender_->Wire(*f)) ? Queued::kYes : Queued::kNoRoom;
    }
    if (queued == Queued::kLost) break;
    if (queued == Queued::kNoRoom) {
      env_->stats->ws_backpressure_drops.Add();  // every segment taken: as full
      continue;
    }
    env_->stats->ws_messages_out.Add();
  }
  taken.frames.clear();
  if (taken.dropped != 0) env_->stats->ws_backpressure_drops.Add(taken.dropped);
  if (taken.drain_owed) want_drain_ = true;  // `drain` once under half the bound
  if (taken.close) Close(taken.code, taken.reason);
  MaybeDrain();
  --in_event_;
  Sync();
}

void Connection::UpdateSender() {
  if (sender_ == nullptr) return;
  if (phase_ == Phase::kOpen && !close_queued_) {
    // Told only when it changed, or after a take (which counts what it
    // took as held until told otherwise): a lock less per event.
    if (out_.pending() != held_told_ || taken_since_told_) {
      held_told_ = out_.pending();
      taken_since_told_ = false;
      sender_->Held(held_told_);
    }
  } else if (!sender_->closed()) {
    sender_->Shut();
  }
}

void Connection::OnSendNotification(bool) {
  out_.OnNotification();
  Sync();
}

void Connection::MaybeDrain() {
  if (!want_drain_ || out_.pending() > bound() / 2 || phase_ != Phase::kOpen || close_queued_) {
    return;
  }
  want_drain_ = false;
  if (behavior_->drain) {
    ++in_event_;
    behavior_->drain(*this);
    --in_event_;
  }
}

}  // namespace uring_http::ws
