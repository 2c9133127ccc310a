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
  // The mask turned to this offset, repeated: a client's every payload
  // byte passes through here, so 64 bytes a step in 16-byte vectors (SSE2,
  // which every x86-64 has; GCC's vector extension elsewhere), then 8, then
  // one at a time.
  using V16 = uint8_t __attribute__((vector_size(16)));
  alignas(16) uint8_t m[16];
  for (int i = 0; i < 16; ++i) m[i] = mask[(offset + static_cast<uint64_t>(i)) & 3];
  V16 wide;
  std::memcpy(&wide, m, 16);
  size_t i = 0;
  for (; i + 64 <= len; i += 64) {
    V16 a, b, c, d;
    std::memcpy(&a, data + i, 16);
    std::memcpy(&b, data + i + 16, 16);
    std::memcpy(&c, data + i + 32, 16);
    std::memcpy(&d, data + i + 48, 16);
    a ^= wide;
    b ^= wide;
    c ^= wide;
    d ^= wide;
    std::memcpy(data + i, &a, 16);
    std::memcpy(data + i + 16, &b, 16);
    std::memcpy(data + i + 32, &c, 16);
    std::memcpy(data + i + 48, &d, 16);
  }
  uint64_t narrow;
  std::memcpy(&narrow, m, 8);  // the pattern repeats every 4 bytes: i is a multiple of 4 here
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    w ^= narrow;
    std::memcpy(data + i, &w, 8);
  }
  for (; i < len; ++i) data[i] = static_cast<char>(data[i] ^ m[i & 15]);
}

}  // namespace uring_http::ws
