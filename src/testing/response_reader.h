// Reads one HTTP/1.1 response out of a byte stream for the test client:
// the status line and headers, then the body by its framing (none for HEAD,
// 1xx, 204 and 304; chunked with its trailers; Content-Length; or until the
// server closes), handed whole or piece by piece as it arrives.
//
// Strict on purpose: the client exists to test a server, so what a lenient
// client would let pass (a bare LF, Content-Length beside
// Transfer-Encoding, two different lengths, a chunk not followed by CRLF)
// is reported as a malformed response.
//
// It pulls bytes through ByteSource, so that tests drive it with any split
// of the input and no socket.
#ifndef URING_HTTP_SRC_TESTING_RESPONSE_READER_H_
#define URING_HTTP_SRC_TESTING_RESPONSE_READER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "uring_http/testing.h"

namespace uring_http::testing::internal {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Appends at least one byte to *buffer and returns how many; 0 at end of
  // input; an error (DEADLINE_EXCEEDED, UNAVAILABLE) passes through.
  virtual absl::StatusOr<size_t> Read(std::string* buffer) = 0;
};

struct ReadOptions {
  bool head = false;  // the request was HEAD: no body follows
  // Return a 1xx (other than 101) instead of skipping it (the wait for
  // "100 Continue").
  bool return_interim = false;
  // Each piece of the body as it arrives instead of into Response::body;
  // false stops reading (the response is returned, connection_closed).
  std::function<bool(std::string_view)> on_body;
};

// Reads one response from `buffer` (bytes already received) and `source`.
// The response's bytes are taken out of `buffer`; what follows them (a
// pipelined response) stays there. On an error, Response::error says what
// went wrong and where, status is 0 if the head was incomplete, and
// connection_closed is set: the stream's position is lost.
Response ReadResponse(ByteSource& source, std::string& buffer, const ReadOptions& options);

}  // namespace uring_http::testing::internal

#endif  // URING_HTTP_SRC_TESTING_RESPONSE_READER_H_
