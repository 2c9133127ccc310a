// FrameParser: a server's reader of a client's WebSocket frames (RFC 6455
// 5), fed the connection's bytes in pieces of any size as they arrive and
// giving back one event at a time:
//   kData        a piece of the current data message's payload, unmasked
//                in place in the caller's buffer (no copy), with the
//                message's opcode (text or binary), whether it is
//                compressed (RSV1 on its first frame, permessage-deflate),
//                and whether it is the message's last (message_end; an
//                empty final frame gives an empty last piece);
//   kControl     a whole ping, pong or close (at most 125 bytes, gathered
//                in the parser's own buffer: valid until the next Feed);
//                a close's code (1005 when it has none) and its reason;
//   kError       the peer broke the protocol: the close code to send
//                (1002, 1007, 1009) and why; every later Feed says so again.
// Control frames may come between the fragments of a message (5.4); each
// event says how much of the input it consumed, and the caller feeds the
// rest again.
//
// Refused (1002): an unmasked frame (5.1); RSV2 or RSV3, or RSV1 without
// permessage-deflate or on a continuation or control frame; an unknown
// opcode; a control frame that is fragmented or longer than 125 bytes; a
// 64-bit length with its top bit set; a continuation with no message
// begun, or a new message before the last one ended; a close whose
// payload is one byte or whose code is not one a peer may send. A close
// reason that is not UTF-8 is 1007. A message longer than max_message (its
// frames' lengths, as they come: refused at the header that passes it,
// before its payload is read) is 1009. Text is not checked here: its
// UTF-8 must be checked after decompression, by the caller
// (utf8_validator.h).
//
// Thread-safety: one connection's, on its ring thread.
#ifndef URING_HTTP_SRC_WS_FRAME_PARSER_H_
#define URING_HTTP_SRC_WS_FRAME_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/ws/frame.h"

namespace uring_http::ws {

class FrameParser {
 public:
  struct Options {
    uint64_t max_message = 16 * 1024 * 1024;
    bool deflate = false;  // permessage-deflate was negotiated: RSV1 allowed
  };

  enum class Kind : uint8_t { kNeedMore, kData, kControl, kError };
  struct Event {
    Kind kind = Kind::kNeedMore;
    size_t consumed = 0;      // input bytes this call used
    std::string_view data;    // kData: payload; kControl: ping/pong payload or close reason
    Opcode opcode = Opcode::kContinuation;  // kData: the message's; kControl: its own
    bool compressed = false;  // kData: RSV1 on the message's first frame
    bool message_end = false; // kData: the message's last piece
    uint16_t close_code = 0;  // kControl close: the peer's (1005: none); kError: ours to send
    const char* error = nullptr;  // kError: why
  };

  explicit FrameParser(const Options& options) : options_(options) {}

  // Reads from data[0..len) (unmasking payload bytes there, in place).
  Event Feed(char* data, size_t len);

  // A data message is begun and not ended.
  bool in_message() const { return in_message_; }
  // Payload bytes of the frame being read still to come (0 between frames).
  uint64_t payload_left() const { return in_payload_ ? payload_left_ : 0; }
  bool failed() const { return error_ != nullptr; }

 private:
  Event Fail(uint16_t code, const char* why, size_t consumed);
  // The header in header_[0..header_len_) is whole: checks it and sets up
  // the frame's payload; an error event, or kNeedMore to go on.
  Event StartFrame(size_t consumed);
  Event EndControl(size_t consumed);

  const Options options_;
  // The frame being read.
  uint8_t header_[kMaxFrameHeader] = {};
  size_t header_len_ = 0;
  bool in_payload_ = false;
  bool fin_ = false;
  Opcode frame_opcode_ = Opcode::kContinuation;
  uint8_t mask_[4] = {};
  uint64_t payload_left_ = 0;
  uint64_t payload_seen_ = 0;  // of this frame: the mask's offset
  // A control frame's payload, gathered.
  char control_[kMaxControlPayload] = {};
  size_t control_len_ = 0;
  // The data message the frames belong to.
  bool in_message_ = false;
  Opcode message_opcode_ = Opcode::kText;
  bool message_compressed_ = false;
  uint64_t message_bytes_ = 0;
  uint16_t error_code_ = 0;
  const char* error_ = nullptr;
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_FRAME_PARSER_H_
