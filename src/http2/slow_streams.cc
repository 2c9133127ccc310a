// The SLOW routes of an HTTP/2 connection: a stream's request to the
// workers, and its answer back, buffered or streamed from the task's pipe
// (connection.h says how).
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "src/base/check.h"
#include "src/http2/connection.h"

namespace uring_http::http2 {

bool Connection::Dispatch(Stream& s, const http::Request& request, const router::Route& route,
                          worker::BodyPipe* request_body) {
  // The worker parses the head again (worker_pool.cc), as HTTP/1 text:
  // the fields as they came (the session has checked them), the authority
  // as Host, and the length of the body it is given.
  std::string head;
  head.reserve(256 + request.target.size() + request.num_headers * 32);
  head.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\n");
  bool has_length = false;
  for (size_t i = 0; i < request.num_headers; ++i) {
    const http::Header& h = request.headers[i];
    has_length = has_length || h.name == "content-length";
    head.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!request.body.empty() && !has_length) {
    head.append("content-length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  head.append("\r\n");
  const std::string_view allow = request.allowed_methods.substr(0, UINT16_MAX);
  // An ASYNC handler's request is parsed into its task, on this thread.
  const size_t copied = head.size() + request.body.size() + allow.size();
  const size_t parsed =
      route.kind == router::HandlerKind::kAsync ? worker::ParsedRequestBytes(head, copied) : 0;
  worker::TaskBuffer* task = worker::NewTaskBuffer(copied + parsed);
  if (task == nullptr) return false;
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = request.body.size();
  task->allow_len = static_cast<uint16_t>(allow.size());
  task->head_only = s.head_request;
  task->keep_alive = true;
  task->client_address = client_;
  task->client_certificate = client_cert_;
  task->secure = secure_;
  task->request_body = request_body;
  task->stream = static_cast<uint32_t>(s.id);  // its completion names the stream
  std::memcpy(task->data(), head.data(), head.size());
  if (!request.body.empty()) {
    std::memcpy(task->data() + head.size(), request.body.data(), request.body.size());
  }
  if (!allow.empty()) {
    std::memcpy(task->data() + head.size() + request.body.size(), allow.data(), allow.size());
  }
  if (!env_->host->Dispatch(slot_, task, route, s.started_ns)) {
    worker::DeleteTaskBuffer(task);
    return false;
  }
  // (An ASYNC route's task runs on this ring: the runner counts it.)
  if (route.kind == router::HandlerKind::kSlow) env_->stats->slow_dispatched.Add();
  s.task = task;
  tasks_.push_back({task, nullptr, nullptr, false});
  return true;
}

void Connection::OnTaskDone(uint32_t stream) {
  // The completion names its stream (TaskBuffer::stream; ids are never
  // reused on a connection). Acquire: what the worker wrote before its
  // release store is ours.
  Stream* s = Find(static_cast<int32_t>(stream));
  if (s != nullptr && s->task != nullptr) {
    // The worker stored kDone before it posted the completion.
    URING_CHECK(s->task->state.load(std::memory_order_acquire) == worker::TaskBuffer::kDone);
    if (s->task->async_exchange == worker::TaskBuffer::kNoExchange) {
      env_->stats->slow_completed.Add();
    }
    TakeTaskResult(*s);
    return Sync();
  }
  // Its stream has gone (or the connection's end orphaned its task): its
  // memory goes now, and only its own. Each task is freed by its own
  // completion, so the connection is not Freeable while one is on its way.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    worker::TaskBuffer* task = tasks_[i].task;
    if (!tasks_[i].orphaned || task->stream != stream) continue;
    URING_CHECK(task->state.load(std::memory_order_acquire) == worker::TaskBuffer::kDone);
    if (task->async_exchange == worker::TaskBuffer::kNoExchange) {
      env_->stats->slow_completed.Add();
    }
    FreeTaskOf(task);
    break;
  }
  Sync();
}

void Connection::OnStreamNotify(uint32_t stream) {
  // The worker of the stream it names made progress.
  if (Stream* found = Find(static_cast<int32_t>(stream))) {
    Stream& s = *found;
    if (s.task != nullptr && s.pipe == nullptr) {
      // The worker's first Write published its pipe and the answer's head.
      if (worker::BodyPipe* pipe =
              s.task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
        s.pipe.reset(pipe);
        StartStreamed(s);
      }
    }
    if (s.pipe != nullptr) PumpPipe(s);
    // The worker read part of a streamed body: more of it goes in.
    if (s.req_pipe != nullptr && !s.body_waiting.empty()) FeedPipe(s);
  }
  // A pipe published after its stream went (or after the connection's end
  // orphaned its task, the stream still listed): aborted, so the worker
  // stops. Orphans are few; the loop is over them only.
  for (Task& t : tasks_) {
    if (!t.orphaned || t.orphan_pipe != nullptr) continue;
    if (worker::BodyPipe* pipe =
            t.task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
      t.orphan_pipe.reset(pipe);
      t.orphan_pipe->Abort();
    }
  }
  Sync();
}

void Connection::TakeTaskResult(Stream& s) {
  worker::TaskBuffer* task = s.task;
  s.task_done = true;
  if (s.req_pipe != nullptr) {
    // The handler has returned: what is left of its body is dropped (the
    // session resets the stream once the answer has ended, RFC 9113 8.1).
    s.req_pipe->Abort(static_cast<uint8_t>(http::BodyError::kClientGone));
    session_->Consume(s.id, s.body_waiting.size());
    s.body_waiting.clear();
  }
  if (s.pipe == nullptr) {
    if (worker::BodyPipe* pipe = task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
      s.pipe.reset(pipe);
    }
  }
  if (s.pipe != nullptr) {
    if (!s.answered) StartStreamed(s);
    s.trailers = std::move(task->stream_trailers);
    s.stream_broken = task->stream_broken;
    s.task = nullptr;
    FreeTaskOf(task);
    PumpPipe(s);
    return;
  }
  s.response = std::move(task->response);
  s.task = nullptr;
  FreeTaskOf(task);
  if (s.response.header_refused()) return SubmitError(s, 500);
  Submit(s);
}

void Connection::StartStreamed(Stream& s) {
  // (Called with the task still there: its completion starts a stream it
  // did not hear of before it takes the task's trailers.)
  const worker::StreamHead* head = s.task != nullptr ? s.task->stream_head.get() : nullptr;
  if (head == nullptr || s.answered) return;
  s.answered = true;
  const int status = head->status;
  const bool has_body = !s.head_request && http::StatusHasBody(status);
  const bool submitted =
      SubmitHead(s, status, head->fields, head->length_known, head->length, has_body);
  s.task->stream_head.reset();  // (the session copied it) not held while the body streams
  if (!submitted) {
    s.ended = true;
    return;
  }
  if (!has_body) s.ended = true;
  env_->stats->streamed_responses.Add();
  Done(s, status, 0);
}

void Connection::PumpPipe(Stream& s) {
  if (s.ended || !s.answered) return;
  worker::BodyPipe& pipe = *s.pipe;
  char buf[16 * 1024];
  // Taking bytes frees room for the worker, which sleeps on a full pipe;
  // the session's queue bounds what waits here for the client's windows.
  while (session_->QueuedData(s.id) < kStreamQueueBytes) {
    const size_t n = pipe.Read(buf, sizeof(buf));
    if (n > 0) {
      session_->WriteData(s.id, std::string_view(buf, n));
      continue;
    }
    if (pipe.aborted() || (pipe.finished() && s.task_done && s.stream_broken)) {
      // A body cut short must not end normally: the client sees a reset.
      s.ended = true;
      session_->ResetStream(s.id, kInternalError);
      return;
    }
    if (pipe.finished()) {
      // The trailers are the task's to give once it has returned.
      if (!s.task_done) return;
      s.ended = true;
      const http::HeaderTable* trailers = s.trailers.get();
      session_->EndData(s.id, trailers != nullptr && !trailers->empty() ? trailers : nullptr);
      return;
    }
    // Empty: the worker's message comes when it has written (unless bytes
    // came meanwhile: read again).
    if (pipe.ArmReadNotify(0)) return;
  }
}

void Connection::Orphan(Stream& s) {
  if (s.task == nullptr) return;  // (a returned task's pipe goes with the stream)
  // Its handler hears that the answer has nowhere to go.
  env_->host->StopTask(slot_, s.task, http::StopReason::kClientGone);
  for (Task& t : tasks_) {
    if (t.task != s.task) continue;
    t.orphaned = true;
    if (s.req_pipe != nullptr) {
      // The handler's ReadBody fails from here; the pipe lives until it returns.
      s.req_pipe->Abort(static_cast<uint8_t>(http::BodyError::kClientGone));
      t.orphan_request_pipe = std::move(s.req_pipe);
    }
    t.orphan_pipe = std::move(s.pipe);
    if (t.orphan_pipe == nullptr) {
      t.orphan_pipe.reset(s.task->response_body.exchange(nullptr, std::memory_order_acq_rel));
    }
    // The worker's next Write fails (a blocked one wakes): it stops soon.
    if (t.orphan_pipe != nullptr) t.orphan_pipe->Abort();
  }
  s.task = nullptr;
}

void Connection::FreeTaskOf(worker::TaskBuffer* task) {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].task != task) continue;
    tasks_[i] = std::move(tasks_.back());
    tasks_.pop_back();
    break;
  }
  // A pipe the ring never took is still the task's.
  delete task->response_body.exchange(nullptr, std::memory_order_acq_rel);
  worker::DeleteTaskBuffer(task);
}

}  // namespace uring_http::http2
