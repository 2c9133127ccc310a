#include "src/http/path_params.h"

#include "src/http/percent.h"

namespace uring_http::http {

std::optional<std::string_view> DecodePathParam(std::string_view raw, char* out, size_t capacity) {
  if (raw.find('%') == std::string_view::npos) return raw;
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%') {
      if (!DecodeEscape(raw, i, &c)) return std::nullopt;
      i += 2;
    }
    if (n == capacity) return std::nullopt;
    out[n++] = c;
  }
  return std::string_view(out, n);
}

}  // namespace uring_http::http
