// Connection, part two's second half: a request's body, once its head has
// chosen how it is taken (requests.cc): read into the exchange for the
// handler, fed to a worker's pipe or a FAST BodySink as it comes, or read
// and dropped after an early answer; its end, its failures (each with its
// status and the reason a reader is told), and the clocks that bound how
// slowly it may come (--body-timeout, --body-min-rate).
#include <cstring>
#include <memory>
#include <string>

#include "src/base/check.h"
#include "src/http1/connection.h"
#include "src/router/failure_log.h"

namespace uring_http::http1 {

bool Connection::SkipBody(const http::Request& request, uint64_t limit) {
  if (request.framing == http::BodyFraming::kNone) return true;
  if (!request.expect_continue) {
    // Read the body and drop it, so that the connection goes on.
    ex_.body = BodyMode::kDiscard;
    ex_.body_done = false;
    S().decoder().Start(request.framing, request.content_length, limit);
    if (request.framing == http::BodyFraming::kContentLength && request.content_length > limit) {
      ex_.body_done = true;  // too much to read through: answered and closed
      linger_ = true;
      AnswerError(413, /*close=*/true, &request);
      return false;
    }
    input_ = Input::kBody;
    StartBodyClocks();
    return true;
  }
  // With Expect: 100-continue the client holds its body back for our
  // word, and it will not get a 100: the answer closes the connection
  // (lingering: it may send the body anyway).
  linger_ = true;
  return true;
}

bool Connection::MakeSink(const http::Request& request) {
  try {
    S().sink = ex_.route->sink(request);
  } catch (...) {
    router::LogException(router::ContextOf(ex_.route->name(), request, nullptr),
                         router::FailureStage::kBodySink, std::current_exception());
    st_->sink.reset();
  }
  if (sink() != nullptr) return true;
  // No sink (the factory failed): the body is not read, the answer closes.
  ex_.body_done = true;
  input_ = Input::kDone;
  linger_ = true;
  // The 500 page, and the afters due (every before returned, see
  // BeginExchange).
  AnswerError(500, /*close=*/true, &request);
  return false;
}

size_t Connection::FeedBody(const char* data, size_t len) {
  size_t pos = 0;
  while (pos < len && input_ == Input::kBody) {
    std::string_view in(data + pos, len - pos);
    if (ex_.body == BodyMode::kPipe) {
      const size_t room = req_pipe()->writable();
      if (req_pipe()->aborted()) return len;  // nobody reads it any more: dropped
      if (room == 0) {
        // The handler has not caught up: wait for it to read half the pipe
        // (its message wakes us). Not the peer's fault: no body deadline,
        // no rate window (a new one starts when we read again).
        if (req_pipe()->ArmWriteNotify(req_pipe()->capacity() / 2)) {
          StopBodyClocks();
          return pos;
        }
        continue;
      }
      // Decoding never makes data longer than its input, so every piece of
      // it fits what is left in the pipe.
      if (in.size() > room) in = in.substr(0, room);
    }
    const http::BodyDecoder::Result r = S().decoder().Decode(in);
    pos += r.consumed;
    rate_bytes_ += r.consumed;
    switch (r.status) {
      case http::BodyDecoder::Status::kData:
        if (!DeliverBody(r.data)) return len;
        if (S().decoder().done()) BodyEnded();
        break;
      case http::BodyDecoder::Status::kNeedMore:
        break;
      case http::BodyDecoder::Status::kDone:
        BodyEnded();
        break;
      case http::BodyDecoder::Status::kError:
        BodyFailed(r.error_status, r.error_status == 413 ? http::BodyError::kTooLarge
                                                         : http::BodyError::kMalformed);
        return len;
    }
  }
  if (pos > 0 && input_ == Input::kBody) {
    body_deadline_ = After(env_->config->body_timeout_ms);
    // Reading again after a pause of ours (a full pipe): a new window.
    if (rate_deadline_ == 0) rate_deadline_ = After(RateWindowMs());
  }
  if (!ex_.bulk && input_ == Input::kBody) {
    // A Content-Length body with much still to come, or a chunked one that
    // has grown large: its receives move to the bulk buffers (SyncRecv).
    const http::BodyDecoder& body = S().decoder();
    const uint64_t large = env_->config->bulk_body_bytes;
    ex_.bulk = body.remaining() >= large || body.received() >= large;
  }
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
      if (ex_.answer == Answer::kPending && !DispatchStreamed()) return false;
      // It fits (see FeedBody). The write wakes the worker only once it has
      // what it waits for; at the end of this batch it gets what there is.
      URING_CHECK(req_pipe()->Write(piece.data(), piece.size()) == piece.size());
      if (!batch_hook_) {
        batch_hook_ = true;
        env_->transport->AfterBatch(slot_);
      }
      return true;
    case BodyMode::kSink:
      try {
        sink()->OnData(piece);
      } catch (...) {
        // (The head's receive buffer may be reused by now: the access
        // log's copy of the request line, if any, names it.)
        router::LogException(FailureWhere(nullptr, /*head_at_hand=*/false),
                             router::FailureStage::kBodySink, std::current_exception());
        BodyFailed(500, http::BodyError::kNone);
        return false;
      }
      if (sink()->answer_now()) {
        // The sink has seen enough (a refused form): it answers now, the
        // rest of the body is not read, and the answer closes.
        ex_.close_after = true;
        linger_ = true;
        BodyEnded();
        input_ = Input::kDone;
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
  StopBodyClocks();
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
      // An empty body (or one whole in its first receive) is dispatched here.
      if (ex_.answer == Answer::kPending && !DispatchStreamed()) break;
      if (req_pipe() != nullptr) req_pipe()->Finish();
      break;
    case BodyMode::kSink: {
      http::Request request;
      ReparseHead(&request);
      http::Response response;
      const router::Pipeline& pipeline = env_->router->pipeline();
      try {
        if (sink() != nullptr) sink()->OnEnd(request, response);
        pipeline.MaybeFailPage(request, response);
      } catch (...) {
        router::LogException(router::ContextOf(ex_.route->name(), request, &response),
                             router::FailureStage::kBodySink, std::current_exception());
        pipeline.Fail(request, response);
      }
      // Every before returned (else the body was not read).
      RunDueAfters(request, response);
      if (st_) st_->sink.reset();
      SendHandlerResponse(request, response);
      break;
    }
    case BodyMode::kDiscard:
      break;
  }
  MaybeFinishExchange();
}

void Connection::BodyFailed(int status, http::BodyError reason) {
  ex_.body_failed = true;
  ex_.close_after = true;
  StopBodyClocks();
  linger_ = true;
  input_ = Input::kDone;
  if (ex_.body != BodyMode::kDiscard) {
    // Answered here, whatever the handler does: now, or for a worker's
    // handler once it returns (OnTaskDone), unless its answer has begun.
    env_->stats->bad_requests.Add();
    ex_.body_status = static_cast<uint16_t>(status);
  }
  switch (ex_.body) {
    case BodyMode::kBuffer:
      AnswerError(status, /*close=*/true);
      break;
    case BodyMode::kSink:
      env_->stats->aborted_streams.Add();
      if (sink() != nullptr) sink()->OnAbort();
      if (st_) st_->sink.reset();
      AnswerError(status, /*close=*/true);
      break;
    case BodyMode::kPipe:
      env_->stats->aborted_streams.Add();
      // The handler's next read fails and says why (Request::body_error()).
      if (req_pipe() != nullptr) req_pipe()->Abort(static_cast<uint8_t>(reason));
      if (ex_.answer == Answer::kPending) {
        // No byte of it had come: no worker ever had it.
        if (st_) st_->req_pipe.reset();
        AnswerError(status, /*close=*/true);
      }
      break;
    case BodyMode::kDiscard:
      break;  // answered already
  }
  MaybeFinishExchange();
}

void Connection::PeerEndedBody() {
  // The peer's FIN before the body's end: a request cut short, which the
  // client may still read the answer to (it only half-closed).
  if (input_ == Input::kBody && !ex_.body_done) BodyFailed(400, http::BodyError::kMalformed);
}

bool Connection::DispatchStreamed() {
  // (The worker parses the head again; this request is for what Dispatch
  // copies, and for a 503.)
  http::Request request;
  ReparseHead(&request);
  Dispatch(request, std::string_view(req_.data, ex_.head_len), {});
  return ex_.answer == Answer::kTask;
}

void Connection::CheckBodyRate() {
  // Each window must bring the minimum rate's due: a connection trickling
  // a byte now and then (each of which moves the body timeout on) would
  // otherwise hold its slot, and a streamed SLOW body its worker, for ever.
  // Counted per window, so a fast start buys at most one idle window.
  const exchange::ConnectionConfig& config = *env_->config;
  const uint64_t due = uint64_t{config.body_min_rate} * config.body_rate_window_ms / 1000;
  if (rate_bytes_ >= due) {
    rate_bytes_ = 0;
    rate_deadline_ = After(RateWindowMs());
    return;
  }
  env_->stats->timeouts.Add();
  env_->stats->body_rate_timeouts.Add();
  BodyFailed(408, http::BodyError::kTimedOut);
}

void Connection::StartBodyClocks() {
  body_deadline_ = After(env_->config->body_timeout_ms);
  rate_bytes_ = 0;
  rate_deadline_ = After(RateWindowMs());
}

}  // namespace uring_http::http1
