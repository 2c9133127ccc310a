// Forwarding one request: the proxy's ASYNC handler. Every request the
// proxy takes (any method, any path: the router's ASYNC fallback) goes to
// an upstream over the HTTP/1.1 client's Call (src/client/call.h) on the
// ring of the connection that brought it, both bodies streamed with
// backpressure:
//   - the request's fields, less the hop-by-hop ones (RFC 9110 7.6.1:
//     Connection and the fields it names, Keep-Alive, Proxy-Connection,
//     TE, Transfer-Encoding, Upgrade) and its framing, plus
//     X-Forwarded-For (appended), X-Forwarded-Proto and Forwarded
//     (appended, RFC 7239);
//   - its body as it arrives, re-framed by the client (one Content-Length
//     when the request had one, else chunked): the upstream reads exactly
//     the body this server parsed, never bytes it did not;
//   - the response's status and fields less the hop-by-hop ones (and the
//     upstream's Date and Server: this server writes its own), its body
//     piece by piece as the client reads it (a Content-Length kept).
// Failures: an upstream that cannot be reached is marked down (skipped
// for --upstream-fail-timeout) and the next one tried, as long as nothing
// of the request was sent; a kept connection found closed is retried once
// on a fresh one for an idempotent request without a body; otherwise 502
// (refused, reset, a malformed answer) or 504 (a timeout) when nothing of
// the answer has gone, and the answer cut (never ended as if whole) when
// it has.
//
// Thread-safety: Handle runs on ring threads, any number at once.
#ifndef URING_HTTP_EXAMPLES_PROXY_FORWARD_H_
#define URING_HTTP_EXAMPLES_PROXY_FORWARD_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "examples/proxy/upstreams.h"
#include "uring_http/uring_http.h"

namespace proxy {

class Forwarder {
 public:
  Forwarder(Upstreams* upstreams, const uring_http::client::ClientOptions& options)
      : upstreams_(upstreams), client_(options) {}

  uring_http::async::Task<> Handle(uring_http::async::Exchange& ex);

 private:
  Upstreams* const upstreams_;
  uring_http::client::Client client_;
};

// Whether `name` is hop-by-hop: one of RFC 9110 7.6.1's, or one that the
// message's Connection fields name (`connection`: their values).
bool HopByHop(std::string_view name, const std::vector<std::string_view>& connection);

// The request's fields as the upstream gets them (see above). `client`:
// the client's address as text; `https`: it came over TLS.
std::vector<std::pair<std::string, std::string>> UpstreamFields(
    const uring_http::http::Request& request, std::string_view client, bool https);

}  // namespace proxy

#endif  // URING_HTTP_EXAMPLES_PROXY_FORWARD_H_
