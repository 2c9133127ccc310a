#include "src/ws/frame.h"

#include <cstring>

namespace uring_http::ws {

bool CloseCodeValid(uint16_t code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

size_t WriteFrameHeader(char* out, Opcode opcode, bool fin, bool rsv1, uint64_t payload_len) {
  auto* o = reinterpret_cast<uint8_t*>(out);
  o[0] = static_cast<uint8_t>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | static_cast<uint8_t>(opcode));
  if (payload_len <= 125) {
    o[1] = static_cast<uint8_t>(payload_len);
    return 2;
  }
  if (payload_len <= 0xFFFF) {
    o[1] = 126;
    o[2] = static_cast<uint8_t>(payload_len >> 8);
    o[3] = static_cast<uint8_t>(payload_len);
    return 4;
  }
  o[1] = 127;
  for (int i = 0; i < 8; ++i) o[2 + i] = static_cast<uint8_t>(payload_len >> (56 - 8 * i));
  return 10;
}

std::string ClosePayload(uint16_t code, std::string_view reason) {
  constexpr size_t kMaxReason = kMaxControlPayload - 2;
  if (reason.size() > kMaxReason) {
    size_t cut = kMaxReason;
    // Back to a character's first byte (not 10xxxxxx).
    while (cut > 0 && (static_cast<uint8_t>(reason[cut]) & 0xC0) == 0x80) --cut;
    reason = reason.substr(0, cut);
  }
  std::string out;
  out.reserve(2 + reason.size());
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code & 0xFF));
  out.append(reason);
  return out;
}

void Unmask(char* data, size_t len, const uint8_t mask[4], uint64_t offset) {
  uint8_t m[8];
  for (int i = 0; i < 8; ++i) m[i] = mask[(offset + static_cast<uint64_t>(i)) & 3];
  size_t i = 0;
  // Eight bytes at a time with the mask turned to this offset.
  uint64_t wide;
  std::memcpy(&wide, m, 8);
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    w ^= wide;
    std::memcpy(data + i, &w, 8);
  }
  for (; i < len; ++i) data[i] = static_cast<char>(data[i] ^ m[i & 7]);
}

}  // namespace uring_http::ws
