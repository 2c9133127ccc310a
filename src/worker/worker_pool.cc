#include "src/worker/worker_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>

#include <vector>

#include "src/exchange/run_handler.h"
#include "src/http/compress.h"
#include "src/http/response.h"
#include "src/router/failure_log.h"
#include "src/router/router.h"
#include "src/worker/ring_post.h"
#include "src/worker/task_streams.h"

namespace uring_http::worker {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

WorkerPool::WorkerPool(size_t threads, size_t queue_capacity, const http::ParseLimits& limits,
                       bool batch_sched, int nice, const char* name)
    : num_threads_(threads),
      limits_(limits),
      batch_sched_(batch_sched),
      nice_(nice),
      name_(name),
      queue_(queue_capacity),
      stats_(std::make_unique<WorkerStats[]>(threads)) {
  sem_init(&tokens_, /*pshared=*/0, 0);
}

WorkerPool::~WorkerPool() {
  Stop();
  sem_destroy(&tokens_);
}

void WorkerPool::Start() {
  threads_.reserve(num_threads_);
  for (size_t i = 0; i < num_threads_; ++i) {
    threads_.emplace_back([this, i] { WorkerMain(i); });
  }
}

bool WorkerPool::Submit(const SlowTask& task) {
  if (!queue_.TryPush(task)) return false;
  submitted_.fetch_add(1, std::memory_order_relaxed);
  // One token per task: one sleeping worker wakes for it (futex wake, and
  // only if someone sleeps).
  sem_post(&tokens_);
  return true;
}

void WorkerPool::Stop() { Stop(std::chrono::steady_clock::time_point::max()); }

size_t WorkerPool::Stop(std::chrono::steady_clock::time_point deadline) {
  if (threads_.empty()) return 0;
  stopping_.store(true, std::memory_order_release);
  // One extra token per worker so that each wakes, finds the queue empty and
  // leaves; tasks queued before this point still run first (FIFO).
  for (size_t i = 0; i < num_threads_; ++i) sem_post(&tokens_);
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    return 0;
  }
  // Joined as they leave; a thread cannot be interrupted, so one still in
  // a handler at the deadline is let go.
  size_t abandoned = 0;
  for (size_t i = 0; i < threads_.size(); ++i) {
    while (!stats_[i].exited.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (stats_[i].exited.load(std::memory_order_acquire)) {
      threads_[i].join();
    } else {
      threads_[i].detach();
      ++abandoned;
    }
  }
  threads_.clear();
  return abandoned;
}

void WorkerPool::RunTask(const SlowTask& task, const http::ParseLimits& limits,
                         const http::CompressionOptions& compression) {
  TaskBuffer* buf = task.buffer;
  http::Response& response = buf->response;
  // Room for every header the ring thread accepted (--max-headers), kept
  // per thread so that a task allocates nothing for it.
  thread_local std::vector<http::Header> headers;
  const size_t capacity = limits.max_headers > 0 ? limits.max_headers : 1;
  if (headers.size() < capacity) headers.resize(capacity);
  http::Request request;
  // The head was validated on the ring thread; parsing it again here is
  // cheaper than shipping a Request full of pointers across threads.
  const http::ParseResult parsed = http::ParseRequestHead(
      std::string_view(buf->data(), buf->head_len), limits, &request, headers.data(), capacity);
  if (parsed.status != http::ParseStatus::kComplete || parsed.consumed != buf->head_len) {
    response.set_status(500);
    buf->state.store(TaskBuffer::kDone, std::memory_order_release);
    return;
  }
  request.client_address = buf->client_address;
  request.client_certificate = buf->client_certificate.get();
  request.secure = buf->secure;
  request.stop = &buf->stop;
  // The route matched the path on the ring thread; its pattern alone gives
  // the same parameters back.
  http::PathParams params;
  task.route->pattern.Match(request.path, &params);
  request.path_params = params.view();
  request.allowed_methods =
      std::string_view(buf->data() + buf->head_len + buf->body_len, buf->allow_len);
  PipeBodyReader reader(buf);
  if (buf->request_body != nullptr) {
    request.body_reader = &reader;
  } else {
    request.body = std::string_view(buf->data() + buf->head_len, buf->body_len);
  }
  const bool gzip_accepted = exchange::GzipAccepted(compression, request);
  PipeResponseStream stream(buf, compression, gzip_accepted);
  response.AttachStream(&stream);
  // Without the router's pipeline (a bare pool in a test), an empty one:
  // the handler alone, its throw a plain 500.
  static const router::Pipeline kNoPipeline;
  const router::Pipeline& pipeline = task.pipeline != nullptr ? *task.pipeline : kNoPipeline;
  exchange::RunHandler(pipeline, *task.route, request, response, &stream);
  const router::RouteName route = task.route->name();
  try {
    if (response.has_producer()) stream.RunProducer(response);
  } catch (...) {
    router::LogException(router::ContextOf(route, request, &response),
                         router::FailureStage::kProducer, std::current_exception());
    // A producer that throws must not take the worker down with it. Before
    // its first Write the answer is a 500; after it, the head is gone and
    // the connection ends after what was sent.
    if (stream.started()) {
      stream.Break();
    } else {
      response.Clear();  // (keeps the server's header limit)
      response.set_status(500);
    }
  }
  if (static_cast<http::StopReason>(buf->stop.load(std::memory_order_acquire)) ==
      http::StopReason::kDeadline) {
    // The route's timeout passed while the handler ran (the ring said so:
    // EventLoop::CheckSlowDeadlines): whatever it made, the answer is a
    // 503, or the stream is cut if its head has gone.
    if (stream.started()) {
      stream.Break();
    } else {
      response.Clear();
      response.set_status(503);
      pipeline.ErrorPage(503, request, response);
    }
  }
  response.AttachStream(nullptr);
  if (stream.started()) {
    stream.Finish(response);
    // A trailer refused after the head went: the stream was cut (Finish).
    // (Before the head, the ring answers 500 and logs it.)
    if (response.header_refused()) {
      router::LogFailure(router::ContextOf(route, request, &response),
                         response.HeaderRefusal() + ": the stream was cut short");
    }
  } else {
    // Here rather than on the ring: the ring thread serializes the result
    // but spends no CPU on compressing it.
    exchange::FinishBuffered(compression, gzip_accepted, buf->head_only, response);
  }
  // Publishes the response (and the pipe's last bytes) to the ring thread
  // (see slow_task.h).
  buf->state.store(TaskBuffer::kDone, std::memory_order_release);
}

void WorkerPool::WorkerMain(size_t index) {
  if (batch_sched_) {
    // SCHED_BATCH: same share of the CPU, but a worker that wakes (a task
    // to run, its handler's sleep over) does not preempt the thread running
    // there; it waits for that thread to block or its slice to end. A ring
    // thread serving FAST traffic is then not interrupted twice per SLOW
    // request (its batches stay whole: perf/README.md, mixed). No privilege
    // needed; if refused anyway, the worker runs as a normal thread.
    const sched_param param{};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
  }
  if (nice_ > 0) {
    // A lower priority (always allowed): a ring thread that wakes on the
    // same CPU runs first, and this pool takes what the rings leave.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice_);
  }
  // Named once its policy is set: a thread called uring-worker has it.
  pthread_setname_np(pthread_self(), name_);
  WorkerStats& stats = stats_[index];
  for (;;) {
    while (sem_wait(&tokens_) != 0) {
      // EINTR: a signal arrived while sleeping; sleep again.
    }
    SlowTask task;
    bool got = false;
    // A token means a task was published, but the head cell may still be
    // claimed by a producer that has not finished writing it: spin briefly.
    for (int spins = 0; !(got = queue_.TryPop(task)); ++spins) {
      if (stopping_.load(std::memory_order_acquire) && queue_.ApproxSize() == 0) break;
      if (spins > 64) std::this_thread::yield();
    }
    if (!got) {  // stop token and nothing left to run
      stats.exited.store(true, std::memory_order_release);
      return;
    }
    const int64_t started = NowNs();
    stats.queue_wait_ns.store(
        stats.queue_wait_ns.load(std::memory_order_relaxed) +
            static_cast<uint64_t>(started - task.enqueued_ns),
        std::memory_order_relaxed);
    stats.running.store(true, std::memory_order_relaxed);
    RingAddress ring;
    if (task.job != nullptr) {
      ring = task.job->ring;
      if (task.job->Claim()) {
        task.job->run(task.job);
      } else {
        // Abandoned by its ring while it waited (its connection is gone, or
        // the ring ran it itself): nothing to run, but the ring still waits
        // for it to come back before it reuses the job's memory.
        stats.jobs_skipped.store(stats.jobs_skipped.load(std::memory_order_relaxed) + 1,
                                 std::memory_order_relaxed);
      }
      task.job->done.store(1, std::memory_order_release);
    } else {
      // Read before the result is published: the ring may free the buffer
      // as soon as it sees it.
      ring = task.buffer->ring;
      RunTask(task, limits_, compression_);
    }
    stats.running.store(false, std::memory_order_relaxed);
    stats.completed.store(stats.completed.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
    PostToRing(ring, task.user_data, task.stream);
    const PostCounters& posted = ThreadPostCounters();
    stats.msg_ring_sent.store(posted.sent, std::memory_order_relaxed);
    stats.results_dropped.store(posted.dropped, std::memory_order_relaxed);
    stats.mailbox_posts.store(posted.mailbox, std::memory_order_relaxed);
    stats.msg_ring_retries.store(posted.overflow_retries, std::memory_order_relaxed);
  }
}

WorkerPoolStats WorkerPool::Stats() const {
  WorkerPoolStats s;
  s.submitted = submitted_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < num_threads_; ++i) {
    const WorkerStats& w = stats_[i];
    s.completed += w.completed.load(std::memory_order_relaxed);
    s.queue_wait_ns += w.queue_wait_ns.load(std::memory_order_relaxed);
    s.msg_ring_sent += w.msg_ring_sent.load(std::memory_order_relaxed);
    s.msg_ring_retries += w.msg_ring_retries.load(std::memory_order_relaxed);
    s.results_dropped += w.results_dropped.load(std::memory_order_relaxed);
    s.mailbox_posts += w.mailbox_posts.load(std::memory_order_relaxed);
    s.jobs_skipped += w.jobs_skipped.load(std::memory_order_relaxed);
    s.running += w.running.load(std::memory_order_relaxed) ? 1 : 0;
  }
  s.queued = queue_.ApproxSize();
  return s;
}

}  // namespace uring_http::worker
