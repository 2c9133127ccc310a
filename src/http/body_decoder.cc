#include "src/http/body_decoder.h"

#include <algorithm>

namespace uring_http::http {

void BodyDecoder::Start(BodyFraming framing, uint64_t content_length, uint64_t limit) {
  framing_ = framing;
  remaining_ = framing == BodyFraming::kContentLength ? content_length : 0;
  received_ = 0;
  limit_ = limit;
  failed_ = false;
  done_ = framing == BodyFraming::kNone ||
          (framing == BodyFraming::kContentLength && content_length == 0);
  if (framing == BodyFraming::kChunked) chunked_.Reset();
}

BodyDecoder::Result BodyDecoder::Decode(std::string_view input) {
  Result r;
  if (done_) {
    r.status = Status::kDone;
    return r;
  }
  if (failed_) {
    r.status = Status::kError;
    r.error_status = 400;
    return r;
  }
  if (framing_ == BodyFraming::kContentLength) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, input.size()));
    remaining_ -= n;
    received_ += n;
    r.consumed = n;
    if (n > 0) {
      r.status = Status::kData;
      r.data = input.substr(0, n);
    }
    if (remaining_ == 0) done_ = true;
    if (n == 0) r.status = done_ ? Status::kDone : Status::kNeedMore;
    return r;
  }
  const ChunkedDecoder::Result c = chunked_.Decode(input);
  r.consumed = c.consumed;
  switch (c.status) {
    case ChunkedDecoder::Status::kNeedMore:
      r.status = Status::kNeedMore;
      break;
    case ChunkedDecoder::Status::kData:
      if (c.data.size() > limit_ - received_) {
        // Refused as soon as it exceeds the limit, not once it is all here.
        failed_ = true;
        r.status = Status::kError;
        r.error_status = 413;
        r.consumed = 0;
        return r;
      }
      received_ += c.data.size();
      r.status = Status::kData;
      r.data = c.data;
      break;
    case ChunkedDecoder::Status::kDone:
      done_ = true;
      r.status = Status::kDone;
      break;
    case ChunkedDecoder::Status::kError:
      failed_ = true;
      r.status = Status::kError;
      r.error_status = c.error_status;
      break;
  }
  return r;
}

}  // namespace uring_http::http
