// Connection, part three: answers, in request order, into the output queue:
// a FAST handler's response, a worker's structured result (serialized here:
// the ring alone decides framing and keep-alive), or an error; streamed
// answers (a FAST producer's, a worker's pipe) are in streamed_answers.cc.
// Then the exchange ends and the next request may be read.
#include <chrono>
#include <cstdlib>
#include <exception>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "src/base/check.h"
#include "src/exchange/run_handler.h"
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
  exchange::RunHandler(pipeline, route, request, response);
  SendHandlerResponse(request, response);
}

void Connection::SendHandlerResponse(const http::Request& request, http::Response& response) {
  const http::CompressionOptions& gzip = env_->config->compression;
  const bool gzip_accepted = exchange::GzipAccepted(gzip, request);
  if (response.has_producer()) {
    if (!ex_.head_kept && env_->access_log) KeepHead(ex_.head_ptr, ex_.head_len);
    return StartProducer(response, gzip_accepted);
  }
  // On the ring thread: a FAST answer is compressed where it is built.
  exchange::FinishBuffered(gzip, gzip_accepted, ex_.head, response);
  Respond(response);
}

void Connection::Dispatch(const http::Request& request, std::string_view head,
                          std::string_view body) {
  (void)request;
  const std::string_view allow = request.allowed_methods.substr(0, UINT16_MAX);
  // An ASYNC handler's request is parsed into its task, on this thread.
  const size_t copied = head.size() + body.size() + allow.size();
  const size_t parsed = ex_.route->kind == router::HandlerKind::kAsync
                            ? worker::ParsedRequestBytes(head, copied)
                            : 0;
  worker::TaskBuffer* task = worker::NewTaskBuffer(copied + parsed);
  if (task == nullptr) return Abort();
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = body.size();
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
    worker::DeleteTaskBuffer(task);
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
  // (An ASYNC route's task runs on this ring: the runner counts it.)
  if (ex_.route->kind == router::HandlerKind::kSlow) env_->stats->slow_dispatched.Add();
  ex_.chain_done = true;  // the worker runs it
  task_ = task;
  task_inflight_ = true;
  ex_.answer = Answer::kTask;
  ex_.head_ptr = task->data();
  if (input_ == Input::kHead) input_ = Input::kWait;
}

void Connection::OnTaskDone(uint32_t) {
  URING_CHECK(task_inflight_ && task_ != nullptr);
  // The worker's release store precedes its message (see slow_task.h).
  while (task_->state.load(std::memory_order_acquire) != worker::TaskBuffer::kDone) {
  }
  task_inflight_ = false;
  if (task_->async_exchange == worker::TaskBuffer::kNoExchange) {
    env_->stats->slow_completed.Add();
  }
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

void Connection::AnswerUncleanPath(const http::Request& request,
                                   const exchange::Routing& routing, bool close) {
  const router::Pipeline& pipeline = env_->router->pipeline();
  if (routing.shape == router::PathShape::kMalformed) {
    env_->stats->bad_requests.Add();
    if (!pipeline.HandlesNotFound()) return RespondError(400, close);
  }
  http::Response response;
  exchange::AnswerUnrouted(pipeline, routing, request, response);
  Respond(response, close);
}

void Connection::Answered() {
  ex_.answer = Answer::kSent;
  env_->host->ExchangeDone(
      slot_, exchange::ConnectionHost::Exchange{ex_.route_id, ex_.status, ex_.started_ns,
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
  worker::DeleteTaskBuffer(task_);
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
