#include "src/exchange/route_request.h"

#include <string>

namespace uring_http::exchange {

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
