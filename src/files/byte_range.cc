#include "src/files/byte_range.h"

#include <algorithm>

namespace uring_http::files {
namespace {

constexpr size_t kMaxDigits = 19;  // 10^19 - 1 < 2^64 - 1: no overflow possible

bool IsOws(char c) { return c == ' ' || c == '\t'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

// Reads 1 to kMaxDigits decimal digits at s[*pos], advancing *pos.
bool ParseNumber(std::string_view s, size_t* pos, uint64_t* value) {
  size_t i = *pos;
  uint64_t v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (i - *pos == kMaxDigits) return false;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  if (i == *pos) return false;
  *pos = i;
  *value = v;
  return true;
}

char* PutDecimal(uint64_t value, char* p) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) *p++ = digits[--n];
  return p;
}

enum class Spec : uint8_t { kInvalid, kUnsatisfiable, kSatisfiable };

// One range-spec at s[*pos] (int-range or suffix-range), advancing *pos.
Spec ParseSpec(std::string_view s, size_t* pos, uint64_t size, ByteRange* range) {
  if (s[*pos] == '-') {
    ++*pos;
    uint64_t suffix;
    if (!ParseNumber(s, pos, &suffix)) return Spec::kInvalid;
    if (suffix == 0 || size == 0) return Spec::kUnsatisfiable;
    *range = {size - std::min(suffix, size), size - 1};
    return Spec::kSatisfiable;
  }
  uint64_t first;
  if (!ParseNumber(s, pos, &first)) return Spec::kInvalid;
  if (*pos == s.size() || s[*pos] != '-') return Spec::kInvalid;
  ++*pos;
  uint64_t last = UINT64_MAX;  // "first-": to the end
  if (*pos < s.size() && s[*pos] >= '0' && s[*pos] <= '9') {
    if (!ParseNumber(s, pos, &last)) return Spec::kInvalid;
    if (last < first) return Spec::kInvalid;
  }
  if (first >= size) return Spec::kUnsatisfiable;
  *range = {first, std::min(last, size - 1)};
  return Spec::kSatisfiable;
}

}  // namespace

RangeResult ParseRange(std::string_view header, uint64_t size, ByteRange* out) {
  const size_t equals = header.find('=');
  if (equals == std::string_view::npos || !EqualsIgnoreCase(header.substr(0, equals), "bytes")) {
    return RangeResult::kNone;
  }
  const std::string_view set = header.substr(equals + 1);
  size_t pos = 0;
  size_t specs = 0;
  size_t satisfiable = 0;
  ByteRange range;
  while (true) {
    while (pos < set.size() && IsOws(set[pos])) ++pos;
    if (pos == set.size()) break;
    if (set[pos] == ',') {  // an empty element
      ++pos;
      continue;
    }
    ByteRange candidate;
    switch (ParseSpec(set, &pos, size, &candidate)) {
      case Spec::kInvalid:
        return RangeResult::kNone;
      case Spec::kUnsatisfiable:
        break;
      case Spec::kSatisfiable:
        range = candidate;
        ++satisfiable;
        break;
    }
    ++specs;
    while (pos < set.size() && IsOws(set[pos])) ++pos;
    if (pos == set.size()) break;
    if (set[pos] != ',') return RangeResult::kNone;
    ++pos;
  }
  if (specs == 0) return RangeResult::kNone;
  if (satisfiable == 0) return RangeResult::kUnsatisfiable;
  if (specs > 1) return RangeResult::kNone;  // whole file instead of multipart
  *out = range;
  return RangeResult::kSingle;
}

size_t FormatContentRange(const ByteRange* range, uint64_t size, char* out) {
  constexpr std::string_view kUnit = "bytes ";
  char* p = std::copy(kUnit.begin(), kUnit.end(), out);
  if (range == nullptr) {
    *p++ = '*';
  } else {
    p = PutDecimal(range->first, p);
    *p++ = '-';
    p = PutDecimal(range->last, p);
  }
  *p++ = '/';
  p = PutDecimal(size, p);
  return static_cast<size_t>(p - out);
}

}  // namespace uring_http::files
