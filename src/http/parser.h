// HTTP/1.x request parser: a pure function over a byte span, in the style of
// picohttpparser. It never copies: the Request it fills points into the input.
// It returns "complete, N bytes consumed", "need more bytes" or "error with an
// HTTP status"; the caller re-parses from the start after the next receive,
// which is cheap because requests are small.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_HTTP_PARSER_H_
#define URING_HTTP_SRC_HTTP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

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

struct Header {
  std::string_view name;   // as sent (case preserved)
  std::string_view value;  // leading and trailing whitespace removed
};

struct ParseLimits {
  size_t max_request_line = 8 * 1024;    // exceeded: 414
  size_t max_header_bytes = 16 * 1024;   // all header lines together; exceeded: 431
  size_t max_headers = 100;              // exceeded: 431
  uint64_t max_body_bytes = 1024 * 1024; // Content-Length above it: 413
};

struct Request {
  std::string_view method;   // raw token
  Method method_id = Method::kOther;
  std::string_view target;   // raw request-target
  std::string_view path;     // target up to '?' (absolute-form: the path part)
  std::string_view query;    // after '?', without it; empty if none
  Version version = Version::kHttp11;
  const Header* headers = nullptr;  // points into the caller's array
  size_t num_headers = 0;
  std::string_view host;            // Host header value (empty if absent)
  uint64_t content_length = 0;      // 0 when absent
  bool keep_alive = false;          // version default adjusted by Connection
  bool expect_continue = false;     // "Expect: 100-continue" was sent
  size_t head_bytes = 0;            // request line + headers + final blank line
  std::string_view body;            // content_length bytes after the head

  // Case-insensitive lookup of the first header with this name; empty if none.
  std::string_view FindHeader(std::string_view name) const;
};

enum class ParseStatus : uint8_t {
  kComplete,    // a whole request (head and body) is at the front of the input
  kIncomplete,  // need more bytes; nothing seen so far is invalid
  kError,       // the input is not a valid request; answer error_status, close
};

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;     // kComplete: head_bytes + content_length
  int error_status = 0;    // kError: 400, 413, 414, 431, 501 or 505
  bool head_complete = false;  // kIncomplete: the head parsed, body pending
};

// Parses one request from the front of `data` into `*out`, storing header
// views in `headers[0..headers_capacity)`. More than
// min(headers_capacity, limits.max_headers) headers is an error (431).
//
// Errors (RFC 9112 rules, request-smuggling defences included):
//   400: malformed request line or header; control characters or a bare CR;
//        whitespace between a header name and the colon; obsolete line
//        folding; Content-Length not a plain decimal or several differing
//        values; both Content-Length and Transfer-Encoding; HTTP/1.1 without
//        exactly one Host.
//   414: request line longer than limits.max_request_line (detected early,
//        before the line is complete).
//   431: header section over limits.max_header_bytes or more headers than
//        allowed (detected early).
//   413: Content-Length over limits.max_body_bytes (reported as soon as the
//        head is complete, without waiting for the body).
//   501: any Transfer-Encoding (chunked request bodies are not implemented).
//   505: an HTTP version other than 1.0 or 1.1.
// Line endings: CRLF; a bare LF is accepted as a line ending, a bare CR is not.
ParseResult ParseRequest(std::string_view data, const ParseLimits& limits,
                         Request* out, Header* headers,
                         size_t headers_capacity);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_PARSER_H_
