#include "src/worker/task_streams.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "src/worker/ring_post.h"

namespace uring_http::worker {
namespace {

void Notify(TaskBuffer* task) { PostToRing(task->ring, task->notify_user_data, task->stream); }

}  // namespace

void PipeResponseStream::Notify() {
  if (notify_ != nullptr) {
    notify_(task_, notify_arg_);
  } else {
    worker::Notify(task_);
  }
}

long PipeBodyReader::Fail() {
  // The ring gave its reason before it published the abort we saw.
  const uint8_t reason = task_->request_body->abort_reason();
  error_ = reason != 0 ? static_cast<http::BodyError>(reason) : http::BodyError::kClientGone;
  return -1;
}

long PipeBodyReader::Read(char* buf, size_t len) {
  BodyPipe* pipe = task_->request_body;
  if (pipe == nullptr) return -1;
  if (len == 0) return 0;
  for (;;) {
    if (pipe->aborted()) return Fail();
    const size_t n = pipe->Read(buf, len);
    if (n > 0) {
      // The ring may be waiting for room to feed more of the body.
      if (pipe->TakeNotify()) Notify(task_);
      return static_cast<long>(n);
    }
    if (pipe->finished()) {
      // Bytes written just before Finish() are read above on the next turn.
      if (pipe->readable() == 0) return pipe->aborted() ? Fail() : 0;
      continue;
    }
    // Asks for a good share of the pipe, so that a body arriving in small
    // receives wakes this thread once per ring batch, not once per receive.
    pipe->WaitReadable(std::min(len, pipe->capacity() / 2));
  }
}

bool PipeResponseStream::StartGzip(http::Response& response) {
  http::GzipDecision decision = http::DecideStreamedGzip(compression_, gzip_accepted_, response);
  if (decision == http::GzipDecision::kGzip && !discard_body_) {
    gzip_ = std::make_unique<Gzip>(compression_.level);
    if (!gzip_->stream.ok()) {
      gzip_.reset();
      decision = http::GzipDecision::kIdentity;  // no memory for it: sent as is
    }
  }
  http::AddGzipHeaders(decision, response);
  return decision == http::GzipDecision::kGzip;
}

bool PipeResponseStream::Start(http::Response& response) {
  // A refused header fails the response: it is not sent as it is (the
  // ring answers 500 once the handler returns).
  if (response.header_refused()) return false;
  const int status = response.status();
  discard_body_ = task_->head_only || !http::StatusHasBody(status);
  // A promised length is that of the identity body; compressed, the length
  // is known only at the end: chunked (or close-delimited) instead. (HEAD
  // says what the GET would.)
  const bool gzipped = StartGzip(response);
  length_known_ = response.has_content_length() && !gzipped;
  length_ = length_known_ ? response.content_length() : 0;
  auto head = std::make_unique<StreamHead>();
  head->status = status;
  head->fields = response.headers();  // the handler may go on changing its own
  head->length_known = length_known_;
  head->length = length_;
  task_->stream_head = std::move(head);
  // A staging stream's writer is its ring's thread, as is the pipe's
  // reader: its buffer is held only while it has bytes (body_pipe.h).
  auto pipe = std::make_unique<BodyPipe>(
      pipe_bytes_, mode_ == Mode::kStaging ? BodyPipe::Ends::kOneThread : BodyPipe::Ends::kTwoThreads);
  pipe_ = pipe.get();
  // Release: the ring reads the pipe and the head through this pointer.
  task_->response_body.store(pipe.release(), std::memory_order_release);
  // The ring cannot have asked about a pipe it did not know: tell it now.
  Notify();
  return true;
}

bool PipeResponseStream::Flush() {
  if (pipe_ == nullptr || pipe_->aborted()) {
    if (staged_ != nullptr) staged_->clear();
    staged_sent_ = 0;
    return true;
  }
  if (staged() == 0) return true;
  const size_t n = pipe_->Write(staged_->data() + staged_sent_, staged());
  staged_sent_ += n;
  if (n > 0 && pipe_->TakeNotify()) Notify();
  if (staged() > 0) return false;
  // Emptied: its memory is kept for the next write unless it grew large.
  staged_->clear();
  staged_sent_ = 0;
  if (staged_->capacity() > pipe_bytes_) staged_->shrink_to_fit();
  return true;
}

bool PipeResponseStream::Put(std::string_view bytes) {
  if (mode_ == Mode::kStaging) {
    if (pipe_->aborted()) return false;
    if (staged() == 0) {
      // What fits goes straight in; only the rest is copied.
      const size_t n = pipe_->Write(bytes.data(), bytes.size());
      bytes.remove_prefix(n);
      if (n > 0 && pipe_->TakeNotify()) Notify();
    }
    if (!bytes.empty()) {
      if (staged_ == nullptr) staged_ = std::make_unique<std::string>();
      staged_->append(bytes);
    }
    return true;
  }
  while (!bytes.empty()) {
    if (pipe_->aborted()) return false;
    const size_t n = pipe_->Write(bytes.data(), bytes.size());
    bytes.remove_prefix(n);
    if (n > 0 && pipe_->TakeNotify()) Notify();
    // Full: wait until the ring has sent a good part of it (half, so that a
    // steady stream moves in large steps rather than byte by byte).
    if (!bytes.empty()) pipe_->WaitWritable(std::min(bytes.size(), pipe_->capacity() / 2));
  }
  return !pipe_->aborted();
}

bool PipeResponseStream::Write(http::Response& response, std::string_view data) {
  if (broken_) return false;
  if (static_cast<http::StopReason>(task_->stop.load(std::memory_order_acquire)) ==
      http::StopReason::kDeadline) {
    // The route's timeout passed (RouteOptions::timeout): a stream begun
    // is cut there, not fed on to its end; one not begun never begins
    // (the worker answers 503).
    if (started()) Break();
    return false;
  }
  if (!started() && (RequestBodyFailed() || !Start(response))) return false;
  if (pipe_->aborted()) return false;
  if (discard_body_ || data.empty()) return true;
  if (gzip_) {
    if (response.has_content_length() && data.size() > response.content_length() - written_) {
      // More than the handler promised: refused, and the connection ends
      // after this answer, as without gzip.
      Break();
      return false;
    }
    gzip_->out.clear();
    if (!gzip_->stream.Write(data, &gzip_->out)) {
      Break();
      return false;
    }
    written_ += data.size();
    return PutBody(gzip_->out);
  }
  if (length_known_ && data.size() > length_ - written_) {
    // More than promised would corrupt the next response on the
    // connection: refuse it, and end the connection after this one.
    Break();
    return false;
  }
  if (!PutBody(data)) return false;
  written_ += data.size();
  return true;
}

namespace {

class PipeBodyOutput final : public http::BodyOutput {
 public:
  PipeBodyOutput(PipeResponseStream* stream, http::Response* response)
      : stream_(stream), response_(response) {}
  bool Write(std::string_view data) override {
    wrote_ = wrote_ || !data.empty();
    return stream_->Write(*response_, data);
  }
  size_t room() const override { return kResponsePipeBytes / 2; }
  bool TakeWrote() { return std::exchange(wrote_, false); }

 private:
  PipeResponseStream* stream_;
  http::Response* response_;
  bool wrote_ = false;
};

}  // namespace

void PipeResponseStream::RunProducer(http::Response& response) {
  PipeBodyOutput out(this, &response);
  for (;;) {
    if (response.producer()(out)) break;
    if (started() ? pipe_->aborted() : RequestBodyFailed()) break;
    if (!started() && response.header_refused()) return;  // nothing will start it
    // Nothing to write yet: a producer on a worker may simply wait.
    if (!out.TakeWrote()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // An empty streamed body still has a head (unless the server answers).
  if (!started() && !RequestBodyFailed()) Start(response);
}

void PipeResponseStream::FinishBody(http::Response& response) {
  // A request body that failed (the client left, or sent a malformed or
  // oversized body) leaves the answer unfinished: no last chunk, so that
  // the client cannot take a cut-short body for a whole one.
  if (task_->request_body != nullptr && task_->request_body->aborted()) Break();
  // A trailer refused: no last chunk either, rather than one without it.
  if (response.header_refused()) Break();
  if (!broken_ && !pipe_->aborted()) {
    // Whatever the handler left in body() after streaming is the rest.
    const std::string_view rest = response.body_view();
    if (!rest.empty()) Write(response, rest);
  }
  if (gzip_ && !broken_ && !pipe_->aborted() && !discard_body_) {
    if (response.has_content_length() && written_ != response.content_length()) {
      Break();  // short of its promise: no gzip trailer, no last chunk
    } else {
      gzip_->out.clear();
      if (!gzip_->stream.Finish(&gzip_->out) || !PutBody(gzip_->out)) Break();
    }
  }
  // The compressor's memory goes with the response, not with the worker.
  gzip_.reset();
  if (!broken_ && !pipe_->aborted() && !discard_body_) {
    if (length_known_ && written_ != length_) Break();
    // For the ring to send after the body (a chunked HTTP/1 body's trailer
    // section); released with the pipe's Finish().
    if (!response.trailers().empty()) {
      task_->stream_trailers = std::make_unique<http::HeaderTable>(response.trailers());
    }
  }
}

void PipeResponseStream::Close() {
  // No message: the task's completion follows at once and the ring reads
  // the rest of the pipe then.
  pipe_->Finish();
}

void PipeResponseStream::Break() {
  broken_ = true;
  task_->stream_broken = true;
}

}  // namespace uring_http::worker
