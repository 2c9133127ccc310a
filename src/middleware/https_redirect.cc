#include "src/middleware/https_redirect.h"

#include <utility>

#include "src/http/response_helpers.h"

namespace uring_http::middleware {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' || c == '.';
}

bool EqualsLower(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] + 32) : a[i];
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::string_view HostWithoutPort(std::string_view field) {
  std::string_view host = field;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return {};
    for (char c : host.substr(1, close - 1)) {
      const bool hex = IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex && c != ':' && c != '.') return {};
    }
    if (close == 1) return {};
    port = host.substr(close + 1);
    host = host.substr(0, close + 1);
    if (!port.empty()) {
      if (port.front() != ':') return {};
      port.remove_prefix(1);
    }
  } else {
    const size_t colon = host.find(':');
    if (colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
      if (port.empty()) return {};
    }
    if (host.empty()) return {};
    for (char c : host) {
      if (!IsHostChar(c)) return {};
    }
  }
  if (port.size() > 5) return {};
  for (char c : port) {
    if (!IsDigit(c)) return {};
  }
  return host;
}

router::Middleware HttpsRedirect(HttpsRedirectOptions options) {
  router::Middleware m;
  m.before = [options = std::move(options)](const http::Request& request,
                                            http::Response& response) {
    if (request.secure) return router::Flow::kNext;
    if (options.trust_forwarded_proto &&
        EqualsLower(request.FindHeader("x-forwarded-proto"), "https")) {
      return router::Flow::kNext;
    }
    const std::string_view host =
        options.host.empty() ? HostWithoutPort(request.host) : std::string_view(options.host);
    if (host.empty()) {
      response.set_status(400);
      response.set_content_type("text/plain; charset=utf-8");
      response.set_static_body("400 Bad Request: no valid Host to redirect to\n");
      return router::Flow::kAnswered;
    }
    std::string location = "https://";
    location.append(host);
    if (options.https_port != 443) location += ":" + std::to_string(options.https_port);
    location.append(request.path);
    if (!request.query.empty()) {
      location.push_back('?');
      location.append(request.query);
    }
    if (!http::Redirect(response, location, options.status)) {
      response.set_status(400);
      response.set_static_body("400 Bad Request\n");
    }
    return router::Flow::kAnswered;
  };
  return m;
}

}  // namespace uring_http::middleware
