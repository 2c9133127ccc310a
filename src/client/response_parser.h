// The HTTP/1.1 client's response-head parser: a pure function over a byte
// span, as the server's request parser is (src/http/parser.h), with the
// same field rules (src/http/field_syntax.h). It says how the body that
// follows is framed; the body itself is read with http::BodyDecoder
// (Content-Length, chunked) or until the upstream closes.
//
// Strict on purpose: a client behind which a proxy forwards must not read
// an upstream's framing differently from how the next hop would. Refused
// (kError, with the rule broken in `error`):
//   - a status line that is not "HTTP/1.0" or "HTTP/1.1", SP, three digits
//     (100..599), then SP and a reason phrase of text (the SP and the
//     reason may be left out: RFC 9112 4 lets a client ignore the reason);
//   - a malformed field line: a name not a token, whitespace before the
//     colon, obsolete line folding, a control character or a bare CR in a
//     value; more fields, or more field bytes, than the limits allow;
//   - Content-Length not a plain decimal (or a list of differing values);
//   - both Content-Length and Transfer-Encoding (RFC 9112 6.3: the classic
//     smuggling vector), even where the status says there is no body;
//   - Transfer-Encoding in an HTTP/1.0 response, or whose codings are not
//     exactly "chunked" (a coding before it, e.g. gzip, is not decoded
//     here: refused rather than passed on undecoded);
//   - 101 Switching Protocols (this client does not upgrade).
//
// Framing (RFC 9112 6.3): a response to HEAD, a 1xx, 204 or 304 has no
// body whatever its fields say; else chunked, else Content-Length, else
// the body runs until the connection closes (and the connection cannot be
// kept). A 1xx head is interim: the caller parses the next one after it.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_CLIENT_RESPONSE_PARSER_H_
#define URING_HTTP_SRC_CLIENT_RESPONSE_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/http/header.h"
#include "src/http/parser.h"
#include "src/http/request.h"

namespace uring_http::client {

enum class ResponseFraming : uint8_t {
  kNone,           // no body
  kContentLength,  // content_length bytes (> 0)
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // everything until the upstream closes
};

struct ResponseLimits {
  size_t max_status_line = 8 * 1024;
  size_t max_header_bytes = 64 * 1024;  // all field lines together
  size_t max_headers = 100;
};

struct ResponseHead {
  http::Version version = http::Version::kHttp11;
  int status = 0;
  std::string_view reason;
  const http::Header* headers = nullptr;  // the caller's array
  size_t num_headers = 0;
  ResponseFraming framing = ResponseFraming::kNone;
  uint64_t content_length = 0;
  // The connection may carry another request after this response's body.
  bool keep_alive = false;
  size_t head_bytes = 0;
  bool interim() const { return status >= 100 && status < 200; }
};

struct ResponseParseResult {
  http::ParseStatus status = http::ParseStatus::kIncomplete;
  size_t consumed = 0;          // kComplete: the head's bytes
  const char* error = nullptr;  // kError: the rule broken, for the log
};

// Parses one response head from the front of `data` into `*out`, with its
// fields in headers[0..capacity). `head_request`: the request was HEAD (the
// response has no body).
ResponseParseResult ParseResponseHead(std::string_view data, const ResponseLimits& limits,
                                      bool head_request, ResponseHead* out,
                                      http::Header* headers, size_t capacity);

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_RESPONSE_PARSER_H_
