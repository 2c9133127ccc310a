#include "src/router/clean_path.h"

#include "src/http/percent.h"

namespace uring_http::router {
namespace {

// How many dots `segment` decodes to if it decodes to "." or "..", else 0.
// ('.' is unreserved: "%2e" is a dot, RFC 3986 6.2.2.2.)
int Dots(std::string_view segment) {
  if (segment.size() > 6) return 0;  // "%2e%2e" is the longest
  int dots = 0;
  for (size_t i = 0; i < segment.size(); ++i) {
    char c = segment[i];
    if (c == '%') {
      if (!http::DecodeEscape(segment, i, &c)) return 0;
      i += 2;
    }
    if (c != '.') return 0;
    ++dots;
  }
  return dots <= 2 ? dots : 0;
}

}  // namespace

PathShape CheckPath(std::string_view path) {
  if (path.empty() || path.front() != '/') return PathShape::kClean;
  PathShape shape = PathShape::kClean;
  size_t start = 1;  // the current segment's first byte
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string_view segment = path.substr(start, i - start);
      if (segment.empty()) {
        if (i != path.size()) shape = PathShape::kUnclean;  // "//"
      } else if ((segment[0] == '.' || segment[0] == '%') && Dots(segment) != 0) {
        shape = PathShape::kUnclean;
      }
      start = i + 1;
    } else if (path[i] == '%') {
      char c;
      // (Every escape is checked, even past an unclean segment.)
      if (!http::DecodeEscape(path, i, &c)) return PathShape::kMalformed;
    }
  }
  return shape;
}

void AppendCleanPath(std::string_view path, std::string* out) {
  const size_t base = out->size();
  bool directory = false;  // the clean path ends in '/'
  size_t start = 1;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string_view segment = path.substr(start, i - start);
    const bool last = i == path.size();
    start = i + 1;
    const int dots = segment.empty() ? 0 : Dots(segment);
    if (dots == 2) {
      // Removes the last kept segment (none above the root).
      const size_t slash = out->rfind('/');
      if (slash != std::string::npos && slash >= base) out->resize(slash);
    }
    if (dots != 0 || segment.empty()) {
      directory = last;
      continue;
    }
    out->push_back('/');
    out->append(segment);
    directory = false;
  }
  if (directory || out->size() == base) out->push_back('/');
}

}  // namespace uring_http::router
