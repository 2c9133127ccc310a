#include "src/ws/frame_parser.h"

#include <algorithm>
#include <cstring>

#include "src/ws/utf8_validator.h"

namespace uring_http::ws {
namespace {

// The header's whole length, once its first two bytes are known.
size_t HeaderLength(const uint8_t* h) {
  const uint8_t len7 = h[1] & 0x7F;
  return 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + ((h[1] & 0x80) != 0 ? 4 : 0);
}

bool KnownOpcode(uint8_t op) {
  return op <= 0x2 || (op >= 0x8 && op <= 0xA);
}

// No event: `consumed` bytes taken, more wanted (or, from StartFrame, go on).
FrameParser::Event NeedMore(size_t consumed) {
  FrameParser::Event e;
  e.consumed = consumed;
  return e;
}

}  // namespace

FrameParser::Event FrameParser::Fail(uint16_t code, const char* why, size_t consumed) {
  error_code_ = code;
  error_ = why;
  Event e;
  e.kind = Kind::kError;
  e.consumed = consumed;
  e.close_code = code;
  e.error = why;
  return e;
}

FrameParser::Event FrameParser::Feed(char* data, size_t len) {
  if (error_ != nullptr) return Fail(error_code_, error_, 0);
  size_t pos = 0;
  for (;;) {
    if (!in_payload_) {
      // The header, a byte at a time until its length is known (it may
      // arrive split anywhere).
      size_t need = header_len_ < 2 ? 2 : HeaderLength(header_);
      while (header_len_ < need) {
        if (pos == len) return NeedMore(pos);
        header_[header_len_++] = static_cast<uint8_t>(data[pos++]);
        if (header_len_ == 2) need = HeaderLength(header_);
      }
      const Event e = StartFrame(pos);
      if (e.kind != Kind::kNeedMore) return e;
      continue;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(payload_left_, len - pos));
    if (IsControl(frame_opcode_)) {
      std::memcpy(control_ + control_len_, data + pos, take);
      Unmask(control_ + control_len_, take, mask_, payload_seen_);
      control_len_ += take;
      payload_seen_ += take;
      payload_left_ -= take;
      pos += take;
      if (payload_left_ == 0) return EndControl(pos);
      return NeedMore(pos);
    }
    if (take == 0) return NeedMore(pos);
    Unmask(data + pos, take, mask_, payload_seen_);
    Event e;
    e.kind = Kind::kData;
    e.data = std::string_view(data + pos, take);
    e.opcode = message_opcode_;
    e.compressed = message_compressed_;
    payload_seen_ += take;
    payload_left_ -= take;
    pos += take;
    e.consumed = pos;
    if (payload_left_ == 0) {
      in_payload_ = false;
      header_len_ = 0;
      if (fin_) {
        e.message_end = true;
        in_message_ = false;
      }
    }
    return e;
  }
}

FrameParser::Event FrameParser::StartFrame(size_t consumed) {
  const uint8_t b0 = header_[0];
  const uint8_t b1 = header_[1];
  const bool fin = (b0 & 0x80) != 0;
  const bool rsv1 = (b0 & 0x40) != 0;
  const uint8_t op = b0 & 0x0F;
  if ((b0 & 0x30) != 0) return Fail(close_code::kProtocolError, "RSV2 or RSV3 set", consumed);
  if (!KnownOpcode(op)) return Fail(close_code::kProtocolError, "unknown opcode", consumed);
  if ((b1 & 0x80) == 0) return Fail(close_code::kProtocolError, "unmasked client frame", consumed);
  const uint8_t len7 = b1 & 0x7F;
  uint64_t length = len7;
  size_t at = 2;
  if (len7 == 126) {
    length = (uint64_t{header_[2]} << 8) | header_[3];
    at = 4;
  } else if (len7 == 127) {
    length = 0;
    for (int i = 0; i < 8; ++i) length = (length << 8) | header_[2 + i];
    at = 10;
    if ((length >> 63) != 0) {
      return Fail(close_code::kProtocolError, "64-bit length with its top bit set", consumed);
    }
  }
  std::memcpy(mask_, header_ + at, 4);
  const auto opcode = static_cast<Opcode>(op);
  if (IsControl(opcode)) {
    if (!fin) return Fail(close_code::kProtocolError, "fragmented control frame", consumed);
    if (length > kMaxControlPayload) {
      return Fail(close_code::kProtocolError, "control frame over 125 bytes", consumed);
    }
    if (rsv1) return Fail(close_code::kProtocolError, "RSV1 on a control frame", consumed);
  } else if (opcode == Opcode::kContinuation) {
    if (!in_message_) return Fail(close_code::kProtocolError, "continuation without a message", consumed);
    if (rsv1) return Fail(close_code::kProtocolError, "RSV1 on a continuation frame", consumed);
  } else {
    if (in_message_) {
      return Fail(close_code::kProtocolError, "a new message before the last one ended", consumed);
    }
    if (rsv1 && !options_.deflate) {
      return Fail(close_code::kProtocolError, "RSV1 without permessage-deflate", consumed);
    }
    in_message_ = true;
    message_opcode_ = opcode;
    message_compressed_ = rsv1;
    message_bytes_ = 0;
  }
  if (!IsControl(opcode)) {
    if (length > options_.max_message - std::min(message_bytes_, options_.max_message)) {
      return Fail(close_code::kTooBig, "message over the size limit", consumed);
    }
    message_bytes_ += length;
  }
  fin_ = fin;
  frame_opcode_ = opcode;
  payload_left_ = length;
  payload_seen_ = 0;
  header_len_ = 0;
  in_payload_ = true;
  if (IsControl(opcode)) {
    control_len_ = 0;
    if (length == 0) return EndControl(consumed);
    return NeedMore(consumed);
  }
  if (length == 0) {
    in_payload_ = false;
    if (!fin) return NeedMore(consumed);  // nothing to give: go on
    Event e;
    e.kind = Kind::kData;
    e.consumed = consumed;
    e.opcode = message_opcode_;
    e.compressed = message_compressed_;
    e.message_end = true;
    in_message_ = false;
    return e;
  }
  return NeedMore(consumed);
}

FrameParser::Event FrameParser::EndControl(size_t consumed) {
  in_payload_ = false;
  header_len_ = 0;
  Event e;
  e.kind = Kind::kControl;
  e.consumed = consumed;
  e.opcode = frame_opcode_;
  e.data = std::string_view(control_, control_len_);
  if (frame_opcode_ != Opcode::kClose) return e;
  if (control_len_ == 1) return Fail(close_code::kProtocolError, "close payload of one byte", consumed);
  if (control_len_ == 0) {
    e.close_code = close_code::kNoStatus;
    return e;
  }
  const auto code = static_cast<uint16_t>((static_cast<uint8_t>(control_[0]) << 8) |
                                          static_cast<uint8_t>(control_[1]));
  if (!CloseCodeValid(code)) return Fail(close_code::kProtocolError, "invalid close code", consumed);
  e.close_code = code;
  e.data = std::string_view(control_ + 2, control_len_ - 2);
  Utf8Validator reason;
  if (!reason.Feed(e.data) || !reason.complete()) {
    return Fail(close_code::kInvalidPayload, "close reason is not UTF-8", consumed);
  }
  return e;
}

}  // namespace uring_http::ws
