// StreamState: what a connection needs only while a request body is being
// read or a body streams: the body decoder, a worker's pipes, a FAST
// handler's sink or producer, a static file being sent (its FileStream
// taken separately, only for a file). Most requests need none of it (a GET, a
// small body that arrives with its head), so a connection holds one only
// while it does, from its loop's pool, and an idle connection stays small:
// a loop preallocates a slot for every connection it may hold.
//
// Thread-safety: owned by the loop's ring thread (the pipes are shared with
// a worker under their own rules).
#ifndef URING_HTTP_SRC_HTTP1_STREAM_STATE_H_
#define URING_HTTP_SRC_HTTP1_STREAM_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/check.h"
#include "src/http/body_decoder.h"
#include "src/http/chunked_decoder.h"
#include "src/http/gzip_encoder.h"
#include "src/http/response.h"
#include "src/http1/response_writer.h"
#include "src/http1/file_stream.h"
#include "src/router/router.h"
#include "src/worker/body_pipe.h"

namespace uring_http::http1 {

class StreamStatePool;

struct StreamState {
  explicit StreamState(StreamStatePool* pool) : pool_(pool) {}

  // The request body being read: the pool's, taken at the first use, as a
  // streamed answer (an open event stream) reads no body and need not
  // hold one (120 bytes) for its life.
  http::BodyDecoder& decoder();

  std::unique_ptr<worker::BodyPipe> req_pipe;   // ... streamed to a worker
  std::unique_ptr<router::BodySink> sink;       // ... or to a FAST sink
  std::unique_ptr<worker::BodyPipe> resp_pipe;  // a worker's streamed response
  size_t pipe_queued = 0;  // resp_pipe bytes handed to the output queue, not yet freed
  // The pipe carries body bytes; its head and framing are the ring's.
  StreamFraming pipe_framing = StreamFraming::kChunked;
  bool pipe_head_due = false;    // adopted, head not yet queued
  bool pipe_sends_body = false;  // not HEAD, 204 or 304
  http::BodyProducer producer;                  // a FAST producer's stream
  // Its trailer lines (null: none, as for most: not part of every state).
  std::unique_ptr<std::string> trailers;
  uint64_t produced = 0;        // its body bytes so far
  uint64_t produce_length = 0;  // its Content-Length, if it set one
  StreamFraming produce_framing = StreamFraming::kChunked;
  // Its gzip, when compressed (about 128 KiB): released with the producer.
  std::unique_ptr<http::GzipStream> gzip;
  // A static file's answer, while one runs: from the pool's own list, not
  // part of every stream state (it is 4.9 KB, most of it the path), so
  // that a streamed answer (an open event stream) does not hold one.
  std::unique_ptr<FileStream> file;

  bool idle() const {
    return !req_pipe && !sink && !resp_pipe && !producer && (file == nullptr || file->idle());
  }

 private:
  friend class StreamStatePool;
  StreamStatePool* const pool_;
  std::unique_ptr<http::BodyDecoder> decoder_;
};

// A free list of StreamStates, kept for reuse (up to `keep` of them).
class StreamStatePool {
 public:
  StreamStatePool(const http::ChunkedLimits& limits, size_t keep) : limits_(limits), keep_(keep) {}
  std::unique_ptr<StreamState> Acquire() {
    if (free_.empty()) return std::make_unique<StreamState>(this);
    std::unique_ptr<StreamState> s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  void Release(std::unique_ptr<StreamState> s) {
    if (s->file != nullptr) ReleaseFile(std::move(s->file));
    if (s->decoder_ != nullptr) ReleaseDecoder(std::move(s->decoder_));
    if (free_.size() >= keep_) return;  // freed
    s->trailers.reset();
    s->gzip.reset();
    s->produced = s->produce_length = s->pipe_queued = 0;
    s->pipe_head_due = s->pipe_sends_body = false;
    free_.push_back(std::move(s));
  }
  // A file answer's state (idle: FileStream's defaults, or as EndFile left it).
  std::unique_ptr<FileStream> AcquireFile() {
    if (free_files_.empty()) return std::make_unique<FileStream>();
    std::unique_ptr<FileStream> f = std::move(free_files_.back());
    free_files_.pop_back();
    return f;
  }
  void ReleaseFile(std::unique_ptr<FileStream> f) {
    URING_CHECK(f->idle() && !f->inflight);
    if (free_files_.size() < keep_) free_files_.push_back(std::move(f));
  }
  // A body decoder (its state is reset by its Start).
  std::unique_ptr<http::BodyDecoder> AcquireDecoder() {
    if (free_decoders_.empty()) return std::make_unique<http::BodyDecoder>(limits_);
    std::unique_ptr<http::BodyDecoder> d = std::move(free_decoders_.back());
    free_decoders_.pop_back();
    return d;
  }
  void ReleaseDecoder(std::unique_ptr<http::BodyDecoder> d) {
    if (free_decoders_.size() < keep_) free_decoders_.push_back(std::move(d));
  }

 private:
  const http::ChunkedLimits limits_;
  const size_t keep_;
  std::vector<std::unique_ptr<StreamState>> free_;
  std::vector<std::unique_ptr<FileStream>> free_files_;
  std::vector<std::unique_ptr<http::BodyDecoder>> free_decoders_;
};

inline http::BodyDecoder& StreamState::decoder() {
  if (decoder_ == nullptr) decoder_ = pool_->AcquireDecoder();
  return *decoder_;
}

}  // namespace uring_http::http1

#endif  // URING_HTTP_SRC_HTTP1_STREAM_STATE_H_
