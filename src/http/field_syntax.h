// The field rules HTTP/1 messages share, whichever side parses them (the
// server's request parser, parser.cc; the client's response parser,
// src/client/response_parser.cc): byte classes, Content-Length values,
// Transfer-Encoding lists and Connection options. One copy, so that the
// client refuses exactly what the server refuses (a proxy that read framing
// differently from its upstream is how requests are smuggled).
//
// Inline: the request parser's hot path calls these per field.
//
// Thread-safety: stateless.
#ifndef URING_HTTP_SRC_HTTP_FIELD_SYNTAX_H_
#define URING_HTTP_SRC_HTTP_FIELD_SYNTAX_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uring_http::http::field_syntax {

// Byte classes, one bit each, looked up in a 256-entry table.
constexpr uint8_t kTchar = 1;        // RFC 9110 5.6.2 token character
constexpr uint8_t kTargetChar = 2;   // VCHAR: allowed in a request-target
constexpr uint8_t kValueChar = 4;    // HTAB, SP, VCHAR, obs-text
constexpr uint8_t kPathChar = 8;     // kTargetChar except '?'

struct CharTable {
  uint8_t bits[256] = {};
  constexpr CharTable() {
    for (int c = 0x21; c <= 0x7e; ++c) {
      bits[c] |= kTargetChar | kValueChar | kPathChar;
    }
    bits[static_cast<uint8_t>('?')] &= static_cast<uint8_t>(~kPathChar);
    for (int c = 0x80; c <= 0xff; ++c) bits[c] |= kValueChar;
    bits[static_cast<uint8_t>('\t')] |= kValueChar;
    bits[static_cast<uint8_t>(' ')] |= kValueChar;
    for (int c = '0'; c <= '9'; ++c) bits[c] |= kTchar;
    for (int c = 'A'; c <= 'Z'; ++c) bits[c] |= kTchar;
    for (int c = 'a'; c <= 'z'; ++c) bits[c] |= kTchar;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) {
      bits[static_cast<uint8_t>(c)] |= kTchar;
    }
  }
};
inline constexpr CharTable kChars;

inline bool Is(char c, uint8_t cls) {
  return (kChars.bits[static_cast<uint8_t>(c)] & cls) != 0;
}

inline bool IsOws(char c) { return c == ' ' || c == '\t'; }

inline char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
}

// `lower` must be lower-case ASCII.
inline bool EqualsIgnoreCase(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (AsciiLower(s[i]) != lower[i]) return false;
  }
  return true;
}

inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// Parses one Content-Length field value: 1*DIGIT, or a comma-separated list
// of identical ones (RFC 9110 8.6). Agrees with *seen / *length from earlier
// Content-Length lines. Returns false on anything else, including overflow.
inline bool ParseContentLength(std::string_view value, bool* seen, uint64_t* length) {
  size_t i = 0;
  for (;;) {
    while (i < value.size() && IsOws(value[i])) ++i;
    const size_t start = i;
    uint64_t n = 0;
    for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
      const uint64_t digit = static_cast<uint64_t>(value[i] - '0');
      if (n > (UINT64_MAX - digit) / 10) return false;
      n = n * 10 + digit;
    }
    if (i == start) return false;
    if (*seen && n != *length) return false;
    *seen = true;
    *length = n;
    while (i < value.size() && IsOws(value[i])) ++i;
    if (i == value.size()) return true;
    if (value[i] != ',') return false;
    ++i;
  }
}

// What the Transfer-Encoding lines of a head said, over all of them: their
// codings form one list (RFC 9110 5.3), of which only the last may be chunked.
struct TransferCodings {
  bool seen = false;
  bool malformed = false;   // an empty element, a non-token, chunked with parameters
  int chunked = 0;          // how many times chunked was named
  bool last_chunked = false;
  bool other = false;       // a coding we do not implement (gzip, deflate, ...)
};

// Adds one Transfer-Encoding field value to *codings. Strict on purpose: an
// empty list element is refused rather than skipped, so that no front end
// can read the list differently from us.
inline void ScanTransferEncoding(std::string_view value, TransferCodings* codings) {
  codings->seen = true;
  for (;;) {
    const size_t comma = value.find(',');
    std::string_view item = TrimOws(value.substr(0, comma));
    const size_t semicolon = item.find(';');
    const bool has_params = semicolon != std::string_view::npos;
    const std::string_view name = TrimOws(item.substr(0, semicolon));
    bool token = !name.empty();
    for (char c : name) token = token && Is(c, kTchar);
    if (!token) {
      codings->malformed = true;
    } else if (EqualsIgnoreCase(name, "chunked")) {
      ++codings->chunked;
      if (has_params) codings->malformed = true;  // chunked takes none
    } else {
      codings->other = true;
    }
    codings->last_chunked = token && EqualsIgnoreCase(name, "chunked");
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

// Scans a Connection value (comma-separated tokens) for close / keep-alive.
inline void ScanConnection(std::string_view value, bool* close, bool* keep_alive) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = TrimOws(value.substr(0, comma));
    if (EqualsIgnoreCase(item, "close")) {
      *close = true;
    } else if (EqualsIgnoreCase(item, "keep-alive")) {
      *keep_alive = true;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace uring_http::http::field_syntax

#endif  // URING_HTTP_SRC_HTTP_FIELD_SYNTAX_H_
