// Connection, part two: reading requests (heads, then bodies in whichever
// mode their route takes them) and putting their answers into the output
// queue in order (a FAST handler's, a worker's structured result, a worker's
// pipe, a producer's stream, or an error). Part one, connection.cc, is the
// connection's life and I/O.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "src/base/check.h"
#include "src/http1/connection.h"

namespace uring_http::http1 {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// A buffered response body at least this large leaves from its own memory
// (moved into the output queue) instead of being copied into chunks.
constexpr size_t kOwnedBodyBytes = 16 * 1024;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// What a FAST producer writes into: framed bytes gathered per call and
// queued as one segment when the call returns.
class ProducerOutput final : public http::BodyOutput {
 public:
  explicit ProducerOutput(Connection* c) : c_(c) {}
  bool Write(std::string_view data) override {
    if (failed_) return false;
    if (data.empty()) return true;
    switch (c_->produce_framing_) {
      case http::StreamFraming::kContentLength:
        if (data.size() > c_->produce_length_ - c_->produced_) {
          failed_ = true;  // more than promised would corrupt the next response
          return false;
        }
        bytes_.append(data);
        break;
      case http::StreamFraming::kChunked: {
        char header[18];
        bytes_.append(header, http::ChunkHeader(data.size(), header));
        bytes_.append(data);
        bytes_.append("\r\n");
        break;
      }
      case http::StreamFraming::kClose:
        bytes_.append(data);
        break;
    }
    c_->produced_ += data.size();
    return true;
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
  bool failed_ = false;
};

// ---------------------------------------------------------------- input

bool Connection::CanStartRequest() const {
  return phase_ == Phase::kOpen && ex_.answer == Answer::kNone && !task_inflight_ &&
         resp_pipe_ == nullptr && out_.pending() < kOutputHighWater && out_.room() >= 4;
}

size_t Connection::Process(const char* data, size_t len, bool staged) {
  size_t pos = 0;
  while (pos < len) {
    if (phase_ >= Phase::kLingering) return len;
    unparsed_ = std::string_view(data + pos, len - pos);
    if (input_ == Input::kDone) {
      // Past the last request we answer: dropped (and the close lingers).
      linger_ = true;
      pos = len;
      break;
    }
    if (input_ == Input::kWait) break;
    if (input_ == Input::kBody) {
      const size_t n = FeedBody(data + pos, len - pos);
      pos += n;
      if (input_ == Input::kBody) break;  // needs more bytes, or the worker's pipe is full
      continue;
    }
    if (!CanStartRequest()) {
      // Held back by our own output: the head's clock runs all the same
      // (a whole one is not held to it, see OnDeadline).
      if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
      break;
    }
    size_t used = 0;
    if (!ReadHead(data + pos, len - pos, staged, &used)) break;
    pos += used;
  }
  unparsed_ = {};
  return pos;
}

void Connection::ProcessStaged() {
  if (in_.len == 0 || in_staged_source_) return;
  in_staged_source_ = true;
  const size_t used = Process(in_.data, in_.len, /*staged=*/true);
  in_staged_source_ = false;
  if (in_.data == nullptr) return;  // the connection closed meanwhile
  if (used >= in_.len) {
    ReleaseBuffer(in_);
    head_scanned_ = 0;
    head_line_checked_ = false;
  } else if (used > 0) {
    // Whole requests went; what is left starts a head (head_scanned_ was
    // reset when the last one ended, and counts from here).
    std::memmove(in_.data, in_.data + used, in_.len - used);
    in_.len -= static_cast<uint32_t>(used);
  }
}

bool Connection::ReadHead(const char* data, size_t len, bool staged, size_t* used) {
  const http::ParseLimits& limits = env_->config->limits;
  const std::string_view bytes(data, len);
  if (staged && http::FindHeadEnd(bytes, &head_scanned_) == 0) {
    // No end of head yet: parse only where an early answer exists (a
    // request line just completed, which may be malformed; a line or head
    // past its limit). Otherwise each receive costs O(new bytes).
    bool parse = false;
    if (!head_line_checked_ && std::memchr(data, '\n', len) != nullptr) {
      head_line_checked_ = true;
      parse = true;
    } else if (!head_line_checked_ && len > limits.max_request_line + 1) {
      parse = true;
    } else if (len > limits.max_request_line + limits.max_header_bytes + 4) {
      parse = true;
    }
    if (!parse) {
      if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
      return false;
    }
  }
  http::Request request;
  const http::ParseResult r = http::ParseRequestHead(bytes, limits, &request, env_->headers,
                                                     env_->headers_capacity);
  if (r.status == http::ParseStatus::kIncomplete) {
    if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
    return false;
  }
  head_deadline_ = 0;
  head_scanned_ = 0;
  head_line_checked_ = false;
  if (r.status == http::ParseStatus::kError) {
    // The stream cannot be trusted past a bad request: answer and close.
    *used = len;
    BadRequest(r.error_status);
    return true;
  }
  *used = r.consumed;
  BeginExchange(request, data, len, used);
  return true;
}

void Connection::BeginExchange(http::Request& request, const char* data, size_t len,
                               size_t* used) {
  ConnectionStats& stats = *env_->stats;
  const ConnectionConfig& config = *env_->config;
  stats.requests.Add();
  ex_ = Exchange();
  ex_.started_ns = NowNs();
  ex_.keep_alive = request.keep_alive;
  ex_.http10 = request.version != http::Version::kHttp11;
  ex_.head = request.method_id == http::Method::kHead;
  ex_.head_len = static_cast<uint32_t>(*used);
  ex_.head_ptr = data;
  ex_.route_id = env_->unmatched_route;
  ex_.answer = Answer::kPending;
  const bool has_body = request.framing != http::BodyFraming::kNone;
  if (request.framing == http::BodyFraming::kChunked) stats.chunked_bodies.Add();
  const std::string_view head(data, *used);
  unparsed_ = std::string_view(data + *used, len - *used);

  const router::Match match = env_->router->Find(request.method, request.path);
  const router::Route* route = match.route;
  uint64_t limit = config.limits.max_body_bytes;
  if (route == nullptr) {
    const int status = match.path_known ? 405 : 404;
    if (has_body && !request.expect_continue) {
      // Read the body and drop it, so that the connection goes on.
      ex_.body = BodyMode::kDiscard;
      ex_.body_done = false;
      decoder_.Start(request.framing, request.content_length, limit);
      if (request.framing == http::BodyFraming::kContentLength && request.content_length > limit) {
        ex_.body_done = true;  // too much to read through: answered and closed
        linger_ = true;
        RespondError(413, /*close=*/true);
        return;
      }
      input_ = Input::kBody;
      body_deadline_ = After(config.body_timeout_ms);
    }
    // With Expect: 100-continue the client holds its body back for our
    // word, and it will not get a 100: the answer closes the connection
    // (lingering: it may send the body anyway).
    if (has_body && request.expect_continue) linger_ = true;
    RespondError(status, /*close=*/has_body && request.expect_continue, match.allow);
    return;
  }
  ex_.route = route;
  ex_.route_id = route->id;
  if (route->options.max_body_bytes != 0) limit = route->options.max_body_bytes;
  ex_.slow = route->kind == router::HandlerKind::kSlow && env_->has_workers;
  const bool streamed = route->options.body == router::BodyMode::kStreamed &&
                        (route->sink != nullptr || ex_.slow);
  if (route->options.body == router::BodyMode::kStreamed && !streamed) {
    // A SLOW route run inline (--workers=0) cannot block the ring on a
    // streamed body: it gets it buffered, within the server's limit.
    limit = std::min(limit, config.limits.max_body_bytes);
  }
  if (request.framing == http::BodyFraming::kContentLength && request.content_length > limit) {
    // Refused without reading the body (and without a 100 Continue).
    stats.bad_requests.Add();
    linger_ = true;
    RespondError(413, /*close=*/true);
    return;
  }
  if (!has_body) {
    if (route->sink != nullptr) {
      // A streamed-body FAST route with no body: its sink sees the end at once.
      if (!KeepHead(data, *used)) return Abort();
      ex_.body = BodyMode::kSink;
      sink_ = route->sink(request);
      BodyEnded();
    } else if (ex_.slow) {
      Dispatch(request, head, {});
    } else {
      RunHandler(request);
    }
    return;
  }
  const size_t available = len - *used;
  if (!streamed && request.framing == http::BodyFraming::kContentLength &&
      request.content_length <= available) {
    // The whole body is here already: no copy.
    request.body = std::string_view(data + *used, request.content_length);
    *used += request.content_length;
    unparsed_ = std::string_view(data + *used, len - *used);
    if (ex_.slow) {
      Dispatch(request, head, request.body);
    } else {
      RunHandler(request);
    }
    return;
  }
  // The body comes later, or needs decoding: the head is kept.
  if (!KeepHead(data, *used)) return Abort();
  decoder_.Start(request.framing, request.content_length, limit);
  ex_.body_done = false;
  input_ = Input::kBody;
  body_deadline_ = After(config.body_timeout_ms);
  const bool none_here = request.framing == http::BodyFraming::kChunked
                             ? available == 0
                             : available < request.content_length;
  if (request.expect_continue && none_here) {
    // The handler will read the body: ask the client for it.
    out_.Append(kContinue);
  }
  if (streamed) {
    stats.streamed_requests.Add();
    if (route->sink != nullptr) {
      ex_.body = BodyMode::kSink;
      try {
        sink_ = route->sink(request);
      } catch (...) {
        sink_.reset();
      }
      if (sink_ == nullptr) {
        ex_.body_done = true;
        input_ = Input::kDone;
        RespondError(500, /*close=*/true);
      }
    } else {
      ex_.body = BodyMode::kPipe;
      req_pipe_ = std::make_unique<worker::BodyPipe>(config.request_pipe_bytes);
      Dispatch(request, head, {});
    }
    return;
  }
  ex_.body = BodyMode::kBuffer;
  if (request.framing == http::BodyFraming::kContentLength &&
      !Reserve(req_, size_t{ex_.head_len} + request.content_length)) {
    return Abort();
  }
}

bool Connection::KeepHead(const char* head, size_t len) {
  if (ex_.head_kept) return true;
  ReleaseBuffer(req_);
  if (!Reserve(req_, len)) return false;
  std::memcpy(req_.data, head, len);
  req_.len = static_cast<uint32_t>(len);
  ex_.head_kept = true;
  ex_.head_ptr = req_.data;
  return true;
}

bool Connection::ReparseHead(http::Request* request) {
  const http::ParseResult r = http::ParseRequestHead(
      std::string_view(req_.data, ex_.head_len), env_->config->limits, request, env_->headers,
      env_->headers_capacity);
  // The same bytes parsed complete once already.
  URING_CHECK(r.status == http::ParseStatus::kComplete && r.consumed == ex_.head_len);
  ex_.head_ptr = req_.data;
  return true;
}

size_t Connection::FeedBody(const char* data, size_t len) {
  size_t pos = 0;
  while (pos < len && input_ == Input::kBody) {
    std::string_view in(data + pos, len - pos);
    if (ex_.body == BodyMode::kPipe) {
      const size_t room = req_pipe_->writable();
      if (req_pipe_->aborted()) return len;  // nobody reads it any more: dropped
      if (room == 0) {
        // The handler has not caught up: wait for it to read half the pipe
        // (its message wakes us). Not the peer's fault: no body deadline.
        if (req_pipe_->ArmWriteNotify(req_pipe_->capacity() / 2)) {
          body_deadline_ = 0;
          return pos;
        }
        continue;
      }
      // Decoding never makes data longer than its input, so every piece of
      // it fits what is left in the pipe.
      if (in.size() > room) in = in.substr(0, room);
    }
    const http::BodyDecoder::Result r = decoder_.Decode(in);
    pos += r.consumed;
    switch (r.status) {
      case http::BodyDecoder::Status::kData:
        if (!DeliverBody(r.data)) return len;
        if (decoder_.done()) BodyEnded();
        break;
      case http::BodyDecoder::Status::kNeedMore:
        break;
      case http::BodyDecoder::Status::kDone:
        BodyEnded();
        break;
      case http::BodyDecoder::Status::kError:
        BodyFailed(r.error_status);
        return len;
    }
  }
  if (pos > 0 && input_ == Input::kBody) body_deadline_ = After(env_->config->body_timeout_ms);
  return pos;
}

bool Connection::DeliverBody(std::string_view piece) {
  switch (ex_.body) {
    case BodyMode::kBuffer:
      if (!Reserve(req_, size_t{req_.len} + piece.size())) {
        Abort();
        return false;
      }
      std::memcpy(req_.data + req_.len, piece.data(), piece.size());
      req_.len += static_cast<uint32_t>(piece.size());
      return true;
    case BodyMode::kPipe:
      // It fits (see FeedBody); the write wakes the worker if it waits.
      URING_CHECK(req_pipe_->Write(piece.data(), piece.size()) == piece.size());
      return true;
    case BodyMode::kSink:
      try {
        sink_->OnData(piece);
      } catch (...) {
        BodyFailed(500);
        return false;
      }
      return true;
    case BodyMode::kDiscard:
      return true;
  }
  return true;
}

void Connection::BodyEnded() {
  ex_.body_done = true;
  body_deadline_ = 0;
  if (input_ == Input::kBody) input_ = Input::kWait;
  switch (ex_.body) {
    case BodyMode::kBuffer: {
      http::Request request;
      ReparseHead(&request);
      request.body = std::string_view(req_.data + ex_.head_len, req_.len - ex_.head_len);
      if (ex_.slow) {
        Dispatch(request, std::string_view(req_.data, ex_.head_len), request.body);
      } else {
        RunHandler(request);
      }
      break;
    }
    case BodyMode::kPipe:
      if (req_pipe_ != nullptr) req_pipe_->Finish();
      break;
    case BodyMode::kSink: {
      http::Request request;
      ReparseHead(&request);
      http::Response response;
      try {
        if (sink_ != nullptr) sink_->OnEnd(request, response);
      } catch (...) {
        response = http::Response();
        response.set_status(500);
      }
      sink_.reset();
      if (response.has_producer()) {
        StartProducer(response);
      } else {
        Respond(response);
      }
      break;
    }
    case BodyMode::kDiscard:
      break;
  }
  MaybeFinishExchange();
}

void Connection::BodyFailed(int status) {
  env_->stats->bad_requests.Add();
  ex_.body_failed = true;
  ex_.close_after = true;
  body_deadline_ = 0;
  linger_ = true;
  input_ = Input::kDone;
  switch (ex_.body) {
    case BodyMode::kBuffer:
      RespondError(status, /*close=*/true);
      break;
    case BodyMode::kSink:
      if (sink_ != nullptr) sink_->OnAbort();
      sink_.reset();
      RespondError(status, /*close=*/true);
      break;
    case BodyMode::kPipe:
      // The handler's next read fails; its answer then ends the connection.
      env_->stats->aborted_streams.Add();
      if (req_pipe_ != nullptr) req_pipe_->Abort();
      break;
    case BodyMode::kDiscard:
      break;  // answered already
  }
  MaybeFinishExchange();
}

void Connection::PeerEndedBody() {
  // The peer's FIN: a request still arriving never will.
  if (input_ == Input::kBody && !ex_.body_done) {
    ex_.body_failed = true;
    ex_.close_after = true;
    body_deadline_ = 0;
    input_ = Input::kDone;
    switch (ex_.body) {
      case BodyMode::kPipe:
        env_->stats->aborted_streams.Add();
        if (req_pipe_ != nullptr) req_pipe_->Abort();
        break;
      case BodyMode::kSink:
        env_->stats->aborted_streams.Add();
        if (sink_ != nullptr) sink_->OnAbort();
        sink_.reset();
        [[fallthrough]];
      case BodyMode::kBuffer:
        // Nothing to answer: the request never completed.
        ex_ = Exchange();
        ReleaseBuffer(req_);
        phase_ = Phase::kFinishing;
        break;
      case BodyMode::kDiscard:
        break;
    }
    MaybeFinishExchange();
  }
}

// ---------------------------------------------------------------- answers

void Connection::RunHandler(const http::Request& request) {
  http::Response response;
  try {
    ex_.route->handler(request, response);
  } catch (...) {
    response = http::Response();
    response.set_status(500);
  }
  if (response.has_producer()) {
    if (!ex_.head_kept && env_->access_log) KeepHead(ex_.head_ptr, ex_.head_len);
    StartProducer(response);
  } else {
    Respond(response);
  }
}

void Connection::Dispatch(const http::Request& request, std::string_view head,
                          std::string_view body) {
  (void)request;
  io::ChunkPool* chunks = env_->chunks;
  const size_t need = sizeof(worker::TaskBuffer) + head.size() + body.size();
  char* memory = need <= chunks->chunk_size() ? chunks->Acquire()
                                              : static_cast<char*>(std::malloc(need));
  if (memory == nullptr) return Abort();
  auto* task = new (memory) worker::TaskBuffer();
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = body.size();
  task->capacity = static_cast<uint32_t>(head.size() + body.size());
  task->head_only = ex_.head;
  task->keep_alive = ex_.keep_alive;
  task->keep_alive_header = ex_.keep_alive && ex_.http10;
  task->http10 = ex_.http10;
  task->request_body = req_pipe_.get();
  std::memcpy(task->data(), head.data(), head.size());
  if (!body.empty()) std::memcpy(task->data() + head.size(), body.data(), body.size());
  if (!env_->host->Dispatch(slot_, task, *ex_.route, ex_.started_ns)) {
    task->~TaskBuffer();
    chunks->Release(memory);
    env_->stats->slow_rejected.Add();
    req_pipe_.reset();
    // Queue full: a clean 503. A body not read yet will not be: close.
    const bool unread = !ex_.body_done;
    if (unread) {
      ex_.body_done = true;
      input_ = Input::kDone;
      linger_ = true;
    }
    RespondError(503, /*close=*/unread);
    return;
  }
  env_->stats->slow_dispatched.Add();
  task_ = task;
  task_inflight_ = true;
  ex_.answer = Answer::kTask;
  ex_.head_ptr = task->data();
  if (input_ == Input::kHead) input_ = Input::kWait;
}

void Connection::OnTaskDone() {
  URING_CHECK(task_inflight_ && task_ != nullptr);
  // The worker's release store precedes its message (see slow_task.h).
  while (task_->state.load(std::memory_order_acquire) != worker::TaskBuffer::kDone) {
  }
  task_inflight_ = false;
  env_->stats->slow_completed.Add();
  if (req_pipe_ != nullptr) {
    // The handler is done with its body. If it stopped before the end, the
    // rest is not read: the connection ends after this answer.
    if (!ex_.body_done) {
      ex_.close_after = true;
      ex_.body_failed = true;
      input_ = Input::kDone;
      linger_ = true;
    }
    req_pipe_.reset();
  }
  if (phase_ >= Phase::kLingering) {
    if (resp_pipe_ == nullptr && task_->response_body.load(std::memory_order_acquire) != nullptr) {
      resp_pipe_.reset(task_->response_body.load(std::memory_order_acquire));
    }
    FreeTask();
    FreePipes();
    return;
  }
  if (resp_pipe_ != nullptr || task_->response_body.load(std::memory_order_acquire) != nullptr) {
    PumpPipe();  // the stream ends once the pipe is drained
  } else {
    // Serialized here, from the worker's structured result: the ring alone
    // decides the framing and whether the connection stays open.
    Respond(task_->response);
    FreeTask();
  }
  Sync();
}

void Connection::OnStreamNotify() {
  if (phase_ >= Phase::kLingering) return;
  Sync();  // feeds staged body bytes into the pipe, sends what the worker wrote
}

void Connection::PumpPipe() {
  if (resp_pipe_ == nullptr) {
    if (task_ == nullptr) return;
    worker::BodyPipe* pipe = task_->response_body.load(std::memory_order_acquire);
    if (pipe == nullptr) return;
    resp_pipe_.reset(pipe);
    ex_.answer = Answer::kPipe;
    env_->stats->streamed_responses.Add();
  }
  if (ex_.answer != Answer::kPipe) return;
  for (;;) {
    while (out_.room() >= 2) {
      const std::string_view piece = resp_pipe_->PeekAt(pipe_queued_);
      if (piece.empty()) break;
      if (pipe_queued_ == 0 && ex_.status == 0 && piece.size() >= 12) {
        // "HTTP/1.1 NNN": the status, for the metrics and the log.
        ex_.status = (piece[9] - '0') * 100 + (piece[10] - '0') * 10 + (piece[11] - '0');
      }
      out_.AppendExternal(piece.data(), piece.size(), this);
      pipe_queued_ += piece.size();
      ex_.response_bytes += piece.size();
    }
    if (resp_pipe_->aborted()) return;
    if (!task_inflight_ && resp_pipe_->finished() && resp_pipe_->readable() == pipe_queued_) {
      // The worker is done and all of it is queued: the answer is complete.
      if (task_->stream_broken || task_->stream_closes || !task_->keep_alive ||
          !KeepAliveNow()) {
        ex_.close_after = true;
      }
      Answered();
      return;
    }
    if (out_.room() < 2) return;  // sends free segments, then Sync() comes back
    // The stream is written whole; its task's completion ends it.
    if (resp_pipe_->finished() && resp_pipe_->readable() == pipe_queued_) return;
    // Caught up with the worker: ask for a message when it writes more, or
    // go round again if it wrote meanwhile.
    if (resp_pipe_->ArmReadNotify(pipe_queued_)) return;
  }
}

void Connection::ReleaseOutput(size_t bytes) {
  // The kernel is done with the first `bytes` queued of the worker's pipe.
  resp_pipe_->Consume(bytes);
  pipe_queued_ -= bytes;
  FreePipes();
}

void Connection::Respond(http::Response& response) {
  const bool keep = KeepAliveNow();
  if (!keep) ex_.close_after = true;
  http::SerializeOptions options;
  options.keep_alive = keep;
  options.keep_alive_header = keep && ex_.http10;
  options.head_only = ex_.head;
  const int status = response.status();
  const bool send_body = !ex_.head && http::StatusHasBody(status);
  const size_t body_size = response.body_view().size();
  const bool own_body = send_body && body_size >= kOwnedBodyBytes;
  if (own_body) options.head_only = true;  // the head alone; the body follows from its memory
  size_t room = 0;
  char* dst = out_.TailSpace(&room);
  if (room < 512) dst = out_.Reserve(512), out_.TailSpace(&room);
  URING_CHECK(dst != nullptr);
  size_t size = http::SerializeResponse(response, options, dst, room);
  if (size > room) {
    dst = out_.Reserve(size);
    URING_CHECK(dst != nullptr);
    http::SerializeResponse(response, options, dst, size);
  }
  out_.Commit(size);
  if (own_body) URING_CHECK(out_.AppendOwned(std::move(response).take_body()));
  ex_.status = status;
  ex_.response_bytes = send_body ? body_size : 0;
  Answered();
}

void Connection::RespondError(int status, bool close, std::string_view allow) {
  if (ex_.answer == Answer::kNone) {
    // No request to answer for (a bad head, a timeout): the error itself.
    ex_ = Exchange();
    ex_.route_id = env_->unmatched_route;
    ex_.started_ns = NowNs();
  }
  const bool keep = !close && KeepAliveNow();
  if (!keep) ex_.close_after = true;
  http::SerializeOptions options;
  options.keep_alive = keep;
  options.keep_alive_header = keep && ex_.http10;
  options.head_only = ex_.head;
  char buffer[512];
  const size_t size = http::SerializeError(status, options, allow, buffer, sizeof(buffer));
  URING_CHECK(out_.Append(std::string_view(buffer, std::min(size, sizeof(buffer)))));
  ex_.status = status;
  ex_.response_bytes = http::ErrorBodySize(status);
  ex_.answer = Answer::kPending;
  Answered();
}

void Connection::BadRequest(int status) {
  env_->stats->bad_requests.Add();
  linger_ = true;  // the peer may still be sending the bad request's body
  RespondError(status, /*close=*/true);
}

void Connection::StartProducer(http::Response& response) {
  env_->stats->streamed_responses.Add();
  if (response.has_content_length()) {
    produce_framing_ = http::StreamFraming::kContentLength;
    produce_length_ = response.content_length();
  } else {
    produce_framing_ = ex_.http10 ? http::StreamFraming::kClose : http::StreamFraming::kChunked;
  }
  const bool keep = KeepAliveNow() && produce_framing_ != http::StreamFraming::kClose;
  if (!keep) ex_.close_after = true;
  http::SerializeOptions options;
  options.keep_alive = keep;
  options.keep_alive_header = keep && ex_.http10;
  options.head_only = ex_.head;
  char buffer[2048];
  size_t size = http::SerializeStreamHead(response, options, produce_framing_, produce_length_,
                                          buffer, sizeof(buffer));
  if (size <= sizeof(buffer)) {
    URING_CHECK(out_.Append(std::string_view(buffer, size)));
  } else {
    char* dst = out_.Reserve(size);
    URING_CHECK(dst != nullptr);
    http::SerializeStreamHead(response, options, produce_framing_, produce_length_, dst, size);
    out_.Commit(size);
  }
  ex_.status = response.status();
  produced_ = 0;
  if (ex_.head || !http::StatusHasBody(ex_.status)) {
    Answered();  // the head is all there is
    return;
  }
  producer_ = std::move(response.producer());
  trailers_.assign(response.trailer_lines());
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
      done = producer_(output);
    } catch (...) {
      done = true;
      ex_.close_after = true;  // the body is cut short: only a close says so
    }
    const bool wrote = !output.bytes().empty();
    if (wrote) URING_CHECK(out_.AppendOwned(std::move(output.bytes())));
    if (output.failed()) {
      done = true;
      ex_.close_after = true;
    }
    if (done) {
      producer_ = nullptr;
      switch (produce_framing_) {
        case http::StreamFraming::kContentLength:
          if (produced_ != produce_length_) ex_.close_after = true;
          break;
        case http::StreamFraming::kChunked:
          if (!ex_.close_after) URING_CHECK(out_.Append(http::LastChunk(trailers_)));
          break;
        case http::StreamFraming::kClose:
          break;
      }
      trailers_.clear();
      ex_.response_bytes = produced_;
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

void Connection::Answered() {
  ex_.answer = Answer::kSent;
  env_->host->ExchangeDone(
      slot_, ConnectionHost::Exchange{ex_.route_id, ex_.status, ex_.started_ns, RequestLine(),
                                      ex_.head ? 0 : ex_.response_bytes});
  if (ex_.close_after) {
    // Nothing more is read: a body not read through is input left unread.
    if (!ex_.body_done) {
      ex_.body_failed = true;
      linger_ = true;
    }
    input_ = Input::kDone;
    if (phase_ == Phase::kOpen) phase_ = Phase::kFinishing;
  }
  MaybeFinishExchange();
}

void Connection::MaybeFinishExchange() {
  if (ex_.answer != Answer::kSent || (!ex_.body_done && !ex_.body_failed)) return;
  if (task_inflight_) return;  // a worker still runs the handler
  const bool close = ex_.close_after || ex_.body_failed;
  FreeTask();
  ReleaseBuffer(req_);
  sink_.reset();
  ex_ = Exchange();
  FreePipes();
  if (close) {
    input_ = Input::kDone;
    if (phase_ == Phase::kOpen) phase_ = Phase::kFinishing;
  } else if (input_ != Input::kDone) {
    input_ = Input::kHead;
  }
}

bool Connection::KeepAliveNow() const {
  if (!ex_.keep_alive || ex_.close_after || ex_.body_failed || phase_ != Phase::kOpen) {
    return false;
  }
  // A body we stop reading part-way leaves the stream unusable.
  if (!ex_.body_done && ex_.body != BodyMode::kDiscard) return false;
  // Draining: the last request already received is answered with close.
  return !env_->draining || MoreRequestsWaiting();
}

bool Connection::MoreRequestsWaiting() const {
  std::string_view rest = unparsed_;
  if (rest.empty() && !in_staged_source_) rest = in_.view();
  size_t scanned = 0;
  return !rest.empty() && http::FindHeadEnd(rest, &scanned) != 0;
}

std::string_view Connection::RequestLine() const {
  if (!env_->access_log || ex_.head_ptr == nullptr || ex_.head_len == 0) return "-";
  std::string_view head(ex_.head_ptr, ex_.head_len);
  while (!head.empty() && (head.front() == '\r' || head.front() == '\n')) head.remove_prefix(1);
  size_t end = head.find('\n');
  if (end == std::string_view::npos) end = head.size();
  if (end > 0 && head[end - 1] == '\r') --end;
  return head.substr(0, end);
}

void Connection::FreeTask() {
  if (task_ == nullptr) return;
  URING_CHECK(!task_inflight_);
  if (resp_pipe_ == nullptr) {
    // A pipe the worker made but we never adopted (closed meanwhile).
    if (worker::BodyPipe* p = task_->response_body.load(std::memory_order_acquire)) {
      resp_pipe_.reset(p);
      resp_pipe_->Abort();
    }
  }
  task_->~TaskBuffer();
  env_->chunks->Release(reinterpret_cast<char*>(task_));
  task_ = nullptr;
}

void Connection::FreePipes() {
  if (task_inflight_) return;  // the worker may still use them
  req_pipe_.reset();
  // The response pipe goes once the kernel is done with every byte of it
  // that was queued, and the exchange it streamed is over.
  if (resp_pipe_ != nullptr && pipe_queued_ == 0 && ex_.answer != Answer::kPipe) {
    resp_pipe_.reset();
  }
}

}  // namespace uring_http::http1
