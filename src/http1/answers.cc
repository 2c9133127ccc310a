// Connection, part three: answers, in request order, into the output queue:
// a FAST handler's response, a worker's structured result (serialized here:
// the ring alone decides framing and keep-alive), a worker's streamed pipe, a
// FAST producer's stream, or an error. Then the exchange ends and the next
// request may be read.
#include <chrono>
#include <cstdlib>
#include <exception>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "src/base/check.h"
#include "src/http/compress.h"
#include "src/http1/connection.h"
#include "src/router/failure_log.h"

namespace uring_http::http1 {
namespace {

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

void Connection::RunHandler(const http::Request& request) {
  http::Response response;
  const router::Pipeline& pipeline = env_->router->pipeline();
  const router::Route& route = *ex_.route;
  if (route.mount != nullptr) {
    if (pipeline.Active(route.options.middleware)) {
      // Around a static file: the befores before it is looked up, the
      // afters once its answer is known (ServeFile, AnswerError).
      bool answered = false;
      const size_t ran = router::RunBefores(pipeline, route.options.middleware, request,
                                            response, &answered, route.name());
      if (answered) {
        pipeline.MaybeFailPage(request, response);
        router::RunAfters(pipeline, route.options.middleware, ran, request, response,
                          route.name());
        ex_.chain_done = true;
        return SendHandlerResponse(request, response);
      }
      ex_.afters_due = static_cast<uint16_t>(ran);
    }
    return StartFile(request);
  }
  ex_.chain_done = true;
  if (pipeline.Active(route.options.middleware)) {
    router::RunChain(pipeline, route.options.middleware, request, response, route.handler,
                     /*head_sent=*/nullptr, route.name());
  } else {
    try {
      route.handler(request, response);
      pipeline.MaybeFailPage(request, response);
    } catch (...) {
      router::LogException(router::ContextOf(route.name(), request, &response),
                           router::FailureStage::kHandler, std::current_exception());
      pipeline.Fail(request, response);
    }
  }
  SendHandlerResponse(request, response);
}

void Connection::SendHandlerResponse(const http::Request& request, http::Response& response) {
  const http::CompressionOptions& gzip = env_->config->compression;
  const bool gzip_accepted =
      gzip.enabled && http::PrefersGzip(request.HeaderValues("accept-encoding"));
  if (response.has_producer()) {
    if (!ex_.head_kept && env_->access_log) KeepHead(ex_.head_ptr, ex_.head_len);
    return StartProducer(response, gzip_accepted);
  }
  if (gzip.enabled) {
    // On the ring thread: a FAST answer is compressed where it is built.
    // Nothing is allocated unless the body is compressed (a compressible
    // one not compressed still gets its Vary).
    http::CompressBufferedResponse(gzip, gzip_accepted, ex_.head, response);
  }
  Respond(response);
}

void Connection::Dispatch(const http::Request& request, std::string_view head,
                          std::string_view body) {
  (void)request;
  io::ChunkPool* chunks = env_->chunks;
  const std::string_view allow = request.allowed_methods.substr(0, UINT16_MAX);
  const size_t need = sizeof(worker::TaskBuffer) + head.size() + body.size() + allow.size();
  char* memory = need <= chunks->chunk_size() ? chunks->Acquire()
                                              : static_cast<char*>(std::malloc(need));
  if (memory == nullptr) return Abort();
  auto* task = new (memory) worker::TaskBuffer();
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = body.size();
  task->capacity = static_cast<uint32_t>(head.size() + body.size() + allow.size());
  task->allow_len = static_cast<uint16_t>(allow.size());
  task->head_only = ex_.head;
  task->keep_alive = ex_.keep_alive;
  task->request_body = req_pipe();
  task->client_address = client_address();
  task->client_certificate = client_cert_;
  task->secure = secure_;
  std::memcpy(task->data(), head.data(), head.size());
  if (!body.empty()) std::memcpy(task->data() + head.size(), body.data(), body.size());
  if (!allow.empty()) {
    std::memcpy(task->data() + head.size() + body.size(), allow.data(), allow.size());
  }
  if (!env_->host->Dispatch(slot_, task, *ex_.route, ex_.started_ns)) {
    task->~TaskBuffer();
    chunks->Release(memory);
    env_->stats->slow_rejected.Add();
    if (st_) st_->req_pipe.reset();
    // Queue full: a clean 503. A body not read yet will not be: close.
    const bool unread = !ex_.body_done;
    if (unread) {
      ex_.body_done = true;
      input_ = Input::kDone;
      linger_ = true;
    }
    AnswerError(503, /*close=*/unread, &request);
    return;
  }
  env_->stats->slow_dispatched.Add();
  ex_.chain_done = true;  // the worker runs it
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
  if (req_pipe() != nullptr) {
    // The handler is done with its body. If it stopped before the end, the
    // rest is not read: the connection ends after this answer.
    if (!ex_.body_done) {
      ex_.close_after = true;
      ex_.body_failed = true;
      input_ = Input::kDone;
      linger_ = true;
    }
    if (st_) st_->req_pipe.reset();
  }
  if (phase_ >= Phase::kLingering) {
    if (resp_pipe() == nullptr && task_->response_body.load(std::memory_order_acquire) != nullptr) {
      S().resp_pipe.reset(task_->response_body.load(std::memory_order_acquire));
    }
    FreeTask();
    FreePipes();
    return;
  }
  if (ex_.body_status != 0 && ex_.response_bytes == 0) {
    // Its body failed and nothing of the handler's answer has been queued:
    // the connection answers for it, whatever the handler did (a handler
    // that returned on ReadBody()'s -1 left the default 200).
    // (The kept head, not the task's copy, is what the error page gets.)
    if (ex_.head_kept) ex_.head_ptr = req_.data;
    FreeTask();  // an answer it began streaming is dropped with its pipe
    if (resp_pipe() != nullptr) resp_pipe()->Abort();
    ex_.answer = Answer::kPending;
    AnswerError(ex_.body_status, /*close=*/true);
    Sync();
    return;
  }
  if (resp_pipe() != nullptr || task_->response_body.load(std::memory_order_acquire) != nullptr) {
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
        if (const http::HeaderTable* trailers = task_->stream_head->trailers.get()) {
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

void Connection::Respond(http::Response& response, bool close) {
  if (response.header_refused()) return RespondRefused(response, close);
  if (env_->access_log) NoteRequestId(response);
  SerializeOptions options = HeadOptions(/*can_keep=*/!close);
  const int status = response.status();
  const bool send_body = !ex_.head && http::StatusHasBody(status);
  const size_t body_size = response.body_view().size();
  const bool own_body = send_body && body_size >= kOwnedBodyBytes;
  if (own_body) options.head_only = true;  // the head alone; the body follows from its memory
  // Serialized straight into the output's tail (measured first only if
  // it does not fit there).
  size_t room = 0;
  char* dst = out_.ReserveRoom(512, &room);
  URING_CHECK(dst != nullptr);
  size_t size = SerializeResponse(response, options, dst, room);
  if (size > room) {
    dst = out_.Reserve(size);
    URING_CHECK(dst != nullptr);
    SerializeResponse(response, options, dst, size);
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
  const SerializeOptions options = HeadOptions(/*can_keep=*/!close);
  char buffer[512];
  const size_t size = SerializeError(status, options, allow, buffer, sizeof(buffer));
  URING_CHECK(out_.Append(std::string_view(buffer, std::min(size, sizeof(buffer)))));
  ex_.status = status;
  ex_.response_bytes = ErrorBodySize(status);
  ex_.answer = Answer::kPending;
  Answered();
}

void Connection::BadRequest(int status) {
  env_->stats->bad_requests.Add();
  linger_ = true;  // the peer may still be sending the bad request's body
  AnswerError(status, /*close=*/true);
}

void Connection::AnswerError(int status, bool close, const http::Request* request) {
  const router::Pipeline& pipeline = env_->router->pipeline();
  if (!pipeline.HandlesNotFound() && ex_.afters_due == 0) {
    return RespondError(status, close);  // no page, no hook: allocation-free
  }
  if (ex_.answer == Answer::kNone) {
    // No request to answer for (a bad head, a timeout): the error itself.
    ex_ = Exchange();
    ex_.route_id = env_->unmatched_route;
    ex_.started_ns = NowNs();
    ex_.answer = Answer::kPending;
  }
  http::Request parsed;
  if (request == nullptr) {
    if (ex_.head_kept) {
      ReparseHead(&parsed);
    } else {
      // No head was parsed: method, target and path stay empty.
      parsed.client_address = client_address();
    }
    request = &parsed;
  }
  http::Response response;
  if (ex_.afters_due > 0) {
    // The route's (or mount's) befores ran: their afters see this answer.
    pipeline.ErrorPage(status, *request, response);
    RunDueAfters(*request, response);
  } else if (ex_.chain_done) {
    // Its afters saw the handler's answer, which this one replaces.
    pipeline.ErrorPage(status, *request, response);
  } else {
    pipeline.AnswerServer(status, *request, response);
  }
  Respond(response, close);
}

void Connection::RunDueAfters(const http::Request& request, http::Response& response) {
  if (ex_.afters_due == 0) return;
  const size_t ran = ex_.afters_due;
  ex_.afters_due = 0;
  ex_.chain_done = true;
  router::RunAfters(env_->router->pipeline(), ex_.route->options.middleware, ran, request,
                    response, ex_.route->name());
}

void Connection::AnswerUncleanPath(const http::Request& request, router::PathShape shape,
                                   bool close) {
  const router::Pipeline& pipeline = env_->router->pipeline();
  if (shape == router::PathShape::kMalformed) {
    env_->stats->bad_requests.Add();
    if (!pipeline.HandlesNotFound()) return RespondError(400, close);
    http::Response response;
    pipeline.AnswerUnmatched(400, {}, request, response);
    return Respond(response, close);
  }
  // 301 as Go's ServeMux answers; 308 where a 301 would let a client turn
  // a POST into a GET.
  const bool get = request.method_id == http::Method::kGet ||
                   request.method_id == http::Method::kHead;
  std::string location;
  router::AppendCleanPath(request.path, &location);
  if (!request.query.empty()) {
    location.push_back('?');
    location.append(request.query);
  }
  http::Response response;
  pipeline.AnswerRedirect(get ? 301 : 308, location, request, response);
  Respond(response, close);
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
  S().trailers.clear();
  AppendFieldLines(response.trailers(), &S().trailers);
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
          if (!ex_.close_after) URING_CHECK(out_.Append(LastChunk(S().trailers)));
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

void Connection::Answered() {
  ex_.answer = Answer::kSent;
  env_->host->ExchangeDone(
      slot_, ConnectionHost::Exchange{ex_.route_id, ex_.status, ex_.started_ns,
                                      env_->access_log ? RequestLine() : std::string_view(),
                                      ex_.head ? 0 : ex_.response_bytes,
                                      &client_address(),
                                      std::string_view(request_id_, ex_.request_id_len)});
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
  if (FileBusy()) return;      // a file's bytes are still queued (MaybeEndFile)
  const bool close = ex_.close_after || ex_.body_failed;
  if (task_ != nullptr) FreeTask();
  if (req_.data != nullptr) ReleaseBuffer(req_);
  ReleaseLimits();
  ex_ = Exchange();
  if (st_ != nullptr) {
    st_->sink.reset();
    FreePipes();
  }
  if (close) {
    input_ = Input::kDone;
    if (phase_ == Phase::kOpen) phase_ = Phase::kFinishing;
  } else if (input_ != Input::kDone) {
    input_ = Input::kHead;
  }
}

SerializeOptions Connection::HeadOptions(bool can_keep) {
  const bool keep = can_keep && KeepAliveNow();
  if (!keep) ex_.close_after = true;  // this response ends the connection
  SerializeOptions options;
  options.keep_alive = keep;
  options.keep_alive_header = keep && ex_.http10;
  options.head_only = ex_.head;
  return options;
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

void Connection::NoteRequestId(const http::Response& response) {
  if (const std::optional<std::string_view> id = response.FindHeader("x-request-id")) {
    SetRequestId(*id);
  }
}

void Connection::SetRequestId(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  const size_t n = std::min(value.size(), kLoggedRequestId);
  std::memcpy(request_id_, value.data(), n);
  ex_.request_id_len = static_cast<uint8_t>(n);
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
  if (resp_pipe() == nullptr) {
    // A pipe the worker made but we never adopted (closed meanwhile).
    if (worker::BodyPipe* p = task_->response_body.load(std::memory_order_acquire)) {
      S().resp_pipe.reset(p);
      resp_pipe()->Abort();
    }
  }
  task_->~TaskBuffer();
  env_->chunks->Release(reinterpret_cast<char*>(task_));
  task_ = nullptr;
}

void Connection::FreePipes() {
  if (task_inflight_) return;  // the worker may still use them
  if (st_) st_->req_pipe.reset();
  // The response pipe goes once the kernel is done with every byte of it
  // that was queued, and the exchange it streamed is over.
  if (resp_pipe() != nullptr && S().pipe_queued == 0 && ex_.answer != Answer::kPipe) {
    st_->resp_pipe.reset();
  }
  MaybeReleaseStreams();
}

void Connection::ReleaseStreamsIfIdle() {
  // The decoder belongs to the exchange; pipes, sink and producer to
  // whoever still uses them.
  if (ex_.answer != Answer::kNone || task_inflight_ || !st_->idle()) return;
  env_->streams->Release(std::move(st_));
}

}  // namespace uring_http::http1
