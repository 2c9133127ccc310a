// Small text helpers of the test client on std::string_view (Debian's
// abseil has a string_view of its own, which std::string_view does not
// convert to).
#ifndef URING_HTTP_SRC_TESTING_TEXT_H_
#define URING_HTTP_SRC_TESTING_TEXT_H_

#include <string>
#include <string_view>

namespace uring_http::testing::internal {

inline char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

inline std::string AsciiLower(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) c = AsciiLower(c);
  return lower;
}

// Without the spaces and tabs around it (HTTP's optional whitespace).
inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace uring_http::testing::internal

#endif  // URING_HTTP_SRC_TESTING_TEXT_H_
