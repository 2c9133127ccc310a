// Percent-encoding's one rule (RFC 3986 2.1), shared by every decoder that
// meets it: query strings and form bodies (form.h, where '+' is also a
// space), path parameters (path_params.h) and static-file paths
// (src/files/url_path.h), each of which adds its own rules around it.
//
// Thread-safety: pure functions.
#ifndef URING_HTTP_SRC_HTTP_PERCENT_H_
#define URING_HTTP_SRC_HTTP_PERCENT_H_

#include <cstddef>
#include <string_view>

namespace uring_http::http {

// The value of a hex digit, either case; -1 for anything else.
constexpr int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte "%XY" at raw[i] stands for; false when raw[i] does not start a
// whole escape (fewer than two hex digits follow).
constexpr bool DecodeEscape(std::string_view raw, size_t i, char* out) {
  if (i + 2 >= raw.size() || raw[i] != '%') return false;
  const int high = HexValue(raw[i + 1]);
  const int low = HexValue(raw[i + 2]);
  if (high < 0 || low < 0) return false;
  *out = static_cast<char>(high * 16 + low);
  return true;
}

// Percent-decodes `raw` into out[0..raw.size()) leniently (a '%' that does
// not start a whole escape is kept as it is) and returns the decoded size.
// Decoding never lengthens: `out` needs room for raw.size() bytes.
constexpr size_t DecodeLenient(std::string_view raw, char* out) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%' && DecodeEscape(raw, i, &c)) i += 2;
    out[n++] = c;
  }
  return n;
}

// Whether `raw` percent-decodes (leniently, as above) to `decoded`, without
// decoding it anywhere.
constexpr bool DecodesTo(std::string_view raw, std::string_view decoded) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%' && DecodeEscape(raw, i, &c)) i += 2;
    if (n == decoded.size() || decoded[n] != c) return false;
    ++n;
  }
  return n == decoded.size();
}

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_PERCENT_H_
