// A route's path pattern, parsed once at registration: "/users/{id}/edit"
// is the static segment "users", the parameter "id" (exactly one non-empty
// segment) and the static segment "edit"; "/files/{path...}" ends in a
// catch-all (the rest of the path after "/files/", '/' included, possibly
// empty). A pattern without braces is an exact path, as before.
//
// Rules (a violation is refused by Parse with a message naming it): the
// pattern starts with '/'; a parameter is a whole segment "{name}" or
// "{name...}" whose name is [A-Za-z0-9_]+; no other '{' or '}'; a
// catch-all is the last segment; no name twice; at most
// http::PathParams::kCapacity parameters; no empty segment but the last
// ("/a//b"), no "." or ".." segment (paths are cleaned before they are
// matched: clean_path.h); a '%' starts an escape of two hex digits.
//
// Static segments are kept percent-decoded and compared with the path's
// segments decoded, one segment at a time: "/caf%C3%A9" and "/café" are
// the same pattern, "/%61pi" matches "/api", and a "%2F" in a path never
// splits its segment (it matches no static segment without a decoded '/';
// a parameter takes it as a '/').
//
// Match() checks one path against this one pattern, which is how the worker
// and a re-parsed head recover the parameters of the route already chosen
// (a path matches one pattern in exactly one way).
//
// Thread-safety: immutable after Parse; any thread may call Match.
#ifndef URING_HTTP_SRC_ROUTER_PATH_PATTERN_H_
#define URING_HTTP_SRC_ROUTER_PATH_PATTERN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "src/http/path_params.h"

namespace uring_http::router {

struct PatternSegment {
  enum class Kind : uint8_t { kStatic, kParam, kCatchAll };
  Kind kind = Kind::kStatic;
  std::string text;  // the static segment (percent-decoded), or the parameter's name
};

class PathPattern {
 public:
  // Matches nothing and has no parameters (a fallback's or a mount's route).
  PathPattern() = default;

  static absl::StatusOr<PathPattern> Parse(std::string_view pattern);

  const std::string& text() const { return text_; }  // as registered
  const std::vector<PatternSegment>& segments() const { return segments_; }
  size_t param_count() const { return param_count_; }
  bool empty() const { return segments_.empty(); }

  // True if `path` matches; then `params` (cleared first) holds the values
  // (decoded, and raw), named by views into this pattern (which must
  // outlive them).
  bool Match(std::string_view path, http::PathParams* params) const;

 private:
  bool MatchInto(std::string_view path, http::PathParams* params) const;

  std::string text_;
  std::vector<PatternSegment> segments_;
  size_t param_count_ = 0;
};

// Splits the next segment off `rest` (empty, or starting with '/'): the
// segment is what follows the '/' up to the next '/' or the end, and `rest`
// keeps what follows it. Returns false when `rest` is empty.
inline bool NextSegment(std::string_view* rest, std::string_view* segment) {
  if (rest->empty()) return false;
  const size_t end = rest->find('/', 1);
  if (end == std::string_view::npos) {
    *segment = rest->substr(1);
    *rest = {};
  } else {
    *segment = rest->substr(1, end - 1);
    rest->remove_prefix(end);
  }
  return true;
}

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_PATH_PATTERN_H_
