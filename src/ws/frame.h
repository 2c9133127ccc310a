// WebSocket frames (RFC 6455 5): opcodes, close codes, and the server's
// side of the wire format: the header of a frame we send (never masked,
// 5.1) and a close frame's payload.
//
// Thread-safety: stateless.
#ifndef URING_HTTP_SRC_WS_FRAME_H_
#define URING_HTTP_SRC_WS_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace uring_http::ws {

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};
inline bool IsControl(Opcode op) { return (static_cast<uint8_t>(op) & 0x8) != 0; }

// A control frame's payload, at most (5.5).
inline constexpr size_t kMaxControlPayload = 125;
// The longest frame header: 2 bytes, a 64-bit length, a mask.
inline constexpr size_t kMaxFrameHeader = 14;
// The longest header of a frame we send (no mask).
inline constexpr size_t kMaxServerFrameHeader = 10;

// Close codes (7.4.1, and IANA's registry).
namespace close_code {
inline constexpr uint16_t kNormal = 1000;
inline constexpr uint16_t kGoingAway = 1001;
inline constexpr uint16_t kProtocolError = 1002;
inline constexpr uint16_t kUnsupportedData = 1003;
inline constexpr uint16_t kNoStatus = 1005;        // never sent: a close without a code
inline constexpr uint16_t kAbnormal = 1006;        // never sent: the connection dropped
inline constexpr uint16_t kInvalidPayload = 1007;  // text that is not UTF-8
inline constexpr uint16_t kPolicy = 1008;
inline constexpr uint16_t kTooBig = 1009;
inline constexpr uint16_t kMandatoryExtension = 1010;
inline constexpr uint16_t kInternalError = 1011;
}  // namespace close_code

// A code a peer may send in a close frame (7.4): 1000-1003, 1007-1014
// (1012-1014 registered since: restart, try again later, bad gateway),
// 3000-4999. Never 1004-1006, 1015, nor anything else below 3000.
bool CloseCodeValid(uint16_t code);

// Writes the header of a server frame (FIN, RSV1 when the payload is
// compressed, no mask) into out[0..kMaxServerFrameHeader); returns its
// length (2, 4 or 10).
size_t WriteFrameHeader(char* out, Opcode opcode, bool fin, bool rsv1, uint64_t payload_len);

// A close frame's payload: the code, then `reason` cut to the 123 bytes
// that fit (at a UTF-8 character's boundary).
std::string ClosePayload(uint16_t code, std::string_view reason);

// XORs data[0..len) with the mask, starting at the mask's byte
// `offset % 4` (a payload unmasked piece by piece).
void Unmask(char* data, size_t len, const uint8_t mask[4], uint64_t offset);

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_FRAME_H_
