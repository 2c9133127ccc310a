#include "src/router/path_pattern.h"

#include "absl/strings/str_cat.h"
#include "src/http/percent.h"

namespace uring_http::router {
namespace {

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

absl::StatusOr<PathPattern> PathPattern::Parse(std::string_view pattern) {
  auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("route pattern ", AbslView(pattern), ": ", AbslView(why)));
  };
  if (pattern.empty() || pattern.front() != '/') return error("must start with '/'");
  PathPattern out;
  out.text_ = std::string(pattern);
  std::string_view rest = pattern;
  std::string_view segment;
  while (NextSegment(&rest, &segment)) {
    PatternSegment s;
    const bool opens = segment.find('{') != std::string_view::npos;
    const bool closes = segment.find('}') != std::string_view::npos;
    if (!opens && !closes) {
      // Compared with the path's segments decoded: kept decoded.
      s.text.resize(segment.size());
      for (size_t i = 0; i < segment.size(); ++i) {
        char c;
        if (segment[i] == '%' && !http::DecodeEscape(segment, i, &c)) {
          return error("a '%' must start an escape of two hex digits");
        }
      }
      s.text.resize(http::DecodeLenient(segment, s.text.data()));
      if (s.text == "." || s.text == "..") {
        return error("a \".\" or \"..\" segment matches no path (paths are cleaned first)");
      }
      if (s.text.empty() && !rest.empty()) {
        return error("an empty segment (\"//\") matches no path (paths are cleaned first)");
      }
      out.segments_.push_back(std::move(s));
      continue;
    }
    if (segment.size() < 2 || segment.front() != '{' || segment.back() != '}' ||
        segment.find_first_of("{}", 1) != segment.size() - 1) {
      return error("a parameter must be a whole segment, {name} or {name...}");
    }
    std::string_view name = segment.substr(1, segment.size() - 2);
    s.kind = PatternSegment::Kind::kParam;
    if (name.size() >= 3 && name.substr(name.size() - 3) == "...") {
      s.kind = PatternSegment::Kind::kCatchAll;
      name.remove_suffix(3);
      if (!rest.empty()) return error("a catch-all {name...} must be the last segment");
    }
    if (name.empty()) return error("a parameter needs a name");
    for (char c : name) {
      if (!IsNameChar(c)) return error("a parameter name is letters, digits and '_'");
    }
    for (const PatternSegment& earlier : out.segments_) {
      if (earlier.kind != PatternSegment::Kind::kStatic && earlier.text == name) {
        return error(absl::StrCat("parameter {", AbslView(name), "} appears twice"));
      }
    }
    if (++out.param_count_ > http::PathParams::kCapacity) {
      return error(absl::StrCat("more than ", http::PathParams::kCapacity, " parameters"));
    }
    s.text = std::string(name);
    out.segments_.push_back(std::move(s));
  }
  return out;
}

bool PathPattern::Match(std::string_view path, http::PathParams* params) const {
  params->Clear();
  if (MatchInto(path, params)) {
    params->Decode();
    return true;
  }
  params->Clear();
  return false;
}

bool PathPattern::MatchInto(std::string_view path, http::PathParams* params) const {
  if (segments_.empty() || path.empty() || path.front() != '/') return false;
  std::string_view rest = path;
  for (const PatternSegment& s : segments_) {
    if (rest.empty()) return false;
    if (s.kind == PatternSegment::Kind::kCatchAll) {
      params->Push(s.text, rest.substr(1));
      return true;
    }
    std::string_view segment;
    NextSegment(&rest, &segment);
    if (s.kind == PatternSegment::Kind::kStatic) {
      if (!http::DecodesTo(segment, s.text)) return false;
    } else {
      if (segment.empty()) return false;
      params->Push(s.text, segment);
    }
  }
  return rest.empty();
}

}  // namespace uring_http::router
