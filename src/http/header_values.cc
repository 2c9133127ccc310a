// Repeated headers and comma-separated lists (see header_values.h).
#include "src/http/header_values.h"

namespace uring_http::http {
namespace {

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

void ListElementRange::iterator::Load() {
  while (next_ != end_) {
    const char* const start = next_;
    // The piece runs to the first comma outside a quoted string.
    const char* p = start;
    bool quoted = false;
    for (; p != end_; ++p) {
      const char c = *p;
      if (quoted) {
        if (c == '\\') {
          if (p + 1 != end_) ++p;  // the escaped byte, whatever it is
        } else if (c == '"') {
          quoted = false;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        break;
      }
    }
    next_ = p != end_ ? p + 1 : end_;
    const char* first = start;
    const char* last = p;
    while (first != last && IsOws(*first)) ++first;
    while (last != first && IsOws(last[-1])) --last;
    if (first != last) {
      pos_ = start;
      current_ = std::string_view(first, static_cast<size_t>(last - first));
      return;
    }
  }
  pos_ = nullptr;
  current_ = {};
}

}  // namespace uring_http::http
