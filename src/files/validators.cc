#include "src/files/validators.h"

#include <algorithm>

namespace uring_http::files {
namespace {

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// ---- entity-tags (RFC 9110 8.8.3)

struct EntityTag {
  bool weak = false;
  std::string_view opaque;  // with its quotes
};

bool IsEtagChar(unsigned char c) { return c == 0x21 || (c >= 0x23 && c != 0x7f); }

// Parses the entity-tag at s[*pos], advancing *pos past it.
bool ParseEntityTag(std::string_view s, size_t* pos, EntityTag* tag) {
  size_t i = *pos;
  tag->weak = s.substr(i, 2) == "W/";  // %s"W/": case-sensitive
  if (tag->weak) i += 2;
  if (i >= s.size() || s[i] != '"') return false;
  const size_t open = i++;
  while (i < s.size() && IsEtagChar(static_cast<unsigned char>(s[i]))) ++i;
  if (i >= s.size() || s[i] != '"') return false;
  tag->opaque = s.substr(open, i + 1 - open);
  *pos = i + 1;
  return true;
}

// `s` holds exactly one entity-tag.
bool ParseSingleEntityTag(std::string_view s, EntityTag* tag) {
  size_t pos = 0;
  return ParseEntityTag(s, &pos, tag) && pos == s.size();
}

enum class ListMatch : uint8_t { kMatch, kNoMatch, kMalformed };

// Matches a field value of "*" / #entity-tag against `current` (null: the
// file has no usable tag, so only "*" matches).
ListMatch MatchList(std::string_view value, const EntityTag* current, bool strong) {
  const std::string_view s = TrimOws(value);
  if (s == "*") return ListMatch::kMatch;
  size_t pos = 0;
  size_t tags = 0;
  bool matched = false;
  while (true) {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
    if (pos == s.size()) break;
    if (s[pos] == ',') {  // an empty element
      ++pos;
      continue;
    }
    EntityTag tag;
    if (!ParseEntityTag(s, &pos, &tag)) return ListMatch::kMalformed;
    ++tags;
    if (current != nullptr && tag.opaque == current->opaque &&
        (!strong || (!tag.weak && !current->weak))) {
      matched = true;  // keep going: a malformed element later spoils the list
    }
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
    if (pos == s.size()) break;
    if (s[pos] != ',') return ListMatch::kMalformed;
    ++pos;
  }
  if (tags == 0) return ListMatch::kMalformed;
  return matched ? ListMatch::kMatch : ListMatch::kNoMatch;
}

}  // namespace

size_t FormatStrongEtag(const FileVersion& v, char out[kMaxEtagSize]) {
  char* p = out;
  const auto put_hex = [&p](uint64_t value) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value & 15];
      value >>= 4;
    } while (value != 0);
    while (n > 0) *p++ = digits[--n];
  };
  *p++ = '"';
  put_hex(v.size);
  *p++ = '-';
  put_hex(static_cast<uint64_t>(v.mtime_sec));
  *p++ = '.';
  put_hex(v.mtime_nsec);
  *p++ = '"';
  return static_cast<size_t>(p - out);
}

std::string StrongEtag(const FileVersion& v) {
  char buffer[kMaxEtagSize];
  return std::string(buffer, FormatStrongEtag(v, buffer));
}

Precondition Evaluate(const ConditionalHeaders& h, std::string_view etag, int64_t mtime_sec) {
  EntityTag current;
  const EntityTag* current_tag = ParseSingleEntityTag(etag, &current) ? &current : nullptr;

  // 1-2: conditions that protect a representation from lost updates.
  if (!h.if_match.empty()) {
    if (MatchList(h.if_match, current_tag, /*strong=*/true) != ListMatch::kMatch) {
      return Precondition::kFailed;
    }
  } else if (!h.if_unmodified_since.empty()) {
    int64_t date;
    if (ParseHttpDate(h.if_unmodified_since, &date) && mtime_sec > date) {
      return Precondition::kFailed;
    }
  }
  // 3-4: conditions that spare sending what the client already has.
  if (!h.if_none_match.empty()) {
    if (MatchList(h.if_none_match, current_tag, /*strong=*/false) == ListMatch::kMatch) {
      return h.get_or_head ? Precondition::kNotModified : Precondition::kFailed;
    }
  } else if (h.get_or_head && !h.if_modified_since.empty()) {
    int64_t date;
    if (ParseHttpDate(h.if_modified_since, &date) && mtime_sec <= date) {
      return Precondition::kNotModified;
    }
  }
  return Precondition::kNone;
}

bool IfRangeAllows(std::string_view if_range, std::string_view etag, int64_t mtime_sec) {
  const std::string_view value = TrimOws(if_range);
  if (value.empty()) return true;
  if (value.front() == '"' || value.starts_with("W/")) {
    EntityTag tag;
    EntityTag current;
    return ParseSingleEntityTag(value, &tag) && ParseSingleEntityTag(etag, &current) &&
           !tag.weak && !current.weak && tag.opaque == current.opaque;
  }
  int64_t date;
  return ParseHttpDate(value, &date) && date == mtime_sec;
}

}  // namespace uring_http::files
