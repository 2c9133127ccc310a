// WorkerPool's jobs (WorkerJob, src/worker/slow_task.h): a job its owner
// abandoned while it waited in the queue is skipped and counted, and still
// comes back (done); a job and its owner racing to claim and to abandon it
// agree on who won, every time (run under TSan too).
#include "src/worker/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace uring_http::worker {
namespace {

struct CountingJob : WorkerJob {
  std::atomic<int> runs{0};
  int written = 0;  // plain data the job writes and its owner reads after done
};

void Count(WorkerJob* j) {
  auto* job = static_cast<CountingJob*>(j);
  job->written = 42;
  job->runs.fetch_add(1, std::memory_order_relaxed);
}

bool WaitDone(const WorkerJob& job) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (job.done.load(std::memory_order_acquire) != 1) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

SlowTask TaskFor(WorkerJob* job) {
  job->run = &Count;
  job->ring = RingAddress{};  // no ring: the post is dropped (kTargetGone)
  SlowTask t;
  t.job = job;
  return t;
}

TEST(WorkerPoolJobTest, AbandonedJobIsSkippedAndStillComesBack) {
  WorkerPool pool(1, 16, http::ParseLimits{}, false, 0, "test-jobs");
  pool.Start();
  CountingJob abandoned;
  CountingJob kept;
  abandoned.Prepare();
  kept.Prepare();
  ASSERT_TRUE(abandoned.Abandon());
  EXPECT_FALSE(abandoned.Abandon()) << "abandoned once";
  ASSERT_TRUE(pool.Submit(TaskFor(&abandoned)));
  ASSERT_TRUE(pool.Submit(TaskFor(&kept)));
  ASSERT_TRUE(WaitDone(abandoned));
  ASSERT_TRUE(WaitDone(kept));
  EXPECT_EQ(abandoned.runs.load(), 0);
  EXPECT_EQ(kept.runs.load(), 1);
  EXPECT_EQ(kept.written, 42);
  EXPECT_FALSE(kept.Abandon()) << "a job a worker ran cannot be abandoned";
  pool.Stop();
  const WorkerPoolStats s = pool.Stats();
  EXPECT_EQ(s.jobs_skipped, 1u);
  EXPECT_EQ(s.completed, 2u);
}

TEST(WorkerPoolJobTest, ClaimAndAbandonRaceHasOneWinner) {
  WorkerPool pool(2, 1024, http::ParseLimits{}, false, 0, "test-jobs");
  pool.Start();
  constexpr int kJobs = 500;
  auto jobs = std::make_unique<CountingJob[]>(kJobs);
  int abandoned = 0;
  for (int i = 0; i < kJobs; ++i) {
    jobs[i].Prepare();
    ASSERT_TRUE(pool.Submit(TaskFor(&jobs[i])));
    // The owner gives up on every other job at once, as a ring whose
    // connection closed would: some are already running.
    if (i % 2 == 1 && jobs[i].Abandon()) ++abandoned;
  }
  int ran = 0;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(WaitDone(jobs[i]));
    const int runs = jobs[i].runs.load(std::memory_order_relaxed);
    ASSERT_LE(runs, 1);
    ran += runs;
    // Who won the job decides whether it ran, and what it wrote is the
    // owner's to read after done.
    if (runs == 1) {
      EXPECT_EQ(jobs[i].written, 42);
      EXPECT_EQ(jobs[i].state.load(std::memory_order_relaxed), WorkerJob::kRunning);
    } else {
      EXPECT_EQ(jobs[i].state.load(std::memory_order_relaxed), WorkerJob::kAbandoned);
    }
  }
  pool.Stop();
  EXPECT_EQ(ran + abandoned, kJobs);
  EXPECT_EQ(pool.Stats().jobs_skipped, static_cast<uint64_t>(abandoned));
}

}  // namespace
}  // namespace uring_http::worker
