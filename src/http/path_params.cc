#include "src/http/path_params.h"

namespace uring_http::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string_view> DecodePathParam(std::string_view raw, char* out, size_t capacity) {
  if (raw.find('%') == std::string_view::npos) return raw;
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size()) return std::nullopt;
      const int hi = HexValue(raw[i + 1]);
      const int lo = HexValue(raw[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (n == capacity) return std::nullopt;
    out[n++] = c;
  }
  return std::string_view(out, n);
}

}  // namespace uring_http::http
