#include "src/files/url_path.h"

#include <cstring>

#include "src/http/percent.h"

namespace uring_http::files {
namespace {

// Bytes that may not appear in a name, literal or decoded. '/' is not among
// them: literally it separates segments; decoded it is rejected apart.
bool Forbidden(unsigned char c) { return c < 0x20 || c == 0x7f || c == '\\'; }

// Percent-decodes `encoded` into `out` (one pass: the output is never decoded
// again). False on anything ResolveUrlPath() calls kBadRequest.
bool DecodeOnce(std::string_view encoded, std::string* out) {
  out->reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(encoded[i]);
    if (c == '%') {
      char decoded;
      if (!http::DecodeEscape(encoded, i, &decoded)) return false;
      c = static_cast<unsigned char>(decoded);
      i += 2;
      if (c == '/') return false;
    }
    if (Forbidden(c)) return false;
    out->push_back(static_cast<char>(c));
  }
  return true;
}

}  // namespace

ResolvedPath ResolveUrlPath(std::string_view path, std::string_view prefix) {
  ResolvedPath result;
  ResolveUrlPath(path, prefix, &result);
  return result;
}

bool IsHiddenPath(std::string_view relative, std::string_view prefix) {
  size_t at = 0;
  if (prefix == "/" && (relative == ".well-known" || relative.starts_with(".well-known/"))) {
    at = std::string_view(".well-known/").size();
  }
  // Segments never start with '/' or are empty (ResolveUrlPath): look at
  // the first byte and at every byte after a '/'.
  for (; at < relative.size(); ++at) {
    if (relative[at] == '.' && (at == 0 || relative[at - 1] == '/')) return true;
  }
  return false;
}

void ResolveUrlPath(std::string_view path, std::string_view prefix, ResolvedPath* resolved) {
  ResolvedPath& result = *resolved;
  result.status = PathStatus::kBadRequest;
  result.relative.clear();  // keeps its capacity: no allocation once warm
  result.directory = false;
  std::string_view rest;
  if (path.starts_with(prefix)) {
    rest = path.substr(prefix.size());
  } else if (!prefix.empty() && prefix.back() == '/' &&
             path == prefix.substr(0, prefix.size() - 1)) {
    rest = {};  // "/assets" for "/assets/": the root
  } else {
    result.status = PathStatus::kNotFound;  // not under this mount at all
    return;
  }

  std::string& out = result.relative;
  if (!DecodeOnce(rest, &out)) {
    out.clear();
    result.status = PathStatus::kBadRequest;
    return;
  }
  if (out.size() > kMaxPathBytes) {
    out.clear();
    result.status = PathStatus::kNotFound;
    return;
  }

  // Resolve segments in place: `write` never passes the start of the segment
  // being read (the output is the input with bytes removed), so each kept
  // segment moves left or stays. Every '/' left in `out` came from a literal
  // '/', since a decoded one was rejected above.
  const size_t size = out.size();
  size_t write = 0;
  size_t read = 0;
  bool ends_as_directory = false;
  while (true) {
    size_t end = out.find('/', read);
    if (end == std::string::npos) end = size;
    const size_t length = end - read;
    const char* segment = out.data() + read;
    if (length > kMaxSegmentBytes) {
      out.clear();
      result.status = PathStatus::kNotFound;
      return;
    }
    const bool dot = length == 1 && segment[0] == '.';
    const bool dot_dot = length == 2 && segment[0] == '.' && segment[1] == '.';
    if (dot_dot) {
      if (write == 0) {  // nothing to remove: this would leave the root
        out.clear();
        result.status = PathStatus::kNotFound;
        return;
      }
      const size_t slash = out.rfind('/', write - 1);
      write = slash == std::string::npos ? 0 : slash;
    } else if (length > 0 && !dot) {
      if (write > 0) out[write++] = '/';
      if (write != read) std::memmove(out.data() + write, segment, length);
      write += length;
    }
    if (end == size) {
      ends_as_directory = length == 0 || dot || dot_dot;
      break;
    }
    read = end + 1;
  }
  out.resize(write);
  result.status = PathStatus::kOk;
  result.directory = ends_as_directory || out.empty();
  return;
}

}  // namespace uring_http::files
