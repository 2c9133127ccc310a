// Connection, part four: streamed answers. A FAST handler's producer,
// called on the ring whenever the output has room, and a SLOW handler's
// pipe, whose body bytes the worker writes while the ring frames them
// (the head the worker fixed, chunks, the trailer section) and queues them
// from the pipe's own memory. Either ends the exchange once its last byte
// is queued (Answered, in answers.cc).
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "src/base/check.h"
#include "src/http/compress.h"
#include "src/http1/connection.h"
#include "src/router/failure_log.h"

namespace uring_http::http1 {

// What a FAST producer writes into: framed bytes gathered per call and
// queued as one segment when the call returns.
class ProducerOutput final : public http::BodyOutput {
 public:
  explicit ProducerOutput(Connection* c) : c_(c) {}
  bool Write(std::string_view data) override {
    if (failed_) return false;
    if (data.empty()) return true;
    if (c_->S().gzip) {
      gzipped_.clear();
      if (!c_->S().gzip->Write(data, &gzipped_)) {
        failed_ = true;
        return false;
      }
      c_->S().produced += data.size();
      Frame(gzipped_);
      return true;
    }
    if (c_->S().produce_framing == StreamFraming::kContentLength &&
        data.size() > c_->S().produce_length - c_->S().produced) {
      failed_ = true;  // more than promised would corrupt the next response
      return false;
    }
    Frame(data);
    c_->S().produced += data.size();
    return true;
  }
  // `data` with the stream's framing, after what this call wrote so far.
  void Frame(std::string_view data) {
    if (data.empty()) return;  // an empty chunk would end the body
    switch (c_->S().produce_framing) {
      case StreamFraming::kContentLength:
        bytes_.append(data);
        break;
      case StreamFraming::kChunked: {
        char header[18];
        bytes_.append(header, ChunkHeader(data.size(), header));
        bytes_.append(data);
        bytes_.append("\r\n");
        break;
      }
      case StreamFraming::kClose:
        bytes_.append(data);
        break;
    }
  }
  size_t room() const override {
    const size_t pending = c_->out_.pending() + bytes_.size();
    return pending < kOutputHighWater ? kOutputHighWater - pending : 0;
  }
  bool failed() const { return failed_; }
  std::string& bytes() { return bytes_; }

 private:
  Connection* c_;
  std::string bytes_;
  std::string gzipped_;
  bool failed_ = false;
};

void Connection::OnStreamNotify(uint32_t) {
  if (phase_ >= Phase::kLingering) return;
  Sync();  // feeds staged body bytes into the pipe, sends what the worker wrote
}

void Connection::PumpPipe() {
  if (resp_pipe() == nullptr) {
    if (task_ == nullptr) return;
    worker::BodyPipe* pipe = task_->response_body.load(std::memory_order_acquire);
    if (pipe == nullptr) return;
    S().resp_pipe.reset(pipe);
    ex_.answer = Answer::kPipe;
    env_->stats->streamed_responses.Add();
    S().pipe_head_due = true;
  }
  if (ex_.answer != Answer::kPipe) return;
  if (ex_.body_status != 0 && ex_.response_bytes == 0) {
    // The request body failed before any of this answer was queued: it
    // will not be (the worker's writes fail), the error goes instead.
    resp_pipe()->Abort();
    return;
  }
  if (S().pipe_head_due) {
    // Earlier answers may fill the queue still: its sends bring us back.
    if (out_.room() < 2) return;
    S().pipe_head_due = false;
    // The head the worker fixed before it published the pipe (the acquire
    // load above), framed here: the pipe carries body bytes only.
    const worker::StreamHead& head = *task_->stream_head;
    S().pipe_framing = head.length_known ? StreamFraming::kContentLength
                       : ex_.http10      ? StreamFraming::kClose
                                         : StreamFraming::kChunked;
    S().pipe_sends_body = !ex_.head && http::StatusHasBody(head.status);
    // Counted with the answer's bytes as the body's are: a request body
    // that fails from now on can no longer be answered with an error.
    ex_.response_bytes += QueueStreamHead(head.status, head.fields, S().pipe_framing, head.length);
    if (env_->access_log) {
      if (const std::optional<std::string_view> id = head.fields.Find("x-request-id")) {
        SetRequestId(*id);
      }
    }
    task_->stream_head.reset();  // serialized: not held while the body streams
  }
  // A chunk's size line, its bytes (from the pipe's memory) and its CRLF.
  const bool chunked = S().pipe_framing == StreamFraming::kChunked;
  const unsigned segments = chunked ? 4 : 2;
  for (;;) {
    while (out_.room() >= segments) {
      const std::string_view piece = resp_pipe()->PeekAt(S().pipe_queued);
      if (piece.empty()) break;
      if (chunked) {
        char size_line[18];
        const size_t n = ChunkHeader(piece.size(), size_line);
        URING_CHECK(out_.Append({size_line, n}));
        ex_.response_bytes += n + 2;
      }
      out_.AppendExternal(piece.data(), piece.size(), this);
      if (chunked) URING_CHECK(out_.Append("\r\n"));
      S().pipe_queued += piece.size();
      ex_.response_bytes += piece.size();
    }
    if (resp_pipe()->aborted()) return;
    if (!task_inflight_ && resp_pipe()->finished() && resp_pipe()->readable() == S().pipe_queued) {
      // The worker is done and all of it is queued: the answer is complete.
      // A broken stream ends without its last chunk, so that the client
      // cannot take the cut-short body for a whole one.
      if (chunked && S().pipe_sends_body && !task_->stream_broken) {
        if (out_.room() < 1) return;  // its sends bring us back
        if (const http::HeaderTable* trailers = task_->stream_trailers.get()) {
          URING_CHECK(out_.Append(LastChunk(*trailers)));
        } else {
          URING_CHECK(out_.Append("0\r\n\r\n"));
        }
      }
      if (task_->stream_broken || S().pipe_framing == StreamFraming::kClose ||
          !task_->keep_alive || !KeepAliveNow()) {
        ex_.close_after = true;
      }
      Answered();
      return;
    }
    if (out_.room() < segments) return;  // sends free segments, then Sync() comes back
    // The stream is written whole; its task's completion ends it.
    if (resp_pipe()->finished() && resp_pipe()->readable() == S().pipe_queued) return;
    // Caught up with the worker: ask for a message when it writes more, or
    // go round again if it wrote meanwhile.
    if (resp_pipe()->ArmReadNotify(S().pipe_queued)) return;
  }
}

size_t Connection::QueueStreamHead(int status, const http::HeaderTable& fields,
                                   StreamFraming framing, uint64_t length) {
  const SerializeOptions options =
      HeadOptions(/*can_keep=*/framing != StreamFraming::kClose);
  // Serialized straight into the output's tail (measured first only if it
  // does not fit there).
  size_t room = 0;
  char* dst = out_.ReserveRoom(512, &room);
  URING_CHECK(dst != nullptr);
  size_t size = SerializeStreamHead(status, fields, options, framing, length, dst, room);
  if (size > room) {
    dst = out_.Reserve(size);
    URING_CHECK(dst != nullptr);
    SerializeStreamHead(status, fields, options, framing, length, dst, size);
  }
  out_.Commit(size);
  ex_.status = status;
  return size;
}

void Connection::ReleaseOutput(size_t bytes) {
  // The kernel is done with the first `bytes` queued of the worker's pipe.
  resp_pipe()->Consume(bytes);
  S().pipe_queued -= bytes;
  FreePipes();
}

void Connection::StartProducer(http::Response& response, bool gzip_accepted) {
  if (response.header_refused()) {
    response.Stream(nullptr);
    return RespondRefused(response, /*close=*/false);
  }
  env_->stats->streamed_responses.Add();
  if (env_->access_log) NoteRequestId(response);
  const bool sends_body = !ex_.head && http::StatusHasBody(response.status());
  http::GzipDecision gzip =
      http::DecideStreamedGzip(env_->config->compression, gzip_accepted, response);
  if (gzip == http::GzipDecision::kGzip && sends_body) {
    // Compressed on the ring thread as it is produced: FAST producers are
    // the ring's by design (a worker would only add a hop).
    S().gzip = std::make_unique<http::GzipStream>(env_->config->compression.level);
    if (!S().gzip->ok()) {
      S().gzip.reset();
      gzip = http::GzipDecision::kIdentity;
    }
  }
  http::AddGzipHeaders(gzip, response);
  // A promised length is the identity body's: gzipped, chunked instead.
  if (response.has_content_length() && gzip != http::GzipDecision::kGzip) {
    S().produce_framing = StreamFraming::kContentLength;
    S().produce_length = response.content_length();
  } else {
    S().produce_framing = ex_.http10 ? StreamFraming::kClose : StreamFraming::kChunked;
  }
  QueueStreamHead(response.status(), response.headers(), S().produce_framing,
                  S().produce_length);
  S().produced = 0;
  if (!sends_body) {
    Answered();  // the head is all there is
    return;
  }
  S().producer = std::move(response.producer());
  S().trailers.reset();
  if (!response.trailers().empty()) {
    S().trailers = std::make_unique<std::string>();
    AppendFieldLines(response.trailers(), S().trailers.get());
  }
  ex_.answer = Answer::kProducer;
  PumpProducer();
}

void Connection::PumpProducer() {
  producer_retry_ = 0;
  while (ex_.answer == Answer::kProducer && phase_ <= Phase::kFinishing &&
         out_.pending() < kOutputHighWater && out_.room() >= 3) {
    ProducerOutput output(this);
    bool done;
    try {
      done = S().producer(output);
    } catch (...) {
      router::LogException(FailureWhere(nullptr, /*head_at_hand=*/false),
                           router::FailureStage::kProducer, std::current_exception());
      done = true;
      ex_.close_after = true;  // the body is cut short: only a close says so
    }
    if (done && S().gzip && !output.failed() && !ex_.close_after) {
      // The gzip trailer (CRC and length) ends the compressed body.
      std::string tail;
      if (S().gzip->Finish(&tail)) {
        output.Frame(tail);
      } else {
        ex_.close_after = true;
      }
    }
    const bool wrote = !output.bytes().empty();
    if (wrote) URING_CHECK(out_.AppendOwned(std::move(output.bytes())));
    if (output.failed()) {
      done = true;
      ex_.close_after = true;
    }
    if (done) {
      S().producer = nullptr;
      S().gzip.reset();
      switch (S().produce_framing) {
        case StreamFraming::kContentLength:
          if (S().produced != S().produce_length) ex_.close_after = true;
          break;
        case StreamFraming::kChunked:
          if (!ex_.close_after) URING_CHECK(out_.Append(LastChunk(S().trailers != nullptr ? std::string_view(*S().trailers)
                                                                    : std::string_view())));
          break;
        case StreamFraming::kClose:
          break;
      }
      ex_.response_bytes = S().produced;
      Answered();
      return;
    }
    if (!wrote) {
      // Nothing to give yet: ask again on the next tick rather than spin.
      producer_retry_ = env_->now_tick + 1;
      return;
    }
  }
}

}  // namespace uring_http::http1
