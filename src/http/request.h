// Request: one HTTP request as a handler sees it, whatever the protocol
// that carried it. The HTTP/1 parser (parser.h) fills it from a request
// head; an HTTP/2 stream will fill it from its header block. Its views point
// into memory the connection owns (the receive buffer, the header array) and
// stay valid while the handler runs. The helpers (query and form
// parameters, cookies, repeated and list headers) are defined in form.h,
// cookies.h and header_values.h and run only when a handler calls them.
//
// Thread-safety: a Request belongs to the thread running its handler.
#ifndef URING_HTTP_SRC_HTTP_REQUEST_H_
#define URING_HTTP_SRC_HTTP_REQUEST_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "src/http/client_address.h"
#include "src/http/client_certificate.h"
#include "src/http/cookies.h"
#include "src/http/form.h"
#include "src/http/header.h"  // struct Header
#include "src/http/header_values.h"
#include "src/http/path_params.h"
#include "src/http/stop_reason.h"

namespace uring_http::http {

enum class Method : uint8_t {
  kGet,
  kHead,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kOptions,
  kTrace,
  kConnect,
  kOther,  // a valid token that is none of the above
};

enum class Version : uint8_t {
  kBare,    // request line without a version ("GET /x"): answered like
            // HTTP/1.0 and the connection closed (the reference design).
  kHttp10,
  kHttp11,
};

// How the request's body is delimited (RFC 9112 6.3).
enum class BodyFraming : uint8_t {
  kNone,           // no body
  kContentLength,  // content_length bytes (> 0)
  kChunked,        // Transfer-Encoding: chunked
};

class BodyReader;
struct ParseLimits;
struct ParseResult;
struct Header;

// Why a streamed request body could not be read to its end (what
// Request::body_error() says after ReadBody() returned -1). Whatever the
// reason, the handler need not answer: the server does (400, 413 or 408,
// with Connection: close) as long as nothing of the response has been sent,
// and sends nothing to a client that is gone.
enum class BodyError : uint8_t {
  kNone,        // no failure (yet)
  kClientGone,  // the connection ended: the client reset it, stopped taking
                // our output, or the server's shutdown ran out of time
  kMalformed,   // broken chunked framing (a bad size line, CRLF, extension
                // or trailer, a bare LF or CR), trailers over the limits, or
                // the client ended its side before the body's end (a
                // Content-Length body cut short): answered 400 (431)
  kTooLarge,    // a chunked body past the route's max_body_bytes: 413
  kTimedOut,    // no byte for --body-timeout, or slower than
                // --body-min-rate: 408
};
// "none", "client gone", "malformed", "too large", "timed out": for logs.
const char* BodyErrorName(BodyError error);

struct Request {
  std::string_view method;   // raw token
  std::string_view target;   // raw request-target
  std::string_view path;     // target up to '?' (absolute-form: the path part)
  std::string_view query;    // after '?', without it; empty if none
  const Header* headers = nullptr;  // points into the caller's array
  size_t num_headers = 0;
  std::string_view host;            // Host header value (empty if absent)
  uint64_t content_length = 0;      // 0 when absent
  size_t head_bytes = 0;            // request line + headers + final blank line
  // The whole (decoded) body, for routes that buffer it; set by the server,
  // not the parser. Empty for a route that streams its body.
  std::string_view body;
  // A route that streams its body on a worker reads it here (blocking);
  // null otherwise. See ReadBody().
  BodyReader* body_reader = nullptr;
  // Where the request came from, set by the server: the socket's peer, or
  // on a --proxy-protocol listener the client the proxy's header names.
  // Unknown (known() false) when neither could be had.
  ClientAddress client_address;
  // (The small fields sit together here, after the address's 28 bytes:
  // an ASYNC exchange keeps its Request for as long as it is open.)
  Method method_id = Method::kOther;  // method, parsed
  Version version = Version::kHttp11;
  BodyFraming framing = BodyFraming::kNone;
  bool keep_alive = false;          // version default adjusted by Connection
  bool expect_continue = false;     // "Expect: 100-continue" was sent
  // The request came over TLS (set by the server, not the parser).
  bool secure = false;
  // The TLS client's certificate, verified against --tls-client-ca; null
  // on plain HTTP, without --tls-client-ca, or when the client sent none
  // under --tls-client-auth=optional. Valid during the handler's call.
  const ClientCertificate* client_certificate = nullptr;
  // Where the ring says whether the handler should stop (stop_reason());
  // set by the server for SLOW and ASYNC handlers, null for FAST ones
  // (they never wait).
  const std::atomic<uint32_t>* stop = nullptr;
  // The matched route's path parameters; set by the server, not the
  // parser. A view of the server's copy (path_params.h): valid while the
  // request is.
  PathParamsView path_params;
  // The methods the route table has for this path, as an Allow header
  // lists them ("GET, DELETE, HEAD, OPTIONS"; a static mount's "GET,
  // HEAD"); set by the server. Empty where no pattern or mount matches the
  // path (a 404, a fallback's request) and before routing.
  std::string_view allowed_methods;

  // Whether the handler should stop, and why (stop_reason.h): a SLOW
  // handler that waits or loops polls it (any thread; kNone for FAST).
  StopReason stop_reason() const {
    return stop == nullptr ? StopReason::kNone
                           : static_cast<StopReason>(stop->load(std::memory_order_acquire));
  }
  // Sleeps up to `timeout`, or until the handler should stop; returns
  // stop_reason(). A SLOW handler that waits between pieces of work (a
  // stream's events, a poll) waits here rather than in sleep_for, so a
  // client that leaves or a drain ends the wait at once. (Without a stop
  // word, a FAST request's, it just sleeps.)
  StopReason WaitForStop(std::chrono::nanoseconds timeout) const;

  // Case-insensitive lookup of the first header with this name; empty if none.
  std::string_view FindHeader(std::string_view name) const;

  // Request helpers: views into the request, nothing allocated unless a
  // value must be decoded, and nothing run unless a handler calls them.
  // The rules are in form.h, cookies.h and header_values.h.
  //
  // The path parameter `name` of the route's pattern ("/users/{id}": "id"),
  // percent-decoded ("%31" gives "1", "a%2Fb" gives "a/b"); empty if the
  // pattern has none of that name. Iterate path_params for all of them.
  // Valid while the request is (a decoded value lives in path_params).
  std::string_view PathParam(std::string_view name) const { return path_params.Get(name); }
  // The same as sent in the path, not decoded.
  std::string_view RawPathParam(std::string_view name) const { return path_params.RawGet(name); }
  // The query string's parameters (form encoding: '+' is a space).
  // QueryParam("x") is the first x, decoded: absent, malformed or present.
  UrlEncodedParams QueryParams() const { return UrlEncodedParams(query); }
  ParamValue QueryParam(std::string_view name) const { return QueryParams().Get(name); }
  // The body's parameters when Content-Type is
  // application/x-www-form-urlencoded (parameters such as "; charset=utf-8"
  // allowed) and the route buffers its body; none otherwise.
  UrlEncodedParams FormParams() const {
    return IsFormUrlEncoded(FindHeader("content-type")) ? UrlEncodedParams(body)
                                                        : UrlEncodedParams();
  }
  ParamValue FormParam(std::string_view name) const { return FormParams().Get(name); }
  // The first cookie named `name` (case-sensitive) across every Cookie
  // line, as sent (not percent-decoded, DQUOTEs removed); nullopt if none.
  std::optional<std::string_view> Cookie(std::string_view name) const {
    for (std::string_view line : HeaderValues("cookie")) {
      if (std::optional<std::string_view> value = FindCookie(line, name)) return value;
    }
    return std::nullopt;
  }
  // The value of every header line named `name` (case-insensitive), in order.
  HeaderValueRange HeaderValues(std::string_view name) const {
    return HeaderValueRange(headers, num_headers, name);
  }
  // The comma-separated elements across all those lines ("gzip", "br", ...).
  HeaderElementRange HeaderElements(std::string_view name) const {
    return HeaderElementRange(headers, num_headers, name);
  }

  // Reads the next bytes of the body into buf[0..len): a buffered body is
  // read from `body`, a streamed one (SLOW routes with a streamed body)
  // blocks on the worker until bytes arrive. Returns the count, 0 at the
  // end of the body, -1 if the body cannot be completed (the client left,
  // sent a malformed chunk, exceeded the route's limit, or was too slow):
  // body_error() says which. After -1 the handler may simply return; the
  // server answers the failure itself (see BodyError).
  long ReadBody(char* buf, size_t len) const;
  // Why the last ReadBody() returned -1; kNone if it has not. A buffered
  // body never fails (a failed one never reaches its handler).
  BodyError body_error() const;

 private:
  friend ParseResult ParseRequestHead(std::string_view, const ParseLimits&, Request*,
                                      Header*, size_t);
  mutable size_t body_read_ = 0;  // how much of a buffered body ReadBody() gave
};

// What Request::ReadBody() reads a streamed body from (src/worker/
// implements it).
class BodyReader {
 public:
  virtual long Read(char* buf, size_t len) = 0;
  // Why the last Read() returned -1 (kNone if it has not).
  virtual BodyError error() const { return BodyError::kNone; }

 protected:
  ~BodyReader() = default;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_REQUEST_H_
