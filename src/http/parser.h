// HTTP/1.x request-head parser: a pure function over a byte span, in the
// style of picohttpparser. It never copies: the Request it fills points into
// the input. It returns "head complete, N bytes consumed", "need more bytes"
// or "error with an HTTP status". It parses the head only (request line and
// header section) and says how the body is framed (none, Content-Length or
// chunked); reading the body is the connection's job (src/http1/), with
// ChunkedDecoder for chunked bodies. A caller with a partial head re-parses
// from the start once more bytes hold the end of the head (see
// FindHeadEnd), which keeps every receive O(new bytes). The Request it
// fills is protocol-neutral and lives in request.h.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_HTTP_PARSER_H_
#define URING_HTTP_SRC_HTTP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/http/header.h"  // struct Header
#include "src/http/request.h"

namespace uring_http::http {

struct ParseLimits {
  size_t max_request_line = 8 * 1024;    // exceeded: 414
  size_t max_header_bytes = 16 * 1024;   // all header lines together; exceeded: 431
  size_t max_headers = 100;              // exceeded: 431
  // Not the parser's: the connection answers 413 for a buffered body (or a
  // route's streamed one) above it, Content-Length or decoded chunked bytes.
  uint64_t max_body_bytes = 1024 * 1024;
};

enum class ParseStatus : uint8_t {
  kComplete,    // a whole request head is at the front of the input
  kIncomplete,  // need more bytes; nothing seen so far is invalid
  kError,       // the input is not a valid request; answer error_status, close
};

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;     // kComplete: head_bytes (the body is not read)
  int error_status = 0;    // kError: 400, 414, 431, 501 or 505
};

// Parses one request head from the front of `data` into `*out`, storing
// header views in `headers[0..headers_capacity)`. More than
// min(headers_capacity, limits.max_headers) headers is an error (431).
//
// Errors (RFC 9112 rules, request-smuggling defences included):
//   400: malformed request line or header; control characters or a bare CR;
//        whitespace between a header name and the colon; obsolete line
//        folding; Content-Length not a plain decimal or several differing
//        values; both Content-Length and Transfer-Encoding; Transfer-Encoding
//        in an HTTP/1.0 request, whose final coding is not chunked, that
//        names chunked twice, or is not a list of tokens; HTTP/1.1 without
//        exactly one Host.
//   414: request line longer than limits.max_request_line (detected early,
//        before the line is complete).
//   431: header section over limits.max_header_bytes or more headers than
//        allowed (detected early).
//   501: a transfer coding other than chunked before the final chunked
//        (gzip, deflate, ...: not implemented).
//   505: an HTTP version other than 1.0 or 1.1.
// Line endings: CRLF; a bare LF is accepted as a line ending, a bare CR is not.
ParseResult ParseRequestHead(std::string_view data, const ParseLimits& limits,
                             Request* out, Header* headers,
                             size_t headers_capacity);

// Where the head at the front of `data` ends: the offset just past its blank
// line, or 0 while it has not arrived. `scanned` is how many bytes an earlier
// call already searched (it resumes there, so a head arriving a byte at a time
// costs O(n) in all); it is updated. One leading empty line (RFC 9112 2.2) is
// skipped like ParseRequestHead() skips it.
size_t FindHeadEnd(std::string_view data, size_t* scanned);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_PARSER_H_
