// The Cookie request header (see cookies.h).
#include "src/http/cookies.h"

#include <cstring>

namespace uring_http::http {
namespace {

bool IsOws(char c) { return c == ' ' || c == '\t'; }

// RFC 9110 5.6.2 tchar.
bool IsTchar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// One ';'-delimited piece as a pair; false when it is empty or malformed.
bool ParsePair(std::string_view piece, CookiePair* pair) {
  const size_t eq = piece.find('=');
  if (eq == std::string_view::npos) return false;
  const std::string_view name = Trim(piece.substr(0, eq));
  std::string_view value = Trim(piece.substr(eq + 1));
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsTchar(c)) return false;
  }
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  if (value.find('"') != std::string_view::npos) return false;
  pair->name = name;
  pair->value = value;
  return true;
}

}  // namespace

void CookieRange::iterator::Load() {
  while (next_ != end_) {
    const char* const start = next_;
    const size_t left = static_cast<size_t>(end_ - start);
    const char* semicolon = static_cast<const char*>(std::memchr(start, ';', left));
    const char* const stop = semicolon != nullptr ? semicolon : end_;
    next_ = semicolon != nullptr ? semicolon + 1 : end_;
    if (ParsePair(std::string_view(start, static_cast<size_t>(stop - start)), &current_)) {
      pos_ = start;
      return;
    }
  }
  pos_ = nullptr;
  current_ = CookiePair();
}

std::optional<std::string_view> FindCookie(std::string_view header_value, std::string_view name) {
  for (const CookiePair& cookie : CookieRange(header_value)) {
    if (cookie.name == name) return cookie.value;
  }
  return std::nullopt;
}

}  // namespace uring_http::http
