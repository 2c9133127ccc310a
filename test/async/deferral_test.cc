// Deferred answers (src/async/deferral.h): handlers written as FAST or
// SLOW ones keep their exchange's stream and write it from other threads
// after they return. Driven event by event with the runner's recording
// ring (runner_harness.h).
#include "src/async/deferral.h"

#include <cerrno>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/async/runner.h"
#include "test/async/runner_harness.h"

namespace uring_http::async {
namespace {

std::shared_ptr<PushStream> kept;  // the handler's stream, as a hub would keep it

TEST_F(RunnerTest, AnInlineHandlerDefersItsBodyToAnotherThread) {
  std::thread::id ran_on;
  const router::Route& route = AddRoute(Deferrable(
      [&ran_on](const http::Request& req, http::Response& res, Deferral& later) {
        ran_on = std::this_thread::get_id();
        res.set_status(202);
        res.set_content_type("text/plain");
        kept = later.Stream();
        EXPECT_EQ(later.Stream(), kept);  // the same stream each time
        // Written before the handler returns: it waits in the stream.
        EXPECT_EQ(kept->Write("early "), PushStream::Result::kSent);
        EXPECT_TRUE(res.AddHeader("X-Set-After-Stream", "1"));  // the head goes on return
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet, 3);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  EXPECT_EQ(ran_on, std::this_thread::get_id());  // inline, on the ring
  EXPECT_TRUE(ring.ops.empty());                  // no worker, no kernel operation
  r.RunReady();
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(ring.done.empty());  // the handler returned; the exchange lasts
  worker::StreamHead* head = t.task->stream_head.get();
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->status, 202);
  EXPECT_EQ(head->fields.Find("X-Set-After-Stream"), "1");
  EXPECT_EQ(Drain(t.task), "early ");
  std::thread producer([] {
    EXPECT_EQ(kept->Write("late"), PushStream::Result::kSent);
    EXPECT_TRUE(kept->End());
  });
  producer.join();
  r.OnInbox();
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(Drain(t.task), "late");
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_TRUE(t.task->response_body.load()->finished());
  EXPECT_FALSE(t.task->stream_broken);
  EXPECT_EQ(r.active(), 0u);
  kept.reset();
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, AnInlineHandlerThatDoesNotDeferAnswersAsUsual) {
  const router::Route& route =
      AddRoute(Deferrable([](const http::Request&, http::Response& res, Deferral& later) {
        EXPECT_FALSE(later.deferred());
        res.set_body("now");
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.body_view(), "now");
  EXPECT_EQ(t.task->response_body.load(), nullptr);
}

TEST_F(RunnerTest, AHandlerThatThrowsAfterDeferringIsA500AndItsStreamCloses) {
  const router::Route& route =
      AddRoute(Deferrable([](const http::Request&, http::Response&, Deferral& later) {
        kept = later.Stream();
        throw std::runtime_error("no");
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 500);
  EXPECT_EQ(kept->Write("x"), PushStream::Result::kClosed);
  kept.reset();
}

TEST_F(RunnerTest, AWorkerHandlerDefersAndItsThreadIsLetGo) {
  std::thread::id ran_on;
  const router::Route& route = AddRoute(DeferrableOnWorker(
      [&ran_on](const http::Request& req, http::Response& res, Deferral& later) {
        ran_on = std::this_thread::get_id();
        res.set_content_type("text/event-stream");
        kept = later.Stream();
        EXPECT_EQ(kept->Write(std::string("data: ") + std::string(req.QueryParam("ms").value()) +
                              "\n\n"),
                  PushStream::Result::kSent);
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ASSERT_EQ(ring.ops.size(), 1u);  // the worker job
  std::thread worker([&] { ring.RunJob(r); });
  worker.join();
  EXPECT_NE(ran_on, std::this_thread::get_id());
  r.RunReady();  // back on the ring: the head, and the write it made
  EXPECT_TRUE(ring.done.empty());
  EXPECT_EQ(Drain(t.task), "data: 5\n\n");
  // The worker is free; another thread ends the stream.
  std::thread ender([] { EXPECT_TRUE(kept->End()); });
  ender.join();
  r.OnInbox();
  r.OnBatchEnd();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_TRUE(t.task->response_body.load()->finished());
  kept.reset();
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, AWorkerHandlerWhoseStreamEndedBeforeItReturnedEndsTheExchange) {
  const router::Route& route =
      AddRoute(DeferrableOnWorker([](const http::Request&, http::Response&, Deferral& later) {
        std::shared_ptr<PushStream> s = later.Stream();
        EXPECT_EQ(s->Write("all"), PushStream::Result::kSent);
        EXPECT_TRUE(s->End());
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ring.RunJob(r);
  r.RunReady();
  r.OnBatchEnd();
  r.RunReady();
  EXPECT_EQ(Drain(t.task), "all");
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_TRUE(t.task->response_body.load()->finished());
  delete t.task->response_body.load();
}

TEST_F(RunnerTest, AClientGoneWhileTheWorkerHandlerRunsClosesItsStream) {
  const router::Route& route =
      AddRoute(DeferrableOnWorker([](const http::Request&, http::Response&, Deferral& later) {
        kept = later.Stream();
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  // The worker has claimed the job when the client leaves: it runs to its
  // end, and the stream it made is closed when the ring takes it.
  worker::WorkerJob* job = ring.ops.front().job;
  ASSERT_TRUE(job->Claim());
  t.task->stop.store(static_cast<uint8_t>(http::StopReason::kClientGone));
  r.Stop(t.task, http::StopReason::kClientGone);
  job->run(job);
  job->done.store(1, std::memory_order_release);
  ring.Complete(r, 0);
  r.RunReady();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->Write("x"), PushStream::Result::kClosed);
  EXPECT_EQ(kept->stop_reason(), http::StopReason::kClientGone);
  r.RunReady();
  EXPECT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(r.active(), 0u);
  kept.reset();
}

TEST_F(RunnerTest, WritesToAStreamMadeBeforeItsPushGoRightAfterTheHead) {
  // An ASYNC handler's two-step Push: bytes written between MakePush and
  // Push(made) go out with the head, while the handler is still running.
  const router::Route& route = AddRoute([](Exchange& ex) -> Task<> {
    std::shared_ptr<PushStream> made = ex.MakePush();
    EXPECT_EQ(made->Write("before"), PushStream::Result::kSent);
    kept = ex.Push(made);
    EXPECT_EQ(kept, made);
    (void)co_await ex.Sleep(std::chrono::seconds(1));
  });
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  EXPECT_EQ(Drain(t.task), "before");  // the handler sleeps still
  ring.Complete(r, -ETIME);
  EXPECT_TRUE(kept->End());
  r.OnInbox();
  r.OnBatchEnd();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  kept.reset();
  delete t.task->response_body.load();
}

std::shared_ptr<DeferredAnswer> answer;  // the handler's deferred answer, as a hub would keep it

// An inline handler that leaves its whole answer to the test (in `answer`).
router::AsyncHandler KeepAnswer() {
  return Deferrable([](const http::Request&, http::Response&, Deferral& later) {
    answer = later.Answer();
  });
}

TEST_F(RunnerTest, AWholeAnswerComesLaterFromAnotherThreadWithItsOwnStatus) {
  const router::Route& route =
      AddRoute(Deferrable([](const http::Request&, http::Response& res, Deferral& later) {
        EXPECT_TRUE(res.AddHeader("X-From-Handler", "kept"));
        answer = later.Answer();
        EXPECT_EQ(later.Answer(), answer);
        EXPECT_TRUE(later.deferred());
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  ASSERT_NE(answer, nullptr);
  EXPECT_TRUE(ring.done.empty());  // nothing has gone: no head, no pipe
  EXPECT_EQ(t.task->response_body.load(), nullptr);
  std::thread sender([] {
    EXPECT_TRUE(answer->Send(204, "", {{"X-Why", "nothing new"}}));
    EXPECT_FALSE(answer->Send(200, "twice"));  // once only
  });
  sender.join();
  r.OnInbox();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 204);
  EXPECT_EQ(t.task->response.FindHeader("X-Why"), "nothing new");
  EXPECT_EQ(t.task->response.FindHeader("X-From-Handler"), "kept");
  EXPECT_TRUE(answer->closed());
  EXPECT_EQ(answer->stop_reason(), http::StopReason::kNone);
  EXPECT_EQ(r.active(), 0u);
  answer.reset();
}

TEST_F(RunnerTest, AnAnswerSentBeforeTheWorkerHandlerReturnedIsTakenAtOnce) {
  const router::Route& route =
      AddRoute(DeferrableOnWorker([](const http::Request&, http::Response&, Deferral& later) {
        EXPECT_TRUE(later.Answer()->Send(201, "made"));
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  ring.RunJob(r);
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 201);
  EXPECT_EQ(t.task->response.body_view(), "made");
  r.OnInbox();  // the Send's late message finds the exchange over: nothing happens
  EXPECT_FALSE(r.has_ready());
}

TEST_F(RunnerTest, AClientGoneWhileAnAnswerIsAwaitedClosesItsHandle) {
  const router::Route& route = AddRoute(KeepAnswer());
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  t.task->stop.store(static_cast<uint8_t>(http::StopReason::kClientGone));
  r.Stop(t.task, http::StopReason::kClientGone);
  EXPECT_TRUE(answer->closed());  // at once
  EXPECT_EQ(answer->stop_reason(), http::StopReason::kClientGone);
  EXPECT_FALSE(answer->Send(200, "late"));
  r.OnInbox();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(r.active(), 0u);
  answer.reset();
}

TEST_F(RunnerTest, AnAnswerThatRacesTheClientLeavingResumesTheAwaitOnce) {
  const router::Route& route = AddRoute(KeepAnswer());
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  EXPECT_TRUE(answer->Send(200, "just in time"));
  r.OnInbox();  // its resume is queued ...
  r.Stop(t.task, http::StopReason::kClientGone);  // ... and the stop finds it taken
  r.RunReady();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(r.active(), 0u);
  answer.reset();
}

TEST_F(RunnerTest, ADrainLetsAWaitingAnswerStillCome) {
  const router::Route& route = AddRoute(KeepAnswer());
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  r.Stop(t.task, http::StopReason::kDraining);
  EXPECT_FALSE(answer->closed());
  EXPECT_TRUE(answer->Send(200, "before the shutdown"));
  r.OnInbox();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.body_view(), "before the shutdown");
  answer.reset();
}

TEST_F(RunnerTest, ARoutesDeadlineWhileAnAnswerIsAwaitedIsA503) {
  router::RouteOptions options;
  options.timeout = std::chrono::milliseconds(100);
  const router::Route& route = AddRoute(KeepAnswer(), options);
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, /*now_ns=*/1'000'000'000));
  r.RunReady();
  r.OnTick(1'100'000'001);
  EXPECT_EQ(answer->stop_reason(), http::StopReason::kDeadline);
  EXPECT_FALSE(answer->Send(200, "too late"));
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 503);
  answer.reset();
}

TEST_F(RunnerTest, AStreamAfterAnAnswerIsClosed) {
  const router::Route& route =
      AddRoute(Deferrable([](const http::Request&, http::Response&, Deferral& later) {
        answer = later.Answer();
        kept = later.Stream();
      }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  EXPECT_EQ(kept->Write("x"), PushStream::Result::kClosed);
  EXPECT_TRUE(answer->Send(200, "the answer"));
  r.OnInbox();
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.body_view(), "the answer");
  answer.reset();
  kept.reset();
}

TEST_F(RunnerTest, AFullWorkerQueueIsA503) {
  ring.queue_full = true;
  const router::Route& route = AddRoute(
      DeferrableOnWorker([](const http::Request&, http::Response&, Deferral&) { FAIL(); }));
  Runner& r = MakeRunner();
  TaskMemory t(kGet);
  ASSERT_TRUE(r.Start(t.task, route, 1, 0));
  r.RunReady();
  ASSERT_EQ(ring.done.size(), 1u);
  EXPECT_EQ(t.task->response.status(), 503);
}

}  // namespace
}  // namespace uring_http::async
