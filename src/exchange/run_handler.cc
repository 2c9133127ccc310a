#include "src/exchange/run_handler.h"

#include <exception>

#include "src/router/failure_log.h"

namespace uring_http::exchange {

void AnswerThrow(const router::Pipeline& pipeline, const router::Route& route,
                 const http::Request& request, http::Response& response) {
  router::LogException(router::ContextOf(route.name(), request, &response),
                       router::FailureStage::kHandler, std::current_exception());
  pipeline.Fail(request, response);
}

void RunChained(const router::Pipeline& pipeline, const router::Route& route,
                const http::Request& request, http::Response& response, StreamedHead* stream) {
  const router::RouteName name = route.name();
  if (stream == nullptr) {
    router::RunChain(pipeline, route.options.middleware, request, response, route.handler,
                     /*head_sent=*/nullptr, name);
    return;
  }
  // A throw before the head is sent leaves the handler for the chain,
  // which answers 500 and logs it; once the head is sent, it is logged
  // here and the stream is cut. Either way once.
  bool head_sent = false;
  auto handler = [&](const http::Request& r, http::Response& out) {
    try {
      route.handler(r, out);
    } catch (...) {
      if (!stream->started()) throw;
      router::LogException(router::ContextOf(name, r, &out), router::FailureStage::kHandler,
                           std::current_exception());
      stream->Break();
    }
    head_sent = stream->started();
  };
  router::RunChain(pipeline, route.options.middleware, request, response, handler, &head_sent,
                   name);
}

}  // namespace uring_http::exchange
