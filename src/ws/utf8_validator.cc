#include "src/ws/utf8_validator.h"

#include <cstring>

namespace uring_http::ws {

bool Utf8Validator::Feed(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  uint8_t state = state_;
  if (state == kReject) return false;
  while (p < end) {
    if (state == kAccept) {
      // ASCII runs, eight bytes at a time: the common case of text.
      while (end - p >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        if ((w & 0x8080808080808080ull) != 0) break;
        p += 8;
      }
      if (p == end) break;
      const uint8_t b = *p++;
      if (b < 0x80) continue;
      if (b < 0xC2) {
        state = kReject;  // a continuation byte first, or C0/C1 (overlong)
      } else if (b < 0xE0) {
        state = kOneMore;
      } else if (b == 0xE0) {
        state = kAfterE0;
      } else if (b == 0xED) {
        state = kAfterED;
      } else if (b < 0xF0) {
        state = kTwoMore;
      } else if (b == 0xF0) {
        state = kAfterF0;
      } else if (b < 0xF4) {
        state = kThreeMore;
      } else if (b == 0xF4) {
        state = kAfterF4;
      } else {
        state = kReject;  // F5..FF
      }
      if (state == kReject) break;
      continue;
    }
    const uint8_t b = *p++;
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    uint8_t next = kAccept;
    switch (state) {
      case kOneMore: next = kAccept; break;
      case kTwoMore: next = kOneMore; break;
      case kThreeMore: next = kTwoMore; break;
      case kAfterE0: lo = 0xA0; next = kOneMore; break;
      case kAfterED: hi = 0x9F; next = kOneMore; break;
      case kAfterF0: lo = 0x90; next = kTwoMore; break;
      case kAfterF4: hi = 0x8F; next = kTwoMore; break;
      default: next = kReject; break;
    }
    state = (b >= lo && b <= hi) ? next : static_cast<uint8_t>(kReject);
    if (state == kReject) break;
  }
  state_ = state;
  return state != kReject;
}

}  // namespace uring_http::ws
