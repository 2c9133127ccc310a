// What the runner's tests share: a recording Ring that stands for the loop
// (its SQEs are recorded, the test delivers their completions in any
// order), a task as a connection makes one, and a fixture that builds a
// runner over them.
#ifndef URING_HTTP_TEST_ASYNC_RUNNER_HARNESS_H_
#define URING_HTTP_TEST_ASYNC_RUNNER_HARNESS_H_

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/async/runner.h"
#include "src/router/router.h"
#include "src/worker/slow_task.h"

namespace uring_http::async {

struct FakeRing final : Runner::Ring {
  struct Op {
    uint64_t user_data;
    int64_t timeout_ns;  // -1: a worker job
    worker::WorkerJob* job;
  };
  uint64_t OpUserData(uint32_t exchange, uint32_t generation) const override {
    return (uint64_t{exchange} << 32) | generation;
  }
  void PrepTimeout(uint64_t user_data, const __kernel_timespec* ts) override {
    ops.push_back({user_data, ts->tv_sec * 1'000'000'000 + ts->tv_nsec, nullptr});
  }
  void PrepCancel(uint64_t user_data) override { cancels.push_back(user_data); }
  void PrepIo(uint64_t user_data, const IoOp& op, const __kernel_timespec* ts) override {
    io_ops.push_back(op);
    ops.push_back({user_data, ts == nullptr ? 0 : ts->tv_sec * 1'000'000'000 + ts->tv_nsec, nullptr});
  }
  bool SubmitJob(worker::WorkerJob* job, uint64_t user_data) override {
    if (queue_full) return false;
    ops.push_back({user_data, -1, job});
    return true;
  }
  bool has_workers() const override { return workers; }
  void TaskDone(uint64_t user_data, uint32_t stream) override {
    done.push_back({user_data, stream});
    events.push_back("done");
  }
  worker::RingAddress address() const override { return {}; }  // messages go nowhere: the test calls OnInbox
  uint64_t InboxUserData() const override { return 0; }
  std::vector<IoOp> io_ops;
  void StreamNotify(uint64_t, uint32_t stream) override {
    ++notifies;
    events.push_back("notify " + std::to_string(stream));
  }

  // Completes the oldest operation with `res`.
  void Complete(Runner& runner, int res) {
    ASSERT_FALSE(ops.empty());
    const Op op = ops.front();
    ops.pop_front();
    runner.OnCompletion(static_cast<uint32_t>(op.user_data >> 32),
                        static_cast<uint32_t>(op.user_data), res);
  }
  // The worker side of the oldest job: runs it unless it was abandoned.
  void RunJob(Runner& runner) {
    ASSERT_FALSE(ops.empty());
    worker::WorkerJob* job = ops.front().job;
    ASSERT_NE(job, nullptr);
    if (job->Claim()) job->run(job);
    job->done.store(1, std::memory_order_release);
    Complete(runner, 0);
  }

  bool workers = true;
  bool queue_full = false;
  std::deque<Op> ops;
  std::vector<uint64_t> cancels;
  std::vector<std::pair<uint64_t, uint32_t>> done;
  int notifies = 0;
  std::vector<std::string> events;
};

// A task as a connection makes one: the head, an empty body, no Allow, in
// a 4 KiB chunk as HTTP/1's are (the runner parses the request into its
// rest), or (`exact`) in just the memory it needs, as HTTP/2's are.
struct TaskMemory {
  static constexpr size_t kChunk = 4096;
  explicit TaskMemory(std::string_view head, uint32_t stream = 0, bool exact = false) {
    const size_t need = sizeof(worker::TaskBuffer) + head.size();
    const size_t size = exact || need > kChunk ? need : kChunk;
    memory = std::malloc(size);
    task = new (memory) worker::TaskBuffer();
    task->head_len = static_cast<uint32_t>(head.size());
    task->capacity = static_cast<uint32_t>(size - sizeof(worker::TaskBuffer));
    task->stream = stream;
    std::memcpy(task->data(), head.data(), head.size());
  }
  ~TaskMemory() {
    task->~TaskBuffer();
    std::free(memory);
  }
  void* memory;
  worker::TaskBuffer* task;
};

constexpr std::string_view kGet = "GET /x?ms=5 HTTP/1.1\r\nHost: t\r\nAccept: */*\r\n\r\n";

class RunnerTest : public ::testing::Test {
 protected:
  Runner& MakeRunner(uint32_t max_exchanges = 16, size_t pipe_bytes = 0) {
    Runner::Options options;
    if (pipe_bytes != 0) options.stream_pipe_bytes = pipe_bytes;
    options.max_exchanges = max_exchanges;
    options.preallocate = 4;
    options.stats = &stats;
    runner = std::make_unique<Runner>(&ring, &router.pipeline(), options);
    return *runner;
  }
  const router::Route& AddRoute(router::AsyncHandler handler, router::RouteOptions options = {}) {
    const std::string path = "/r" + std::to_string(++routes);
    EXPECT_TRUE(router.Async("GET", path, std::move(handler), std::move(options)).ok());
    return *router.Find("GET", path).route;
  }
  void TearDown() override { runner.reset(); }

  router::Router router;
  int routes = 0;
  FakeRing ring;
  RunnerStats stats;
  std::unique_ptr<Runner> runner;
};

// The response pipe's bytes, taken as the connection would send them.
inline std::string Drain(worker::TaskBuffer* task) {
  worker::BodyPipe* pipe = task->response_body.load();
  std::string out;
  if (pipe == nullptr) return out;
  for (;;) {
    const std::string_view piece = pipe->PeekAt(0);
    if (piece.empty()) break;
    out.append(piece);
    pipe->Consume(piece.size());
  }
  return out;
}

}  // namespace uring_http::async

#endif  // URING_HTTP_TEST_ASYNC_RUNNER_HARNESS_H_
