#include "src/exchange/route_request.h"

#include <algorithm>
#include <string>

namespace uring_http::exchange {

Routing RouteRequest(const router::Router& router, http::Request& request,
                     uint64_t max_body_bytes, bool has_workers) {
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
  const router::Match match = router.Find(request.method, request.path, &request.path_params);
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
  r.slow = route.kind == router::HandlerKind::kSlow && has_workers;
  r.streamed = route.options.body == router::BodyMode::kStreamed &&
               (route.sink != nullptr || r.slow);
  if (route.options.body == router::BodyMode::kStreamed && !r.streamed) {
    // A SLOW route run inline (--workers=0) cannot block the ring on a
    // streamed body: it gets it buffered, within the server's limit.
    r.body_limit = std::min(r.body_limit, max_body_bytes);
  }
  return r;
}

void AnswerUnrouted(const router::Pipeline& pipeline, const Routing& routing,
                    const http::Request& request, http::Response& response) {
  if (routing.kind == Routing::Kind::kUnmatched) {
    pipeline.AnswerUnmatched(routing.status, routing.allow, request, response);
    return;
  }
  if (routing.shape == router::PathShape::kMalformed) {
    pipeline.AnswerUnmatched(400, {}, request, response);
    return;
  }
  // 301 as Go's ServeMux answers; 308 where a 301 would let a client turn
  // a POST into a GET.
  const bool get =
      request.method_id == http::Method::kGet || request.method_id == http::Method::kHead;
  std::string location;
  router::AppendCleanPath(request.path, &location);
  if (!request.query.empty()) {
    location.push_back('?');
    location.append(request.query);
  }
  pipeline.AnswerRedirect(get ? 301 : 308, location, request, response);
}

}  // namespace uring_http::exchange
