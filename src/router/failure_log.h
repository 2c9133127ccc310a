// How the server tells of a request it could not answer as its handler
// meant: a handler, middleware, producer, body sink or error page that threw
// (the client gets a 500, or a connection that ends early once the head has
// gone), or a header the response refused (answered 500). One error line
// per event, through base::LogError (stderr, at most a few lines a second),
// naming the route, the request and its id:
//
//   uring-http: error: route "GET /users/{id}", request "GET /users/7",
//   request id "4f2a...": the handler threw: connection refused
//
// The request id is the request's X-Request-Id, else the response's (the
// RequestId middleware's, when it made one). The query string is left out:
// it may carry credentials, and the access log has the request line.
//
// Thread-safety: any thread (ring threads and workers log at once).
#ifndef URING_HTTP_SRC_ROUTER_FAILURE_LOG_H_
#define URING_HTTP_SRC_ROUTER_FAILURE_LOG_H_

#include <exception>
#include <string>
#include <string_view>

#include "src/http/request.h"
#include "src/http/response.h"

namespace uring_http::router {

// A route as registered (Route::method, Route::path); empty: the request
// matched none (a 404/405 answer, an error page).
struct RouteName {
  std::string_view method;
  std::string_view pattern;
};

// What a failure line names. Empty fields are written as "-".
struct FailureContext {
  RouteName route;
  std::string_view method;      // the request's
  std::string_view path;        // the request's, without the query
  std::string_view request_id;
};

// The context of `request` on `route`; the id from the request, else from
// `response` (may be null).
FailureContext ContextOf(RouteName route, const http::Request& request,
                         const http::Response* response);

// Where an exception was thrown from.
enum class FailureStage : uint8_t {
  kBefore,     // a middleware's before
  kHandler,
  kAfter,      // a middleware's after
  kErrorPage,  // an error page (SetErrorHandler, SetDefaultErrorHandler)
  kProducer,   // a streamed response's producer
  kBodySink,   // a FAST route's BodySink or its factory
};

// what() of a std::exception; "an unknown exception (not a std::exception)"
// for anything else.
std::string DescribeException(const std::exception_ptr& error);

// "<context>: <what>" as one error line.
void LogFailure(const FailureContext& where, std::string_view what);
// "<context>: the handler threw: <what()>" (the stage named).
void LogException(const FailureContext& where, FailureStage stage,
                  const std::exception_ptr& error);

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_FAILURE_LOG_H_
