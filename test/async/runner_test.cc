// The ring's coroutine runner driven event by event without a kernel: a
// recording Ring stands for the loop (its SQEs are recorded, the test
// delivers their completions in any order), so every await, cancel,
// deadline and worker-call path is checked exactly.
#include "src/async/runner.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/router/router.h"
#include "src/worker/slow_task.h"
#include "test/async/runner_harness.h"

namespace uring_http::async {
namespace {

using namespace std::chrono_literals;

TEST_F(RunnerTest, ASleepIsOneTimeoutAndTheAnswerGoesAfterTheBatch) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    absl::Status slept = co_await ex.Sleep(5ms);
    ex.response().set_body(slept.ok() ? "slept " + std::string(ex.request().QueryParam("ms").value())
                                      : "no");
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet, /*stream=*/7);
  ASSERT_TRUE(r.Start(t.task, route, /*done_user_data=*/42, 0));
  ASSERT_EQ(ring.ops.size(), 1u);
  EXPECT_EQ(ring.ops[0].timeout_ns, 5'000'000);
  EXPECT_EQ(r.active(), 1u);
  ring.Complete(r, -ETIME);
  // Ended, but the connection hears of it only in RunReady.
  EXPECT_TRUE(ring.done.empty());
  ASSERT_TRUE(r.has_ready());
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(ring.done[0], (std::pair<uint64_t, uint32_t>(42, 7)));
  EXPECT_EQ(t.task->state.load(), worker::TaskBuffer::kDone);
  EXPECT_EQ(t.task->response.status(), 200);
  EXPECT_EQ(t.task->response.body_view(), "slept 5");
  EXPECT_EQ(r.active(), 0u);
  EXPECT_EQ(stats.started.Get(), 1u);
  EXPECT_EQ(stats.active.Get(), 0u);
}

TEST_F(RunnerTest, RequestsAreParsedIntoTheTasksChunkWhenTheyFitElseIntoTheSlotsSpare) {
  // A chunk's rest holds the request and as many fields as fit; a head
  // with more, or a task in just its own memory (HTTP/2's), uses the
  // exchange slot's spare. Each handler sees its last field whichever.
  std::string seen;
  const void* request_at = nullptr;
  const router::Route& route = AddRoute([&](Exchange& ex) -> Task<> {
    seen = std::string(ex.request().FindHeader("x-last")) + " " +
           std::to_string(ex.request().num_headers);
    request_at = &ex.request();
    co_return;
  });
  Runner& r = MakeRunner();
  for (const bool exact : {false, true}) {
    for (const int fields : {2, 30, 31, 32, 60, 100}) {
      std::string head = "GET /x HTTP/1.1\r\nHost: t\r\n";
      for (int i = 0; i < fields - 2; ++i) head += "X-F" + std::to_string(i) + ": v\r\n";
      head += "X-Last: " + std::to_string(fields) + "\r\n\r\n";
      TaskMemory t(head, 0, exact);
      ASSERT_TRUE(r.Start(t.task, route, 1, 0));
      r.RunReady();
      EXPECT_EQ(t.task->response.status(), 200) << fields;
      EXPECT_EQ(seen, std::to_string(fields) + " " + std::to_string(fields)) << fields;
      const char* begin = t.task->data();
      const bool in_task = request_at >= begin && request_at < begin + t.task->capacity;
      // 30 fields fit a chunk's rest (about 1.6 KB is free past the task
      // and its head); 100 do not.
      if (exact || fields == 100) {
        EXPECT_FALSE(in_task) << fields << (exact ? " exact" : "");
      } else if (fields <= 30) {
        EXPECT_TRUE(in_task) << fields;
      }
    }
  }
}

TEST_F(RunnerTest, AZeroSleepYieldsWithoutAKernelTimeout) {
  std::string seen;
  const router::Route& route = AddRoute([&seen](Exchange& ex) -> Task<> {
    absl::Status first = co_await ex.Sleep(0ms);
    seen = first.ToString();
    absl::Status second = co_await ex.Sleep(-5ms);
    seen += " " + second.ToString();
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  // Suspended, with no SQE: it goes on in RunReady, after the batch.
  EXPECT_TRUE(ring.ops.empty());
  EXPECT_TRUE(seen.empty());
  ASSERT_TRUE(r.has_ready());
  r.RunReady();  // the first yield returns; the second is queued
  EXPECT_EQ(seen, "OK");
  EXPECT_TRUE(ring.done.empty());
  ASSERT_TRUE(r.has_ready());
  r.RunReady();
  EXPECT_EQ(seen, "OK OK");
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_TRUE(ring.ops.empty());
  EXPECT_TRUE(ring.cancels.empty());
}

TEST_F(RunnerTest, AZeroSleepStoppedBeforeItResumesReturnsCancelled) {
  std::string seen;
  const router::Route& route = AddRoute([&seen](Exchange& ex) -> Task<> {
    absl::Status slept = co_await ex.Sleep(0ms);
    seen = slept.ToString();
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  t.task->stop.store(static_cast<uint8_t>(http::StopReason::kClientGone));
  r.Stop(t.task, http::StopReason::kClientGone);
  // Nothing went to the kernel, so nothing is cancelled there.
  EXPECT_TRUE(ring.cancels.empty());
  r.RunReady();
  EXPECT_EQ(seen, "CANCELLED: the client is gone");
  r.RunReady();
  EXPECT_EQ(ring.done.size(), 1u);
}

TEST_F(RunnerTest, AHandlerThatEndsAtOnceIsStillAnsweredOutsideStart) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    ex.response().set_status(201);
    co_return;
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  EXPECT_TRUE(ring.done.empty());  // never from inside the connection's call
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 201);
}

TEST_F(RunnerTest, TheClientLeavingCancelsTheTimeoutAndTheAwaitSaysSo) {
  std::string seen;
  const router::Route& route = AddRoute([&seen](Exchange& ex) -> Task<> {
    absl::Status slept = co_await ex.Sleep(10s);
    seen = slept.ToString();
    // Every later await returns at once, cancelled, with no operation.
    absl::Status again = co_await ex.Sleep(1s);
    seen += " | " + again.ToString();
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  t.task->stop.store(static_cast<uint8_t>(http::StopReason::kClientGone));
  r.Stop(t.task, http::StopReason::kClientGone);
  ASSERT_EQ(ring.cancels.size(), 1u);
  EXPECT_EQ(ring.cancels[0], ring.ops[0].user_data);  // the timeout's own
  // A second stop does not cancel twice.
  r.Stop(t.task, http::StopReason::kClientGone);
  EXPECT_EQ(ring.cancels.size(), 1u);
  ring.Complete(r, -ECANCELED);
  EXPECT_TRUE(ring.ops.empty());
  r.RunReady();
  EXPECT_EQ(seen, "CANCELLED: the client is gone | CANCELLED: the client is gone");
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(stats.cancelled.Get(), 1u);
}

TEST_F(RunnerTest, ATimeoutThatRanOutBeforeItsCancelLandedStillSlept) {
  absl::Status slept;
  const router::Route& route = AddRoute([&slept](Exchange& ex) -> Task<> {
    slept = co_await ex.Sleep(1ms);
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.Stop(t.task, http::StopReason::kClientGone);
  ring.Complete(r, -ETIME);  // it had already expired: the cancel finds nothing
  r.RunReady();
  EXPECT_TRUE(slept.ok()) << slept;
}

TEST_F(RunnerTest, ASocketAwaitIsOneSqeItsTimeoutSaysTimedOutAndAStopCancelsIt) {
  std::vector<int> results;
  const router::Route& route = AddRoute([&results](Exchange& ex) -> Task<> {
    char buf[16];
    IoOp op;
    op.kind = IoOp::Kind::kRecv;
    op.fd = 7;
    op.buf = buf;
    op.len = sizeof(buf);
    op.timeout_ns = 2'000'000;
    int got = co_await ex.Io(op);
    results.push_back(got);   // its result as the ring gave it
    got = co_await ex.Io(op);
    results.push_back(got);   // -ECANCELED with no stop: the linked timeout's
    op.timeout_ns = 0;
    got = co_await ex.Io(op);
    results.push_back(got);   // stopped while it ran
    got = co_await ex.Io(op);
    results.push_back(got);   // stopped before: no operation at all
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ASSERT_EQ(ring.io_ops.size(), 1u);
  EXPECT_EQ(ring.io_ops[0].fd, 7);
  EXPECT_EQ(ring.io_ops[0].len, 16u);
  EXPECT_EQ(ring.ops[0].timeout_ns, 2'000'000);
  ring.Complete(r, 5);
  ring.Complete(r, -ECANCELED);
  ASSERT_EQ(ring.ops.size(), 1u);
  EXPECT_EQ(ring.ops[0].timeout_ns, 0);
  r.Stop(t.task, http::StopReason::kClientGone);
  ASSERT_EQ(ring.cancels.size(), 1u);
  EXPECT_EQ(ring.cancels[0], ring.ops[0].user_data);
  ring.Complete(r, -ECANCELED);
  EXPECT_TRUE(ring.ops.empty());
  r.RunReady();
  EXPECT_EQ(results, (std::vector<int>{5, -ETIMEDOUT, -ECANCELED, -ECANCELED}));
  EXPECT_EQ(ring.io_ops.size(), 3u);
  ASSERT_EQ(ring.done.size(), 1u);
}

TEST_F(RunnerTest, ADrainIsReportedButCancelsNothing) {
  http::StopReason seen = http::StopReason::kNone;
  const router::Route& route = AddRoute([&seen](Exchange& ex) -> Task<> {
    absl::Status slept = co_await ex.Sleep(1s);
    EXPECT_TRUE(slept.ok());
    seen = ex.stop_reason();
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.Stop(t.task, http::StopReason::kDraining);
  EXPECT_TRUE(ring.cancels.empty());
  ring.Complete(r, -ETIME);
  r.RunReady();
  EXPECT_EQ(seen, http::StopReason::kDraining);
  EXPECT_EQ(stats.cancelled.Get(), 0u);
}

TEST_F(RunnerTest, ARoutesDeadlineCancelsTheAwaitAndAnswers503) {
  router::RouteOptions options;
  options.timeout = 100ms;
  const router::Route& route = AddRoute(
      [](Exchange& ex) -> Task<> {
        (void)co_await ex.Sleep(10s);
        ex.response().set_body("too late");
      },
      options);
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, /*now_ns=*/1'000'000'000));
  r.OnTick(1'050'000'000);
  EXPECT_TRUE(ring.cancels.empty());
  r.OnTick(1'100'000'001);
  ASSERT_EQ(ring.cancels.size(), 1u);
  EXPECT_EQ(static_cast<http::StopReason>(t.task->stop.load()), http::StopReason::kDeadline);
  ring.Complete(r, -ECANCELED);
  r.RunReady();
  EXPECT_EQ(t.task->response.status(), 503);
  EXPECT_NE(t.task->response.body_view(), "too late");
  EXPECT_EQ(stats.deadlines.Get(), 1u);
}

TEST_F(RunnerTest, AWorkerCallRunsOnTheWorkerSideAndItsResultComesBack) {
  std::string got;
  const router::Route& route = AddRoute([&got](Exchange& ex) -> Task<> {
    absl::StatusOr<std::string> v = co_await ex.OnWorker([] { return std::string("computed"); });
    got = v.ok() ? *v : v.status().ToString();
    absl::Status void_call = co_await ex.OnWorker([] {});
    got += void_call.ok() ? " ok" : " not ok";
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ASSERT_EQ(ring.ops.size(), 1u);
  EXPECT_EQ(ring.ops[0].timeout_ns, -1);
  ring.RunJob(r);
  ring.RunJob(r);
  r.RunReady();
  EXPECT_EQ(got, "computed ok");
  EXPECT_EQ(stats.worker_calls.Get(), 2u);
}

TEST_F(RunnerTest, AWorkerCallStillQueuedWhenTheClientLeavesIsNotRun) {
  bool ran = false;
  std::string got;
  const router::Route& route = AddRoute([&](Exchange& ex) -> Task<> {
    absl::StatusOr<int> v = co_await ex.OnWorker([&ran] {
      ran = true;
      return 1;
    });
    got = v.status().ToString();
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.Stop(t.task, http::StopReason::kClientGone);
  EXPECT_TRUE(ring.cancels.empty());  // a job is abandoned, not cancelled on the ring
  ring.RunJob(r);                     // the worker finds it abandoned
  r.RunReady();
  EXPECT_FALSE(ran);
  EXPECT_EQ(got, "CANCELLED: the client is gone");
}

TEST_F(RunnerTest, AWorkerCallsThrowIsRethrownAndTheAnswerIs500) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    (void)co_await ex.OnWorker([]() -> int { throw std::runtime_error("worker boom"); });
    ex.response().set_body("unreached");
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ring.RunJob(r);
  r.RunReady();
  EXPECT_EQ(t.task->response.status(), 500);
}

TEST_F(RunnerTest, WithoutWorkersACallRunsHereAndAFullQueueIsResourceExhausted) {
  std::string got;
  const router::Route& route = AddRoute([&got](Exchange& ex) -> Task<> {
    absl::StatusOr<int> v = co_await ex.OnWorker([] { return 7; });
    got = v.ok() ? std::to_string(*v) : v.status().ToString();
  });
  Runner& r = MakeRunner();
  ring.workers = false;
  TaskMemory t1(kGet);
  ASSERT_TRUE(r.Start(t1.task, route, 1, 0));
  EXPECT_TRUE(ring.ops.empty());
  r.RunReady();
  EXPECT_EQ(got, "7");
  ring.workers = true;
  ring.queue_full = true;
  TaskMemory t2(kGet);
  ASSERT_TRUE(r.Start(t2.task, route, 2, 0));
  r.RunReady();
  EXPECT_EQ(got, "RESOURCE_EXHAUSTED: the worker queue is full");
}

TEST_F(RunnerTest, AThrowAfterAnAwaitIs500AndTheFrameIsFreed) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    (void)co_await ex.Sleep(1ms);
    throw std::runtime_error("async boom");
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ring.Complete(r, -ETIME);
  r.RunReady();
  EXPECT_EQ(t.task->response.status(), 500);
  EXPECT_EQ(r.frames().stats().in_use, 0u);
}

TEST_F(RunnerTest, ABeforeThatAnswersSkipsTheHandler) {
  bool ran = false;
  router::RouteOptions options;
  router::Middleware deny;
  deny.before = [](const http::Request&, http::Response& response) {
    response.set_status(401);
    return router::Flow::kAnswered;
  };
  int afters = 0;
  deny.after = [&afters](const http::Request&, http::Response&) { ++afters; };
  options.middleware = {deny};
  const router::Route& route = AddRoute(
      [&ran](Exchange&) -> Task<> {
        ran = true;
        co_return;
      },
      options);
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  EXPECT_FALSE(ran);
  EXPECT_EQ(t.task->response.status(), 401);
  EXPECT_EQ(afters, 1);
}

TEST_F(RunnerTest, AFullRunnerRefusesAndAFreedExchangeIsReused) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    (void)co_await ex.Sleep(1ms);
  });
  Runner& r = MakeRunner(/*max_exchanges=*/1);
  TaskMemory t1(kGet), t2(kGet);
  ASSERT_TRUE(r.Start(t1.task, route, 1, 0));
  EXPECT_FALSE(r.Start(t2.task, route, 2, 0));
  EXPECT_EQ(stats.refused.Get(), 1u);
  const uint64_t first = ring.ops[0].user_data;
  ring.Complete(r, -ETIME);
  r.RunReady();
  ASSERT_TRUE(r.Start(t2.task, route, 2, 0));
  // The same exchange, a new generation: the old operation's user_data
  // cannot resume the new one.
  EXPECT_EQ(ring.ops[0].user_data >> 32, first >> 32);
  EXPECT_NE(ring.ops[0].user_data, first);
  ring.Complete(r, -ETIME);
  r.RunReady();
}

TEST_F(RunnerTest, TheSteadyStateTakesNoFrameFromTheHeap) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    (void)co_await ex.Sleep(1ms);
    ex.response().set_status(204);
  });
  Runner& r = MakeRunner();
  for (int i = 0; i < 1000; ++i) {
    TaskMemory t(kGet);
    ASSERT_TRUE(r.Start(t.task, route, 1, 0));
    ring.Complete(r, -ETIME);
    r.RunReady();
    ASSERT_EQ(t.task->response.status(), 204);
  }
  EXPECT_EQ(r.frames().stats().slabs, 0u);
  EXPECT_EQ(r.frames().stats().oversized, 0u);
}

}  // namespace
}  // namespace uring_http::async

namespace uring_http::async {
namespace {

Task<int> TwoNaps(Exchange& ex) {
  absl::Status nap1 = co_await ex.Sleep(std::chrono::milliseconds(5));
  if (!nap1.ok()) co_return -1;
  absl::Status nap2 = co_await ex.Sleep(std::chrono::milliseconds(5));
  if (!nap2.ok()) co_return -2;
  co_return 2;
}

TEST_F(RunnerTest, AnAwaitedTaskRunsOnTheSameExchange) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    const int naps = co_await TwoNaps(ex);
    ex.response().set_body("naps=" + std::to_string(naps));
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ASSERT_EQ(ring.ops.size(), 1u);
  ring.Complete(r, -ETIME);
  ASSERT_EQ(ring.ops.size(), 1u);
  ring.Complete(r, -ETIME);
  ASSERT_TRUE(r.has_ready());
  r.RunReady();
  EXPECT_EQ(t.task->response.body_view(), "naps=2");
}

}  // namespace
}  // namespace uring_http::async

namespace uring_http::async {
namespace {

// The connection's side of a streamed answer: what it would send (the
// pipe's bytes, consumed), and the pipe itself.
TEST_F(RunnerTest, WritesStreamThroughThePipeAndTheHeadIsSeenBeforeTheEnd) {
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    ex.response().set_content_type("text/event-stream");
    absl::Status a = co_await ex.Write("data: 1\n\n");
    EXPECT_TRUE(a.ok());
    EXPECT_TRUE(ex.streaming());
    (void)co_await ex.Sleep(std::chrono::milliseconds(1));
    absl::Status b = co_await ex.Write("data: 2\n\n");
    EXPECT_TRUE(b.ok());
    ex.response().body() = "tail";  // follows the writes
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet, 3);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  // The first write published the pipe and the head: a notice, delivered
  // in RunReady (never from inside Start).
  EXPECT_EQ(ring.notifies, 0);
  ASSERT_NE(t.task->response_body.load(), nullptr);
  ASSERT_NE(t.task->stream_head, nullptr);
  EXPECT_EQ(t.task->stream_head->fields.Find("content-type").value_or(""), "text/event-stream");
  r.RunReady();
  EXPECT_EQ(ring.notifies, 1);
  EXPECT_EQ(Drain(t.task), "data: 1\n\n");
  ring.Complete(r, -ETIME);
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(Drain(t.task), "data: 2\n\ntail");
  EXPECT_TRUE(t.task->response_body.load()->finished());
  EXPECT_EQ(ring.events.front(), "notify 3");
  EXPECT_EQ(ring.events.back(), "done");
  delete t.task->response_body.load();  // the connection's, once published
}

TEST_F(RunnerTest, AWriteBeyondTheBoundWaitsUntilTheClientHasTakenBytes) {
  bool resumed = false;
  const router::Route& route = AddRoute([&resumed](Exchange& ex) -> Task<> {
    absl::Status a = co_await ex.Write(std::string(3000, 'a'));  // fills a 1 KiB pipe and more
    resumed = true;
    EXPECT_TRUE(a.ok()) << a;
    absl::Status b = co_await ex.Write("b");
    EXPECT_TRUE(b.ok()) << b;
  });
  Runner& r = MakeRunner(16, /*pipe_bytes=*/1024);
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_FALSE(resumed);  // nothing was read: it waits
  std::string got = Drain(t.task);
  EXPECT_EQ(got.size(), 1024u);
  r.OnBatchEnd();  // room: the staged bytes move on
  r.RunReady();
  EXPECT_FALSE(resumed);  // 952 more fit, 1024 of 3000 still staged
  got += Drain(t.task);
  r.OnBatchEnd();
  r.RunReady();
  got += Drain(t.task);
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_TRUE(resumed);
  got += Drain(t.task);
  EXPECT_EQ(got, std::string(3000, 'a') + "b");
  ASSERT_EQ(ring.done.size(), 1u);
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, AWaitingWriteIsCancelledWhenTheClientLeaves) {
  absl::Status seen;
  const router::Route& route = AddRoute([&seen](Exchange& ex) -> Task<> {
    seen = co_await ex.Write(std::string(5000, 'x'));
  });
  Runner& r = MakeRunner(16, 1024);
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  // The connection goes: its pipe is aborted and the task stopped.
  t.task->response_body.load()->Abort();
  r.Stop(t.task, http::StopReason::kClientGone);
  r.RunReady();
  EXPECT_EQ(seen.code(), absl::StatusCode::kCancelled) << seen;
  ASSERT_EQ(ring.done.size(), 1u);
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, ADrainStopsAStreamButNotAnAnswerBeingMade) {
  absl::Status stream_sleep, answer_sleep;
  const router::Route& streaming = AddRoute([&stream_sleep](Exchange& ex) -> Task<> {
    (void)co_await ex.Write("event\n");
    stream_sleep = co_await ex.Sleep(std::chrono::seconds(30));
  });
  const router::Route& making = AddRoute([&answer_sleep](Exchange& ex) -> Task<> {
    answer_sleep = co_await ex.Sleep(std::chrono::milliseconds(30));
  });
  Runner& r = MakeRunner();
  TaskMemory t1(kGet), t2(kGet);
  ASSERT_TRUE(r.Start(t1.task, streaming, 1, 0));
  ASSERT_TRUE(r.Start(t2.task, making, 2, 0));
  r.Stop(t1.task, http::StopReason::kDraining);
  r.Stop(t2.task, http::StopReason::kDraining);
  ASSERT_EQ(ring.cancels.size(), 1u);  // the stream's sleep only
  ring.Complete(r, -ECANCELED);
  ring.Complete(r, -ETIME);
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(stream_sleep.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(answer_sleep.ok());
  EXPECT_EQ(ring.done.size(), 2u);
  EXPECT_EQ(Drain(t1.task), "event\n");
  EXPECT_TRUE(t1.task->response_body.load()->finished());  // ended, not cut
  EXPECT_FALSE(t1.task->stream_broken);
  delete t1.task->response_body.load();
}

}  // namespace
}  // namespace uring_http::async

namespace uring_http::async {
namespace {

std::shared_ptr<PushStream> pushed;  // the handler's push, for the test's "producer"

router::AsyncHandler PushHandler() {
  return [](Exchange& ex) -> Task<> {
    http::Response& r = ex.response();
    r.set_content_type("text/event-stream");
    pushed = ex.Push();
    co_return;
  };
}

TEST_F(RunnerTest, APushFromAnotherThreadStreamsAndItsEndEndsTheExchange) {
  const router::Route& route = AddRoute(PushHandler());
  Runner& r = MakeRunner();
  TaskMemory t(kGet, 5);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();  // the head's notice; the handler has ended, the exchange has not
  ASSERT_NE(pushed, nullptr);
  EXPECT_EQ(ring.notifies, 1);
  EXPECT_TRUE(ring.done.empty());
  std::thread producer([] {
    EXPECT_EQ(pushed->Write("data: a\n\n"), PushStream::Result::kSent);
    EXPECT_EQ(pushed->Write("data: b\n\n"), PushStream::Result::kSent);
  });
  producer.join();
  r.OnInbox();
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(Drain(t.task), "data: a\n\ndata: b\n\n");
  EXPECT_TRUE(ring.done.empty());
  std::thread ender([] { EXPECT_TRUE(pushed->End()); });
  ender.join();
  EXPECT_EQ(pushed->Write("late"), PushStream::Result::kClosed);
  r.OnInbox();
  r.OnBatchEnd();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_TRUE(t.task->response_body.load()->finished());
  EXPECT_FALSE(t.task->stream_broken);
  EXPECT_TRUE(pushed->closed());
  EXPECT_EQ(pushed->stop_reason(), http::StopReason::kNone);
  EXPECT_EQ(r.active(), 0u);
  pushed.reset();
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, APushIsBoundedAndSaysWhenItHasDrained) {
  const router::Route& route = AddRoute(PushHandler());
  Runner& r = MakeRunner(16, /*pipe_bytes=*/1024);
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  int drains = 0;
  pushed->OnDrain([&drains] { ++drains; });
  const std::string piece(600, 'p');
  EXPECT_EQ(pushed->Write(piece), PushStream::Result::kBackpressure);  // past half the bound
  EXPECT_EQ(pushed->Write(piece), PushStream::Result::kDropped);       // past the bound
  EXPECT_EQ(pushed->buffered(), 600u);
  r.OnInbox();  // the ring takes it into the pipe: still unsent
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(pushed->buffered(), 600u);
  EXPECT_EQ(pushed->Write(piece), PushStream::Result::kDropped);
  EXPECT_EQ(drains, 0);
  EXPECT_EQ(Drain(t.task), piece);  // the client reads
  r.OnBatchEnd();                   // the ring looks again
  EXPECT_EQ(drains, 1);
  EXPECT_EQ(pushed->buffered(), 0u);
  // A write larger than the bound goes into an empty stream.
  EXPECT_EQ(pushed->Write(std::string(3000, 'L')), PushStream::Result::kBackpressure);
  r.OnInbox();
  std::string got;
  for (int i = 0; i < 5; ++i) {
    r.OnBatchEnd();
    got += Drain(t.task);
  }
  EXPECT_EQ(got, std::string(3000, 'L'));
  pushed.reset();
  r.Stop(t.task, http::StopReason::kClientGone);
  r.RunReady();
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, AClientLeavingClosesThePushAndTellsItsWriter) {
  const router::Route& route = AddRoute(PushHandler());
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  http::StopReason told = http::StopReason::kNone;
  pushed->OnClose([&told](http::StopReason why) { told = why; });
  t.task->response_body.load()->Abort();  // the connection lets go
  r.Stop(t.task, http::StopReason::kClientGone);
  EXPECT_EQ(pushed->Write("x"), PushStream::Result::kClosed);  // at once
  EXPECT_EQ(pushed->stop_reason(), http::StopReason::kClientGone);
  r.RunReady();
  EXPECT_EQ(told, http::StopReason::kClientGone);
  ASSERT_EQ(ring.done.size(), 1u);
  // A write the ring had not taken yet is simply gone.
  r.OnInbox();
  pushed.reset();
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, ADrainEndsAPushCleanlyAndAWriteAfterAPushFails) {
  absl::Status write_after_push;
  const router::Route& route = AddRoute([&write_after_push](Exchange& ex) -> Task<> {
    pushed = ex.Push();
    write_after_push = co_await ex.Write("no");
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  EXPECT_EQ(write_after_push.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(pushed->Write("event\n\n"), PushStream::Result::kSent);
  r.OnInbox();
  r.Stop(t.task, http::StopReason::kDraining);
  EXPECT_EQ(pushed->Write("more"), PushStream::Result::kClosed);
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(Drain(t.task), "event\n\n");
  EXPECT_TRUE(t.task->response_body.load()->finished());
  EXPECT_FALSE(t.task->stream_broken);  // ended, not cut
  pushed.reset();
  delete t.task->response_body.load();
}

}  // namespace
}  // namespace uring_http::async

namespace uring_http::async {
namespace {

TEST_F(RunnerTest, ABufferedBodyIsReadAtOnce) {
  std::string got;
  const router::Route& route = AddRoute([&got](Exchange& ex) -> Task<> {
    char buf[3];
    for (;;) {
      absl::StatusOr<size_t> n = co_await ex.ReadBody(buf, sizeof buf);
      if (!n.ok() || *n == 0) break;
      got.append(buf, *n);
    }
  });
  Runner& r = MakeRunner();
  const std::string_view head = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 7\r\n\r\n";
  void* memory = std::malloc(sizeof(worker::TaskBuffer) + head.size() + 7);
  auto* task = new (memory) worker::TaskBuffer();
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = 7;
  std::memcpy(task->data(), head.data(), head.size());
  std::memcpy(task->data() + head.size(), "content", 7);
  ASSERT_TRUE(r.Start(task, route, 1, 0));
  r.RunReady();
  EXPECT_EQ(got, "content");
  task->~TaskBuffer();
  std::free(memory);
}

TEST_F(RunnerTest, AStreamedBodyIsReadAsTheConnectionFeedsIt) {
  std::string got;
  absl::Status failed;
  const router::Route& route = AddRoute([&](Exchange& ex) -> Task<> {
    char buf[4096];
    for (;;) {
      absl::StatusOr<size_t> n = co_await ex.ReadBody(buf, sizeof buf);
      if (!n.ok()) {
        failed = n.status();
        co_return;
      }
      if (*n == 0) break;
      got.append(buf, *n);
    }
    ex.response().set_body(std::to_string(got.size()));
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  worker::BodyPipe pipe(1024);
  t.task->request_body = &pipe;
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_TRUE(got.empty());  // nothing yet: it waits
  // The connection feeds the pipe; a full pipe asks to hear of room.
  std::string body(3000, 'b');
  size_t fed = pipe.Write(body.data(), body.size());
  EXPECT_EQ(fed, 1024u);
  EXPECT_TRUE(pipe.ArmWriteNotify(512));
  r.OnBatchEnd();
  r.RunReady();  // read all 1024: the connection is told of the room
  EXPECT_EQ(got.size(), 1024u);
  EXPECT_EQ(ring.notifies, 1);
  while (fed < body.size()) {
    fed += pipe.Write(body.data() + fed, body.size() - fed);
    r.OnBatchEnd();
    r.RunReady();
  }
  pipe.Finish();
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(got, body);
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.body_view(), "3000");
  EXPECT_TRUE(failed.ok());

  // A body that fails (too large) fails the read with its reason.
  TaskMemory t2(kGet);
  worker::BodyPipe pipe2(1024);
  t2.task->request_body = &pipe2;
  got.clear();
  ASSERT_TRUE(r.Start(t2.task, route, 2, 0));
  pipe2.Abort(static_cast<uint8_t>(http::BodyError::kTooLarge));
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(failed.code(), absl::StatusCode::kOutOfRange) << failed;
}

}  // namespace
}  // namespace uring_http::async
