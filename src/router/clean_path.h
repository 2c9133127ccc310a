// The path rules routes are matched under, checked before the route table
// is asked (as Go's ServeMux cleans a path first). A request path is
//   - malformed when a '%' does not start an escape of two hex digits
//     ("/100%", "/a%zz"): the server answers 400;
//   - unclean when it has an empty segment other than the last ("//",
//     "/a//b"; a trailing "/" is a segment of its own and stays) or a "."
//     or ".." segment, literal or percent-encoded ("%2e", ".%2E"): the
//     server redirects to its clean form (301 for GET and HEAD, 308, which
//     keeps the method and body, for the others), the query kept;
//   - clean otherwise, and only a clean path reaches the route table, its
//     middlewares and handlers.
// The clean form resolves the dot segments as RFC 3986 5.2.4 does (a ".."
// above the root is dropped; "/a/b/.." is "/a/", a directory) and drops the
// empty segments but a trailing one; every other segment is kept as sent
// (escapes included: "%2F" stays encoded and never splits a segment).
// Escapes of other bytes need no redirect: static segments compare decoded
// (path_pattern.h), so "/%61pi" is "/api" to the router.
//
// Thread-safety: pure functions.
#ifndef URING_HTTP_SRC_ROUTER_CLEAN_PATH_H_
#define URING_HTTP_SRC_ROUTER_CLEAN_PATH_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace uring_http::router {

enum class PathShape : uint8_t { kClean, kUnclean, kMalformed };

// One pass over `path`. Anything not starting with '/' ("*") is kClean:
// these rules are for origin-form paths.
PathShape CheckPath(std::string_view path);

// The clean form of `path` (which starts with '/'), appended to *out.
void AppendCleanPath(std::string_view path, std::string* out);

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_CLEAN_PATH_H_
