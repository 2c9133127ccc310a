// The runner's streams (runner.h): a response written by the handler
// (Write) or by any thread (Push) into the exchange's pipe, and a request
// body read from the connection's pipe (ReadBody).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/async/runner.h"
#include "src/async/runner_slot.h"
#include "src/base/check.h"

namespace uring_http::async {

long Runner::StartRead(Exchange& ex, char* buf, size_t len) {
  Slot& s = static_cast<Slot&>(ex);
  if (s.task->request_body == nullptr) {
    // A buffered body: all here already.
    const std::string_view body = s.request_->body;
    const size_t n = std::min<size_t>(len, body.size() - s.body_read_);
    if (n > 0) std::memcpy(buf, body.data() + s.body_read_, n);
    s.body_read_ += n;
    return static_cast<long>(n);
  }
  const long n = ReadPipe(s, buf, len);
  if (n == ExchangeOps::kReadWait) {
    s.read_buf = buf;
    s.read_len = len;
    readers_.push_back(&s);
  }
  return n;
}

long Runner::ReadPipe(Slot& s, char* buf, size_t len) {
  worker::BodyPipe* pipe = s.task->request_body;
  for (;;) {
    if (pipe->aborted()) {
      // The connection gave its reason before it published the abort.
      const uint8_t reason = pipe->abort_reason();
      s.body_error_ = reason != 0 ? static_cast<http::BodyError>(reason)
                                  : http::BodyError::kClientGone;
      return -1;
    }
    if (len == 0) return 0;
    const size_t n = pipe->Read(buf, len);
    if (n > 0) {
      // The connection may be waiting for room to feed more of the body.
      if (pipe->TakeNotify()) Notice(s.task, this);
      return static_cast<long>(n);
    }
    if (!pipe->finished()) return ExchangeOps::kReadWait;
    // Bytes written just before the end are read on the next turn.
    if (pipe->readable() == 0) return pipe->aborted() ? -1 : 0;
  }
}

Runner::WriteStart Runner::StartWrite(Exchange& ex, std::string_view data) {
  Slot& s = static_cast<Slot&>(ex);
  if (s.push != nullptr) return WriteStart::kFailed;  // the body is the push's
  EnsureStream(s);
  if (!s.stream->Write(*s.response_, data)) return WriteStart::kFailed;
  s.streaming_ = true;
  if (s.stream->staged() == 0) return WriteStart::kDone;
  writers_.push_back(&s);
  return WriteStart::kWait;
}

void Runner::EnsureStream(Slot& s) {
  if (s.stream.has_value()) return;
  s.stream.emplace(s.task, options_.compression,
                   exchange::GzipAccepted(options_.compression, *s.request_),
                   worker::PipeResponseStream::Mode::kStaging, &Notice, this,
                   options_.stream_pipe_bytes);
}

std::shared_ptr<PushStream> Runner::NewPush(Exchange& ex) {
  // Any thread: what it reads is fixed while the exchange lives (the
  // inbox, the slot's index and generation, the options).
  const Slot& s = static_cast<const Slot&>(ex);
  // The stream's key in the inbox: the exchange and its generation, so a
  // message that comes after the exchange was reused is recognised.
  return std::make_shared<PushStream>(inbox_.get(), (uint64_t{s.index} << 32) | s.generation,
                                      options_.stream_pipe_bytes);
}

std::shared_ptr<PushStream> Runner::StartPush(Exchange& ex, std::shared_ptr<PushStream> made) {
  Slot& s = static_cast<Slot&>(ex);
  if (s.push != nullptr) {
    // Each call returns the same stream; another one made meanwhile is
    // never the body's (its writers hear kClosed).
    if (made != nullptr && made != s.push) made->Close(http::StopReason::kNone);
    return s.push;
  }
  const bool made_off_ring = made != nullptr;
  s.push = made_off_ring ? std::move(made) : NewPush(ex);
  const bool written_before = s.stream.has_value() && s.stream->started();
  EnsureStream(s);
  // An empty write sends the head now.
  if (written_before || s.cancelled() || !s.stream->Write(*s.response_, {})) {
    s.push->Close(s.stop_reason());
    return s.push;
  }
  s.streaming_ = true;
  // A stream made off the ring may hold writes (and its End) already:
  // their message to the inbox found no stream on the exchange, so they
  // are taken now. (One made here has none: no look, no lock.)
  if (made_off_ring) PumpPush(s);
  return s.push;
}

std::shared_ptr<DeferredAnswer> Runner::NewAnswer(Exchange& ex) {
  // Any thread (see NewPush).
  const Slot& s = static_cast<const Slot&>(ex);
  return std::make_shared<DeferredAnswer>(inbox_.get(), (uint64_t{s.index} << 32) | s.generation);
}

bool Runner::StartAnswerWait(Exchange& ex, std::shared_ptr<DeferredAnswer> answer) {
  Slot& s = static_cast<Slot&>(ex);
  // Kept on the slot, so that the exchange's end closes it (Answer) and
  // the inbox's message finds it.
  s.answer = std::move(answer);
  if (!s.answer->sent()) return true;
  s.answer.reset();
  return false;
}

void Runner::OnInbox() {
  inbox_->Take(&inbox_taken_);
  for (const uint64_t key : inbox_taken_) {
    const uint32_t index = static_cast<uint32_t>(key >> 32);
    if (index >= slots_.size()) continue;
    Slot& s = *slots_[index];
    // A stream whose exchange has ended (its writers lost the race with
    // the end) or been reused: nothing to do.
    if (s.generation != static_cast<uint32_t>(key) || s.task == nullptr) continue;
    if (s.pending() == Exchange::Pending::kAnswer && s.answer != nullptr && s.answer->sent()) {
      // The answer has come: its await goes on in RunReady. (The handle
      // leaves the slot, so a cancel cannot resume it twice.)
      s.answer.reset();
      resume_.push_back({&s, 0});
      continue;
    }
    if (s.push == nullptr) continue;
    PumpPush(s);
  }
}

void Runner::PumpPush(Slot& s) {
  PushStream& push = *s.push;
  if (push.closed() || s.closing) return;  // StopSlot's path ends it
  worker::PipeResponseStream& stream = *s.stream;
  if (stream.aborted()) {
    // The connection let go of the pipe (its StopTask is on its way).
    return StopSlot(s, http::StopReason::kClientGone);
  }
  // What waited for room first; the writers' next bytes only behind it,
  // so that what the ring holds stays within one bound.
  if (stream.Flush()) {
    if (push.Take(&push.taken)) s.push_ended = true;
    if (!push.taken.empty() && !stream.Write(*s.response_, push.taken)) {
      // (Only an aborted pipe refuses bytes here.)
      return StopSlot(s, http::StopReason::kClientGone);
    }
  }
  const PushStream::Drain drain = push.Held(stream.unsent());
  if (drain == PushStream::Drain::kDue) push.NotifyDrain();
  if (s.push_ended && s.handler_done && stream.staged() == 0) {
    // Ended by its writer, everything in the pipe: the body's end.
    push.Close(http::StopReason::kNone);
    if (EndStream(s)) {
      Answer(s);
    } else {
      closing_.push_back(&s);
    }
    return;
  }
  if ((stream.staged() > 0 || drain == PushStream::Drain::kWaiting ||
       (s.push_ended && s.handler_done)) &&
      !s.in_pushing) {
    s.in_pushing = true;
    pushing_.push_back(&s);
  }
}

bool Runner::EndStream(Slot& s) {
  if (!s.closing) {
    s.closing = true;
    s.stream->FinishBody(s.task->response);
  }
  if (!s.stream->Flush()) return false;
  s.stream->Close();
  return true;
}

void Runner::Notice(worker::TaskBuffer* task, void* runner) {
  static_cast<Runner*>(runner)->notices_.push_back({task->notify_user_data, task->stream});
}

}  // namespace uring_http::async
