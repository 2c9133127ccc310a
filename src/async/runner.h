// Runner: a ring thread's ASYNC exchanges. The loop hands it an ASYNC
// route's task (the same TaskBuffer a SLOW route's request travels in to a
// worker, so a connection of any protocol treats both alike); the runner
// parses the head again into the exchange's Request, runs the route's
// middlewares' befores, and starts the handler's coroutine on the ring
// thread. Each await becomes one SQE whose completion (user_data naming
// the exchange and its generation) resumes it. When the task ends the
// runner finishes the answer as a worker would (afters, error pages, the
// 500 of a throw, gzip), publishes it in the TaskBuffer, and the loop
// delivers its kTaskDone to the connection after the batch, as if a worker
// had posted it (RunReady): never from inside the connection's own call.
//
// Exchanges come from a pool grown in slabs up to `max_exchanges` (a full
// pool answers 503, as a full worker queue does); with the frame pool
// (frame_pool.h) and the header array each exchange keeps, a steady-state
// ASYNC request allocates nothing here.
//
// Stops (http::StopReason): the connection's Cancel when its client leaves
// (the await in flight is cancelled on the ring: a timeout by
// IORING_OP_ASYNC_CANCEL, a worker call still queued by abandoning it); a
// route's deadline (RouteOptions::timeout, checked at the loop's ticks:
// the await is cancelled and the answer is 503); a drain (the connection's
// StopTask too: reported only, see exchange.h).
//
// Thread-safety: the ring thread.
#ifndef URING_HTTP_SRC_ASYNC_RUNNER_H_
#define URING_HTTP_SRC_ASYNC_RUNNER_H_

#include <linux/time_types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "src/async/exchange.h"
#include "src/async/frame_pool.h"
#include "src/async/push_stream.h"
#include "src/async/task.h"
#include "src/async/runner_stats.h"
#include "src/http/compress.h"
#include "src/http/header.h"
#include "src/http/parser.h"
#include "src/router/router.h"
#include "src/worker/slow_task.h"
#include "src/worker/task_streams.h"

namespace uring_http::async {

class Runner final : private ExchangeOps {
 public:
  // What the loop does for the runner.
  class Ring {
   public:
    // The user_data of an exchange's operation (the loop's Op::kAsync).
    virtual uint64_t OpUserData(uint32_t exchange, uint32_t generation) const = 0;
    virtual void PrepTimeout(uint64_t user_data, const __kernel_timespec* ts) = 0;
    virtual void PrepCancel(uint64_t user_data) = 0;
    // A socket operation (io_op.h), with a linked timeout when `ts` is set
    // (its own completion is not the exchange's).
    virtual void PrepIo(uint64_t user_data, const IoOp& op, const __kernel_timespec* ts) = 0;
    // Pushes a worker job whose completion posts user_data; false when the
    // queue is full. Not called without workers.
    virtual bool SubmitJob(worker::WorkerJob* job, uint64_t user_data) = 0;
    virtual bool has_workers() const = 0;
    // An exchange's answer is in its TaskBuffer: the connection's
    // completion (the kTaskDone a worker would have posted).
    virtual void TaskDone(uint64_t user_data, uint32_t stream) = 0;
    // Progress on an exchange's streamed response (its first bytes and
    // head, or bytes the connection asked to hear of): the kStreamNotify
    // a worker would have posted.
    virtual void StreamNotify(uint64_t user_data, uint32_t stream) = 0;
    // Where other threads' messages for this ring go (a PushStream's
    // writes: its inbox), and the user_data of the inbox's message, which
    // the loop hands to OnInbox.
    virtual worker::RingAddress address() const = 0;
    virtual uint64_t InboxUserData() const = 0;

   protected:
    ~Ring() = default;
  };

  struct Options {
    http::ParseLimits limits;
    http::CompressionOptions compression;
    uint32_t max_exchanges = 16384;  // at once on this ring
    uint32_t preallocate = 64;       // exchanges (and frames per class) made at start-up
    RunnerStats* stats = nullptr;    // null: not counted
    // The bound on a streamed response's bytes the client has not taken
    // yet (Exchange::Write waits beyond it), per exchange.
    size_t stream_pipe_bytes = 32 * 1024;
  };

  Runner(Ring* ring, const router::Pipeline* pipeline, const Options& options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Starts `route`'s handler on the request in `task`; `done_user_data`
  // names the connection for its completion. False when every exchange is
  // taken (the connection answers 503).
  bool Start(worker::TaskBuffer* task, const router::Route& route, uint64_t done_user_data,
             int64_t now_ns);
  // A completion of an exchange's operation.
  void OnCompletion(uint32_t exchange, uint32_t generation, int res);
  // The inbox's message: push streams with bytes (or an End) for us.
  void OnInbox();
  // `task`'s exchange should stop (its connection's StopTask: the client
  // left, or the server drains).
  void Stop(worker::TaskBuffer* task, http::StopReason why);
  // The loop's tick: routes' deadlines.
  void OnTick(int64_t now_ns);

  // After each batch of completions: streamed responses whose writers
  // wait for room move on (the connection may have sent some).
  void OnBatchEnd();
  // Exchanges whose answer is ready, stream notices, writes to resume:
  // delivered by RunReady (after the loop's batch; the loop must not sleep
  // while there are some).
  bool has_ready() const {
    return !ready_.empty() || !notices_.empty() || !resume_.empty() || !push_closed_.empty();
  }
  void RunReady();

  size_t active() const { return active_; }
  const FramePool& frames() const { return frames_; }

 private:
  struct Slot;

  // ---- ExchangeOps
  void StartTimer(Exchange& ex, const __kernel_timespec* ts) override;
  JobStart StartJob(Exchange& ex, worker::WorkerJob* job) override;
  void CancelPending(Exchange& ex) override;
  void StartIo(Exchange& ex, const IoOp* op, const __kernel_timespec* ts) override;
  WriteStart StartWrite(Exchange& ex, std::string_view data) override;
  std::shared_ptr<PushStream> StartPush(Exchange& ex, std::shared_ptr<PushStream> made) override;
  std::shared_ptr<PushStream> NewPush(Exchange& ex) override;
  std::shared_ptr<DeferredAnswer> NewAnswer(Exchange& ex) override;
  bool StartAnswerWait(Exchange& ex, std::shared_ptr<DeferredAnswer> answer) override;
  long StartRead(Exchange& ex, char* buf, size_t len) override;
  // Reads a streamed request body's pipe without waiting: a count, 0 at
  // its end, -1 failed (body_error_ set), or kReadWait.
  long ReadPipe(Slot& s, char* buf, size_t len);

  // The stream's response pipe made (the head fixed) if it was not.
  void EnsureStream(Slot& s);
  // Moves a push stream's bytes on: staged ones into the pipe, then what
  // its writers left; ends the exchange once the stream has ended and
  // its handler too. Keeps it in pushing_ while it must be looked at again.
  void PumpPush(Slot& s);
  // The exchange was stopped: its await cancelled (Exchange::Stop), its
  // push stream closed.
  void StopSlot(Slot& s, http::StopReason why);

  // A streamed response's message to its connection, kept for RunReady.
  static void Notice(worker::TaskBuffer* task, void* runner);
  // The ended handler's stream: the rest of its body, staged bytes flushed,
  // then its end; false while bytes still wait for room (Finish is
  // called again from OnBatchEnd).
  bool EndStream(Slot& s);
  // Publishes the answer and hands it to the connection; frees the slot.
  void Answer(Slot& s);

  Slot* Take();
  void Grow();
  // Where `s`'s request is parsed (request_ and its header array): in its
  // task's memory past the copied bytes if the head's fields fit there,
  // else in the slot's spare; DropRequest ends it.
  void PlaceRequest(Slot& s, std::string_view head, http::Header** headers, size_t* capacity);
  // The route's path parameters of the exchange's request (its Request
  // holds a view): compacted into the task after its Headers (from
  // free_from), else into a block of their own (false: the heap refused).
  [[nodiscard]] static bool PlaceParams(Slot& s, const router::Route& route, http::Request& request,
                          http::Header* free_from, http::Header* free_end);
  static void DropRequest(Slot& s);
  static void OnTaskEnd(void* slot);
  // The answer of an ended (or never started) handler, in its TaskBuffer.
  void Finish(Slot& s);

  Ring* const ring_;
  const router::Pipeline* const pipeline_;
  const Options options_;
  RunnerStats own_stats_;  // when Options::stats is null
  RunnerStats& stats_;
  FramePool frames_;
  std::vector<std::unique_ptr<Slot[]>> slabs_;
  std::vector<Slot*> slots_;   // by index
  Slot* free_ = nullptr;
  std::vector<Slot*> ready_;   // ended: their answers go in RunReady
  std::vector<Slot*> running_ready_;
  std::vector<Slot*> writers_;  // a Write waits for room in its pipe
  std::vector<Slot*> closing_;  // ended, its stream's last bytes wait for room
  std::vector<Slot*> pushing_;  // push streams to look at after each batch
  std::vector<Slot*> readers_;  // a ReadBody waits for the body's next bytes
  std::vector<Slot*> push_closed_;  // push streams stopped: their OnClose, their end
  std::unique_ptr<RingInbox> inbox_;
  std::vector<uint64_t> inbox_taken_;
  std::vector<std::pair<Slot*, int>> resume_;  // awaits to resume with a result
  std::vector<std::pair<Slot*, int>> running_resume_;
  std::vector<std::pair<uint64_t, uint32_t>> notices_;  // (user_data, stream)
  std::vector<std::pair<uint64_t, uint32_t>> running_notices_;
  size_t active_ = 0;
  size_t with_deadline_ = 0;   // active exchanges with a deadline
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_RUNNER_H_
