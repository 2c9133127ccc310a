// Utf8Validator: whether a WebSocket text message is UTF-8 (RFC 6455 8.1,
// RFC 3629), checked as its pieces arrive, across frames and receives, so
// that a message is refused (close 1007) at its first bad byte rather than
// once it is whole. Strict: no overlong forms, no surrogates (U+D800 to
// U+DFFF), nothing above U+10FFFF.
//
// Thread-safety: a value; one message at a time.
#ifndef URING_HTTP_SRC_WS_UTF8_VALIDATOR_H_
#define URING_HTTP_SRC_WS_UTF8_VALIDATOR_H_

#include <cstdint>
#include <string_view>

namespace uring_http::ws {

class Utf8Validator {
 public:
  // Takes the message's next bytes: false at the first byte that cannot
  // be UTF-8 (and from then on).
  bool Feed(std::string_view bytes);
  // The bytes so far end on a whole character (checked at the message's
  // end: a sequence cut there is invalid).
  bool complete() const { return state_ == kAccept; }
  bool failed() const { return state_ == kReject; }
  void Reset() { state_ = kAccept; }

 private:
  // States: kAccept (between characters), kReject, or the continuation
  // bytes still due and the range the next one must fall in (the first
  // continuation byte after E0, ED, F0 and F4 is narrowed: overlong forms,
  // surrogates, beyond U+10FFFF).
  enum : uint8_t {
    kAccept = 0,
    kReject = 1,
    kOneMore,       // 80..BF, then done
    kTwoMore,       // 80..BF, then kOneMore
    kThreeMore,     // 80..BF, then kTwoMore
    kAfterE0,       // A0..BF, then kOneMore
    kAfterED,       // 80..9F, then kOneMore
    kAfterF0,       // 90..BF, then kTwoMore
    kAfterF4,       // 80..8F, then kTwoMore
  };
  uint8_t state_ = kAccept;
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_UTF8_VALIDATOR_H_
