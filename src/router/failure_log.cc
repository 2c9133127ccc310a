#include "src/router/failure_log.h"

#include <exception>
#include <string>

#include "src/base/error_log.h"

namespace uring_http::router {
namespace {

std::string_view StageName(FailureStage stage) {
  switch (stage) {
    case FailureStage::kBefore: return "a middleware's before threw";
    case FailureStage::kHandler: return "the handler threw";
    case FailureStage::kAfter: return "a middleware's after threw";
    case FailureStage::kErrorPage: return "the error page threw";
    case FailureStage::kProducer: return "the response's producer threw";
    case FailureStage::kBodySink: return "the body sink threw";
  }
  return "threw";
}

std::string_view OrDash(std::string_view s) { return s.empty() ? std::string_view("-") : s; }

}  // namespace

FailureContext ContextOf(RouteName route, const http::Request& request,
                         const http::Response* response) {
  FailureContext c;
  c.route = route;
  c.method = request.method;
  c.path = request.path;
  c.request_id = request.FindHeader("x-request-id");
  if (c.request_id.empty() && response != nullptr) {
    c.request_id = response->FindHeader("x-request-id").value_or(std::string_view());
  }
  return c;
}

std::string DescribeException(const std::exception_ptr& error) {
  if (error == nullptr) return "no exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception (not a std::exception)";
  }
}

void LogFailure(const FailureContext& where, std::string_view what) {
  // Bounded: base::LogError cuts the line anyway, and a request id or path
  // is at most a few KiB.
  std::string line = "route \"";
  if (where.route.method.empty() && where.route.pattern.empty()) {
    line.append("-");
  } else {
    line.append(where.route.method).append(" ").append(where.route.pattern);
  }
  line.append("\", request \"");
  if (where.method.empty() && where.path.empty()) {
    line.append("-");
  } else {
    line.append(where.method).append(" ").append(where.path);
  }
  line.append("\", request id \"").append(OrDash(where.request_id)).append("\": ");
  line.append(what);
  base::LogError(line);
}

void LogException(const FailureContext& where, FailureStage stage,
                  const std::exception_ptr& error) {
  std::string what(StageName(stage));
  what.append(": ");
  what.append(DescribeException(error));
  LogFailure(where, what);
}

}  // namespace uring_http::router
