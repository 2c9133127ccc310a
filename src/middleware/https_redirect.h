// HTTPS redirect: a Middleware that answers every request that did not
// come over TLS (Request::secure) with a redirect to the same path and
// query over https, so that a server with a certificate and a plain-HTTP
// port beside it (ServerConfig::plain_port) sends plain visitors to TLS.
//
// The Location's host is HttpsRedirectOptions::host when set (recommended:
// then no client chooses where it is sent), else the request's Host with
// its port replaced; a Host that is not a plain host name, IPv4 address or
// [IPv6] literal (optionally with a port) is answered 400, never echoed.
// The port is https_port, left out when 443. Behind a proxy that
// terminates TLS, trust_forwarded_proto lets "X-Forwarded-Proto: https"
// count as secure (only set it where the proxy overwrites that header).
//
// It runs before the route (Use() it first, or before any middleware that
// does work): a redirected request reaches no handler. It allocates only
// for the redirect's Location and body.
//
// Thread-safety: the hooks run on any thread at once.
#ifndef URING_HTTP_SRC_MIDDLEWARE_HTTPS_REDIRECT_H_
#define URING_HTTP_SRC_MIDDLEWARE_HTTPS_REDIRECT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "src/router/middleware.h"

namespace uring_http::middleware {

struct HttpsRedirectOptions {
  std::string host;           // "" : the request's Host, without its port
  uint16_t https_port = 443;  // left out of the Location when 443
  int status = 308;           // 301, 302, 307 or 308 (308 keeps method and body)
  bool trust_forwarded_proto = false;
};

// The host part of a Host field ("example.com:8080" -> "example.com",
// "[::1]:80" -> "[::1]"), or "" when it is not a valid host.
std::string_view HostWithoutPort(std::string_view host_field);

router::Middleware HttpsRedirect(HttpsRedirectOptions options = {});

}  // namespace uring_http::middleware

#endif  // URING_HTTP_SRC_MIDDLEWARE_HTTPS_REDIRECT_H_
