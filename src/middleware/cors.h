// CORS: a Middleware that answers cross-origin preflights and marks the
// responses a browser may share with another origin (Fetch standard, the
// CORS protocol as servers see it).
//
// A request without an Origin header, or from an origin not allowed, gets
// no CORS headers (the browser then refuses it). From an allowed origin:
//   - a preflight (OPTIONS with Access-Control-Request-Method) is answered
//     204 at once with Access-Control-Allow-Origin, -Allow-Methods,
//     -Allow-Headers, -Max-Age and -Allow-Credentials as configured. The
//     methods are, unless configured, those the route table has for the
//     path (Request::allowed_methods: "GET, DELETE, HEAD, OPTIONS" for a
//     path with GET and DELETE routes), so that a preflight for DELETE
//     succeeds exactly where a DELETE route exists. A preflight for a path
//     no route or mount matches is not answered here: it goes on (a 404,
//     or the fallback route);
//   - any other request goes on to its handler, and its response gets
//     Access-Control-Allow-Origin (and -Allow-Credentials, -Expose-Headers).
// Every answer that passes through gets "Vary: Origin", allowed or not,
// Origin present or not: each depends on it, and a cache must not hand one
// origin's answer to another. A preflight that echoes the requested headers
// (allowed_headers empty) varies on Access-Control-Request-Headers too.
//
// Cors() refuses options that would be unsafe: "*" among the origins with
// allow_credentials (any site could then read a signed-in user's answers;
// the Fetch standard forbids "*" with credentials). It returns the error
// instead of a middleware, so that a program cannot install it by mistake.
//
// Install it with Router::Use() (a preflight rarely has a route of its
// own: the global middlewares also run for 404/405 answers). It allocates
// nothing per request.
//
// Thread-safety: the options are copied in; the hooks are safe anywhere.
#ifndef URING_HTTP_SRC_MIDDLEWARE_CORS_H_
#define URING_HTTP_SRC_MIDDLEWARE_CORS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/router/middleware.h"

namespace uring_http::middleware {

struct CorsOptions {
  // Exact origins ("https://app.example.com"), or {"*"} for any (then
  // without credentials).
  std::vector<std::string> allowed_origins = {"*"};
  // Access-Control-Allow-Methods; empty: the methods of the path's routes.
  std::string allowed_methods;
  // Request headers a preflight may ask for; empty: whatever it asks for.
  std::string allowed_headers;
  // Response headers scripts may read, beyond the safelisted ones.
  std::string exposed_headers;
  // How long a preflight's answer may be cached (seconds); < 0: not said.
  int max_age_seconds = 600;
  // Cookies and HTTP auth allowed: the allowed origin is then echoed; only
  // with origins listed.
  bool allow_credentials = false;
};

// The middleware, or InvalidArgumentError naming what is unsafe (above).
absl::StatusOr<router::Middleware> Cors(CorsOptions options);

}  // namespace uring_http::middleware

#endif  // URING_HTTP_SRC_MIDDLEWARE_CORS_H_
