#include "src/async/runner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <cstring>
#include <exception>

#include "src/async/runner_slot.h"
#include "src/base/check.h"
#include "src/base/size_class_memory.h"
#include "src/exchange/run_handler.h"
#include "src/router/failure_log.h"
#include "src/router/middleware.h"

namespace uring_http::async {

namespace {
// Exchanges made per slab when the pool grows.
constexpr uint32_t kSlabExchanges = 64;

// Whether `text` has more than `n` line ends: memchr's jumps, stopping at
// n + 1 (a byte-by-byte count of the whole head was about 400 instructions
// of every ASYNC request, by callgrind).
bool MoreLinesThan(std::string_view text, size_t n) {
  const char* at = text.data();
  const char* const end = at + text.size();
  for (size_t seen = 0; at < end; ++at) {
    at = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
    if (at == nullptr) return false;
    if (++seen > n) return true;
  }
  return false;
}
}  // namespace

Runner::Runner(Ring* ring, const router::Pipeline* pipeline, const Options& options)
    : ring_(ring),
      pipeline_(pipeline),
      options_(options),
      stats_(options.stats != nullptr ? *options.stats : own_stats_),
      frames_(options.preallocate) {
  // Constructed on its ring thread: that thread's coroutine frames come
  // from this pool from now on.
  FramePool::SetCurrent(&frames_);
  inbox_ = std::make_unique<RingInbox>(ring_->address(), ring_->InboxUserData());
  const uint32_t first = std::min(options.preallocate, options.max_exchanges);
  while (slots_.size() < first) Grow();
  ready_.reserve(first);
  resume_.reserve(first);
  running_resume_.reserve(first);
  running_ready_.reserve(first);
}

Runner::~Runner() {
  // The loop is going away: coroutines still suspended are destroyed (the
  // ring, and every operation they awaited, is gone already).
  for (Slot* s : slots_) {
    s->coroutine.Reset();
    if (s->task != nullptr) DropRequest(*s);  // (the loop frees tasks after us)
    // Other threads may hold their streams and answers still: closed
    // (under their locks), they never touch the inbox that goes with us.
    if (s->push != nullptr) s->push->Close(http::StopReason::kDraining);
    if (s->answer != nullptr) s->answer->Close(http::StopReason::kDraining);
  }
  if (FramePool::Current() == &frames_) FramePool::SetCurrent(nullptr);
}

void Runner::Grow() {
  const uint32_t base = static_cast<uint32_t>(slots_.size());
  const uint32_t n = std::min<uint32_t>(kSlabExchanges, options_.max_exchanges - base);
  slabs_.push_back(std::make_unique<Slot[]>(n));
  Slot* slab = slabs_.back().get();
  for (uint32_t i = n; i-- > 0;) {
    slab[i].runner = this;
    slab[i].index = base + i;
    slab[i].next_free = free_;
    free_ = &slab[i];
  }
  for (uint32_t i = 0; i < n; ++i) slots_.push_back(&slab[i]);
}

Runner::Slot* Runner::Take() {
  if (free_ == nullptr) {
    if (slots_.size() >= options_.max_exchanges) return nullptr;
    Grow();
  }
  Slot* s = free_;
  free_ = s->next_free;
  ++active_;
  stats_.active.Add();
  return s;
}

bool Runner::Start(worker::TaskBuffer* task, const router::Route& route, uint64_t done_user_data,
                   int64_t now_ns) {
  URING_CHECK(route.async != nullptr);
  Slot* s = Take();
  if (s == nullptr) {
    stats_.refused.Add();
    return false;
  }
  stats_.started.Add();
  s->Reset(this, &task->response);
  s->task = task;
  s->route = &route;
  s->done_user_data = done_user_data;
  s->befores_ran = 0;
  s->answered_before = false;
  s->in_ready = false;
  s->deadline_ns = 0;
  s->handler_done = false;
  s->push_ended = false;
  task->async_exchange = s->index;

  // The head was validated by the connection; parsed again into views of
  // the task, which outlives the exchange (as on a worker).
  const std::string_view head(task->data(), task->head_len);
  http::Header* headers = nullptr;
  size_t capacity = 0;
  PlaceRequest(*s, head, &headers, &capacity);
  http::Request& request = *s->request_;
  const http::ParseResult parsed =
      http::ParseRequestHead(head, options_.limits, &request, headers, capacity);
  http::Response& response = task->response;
  if (parsed.status != http::ParseStatus::kComplete || parsed.consumed != task->head_len) {
    response.set_status(500);
    s->in_ready = true;
    ready_.push_back(s);
    return true;
  }
  request.client_address = task->client_address;
  request.client_certificate = task->client_certificate.get();
  request.secure = task->secure;
  request.stop = &task->stop;
  if (!PlaceParams(*s, route, request, headers + request.num_headers, headers + capacity)) {
    response.set_status(500);  // the heap refused the parameters a block
    s->in_ready = true;
    ready_.push_back(s);
    return true;
  }
  request.allowed_methods =
      std::string_view(task->data() + task->head_len + task->body_len, task->allow_len);
  request.body = std::string_view(task->data() + task->head_len, task->body_len);
  if (route.options.timeout.count() > 0) {
    s->deadline_ns = now_ns + std::chrono::nanoseconds(route.options.timeout).count();
    ++with_deadline_;
  }
  if (const auto why = static_cast<http::StopReason>(task->stop.load(std::memory_order_relaxed));
      why != http::StopReason::kNone) {
    s->Stop(why);
  }

  if (pipeline_ != nullptr && pipeline_->Active(route.options.middleware)) {
    s->befores_ran = static_cast<uint32_t>(router::RunBefores(
        *pipeline_, route.options.middleware, request, response, &s->answered_before,
        route.name()));
  }
  if (!s->answered_before) {
    try {
      s->coroutine = route.async(*s);
    } catch (...) {
      // A handler that threw before its first suspension point (a plain
      // function returning a Task): as any handler's throw.
      exchange::AnswerThrow(*pipeline_, route, request, response);
      s->answered_before = true;
    }
  }
  if (!s->coroutine.valid()) {
    s->in_ready = true;
    ready_.push_back(s);
    return true;
  }
  // Runs to its first await (or its end: OnTaskEnd queues it, and the
  // connection hears of it after this call).
  s->coroutine.Start(&OnTaskEnd, s);
  return true;
}

void Runner::PlaceRequest(Slot& s, std::string_view head, http::Header** headers,
                          size_t* capacity) {
  worker::TaskBuffer* task = s.task;
  const uintptr_t used = reinterpret_cast<uintptr_t>(task->data()) + task->head_len +
                         task->body_len + task->allow_len;
  const uintptr_t end = reinterpret_cast<uintptr_t>(task->data()) + task->capacity;
  const uintptr_t at = (used + alignof(http::Request) - 1) & ~uintptr_t{alignof(http::Request) - 1};
  const uintptr_t fields = at + sizeof(http::Request);
  static_assert(alignof(http::Header) <= alignof(http::Request) &&
                sizeof(http::Request) % alignof(http::Header) == 0);
  if (fields <= end) {
    const size_t room = (end - fields) / sizeof(http::Header);
    // The head's lines are its fields' and two more (the request line,
    // the blank line), which need no Header.
    if (!MoreLinesThan(head, room + 2)) {
      s.request_ = new (reinterpret_cast<void*>(at)) http::Request();
      s.request_in_task = true;
      *headers = reinterpret_cast<http::Header*>(fields);
      *capacity = room;
      return;
    }
  }
  if (s.spare == nullptr) s.spare = std::make_unique<Slot::Spare>();
  Slot::Spare& spare = *s.spare;
  spare.request = http::Request();
  if (spare.headers.empty()) {
    spare.headers.resize(std::max<size_t>(options_.limits.max_headers, 1));
  }
  s.request_ = &spare.request;
  s.request_in_task = false;
  *headers = spare.headers.data();
  *capacity = spare.headers.size();
}

bool Runner::PlaceParams(Slot& s, const router::Route& route, http::Request& request,
                         http::Header* free_from, http::Header* free_end) {
  if (s.request_in_task) {
    http::PathParams params;
    route.pattern.Match(request.path, &params);
    if (params.empty()) return true;  // (most routes: nothing to keep)
    const size_t bytes = params.CompactBytes();
    static_assert(alignof(http::PathParamEntry) <= alignof(http::Header));
    // After the head's Headers, in the rest of the task's block, when it
    // has room; else a block of the thread's size classes of their own.
    void* at = free_from;
    if (static_cast<size_t>(reinterpret_cast<char*>(free_end) - reinterpret_cast<char*>(free_from)) <
        bytes) {
      at = s.params_block = base::SizeClassMemory::Allocate(bytes, nullptr);
      if (at == nullptr) return false;
    }
    request.path_params = params.CompactInto(at);
    return true;
  }
  // The spare's request: the spare holds them.
  route.pattern.Match(request.path, &s.spare->params);
  request.path_params = s.spare->params.view();
  return true;
}

void Runner::DropRequest(Slot& s) {
  if (s.request_in_task) {
    s.request_->~Request();
    s.request_in_task = false;
  }
  s.request_ = nullptr;
  base::SizeClassMemory::Free(s.params_block);
  s.params_block = nullptr;
}

void Runner::OnTaskEnd(void* arg) {
  Slot* s = static_cast<Slot*>(arg);
  s->in_ready = true;
  s->runner->ready_.push_back(s);
}

void Runner::RunReady() {
  // Writes that waited: their coroutines go on.
  if (!resume_.empty()) {
    // Swapped with a kept vector: both keep their capacity (no allocation
    // per request for a yield).
    running_resume_.swap(resume_);
    for (auto [s, res] : running_resume_) s->Complete(res);
    running_resume_.clear();
  }
  // Push streams stopped (the client left, a drain, a deadline): their
  // writers' OnClose, then, once their handler is done, their end.
  if (!push_closed_.empty()) {
    std::vector<Slot*> closed;
    closed.swap(push_closed_);
    for (Slot* s : closed) {
      s->in_push_closed = false;
      s->push->NotifyClose(s->push->stop_reason());
      if (!s->handler_done) continue;  // its cancelled await ends it
      if (s->stop_reason() != http::StopReason::kDraining) s->stream->Break();
      if (EndStream(*s)) {
        Answer(*s);
      } else {
        closing_.push_back(s);
      }
    }
  }
  // Streams' messages before answers: a connection sees a stream's head
  // before its end.
  if (!notices_.empty()) {
    std::swap(notices_, running_notices_);
    for (auto [user_data, stream] : running_notices_) ring_->StreamNotify(user_data, stream);
    running_notices_.clear();
  }
  // Answers delivered now may start new exchanges (a pipelined request
  // behind this one) that end at once: they go in the next round.
  std::swap(ready_, running_ready_);
  for (Slot* s : running_ready_) Finish(*s);
  running_ready_.clear();
}

void Runner::Finish(Slot& s) {
  worker::TaskBuffer* task = s.task;
  const router::Route& route = *s.route;
  http::Request& request = *s.request_;
  http::Response& response = task->response;
  static const router::Pipeline kNoPipeline;
  const router::Pipeline& pipeline = pipeline_ != nullptr ? *pipeline_ : kNoPipeline;
  const bool streamed = s.stream.has_value() && s.stream->started();
  if (s.coroutine.valid()) {
    URING_CHECK(s.coroutine.done());
    try {
      s.coroutine.Result();
      if (response.has_producer()) {
        // A producer is the FAST handlers' way to stream; an ASYNC one
        // awaits Write instead. Refused loudly rather than dropped.
        throw std::logic_error(
            "an ASYNC handler set a producer (Response::Stream): it streams with "
            "co_await Exchange::Write");
      }
      if (!streamed) pipeline.MaybeFailPage(request, response);
    } catch (...) {
      if (streamed) {
        // Past its head the answer cannot become a 500: it is cut.
        router::LogException(router::ContextOf(route.name(), request, &response),
                             router::FailureStage::kHandler, std::current_exception());
        s.stream->Break();
      } else {
        exchange::AnswerThrow(pipeline, route, request, response);
      }
    }
    // Its locals go now, while the request they may view is still there.
    s.coroutine.Reset();
  } else if (s.answered_before) {
    pipeline.MaybeFailPage(request, response);
  }
  if (s.cancelled()) stats_.cancelled.Add();
  if (s.stop_reason() == http::StopReason::kDeadline) {
    stats_.deadlines.Add();
    if (streamed) {
      s.stream->Break();  // its head has gone: the stream is cut
    } else {
      // Nothing of this answer has gone: the deadline's is a 503.
      response.Clear();
      response.set_status(503);
      pipeline.ErrorPage(503, request, response);
    }
  }
  if (s.befores_ran > 0) {
    router::RunAfters(pipeline, route.options.middleware, s.befores_ran, request, response,
                      route.name());
  }
  s.handler_done = true;
  if (s.push != nullptr && !s.push->closed()) {
    // The handler is done; the stream's writers are not: the exchange
    // lasts until its End() (PumpPush ends it then).
    return PumpPush(s);
  }
  if (streamed) {
    if (!EndStream(s)) {
      closing_.push_back(&s);  // OnBatchEnd goes on with it
      return;
    }
  } else {
    exchange::FinishBuffered(options_.compression,
                             exchange::GzipAccepted(options_.compression, request),
                             task->head_only, response);
  }
  Answer(s);
}

void Runner::Answer(Slot& s) {
  worker::TaskBuffer* task = s.task;
  // Publishes the answer as a worker would (slow_task.h).
  task->state.store(worker::TaskBuffer::kDone, std::memory_order_release);
  const uint64_t done = s.done_user_data;
  const uint32_t stream = task->stream;
  // The slot is free before the connection hears: its next request may
  // take it at once.
  if (s.deadline_ns != 0) --with_deadline_;
  s.stream.reset();  // (its pipe is the connection's)
  if (s.push != nullptr) {
    if (!s.push->closed()) s.push->Close(http::StopReason::kNone);
    s.push.reset();
  }
  if (s.answer != nullptr) {
    s.answer->Close(http::StopReason::kNone);
    s.answer.reset();
  }
  s.closing = false;
  DropRequest(s);  // before the connection frees the task it may live in
  s.task = nullptr;
  s.in_ready = false;
  ++s.generation;
  s.next_free = free_;
  free_ = &s;
  --active_;
  stats_.active.Sub();
  stats_.frame_slabs.Set(frames_.stats().slabs + frames_.stats().oversized);
  ring_->TaskDone(done, stream);
}

void Runner::OnBatchEnd() {
  if (!readers_.empty()) {
    // Readers whose body has new bytes (the connection fed the pipe during
    // the batch), or ended, or failed, go on with what they read.
    size_t kept = 0;
    for (Slot* s : readers_) {
      const long n = ReadPipe(*s, s->read_buf, s->read_len);
      if (n == ExchangeOps::kReadWait) {
        readers_[kept++] = s;
      } else {
        resume_.push_back({s, static_cast<int>(n)});
      }
    }
    readers_.resize(kept);
  }
  if (!writers_.empty()) {
    // Writers whose staged bytes now fit (the connection sent some of the
    // pipe during the batch) go on; a pipe the client left says so.
    size_t kept = 0;
    for (Slot* s : writers_) {
      if (s->stream->Flush()) {
        resume_.push_back({s, s->stream->aborted() ? -ECANCELED : 0});
      } else {
        writers_[kept++] = s;
      }
    }
    writers_.resize(kept);
  }
  if (!pushing_.empty()) {
    std::vector<Slot*> pushing;
    pushing.swap(pushing_);
    for (Slot* s : pushing) {
      s->in_pushing = false;
      if (s->task != nullptr && s->push != nullptr) PumpPush(*s);
    }
  }
  if (!closing_.empty()) {
    std::vector<Slot*> closing;
    closing.swap(closing_);
    for (Slot* s : closing) {
      if (EndStream(*s)) {
        Answer(*s);
      } else {
        closing_.push_back(s);
      }
    }
  }
}

void Runner::OnCompletion(uint32_t exchange, uint32_t generation, int res) {
  URING_CHECK(exchange < slots_.size());
  Slot& s = *slots_[exchange];
  // An exchange lives until its operation has come back.
  URING_CHECK(s.generation == generation && s.task != nullptr && s.pending() != Exchange::Pending::kNone);
  if (s.pending() == Exchange::Pending::kJob) {
    // The worker stored done (release) after the call, before it posted.
    while (s.job()->done.load(std::memory_order_acquire) == 0) {
    }
  }
  s.Complete(res);
}

void Runner::Stop(worker::TaskBuffer* task, http::StopReason why) {
  const uint32_t index = task->async_exchange;
  URING_CHECK(index < slots_.size() && slots_[index]->task == task);
  StopSlot(*slots_[index], why);
}

void Runner::StopSlot(Slot& s, http::StopReason why) {
  if (!s.Stop(why)) return;
  if (s.push != nullptr && s.cancelled() && !s.push->closed()) {
    // Its writers hear at once (their next Write is kClosed); its OnClose
    // and the exchange's end come in RunReady, outside the caller.
    s.push->Close(why);
    if (!s.in_push_closed) {
      s.in_push_closed = true;
      push_closed_.push_back(&s);
    }
  }
}

void Runner::OnTick(int64_t now_ns) {
  if (with_deadline_ == 0) return;
  for (Slot* s : slots_) {
    if (s->task == nullptr || s->deadline_ns == 0 || s->deadline_ns > now_ns || s->in_ready) {
      continue;
    }
    s->task->stop.store(static_cast<uint32_t>(http::StopReason::kDeadline),
                        std::memory_order_release);
    StopSlot(*s, http::StopReason::kDeadline);
  }
}

// ---- ExchangeOps

void Runner::StartTimer(Exchange& ex, const __kernel_timespec* ts) {
  Slot& s = static_cast<Slot&>(ex);
  if (ts->tv_sec == 0 && ts->tv_nsec == 0) {
    // A zero wait is a yield: the coroutine goes on in RunReady, after the
    // batch, as if its timeout had run out. Not the kernel's: a zero
    // IORING_OP_TIMEOUT fires its hrtimer at once, and on this kernel that
    // cost about 25 us of CPU per await (perf: io_timeout's unlock).
    resume_.push_back({&s, -ETIME});
    return;
  }
  ring_->PrepTimeout(ring_->OpUserData(s.index, s.generation), ts);
}

void Runner::StartIo(Exchange& ex, const IoOp* op, const __kernel_timespec* ts) {
  const Slot& s = static_cast<const Slot&>(ex);
  ring_->PrepIo(ring_->OpUserData(s.index, s.generation), *op, ts);
}

ExchangeOps::JobStart Runner::StartJob(Exchange& ex, worker::WorkerJob* job) {
  const Slot& s = static_cast<const Slot&>(ex);
  if (!ring_->has_workers()) {
    // --workers=0: the blocking call runs on the ring, as SLOW handlers do.
    job->Claim();
    job->run(job);
    job->done.store(1, std::memory_order_release);
    return JobStart::kRanHere;
  }
  job->ring = {};  // the loop fills in its address
  if (!ring_->SubmitJob(job, ring_->OpUserData(s.index, s.generation))) return JobStart::kRefused;
  stats_.worker_calls.Add();
  return JobStart::kQueued;
}

void Runner::CancelPending(Exchange& ex) {
  Slot& s = static_cast<Slot&>(ex);
  if (s.pending() == Exchange::Pending::kWrite) {
    // Its staged bytes are dropped (the stream is over); it resumes in
    // RunReady, not under the caller.
    writers_.erase(std::find(writers_.begin(), writers_.end(), &s));
    resume_.push_back({&s, -ECANCELED});
    return;
  }
  if (s.pending() == Exchange::Pending::kRead) {
    readers_.erase(std::find(readers_.begin(), readers_.end(), &s));
    resume_.push_back({&s, -ECANCELED});
    return;
  }
  if (s.pending() == Exchange::Pending::kAnswer) {
    // Its sender hears (Send returns false); it resumes in RunReady. A
    // handle already taken by OnInbox has its resume queued: nothing to do.
    if (s.answer != nullptr) {
      s.answer->Close(s.stop_reason());
      s.answer.reset();
      resume_.push_back({&s, -ECANCELED});
    }
    return;
  }
  if (s.pending() == Exchange::Pending::kTimer) {
    // A zero wait never went to the kernel (StartTimer): it is waiting in
    // resume_, and resumes cancelled.
    for (auto& [waiting, res] : resume_) {
      if (waiting == &s) {
        res = -ECANCELED;
        return;
      }
    }
  }
  // The timeout completes with -ECANCELED (the cancel's own completion is
  // not waited for).
  ring_->PrepCancel(ring_->OpUserData(s.index, s.generation));
}

}  // namespace uring_http::async
