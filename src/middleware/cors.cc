#include "src/middleware/cors.h"

#include <string>
#include <memory>
#include <string_view>
#include <utility>

namespace uring_http::middleware {
namespace {

struct Policy {
  CorsOptions options;
  bool any_origin = false;
  std::string max_age;  // formatted once

  // The Access-Control-Allow-Origin value for `origin`; empty: not allowed.
  std::string_view AllowOrigin(std::string_view origin) const {
    if (origin.empty()) return {};
    if (any_origin) return "*";  // (never with credentials: Cors() refuses that)
    for (const std::string& allowed : options.allowed_origins) {
      if (allowed == origin) return origin;
    }
    return {};
  }

  static bool IsPreflight(const http::Request& request) {
    return request.method == "OPTIONS" &&
           !request.FindHeader("access-control-request-method").empty();
  }

  // Access-Control-Allow-Methods for a preflight; empty: not answered.
  std::string_view Methods(const http::Request& request) const {
    return options.allowed_methods.empty() ? request.allowed_methods
                                           : std::string_view(options.allowed_methods);
  }

  // A refused header (the header limit) fails the response by itself: no
  // need to look at each result.
  void Allow(std::string_view allow, http::Response& response) const {
    (void)response.AddHeader("Access-Control-Allow-Origin", allow);
    if (options.allow_credentials) {
      (void)response.AddHeader("Access-Control-Allow-Credentials", "true");
    }
  }

  router::Flow Before(const http::Request& request, http::Response& response) const {
    if (!IsPreflight(request)) return router::Flow::kNext;
    const std::string_view allow = AllowOrigin(request.FindHeader("origin"));
    if (allow.empty()) return router::Flow::kNext;
    const std::string_view methods = Methods(request);
    // No route for the path: nothing to allow (its 404, or the fallback).
    if (methods.empty()) return router::Flow::kNext;
    response.set_status(204);
    Allow(allow, response);
    (void)response.AddHeader("Access-Control-Allow-Methods", methods);
    const bool echo = options.allowed_headers.empty();
    const std::string_view headers =
        echo ? request.FindHeader("access-control-request-headers")
             : std::string_view(options.allowed_headers);
    if (!headers.empty()) (void)response.AddHeader("Access-Control-Allow-Headers", headers);
    if (!max_age.empty()) (void)response.AddHeader("Access-Control-Max-Age", max_age);
    // Echoed, the allowed headers depend on the request's too.
    (void)response.AddHeader("Vary", echo ? "Origin, Access-Control-Request-Headers" : "Origin");
    return router::Flow::kAnswered;
  }

  void After(const http::Request& request, http::Response& response) const {
    const std::string_view allow = AllowOrigin(request.FindHeader("origin"));
    // A preflight this middleware answered has its headers already.
    if (!allow.empty() && IsPreflight(request) && !Methods(request).empty()) return;
    // Every other answer depends on Origin, allowed or not, present or not:
    // a cache must not give one origin's answer to another.
    (void)response.AddHeader("Vary", "Origin");
    if (allow.empty()) return;
    Allow(allow, response);
    if (!options.exposed_headers.empty()) {
      (void)response.AddHeader("Access-Control-Expose-Headers", options.exposed_headers);
    }
  }
};

}  // namespace

absl::StatusOr<router::Middleware> Cors(CorsOptions options) {
  auto policy = std::make_shared<Policy>();
  policy->options = std::move(options);
  for (const std::string& origin : policy->options.allowed_origins) {
    policy->any_origin |= origin == "*";
  }
  if (policy->any_origin && policy->options.allow_credentials) {
    // Echoing whatever Origin comes, with credentials, would let any site
    // read a signed-in user's responses (the Fetch standard forbids "*"
    // with credentials for that reason).
    return absl::InvalidArgumentError(
        "CORS: allowed_origins \"*\" with allow_credentials would let every site make "
        "credentialed requests and read the answers; list the origins instead");
  }
  if (policy->options.max_age_seconds >= 0) {
    policy->max_age = std::to_string(policy->options.max_age_seconds);
  }
  router::Middleware m;
  m.before = [policy](const http::Request& request, http::Response& response) {
    return policy->Before(request, response);
  };
  m.after = [policy](const http::Request& request, http::Response& response) {
    policy->After(request, response);
  };
  return m;
}

}  // namespace uring_http::middleware
