// The HTTP/1.1 serializer: a Response (or a worker's streamed head) into
// bytes in a caller-provided buffer, the chunked framing of a streamed body,
// and the server's own error answers. Each function writes into out[0..
// capacity) when it fits and returns the size needed either way, so that a
// caller can serialize straight into its output queue's tail and measure
// only when it does not fit. The Date line is formatted at most once a
// second per thread.
//
// Thread-safety: stateless apart from the per-thread Date cache.
#ifndef URING_HTTP_SRC_HTTP1_RESPONSE_WRITER_H_
#define URING_HTTP_SRC_HTTP1_RESPONSE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/http/header_table.h"
#include "src/http/response.h"

namespace uring_http::http1 {

using http::HeaderTable;
using http::Response;

struct SerializeOptions {
  bool keep_alive = true;  // false adds "Connection: close"
  // HTTP/1.0 keeps a connection only when the response says so.
  bool keep_alive_header = false;
  bool head_only = false;  // HEAD: headers (with the body's length) but no body
};


// Writes the whole response into out[0..capacity) if it fits and returns its
// size; if it does not fit, writes nothing useful and returns the size needed.
size_t SerializeResponse(const Response& response, const SerializeOptions& options, char* out,
                         size_t capacity);

// The size SerializeResponse() would return.
size_t SerializedSize(const Response& response, const SerializeOptions& options);

// How a streamed body is delimited.
enum class StreamFraming : uint8_t {
  kContentLength,  // exactly `length` bytes
  kChunked,        // HTTP/1.1, length unknown
  kClose,          // HTTP/1.0, length unknown: the connection closes after it
};

// The head of a streamed response (no body bytes), with its framing header
// ("Connection: close" for kClose). Returns the size as SerializeResponse().
size_t SerializeStreamHead(const Response& response, const SerializeOptions& options,
                           StreamFraming framing, uint64_t length, char* out, size_t capacity);
// The same from a status and fields (a worker's streamed head).
size_t SerializeStreamHead(int status, const HeaderTable& fields, const SerializeOptions& options,
                           StreamFraming framing, uint64_t length, char* out, size_t capacity);

// "<hex size>\r\n" before a chunk of `size` bytes (size > 0); returns its
// length (at most 18).
size_t ChunkHeader(uint64_t size, char out[18]);
// The fields as HTTP/1 lines, "Name: value\r\n" each, appended to *out.
void AppendFieldLines(const HeaderTable& fields, std::string* out);
// The last chunk and the trailer section: "0\r\n" trailers "\r\n".
std::string LastChunk(std::string_view trailer_lines);
std::string LastChunk(const HeaderTable& trailers);

// The body SerializeError() writes: "404 Not Found\n" (for the access log).
inline size_t ErrorBodySize(int status) {
  return http::StatusHasBody(status) ? http::ReasonPhrase(status).size() + 5 : 0;
}

// A complete error response ("404 Not Found" etc.) with a short text body.
// `allow` (for 405, or a 204 answering OPTIONS: no body) becomes an Allow
// header when not empty.
size_t SerializeError(int status, const SerializeOptions& options, std::string_view allow,
                      char* out, size_t capacity);

}  // namespace uring_http::http1

#endif  // URING_HTTP_SRC_HTTP1_RESPONSE_WRITER_H_
