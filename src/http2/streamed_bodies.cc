// http2::Connection, what streams as it goes rather than whole:
//   - a streamed request body (a route registered for one): into a FAST
//     route's BodySink on the ring as DATA arrives, or into a pipe the SLOW
//     handler reads on its worker (Request::ReadBody). The pipe's bound is
//     the backpressure, as over HTTP/1: bytes it cannot take wait here
//     unconsumed, so the stream's window stays shut until the worker reads
//     (a slow reader holds the uploader back, and the connection holds no
//     more than a window of them). The worker gets the request with the
//     body's first bytes, as over HTTP/1: a stream that sends a head and
//     then nothing holds no worker.
//   - a FAST handler's producer (Response::Stream): called on the ring as
//     the stream's queue in the session drains, its bytes framed as DATA,
//     gzipped as it goes when the answer should be.
#include <algorithm>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/check.h"
#include "src/exchange/route_request.h"
#include "src/exchange/run_handler.h"
#include "src/http/compress.h"
#include "src/http2/connection.h"
#include "src/router/failure_log.h"
#include "src/router/middleware.h"

namespace uring_http::http2 {

// ---------------------------------------------------------------- request bodies

bool Connection::StartStreamedBody(Stream& s) {
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  if (request.path.empty() || request.path[0] != '/') return false;
  const exchange::Routing routing = exchange::RouteRequest(
      *env_->router, request, env_->path_params, env_->config->limits.max_body_bytes,
      env_->has_workers);
  if (routing.kind != exchange::Routing::Kind::kRoute || !routing.streamed) return false;
  const router::Route& route = *routing.route;
  s.route = &route;
  s.route_id = route.id;
  s.streaming = true;
  if (!Admit(s)) return true;
  s.body_limit = routing.body_limit;
  env_->stats->streamed_requests.Add();
  if (s.head.has_content_length && s.head.content_length > s.body_limit) {
    // Refused before its body comes (and without a 100 Continue).
    s.refused = true;
    env_->stats->bad_requests.Add();
    SubmitError(s, 413);
    return true;
  }
  if (route.sink != nullptr) {
    const router::Pipeline& pipeline = env_->router->pipeline();
    if (pipeline.Active(route.options.middleware)) {
      // The befores at the head (one may answer: the body is then dropped),
      // the afters with the sink's answer.
      bool answered = false;
      const size_t ran = router::RunBefores(pipeline, route.options.middleware, request,
                                            s.response, &answered, route.name());
      if (answered) {
        pipeline.MaybeFailPage(request, s.response);
        router::RunAfters(pipeline, route.options.middleware, ran, request, s.response,
                          route.name());
        s.refused = true;
        Submit(s);
        return true;
      }
      s.afters_due = static_cast<uint16_t>(ran);
    }
    route.pattern.Match(request.path, &env_->path_params);
    request.path_params = env_->path_params.view();
    try {
      s.sink = route.sink(request);
    } catch (...) {
      router::LogException(router::ContextOf(route.name(), request, nullptr),
                           router::FailureStage::kBodySink, std::current_exception());
    }
    if (s.sink == nullptr) {
      // No sink (the factory failed): the body is not read.
      s.refused = true;
      FileError(s, 500);
      return true;
    }
  } else {
    s.req_pipe = std::make_unique<worker::BodyPipe>(env_->config->request_pipe_bytes);
  }
  // The body goes to its reader as it comes: the client may send it now.
  if (s.head.expect_continue && !s.head.end_stream) session_->SubmitContinue(s.id);
  return true;
}

void Connection::StreamedData(Stream& s, std::string_view data) {
  s.streamed_bytes += data.size();
  if (s.streamed_bytes > s.body_limit) {
    session_->Consume(s.id, data.size());
    s.refused = true;
    env_->stats->bad_requests.Add();
    AbortStreamedBody(s, /*stream_open=*/true);
    return SubmitError(s, 413);
  }
  if (s.sink != nullptr) {
    // On the ring, at once: a sink never blocks.
    session_->Consume(s.id, data.size());
    try {
      s.sink->OnData(data);
    } catch (...) {
      s.refused = true;
      return FailSink(s);
    }
    if (s.sink->answer_now()) {
      // It has seen enough to answer: the rest of the body is dropped (the
      // session resets the stream once the answer has ended, RFC 9113 8.1).
      s.refused = true;
      EndSink(s);
    }
    return;
  }
  s.body_waiting.append(data);
  if (s.task == nullptr && !s.task_done) {
    std::vector<http::Header> storage;
    http::Request request;
    BuildRequest(s, storage, request);
    request.body = std::string_view();
    if (!Dispatch(s, request, *s.route, s.req_pipe.get())) {
      env_->stats->slow_rejected.Add();
      session_->Consume(s.id, s.body_waiting.size());
      s.body_waiting.clear();
      s.refused = true;
      s.req_pipe.reset();
      return SubmitError(s, 503);
    }
  }
  FeedPipe(s);
}

void Connection::StreamedEnd(Stream& s) {
  s.body_ended = true;
  if (s.sink != nullptr) return EndSink(s);
  if (s.req_pipe == nullptr) return;
  if (s.task == nullptr && !s.task_done) {
    // An empty body: the worker gets the request now.
    std::vector<http::Header> storage;
    http::Request request;
    BuildRequest(s, storage, request);
    request.body = std::string_view();
    if (!Dispatch(s, request, *s.route, s.req_pipe.get())) {
      env_->stats->slow_rejected.Add();
      s.req_pipe.reset();
      return SubmitError(s, 503);
    }
  }
  FeedPipe(s);
}

void Connection::FeedPipe(Stream& s) {
  worker::BodyPipe* pipe = s.req_pipe.get();
  if (pipe == nullptr) return;
  if (pipe->aborted() || s.task == nullptr) {
    // Nobody reads it any more (the handler returned, or gave up): what
    // waits, and what comes, is dropped, and the window reopens for it.
    session_->Consume(s.id, s.body_waiting.size());
    s.body_waiting.clear();
    return;
  }
  for (;;) {
    if (!s.body_waiting.empty()) {
      const size_t n = pipe->Write(s.body_waiting.data(), s.body_waiting.size());
      if (n > 0) {
        s.body_waiting.erase(0, n);
        session_->Consume(s.id, n);
        pipe_written_ = true;
      }
    }
    if (s.body_waiting.empty()) break;
    // Full: the worker messages the ring (OnStreamNotify) once it has read
    // half a pipe, or at once if it already has.
    if (pipe->ArmWriteNotify(std::min(pipe->capacity() / 2, s.body_waiting.size()))) return;
  }
  if (s.body_ended && !pipe->finished()) {
    pipe->Finish();
    pipe_written_ = true;
  }
  // The reader is woken once per batch of writes (OnBatchEnd), not per DATA.
  if (pipe_written_) env_->transport->AfterBatch(slot_);
}

void Connection::OnBatchEnd() {
  if (!pipe_written_) return;
  pipe_written_ = false;
  for (auto& [id, sp] : streams_) {
    if (sp->req_pipe != nullptr) sp->req_pipe->WakeReader();
  }
}

void Connection::AbortStreamedBody(Stream& s, bool stream_open) {
  if (s.sink != nullptr) {
    try {
      s.sink->OnAbort();
    } catch (...) {
    }
    s.sink.reset();
  }
  if (s.req_pipe != nullptr) {
    // The handler's ReadBody fails from here.
    s.req_pipe->Abort(static_cast<uint8_t>(http::BodyError::kClientGone));
    // (A closed stream's bytes went back to the connection's window.)
    if (stream_open) session_->Consume(s.id, s.body_waiting.size());
    s.body_waiting.clear();
  }
}

void Connection::EndSink(Stream& s) {
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  request.body = std::string_view();
  s.route->pattern.Match(request.path, &env_->path_params);
  request.path_params = env_->path_params.view();
  std::unique_ptr<router::BodySink> sink = std::move(s.sink);
  s.response.Clear();
  try {
    sink->OnEnd(request, s.response);
  } catch (...) {
    router::LogException(router::ContextOf(s.route->name(), request, nullptr),
                         router::FailureStage::kBodySink, std::current_exception());
    return FileError(s, 500);  // the 500 page and the afters due
  }
  env_->router->pipeline().MaybeFailPage(request, s.response);
  RunDueAfters(s, request);
  FinishHandler(s, request);
}

void Connection::FailSink(Stream& s) {
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  router::LogException(router::ContextOf(s.route->name(), request, nullptr),
                       router::FailureStage::kBodySink, std::current_exception());
  AbortStreamedBody(s, /*stream_open=*/true);
  FileError(s, 500);
}

// ---------------------------------------------------------------- producers

namespace {

// Where a producer writes: the stream's queue in the session (gzipped
// first when the answer is).
class StreamOutput final : public http::BodyOutput {
 public:
  StreamOutput(Session* session, int32_t id, http::GzipStream* gzip, size_t room,
               uint64_t* produced, uint64_t promised)
      : session_(session), id_(id), gzip_(gzip), room_(room), produced_(produced),
        promised_(promised) {}
  bool Write(std::string_view data) override {
    if (failed_) return false;
    if (data.empty()) return true;
    if (promised_ != kNoPromise && data.size() > promised_ - *produced_) {
      failed_ = true;  // more than its Content-Length said
      return false;
    }
    *produced_ += data.size();
    wrote_ = true;
    std::string_view out = data;
    if (gzip_ != nullptr) {
      scratch_.clear();
      if (!gzip_->Write(data, &scratch_)) {
        failed_ = true;
        return false;
      }
      out = scratch_;
    }
    if (!out.empty() && session_->WriteData(id_, out) == 0) {
      failed_ = true;  // the stream went
      return false;
    }
    room_ = out.size() >= room_ ? 0 : room_ - out.size();
    return true;
  }
  size_t room() const override { return room_; }
  bool failed() const { return failed_; }
  bool wrote() const { return wrote_; }

  static constexpr uint64_t kNoPromise = ~uint64_t{0};

 private:
  Session* session_;
  int32_t id_;
  http::GzipStream* gzip_;
  size_t room_;
  uint64_t* produced_;
  uint64_t promised_;
  std::string scratch_;
  bool failed_ = false;
  bool wrote_ = false;
};

}  // namespace

void Connection::StartProducer(Stream& s, const http::Request& request) {
  http::Response& response = s.response;
  if (response.header_refused()) return SubmitError(s, 500);
  env_->stats->streamed_responses.Add();
  const int status = response.status();
  const bool sends_body = !s.head_request && http::StatusHasBody(status);
  http::GzipDecision gzip = http::DecideStreamedGzip(
      env_->config->compression, exchange::GzipAccepted(env_->config->compression, request),
      response);
  if (gzip == http::GzipDecision::kGzip && sends_body) {
    s.gzip = std::make_unique<http::GzipStream>(env_->config->compression.level);
    if (!s.gzip->ok()) {
      s.gzip.reset();
      gzip = http::GzipDecision::kIdentity;
    }
  }
  http::AddGzipHeaders(gzip, response);
  // A promised length is the identity body's: gzipped, none is sent.
  const bool length_known = response.has_content_length() && gzip != http::GzipDecision::kGzip;
  s.promised = length_known ? response.content_length() : StreamOutput::kNoPromise;
  s.answered = true;
  if (!SubmitHead(s, status, response.headers(), length_known,
                  length_known ? response.content_length() : 0, sends_body)) {
    s.ended = true;
    return;
  }
  Done(s, status, 0);
  if (!sends_body) {
    s.ended = true;
    return;
  }
  s.producer = std::move(response.producer());
  s.produced = 0;
  PumpProducer(s);
}

void Connection::PumpProducer(Stream& s) {
  while (s.producer && !s.ended) {
    const size_t queued = session_->QueuedData(s.id);
    if (queued >= kStreamQueueBytes) return;  // OnStreamWritable calls again
    StreamOutput output(session_.get(), s.id, s.gzip.get(), kStreamQueueBytes - queued,
                        &s.produced, s.promised);
    bool done = false;
    bool broken = false;
    try {
      done = s.producer(output);
    } catch (...) {
      std::vector<http::Header> storage;
      http::Request request;
      BuildRequest(s, storage, request);
      router::LogException(router::ContextOf(s.route != nullptr ? s.route->name()
                                                                : router::RouteName{},
                                             request, nullptr),
                           router::FailureStage::kProducer, std::current_exception());
      done = broken = true;
    }
    broken = broken || output.failed();
    if (done && !broken && s.gzip != nullptr) {
      // The gzip trailer (CRC and length) ends the compressed body.
      std::string tail;
      broken = !s.gzip->Finish(&tail) || (!tail.empty() && session_->WriteData(s.id, tail) == 0);
    }
    if (done && !broken && s.promised != StreamOutput::kNoPromise && s.produced != s.promised) {
      broken = true;  // shorter than its Content-Length
    }
    if (broken) {
      // Cut short: a reset, so that the client cannot take it as whole.
      s.producer = nullptr;
      s.gzip.reset();
      s.ended = true;
      session_->ResetStream(s.id, kInternalError);
      return;
    }
    if (done) {
      s.producer = nullptr;
      s.gzip.reset();
      s.ended = true;
      session_->EndData(s.id, s.response.trailers().empty() ? nullptr : &s.response.trailers());
      return;
    }
    if (!output.wrote()) {
      // Nothing to give yet: asked again on the next tick rather than spun.
      producer_retry_tick_ = env_->now_tick + 1;
      return;
    }
  }
}

void Connection::RetryProducers() {
  producer_retry_tick_ = 0;
  for (auto& [id, sp] : streams_) {
    if (sp->producer) PumpProducer(*sp);
  }
}

}  // namespace uring_http::http2
