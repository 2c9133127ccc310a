// BodyDecoder: reads one request body off a connection's byte stream,
// whatever its framing (Content-Length or chunked), and holds it to a size
// limit. Like ChunkedDecoder it takes the bytes in pieces of any size as they
// arrive and hands back the body as views into them (at most one per call),
// so a caller can buffer the body, stream it to a handler or discard it
// without a copy of its own.
//
// Thread-safety: none; one decoder per connection, on its ring thread.
#ifndef URING_HTTP_SRC_HTTP_BODY_DECODER_H_
#define URING_HTTP_SRC_HTTP_BODY_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/http/chunked_decoder.h"
#include "src/http/request.h"

namespace uring_http::http {

class BodyDecoder {
 public:
  enum class Status : uint8_t { kNeedMore, kData, kDone, kError };
  struct Result {
    Status status = Status::kNeedMore;
    size_t consumed = 0;    // bytes of the input used by this call
    std::string_view data;  // kData: the next piece of the body
    int error_status = 0;   // kError: 400 or 431 (framing), 413 (over the limit)
  };

  explicit BodyDecoder(const ChunkedLimits& limits = {}) : chunked_(limits) {}

  // A new body. `limit`: the most body bytes accepted; a Content-Length
  // above it is the caller's to refuse before the body is read (413 without
  // reading), a chunked body is refused here as soon as it exceeds it.
  void Start(BodyFraming framing, uint64_t content_length, uint64_t limit);

  // As ChunkedDecoder::Decode: kNeedMore (all input consumed), kData (one
  // piece; call again with the rest), kDone (the body ended; `consumed`
  // stops at its end), kError.
  Result Decode(std::string_view input);

  bool done() const { return done_; }
  // Decoded body bytes so far.
  uint64_t received() const { return received_; }
  // Content-Length bodies: the bytes still to come.
  uint64_t remaining() const { return framing_ == BodyFraming::kChunked ? 0 : remaining_; }

 private:
  ChunkedDecoder chunked_;
  BodyFraming framing_ = BodyFraming::kNone;
  bool done_ = true;
  bool failed_ = false;
  uint64_t remaining_ = 0;
  uint64_t received_ = 0;
  uint64_t limit_ = 0;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_BODY_DECODER_H_
