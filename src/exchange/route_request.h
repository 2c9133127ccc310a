// RouteRequest: what the server does with a request head, whichever
// protocol carried it: a path that is not clean is the router's to answer
// (400 for a broken escape, else a redirect to the clean path); a path no
// route takes is answered from the route table (404, 405 with Allow, or
// the 204 of an OPTIONS); a route says how its body is taken (buffered or
// streamed, and within which limit) and where its handler runs (FAST on
// the ring, SLOW on a worker). AnswerUnrouted builds the router's answers
// (with the error pages and the global middlewares around them).
//
// Thread-safety: the ring thread that read the head (the router's scratch
// for Allow is per thread).
#ifndef URING_HTTP_SRC_EXCHANGE_ROUTE_REQUEST_H_
#define URING_HTTP_SRC_EXCHANGE_ROUTE_REQUEST_H_

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "src/http/request.h"
#include "src/http/response.h"
#include "src/router/clean_path.h"
#include "src/router/router.h"

namespace uring_http::exchange {

struct Routing {
  enum class Kind : uint8_t {
    kUnclean,    // `shape` says how (kUnclean: redirect; kMalformed: 400)
    kUnmatched,  // `status`: 404, 405, or 204 for OPTIONS from the table
    kRoute,      // `route` answers
  };
  Kind kind = Kind::kUnmatched;
  router::PathShape shape = router::PathShape::kClean;
  int status = 0;
  // The methods the path has (Request::allowed_methods); a view of the
  // ring thread's scratch when `allow_scratch` (route_tree.h).
  std::string_view allow;
  bool allow_scratch = false;
  const router::Route* route = nullptr;
  // kRoute: the body's limit (the route's, else the server's), whether the
  // answer comes back later as a task's completion (a worker runs the
  // handler, or the ring's coroutine runner: ASYNC), and whether the body
  // is streamed to it (a worker's pipe, or the route's BodySink).
  uint64_t body_limit = 0;
  bool slow = false;
  bool streamed = false;
};

// Routes `request` (its path_params and allowed_methods are set; the
// parameters are held in `params`, which must outlive the request's use).
// `max_body_bytes`: the server's limit; `has_workers`: false runs SLOW
// handlers inline (--workers=0), which then get their body buffered.
// (Inline: every request of every protocol passes here.)
inline Routing RouteRequest(const router::Router& router, http::Request& request,
                            http::PathParams& params, uint64_t max_body_bytes, bool has_workers) {
  Routing r;
  if (const router::PathShape shape = router::CheckPath(request.path);
      shape != router::PathShape::kClean) {
    // Only clean paths are routed: a broken escape is refused, "//", "."
    // and ".." are redirected (clean_path.h).
    r.kind = Routing::Kind::kUnclean;
    r.shape = shape;
    r.status = shape == router::PathShape::kMalformed ? 400 : 301;
    r.body_limit = max_body_bytes;
    return r;
  }
  const router::Match match = router.Find(request.method, request.path, &params);
  request.path_params = params.view();
  request.allowed_methods = match.allow;
  r.allow = match.allow;
  r.allow_scratch = match.allow_scratch;
  r.body_limit = max_body_bytes;
  if (match.route == nullptr) {
    // OPTIONS that no route takes is answered from the route table.
    r.kind = Routing::Kind::kUnmatched;
    r.status = match.options ? 204 : match.path_known ? 405 : 404;
    return r;
  }
  const router::Route& route = *match.route;
  r.kind = Routing::Kind::kRoute;
  r.route = &route;
  if (route.options.max_body_bytes != 0) r.body_limit = route.options.max_body_bytes;
  // ASYNC routes travel as SLOW ones do (a task whose completion comes
  // back later), whether or not there are workers.
  r.slow = (route.kind == router::HandlerKind::kSlow && has_workers) ||
           route.kind == router::HandlerKind::kAsync;
  r.streamed = route.options.body == router::BodyMode::kStreamed &&
               (route.sink != nullptr || r.slow);
  if (route.options.body == router::BodyMode::kStreamed && !r.streamed) {
    // A SLOW route run inline (--workers=0) cannot block the ring on a
    // streamed body: it gets it buffered, within the server's limit.
    r.body_limit = std::min(r.body_limit, max_body_bytes);
  }
  return r;
}

// The router's answer for a request it routed to no handler (kUnclean or
// kUnmatched) in `response`: the redirect, the 400, 404 or 405 (its page,
// or the server's text), or the 204 with Allow.
void AnswerUnrouted(const router::Pipeline& pipeline, const Routing& routing,
                    const http::Request& request, http::Response& response);

}  // namespace uring_http::exchange

#endif  // URING_HTTP_SRC_EXCHANGE_ROUTE_REQUEST_H_
