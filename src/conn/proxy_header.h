// The PROXY protocol header (HAProxy's doc/proxy-protocol.txt, versions 1
// and 2): what a proxy such as HAProxy (send-proxy, send-proxy-v2) or a
// cloud load balancer sends at the very start of a connection, before the
// client's bytes, to say which client the connection is for.
//
// ParseProxyHeader is a pure function over the bytes received so far, like
// the request-head parser: it says "need more", "done, N bytes are the
// header, this is the client" or "error", and is simply called again on the
// longer input after the next receive. It answers "error" at the first byte
// that can no longer begin a valid header, so a client that sends plain
// HTTP to a --proxy-protocol listener is refused at once, not after a
// timeout.
//
// Thread-safety: a pure function.
#ifndef URING_HTTP_SRC_CONN_PROXY_HEADER_H_
#define URING_HTTP_SRC_CONN_PROXY_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/http/client_address.h"

namespace uring_http::conn {

// Version 1: one text line, CRLF included, at most this long (the spec's
// bound: "PROXY TCP6" with two full IPv6 addresses and ports is 104).
inline constexpr size_t kProxyV1MaxBytes = 107;
// Version 2: a 16-byte fixed part, then addresses and TLVs. The spec sets
// no bound below 64 KiB; addresses take at most 216 bytes (AF_UNIX) and
// the TLVs load balancers send (AWS's VPC endpoint, HAProxy's SSL details)
// a few hundred. Anything longer is refused rather than buffered.
inline constexpr size_t kProxyV2FixedBytes = 16;
inline constexpr size_t kProxyV2MaxPayload = 2048;

enum class ProxyStatus : uint8_t { kIncomplete, kDone, kError };

struct ProxyHeader {
  ProxyStatus status = ProxyStatus::kIncomplete;
  // kDone: the header's length; the client's own bytes start after it.
  size_t consumed = 0;
  uint8_t version = 0;  // 1 or 2, once known
  // kDone: true when the header names no client (v2 LOCAL, a health check
  // from the proxy itself; v1 UNKNOWN; v2 UNSPEC or AF_UNIX addresses):
  // the socket's own peer stands, as the spec asks.
  bool local = false;
  // kDone and !local: the client, and the address it connected to.
  http::ClientAddress source;
  http::ClientAddress destination;
};

ProxyHeader ParseProxyHeader(std::string_view bytes);

}  // namespace uring_http::conn

#endif  // URING_HTTP_SRC_CONN_PROXY_HEADER_H_
