// Chunked transfer-coding decoder (see chunked_decoder.h).
//
// The grammar, from RFC 9112 7.1 and RFC 9110 5.6, as accepted here:
//   chunked-body   = *chunk last-chunk trailer-section CRLF
//   chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   last-chunk     = 1*"0" [ chunk-ext ] CRLF
//   chunk-size     = 1*HEXDIG
//   chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//   chunk-ext-name = token
//   chunk-ext-val  = token / quoted-string
//   trailer-section = *( field-name ":" OWS field-value OWS CRLF )
// with BWS = OWS = *( SP / HTAB ). Nothing else is tolerated: no bare LF,
// no whitespace before the CRLF of a chunk line (only BWS before ';' may
// follow the size or a value), no obs-fold and no whitespace before a
// trailer's colon. Trailer values take the bytes the request parser takes
// in header values (HTAB, SP, VCHAR, obs-text).
//
// Framing is decoded one byte at a time by Step(), a switch over the state;
// only chunk-data, the bulk of a body, is taken in one piece. Because every
// decision rests on the current state and one byte, the answer cannot depend
// on how the input was split, and an error is always reported at the same
// byte.
#include "src/http/chunked_decoder.h"

#include <cstdio>
#include <cstdlib>

#include "src/http/percent.h"  // HexValue

namespace uring_http::http {
namespace {

// Byte classes, one bit each, looked up in a 256-entry table.
constexpr uint8_t kTchar = 1;       // RFC 9110 5.6.2 token character
constexpr uint8_t kQdtext = 2;      // quoted-string text, without '"' and '\'
constexpr uint8_t kQuotedPair = 4;  // what may follow '\' in a quoted-string
constexpr uint8_t kValueChar = 8;   // field-value: HTAB, SP, VCHAR, obs-text

struct CharTable {
  uint8_t bits[256] = {};
  constexpr CharTable() {
    for (int c = 0x21; c <= 0x7e; ++c) bits[c] |= kQuotedPair | kValueChar;
    for (int c = 0x80; c <= 0xff; ++c) {
      bits[c] |= kQdtext | kQuotedPair | kValueChar;
    }
    for (int c : {'\t', ' '}) bits[c] |= kQdtext | kQuotedPair | kValueChar;
    bits[0x21] |= kQdtext;
    for (int c = 0x23; c <= 0x5b; ++c) bits[c] |= kQdtext;
    for (int c = 0x5d; c <= 0x7e; ++c) bits[c] |= kQdtext;
    for (int c = '0'; c <= '9'; ++c) bits[c] |= kTchar;
    for (int c = 'A'; c <= 'Z'; ++c) bits[c] |= kTchar;
    for (int c = 'a'; c <= 'z'; ++c) bits[c] |= kTchar;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) {
      bits[static_cast<uint8_t>(c)] |= kTchar;
    }
  }
};
constexpr CharTable kChars;

inline bool Is(char c, uint8_t cls) {
  return (kChars.bits[static_cast<uint8_t>(c)] & cls) != 0;
}

inline bool IsBws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

ChunkedDecoder::ChunkedDecoder(const ChunkedLimits& limits) : limits_(limits) {}

void ChunkedDecoder::Reset() {
  state_ = State::kSizeStart;
  error_status_ = 0;
  remaining_ = 0;
  size_digits_ = 0;
  extension_bytes_ = 0;
  trailer_bytes_ = 0;
  trailer_count_ = 0;
  body_bytes_ = 0;
}

ChunkedDecoder::Result ChunkedDecoder::Decode(std::string_view input) {
  Result r;
  if (state_ == State::kDone) {
    r.status = Status::kDone;
    return r;
  }
  if (state_ == State::kError) {
    r.status = Status::kError;
    r.error_status = error_status_;
    return r;
  }
  const size_t n = input.size();
  size_t i = 0;
  while (i < n) {
    if (state_ == State::kData) {
      // remaining_ > 0 here: a zero size leads to the trailers instead.
      const uint64_t left = n - i;
      const size_t take =
          static_cast<size_t>(remaining_ < left ? remaining_ : left);
      r.data = input.substr(i, take);
      i += take;
      remaining_ -= take;
      body_bytes_ += take;
      if (remaining_ == 0) state_ = State::kDataCr;
      r.status = Status::kData;
      r.consumed = i;
      return r;
    }
    if (!Step(input[i])) {
      // The offending byte stays unconsumed: consumed is where it sits.
      r.status = Status::kError;
      r.consumed = i;
      r.error_status = error_status_;
      return r;
    }
    ++i;
    if (state_ == State::kDone) {
      r.status = Status::kDone;
      r.consumed = i;
      return r;
    }
  }
  r.status = Status::kNeedMore;
  r.consumed = n;
  return r;
}

bool ChunkedDecoder::Fail(int status) {
  state_ = State::kError;
  error_status_ = status;
  return false;
}

// Everything from after the size up to the line's CR counts, BWS included,
// so that an endless run of spaces is stopped as surely as a long name.
bool ChunkedDecoder::CountExtensionByte() {
  if (++extension_bytes_ > limits_.max_extension_bytes) return Fail(400);
  return true;
}

// Field lines with their CRLFs count; the final CRLF does not, so that a
// limit of 0 still admits a body without trailers.
bool ChunkedDecoder::CountTrailerByte() {
  if (++trailer_bytes_ > limits_.max_trailer_bytes) return Fail(431);
  return true;
}

bool ChunkedDecoder::Step(char c) {
  switch (state_) {
    case State::kSizeStart:
    case State::kSize: {
      const int digit = HexValue(c);
      if (digit >= 0) {
        // With the default 16 digits the size cannot overflow; a caller
        // that allows more digits still gets a 400, not a wrapped size.
        if (++size_digits_ > limits_.max_size_digits ||
            remaining_ > (UINT64_MAX >> 4)) {
          return Fail(400);
        }
        remaining_ = (remaining_ << 4) | static_cast<uint64_t>(digit);
        state_ = State::kSize;
        return true;
      }
      // An empty size, whatever follows, is no size.
      if (state_ == State::kSizeStart) return Fail(400);
      if (c == '\r') {
        state_ = State::kSizeLineLf;
        return true;
      }
      if (c == ';') {
        state_ = State::kExtBeforeName;
      } else if (IsBws(c)) {
        state_ = State::kExtBeforeSemi;
      } else {
        return Fail(400);
      }
      return CountExtensionByte();
    }

    case State::kExtBeforeSemi:
      // BWS is only allowed where a ';' follows it: "5 \r\n" is an error.
      if (c == ';') {
        state_ = State::kExtBeforeName;
      } else if (!IsBws(c)) {
        return Fail(400);
      }
      return CountExtensionByte();

    case State::kExtBeforeName:
      if (Is(c, kTchar)) {
        state_ = State::kExtName;
      } else if (!IsBws(c)) {
        return Fail(400);  // an empty name: "5;\r\n", "5;=x"
      }
      return CountExtensionByte();

    case State::kExtName:
    case State::kExtAfterName:
      if (c == '=') {
        state_ = State::kExtBeforeValue;
      } else if (c == ';') {
        state_ = State::kExtBeforeName;
      } else if (IsBws(c)) {
        state_ = State::kExtAfterName;
      } else if (state_ == State::kExtName && Is(c, kTchar)) {
        // still in the name
      } else if (state_ == State::kExtName && c == '\r') {
        state_ = State::kSizeLineLf;
        return true;
      } else {
        return Fail(400);
      }
      return CountExtensionByte();

    case State::kExtBeforeValue:
      if (Is(c, kTchar)) {
        state_ = State::kExtToken;
      } else if (c == '"') {
        state_ = State::kExtQuoted;
      } else if (!IsBws(c)) {
        return Fail(400);  // an empty value: "5;a=\r\n"
      }
      return CountExtensionByte();

    case State::kExtToken:
    case State::kExtAfterQuoted:
      if (c == '\r') {
        state_ = State::kSizeLineLf;
        return true;
      }
      if (c == ';') {
        state_ = State::kExtBeforeName;
      } else if (IsBws(c)) {
        state_ = State::kExtBeforeSemi;
      } else if (!(state_ == State::kExtToken && Is(c, kTchar))) {
        return Fail(400);  // e.g. 'a"b"' or '"a"b': one value, one form
      }
      return CountExtensionByte();

    case State::kExtQuoted:
      if (c == '"') {
        state_ = State::kExtAfterQuoted;
      } else if (c == '\\') {
        state_ = State::kExtQuotedPair;
      } else if (!Is(c, kQdtext)) {
        return Fail(400);  // CR, LF, NUL, other CTLs, DEL
      }
      return CountExtensionByte();

    case State::kExtQuotedPair:
      if (!Is(c, kQuotedPair)) return Fail(400);
      state_ = State::kExtQuoted;
      return CountExtensionByte();

    case State::kSizeLineLf:
      if (c != '\n') return Fail(400);
      state_ = remaining_ == 0 ? State::kTrailerLineStart : State::kData;
      return true;

    case State::kDataCr:
      if (c != '\r') return Fail(400);
      state_ = State::kDataLf;
      return true;

    case State::kDataLf:
      if (c != '\n') return Fail(400);
      state_ = State::kSizeStart;
      size_digits_ = 0;
      extension_bytes_ = 0;
      return true;

    case State::kTrailerLineStart:
      if (c == '\r') {
        state_ = State::kFinalLf;
        return true;
      }
      // A leading SP or HTAB (obs-fold), a bare LF or a ':' fail here, as
      // none is a tchar. A new field is counted at its first byte, so that
      // one field too many fails before its line ends.
      if (!Is(c, kTchar)) return Fail(400);
      if (trailer_count_ == limits_.max_trailers) return Fail(431);
      ++trailer_count_;
      state_ = State::kTrailerName;
      return CountTrailerByte();

    case State::kTrailerName:
      if (c == ':') {
        state_ = State::kTrailerValue;
      } else if (!Is(c, kTchar)) {
        return Fail(400);  // whitespace before the colon included
      }
      return CountTrailerByte();

    case State::kTrailerValue:
      // OWS around the value is value bytes here: trailers are dropped, so
      // there is nothing to trim.
      if (c == '\r') {
        state_ = State::kTrailerLf;
      } else if (!Is(c, kValueChar)) {
        return Fail(400);
      }
      return CountTrailerByte();

    case State::kTrailerLf:
      if (c != '\n') return Fail(400);
      state_ = State::kTrailerLineStart;
      return CountTrailerByte();

    case State::kFinalLf:
      if (c != '\n') return Fail(400);
      state_ = State::kDone;
      return true;

    case State::kData:
    case State::kDone:
    case State::kError:
      break;
  }
  // Decode() takes data itself and never steps once done or failed.
  std::fprintf(stderr, "ChunkedDecoder: Step in state %d\n",
               static_cast<int>(state_));
  std::abort();
}

}  // namespace uring_http::http
