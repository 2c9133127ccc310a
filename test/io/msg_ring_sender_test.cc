// Tests for MsgRingSender: messages from threads without a ring arrive on a
// SINGLE_ISSUER|DEFER_TASKRUN target ring (as the server's rings are set up)
// with the given user_data and res, each exactly once, even when the target's
// completion queue is far smaller than the burst; targets that are not rings
// are reported as gone.
#include "src/io/msg_ring_sender.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/io/ring.h"

namespace uring_http::io {
namespace {

int KernelVersion() {
  utsname u;
  if (uname(&u) != 0) return 0;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major * 1000 + minor;
}

// Targets are kept small: ring memory is a shared RLIMIT_MEMLOCK budget in
// Bazel's sandbox, and a few thousand CQEs are plenty here.
std::unique_ptr<Ring> CreateTarget(unsigned cq_entries = 4096) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = cq_entries;
  auto ring = Ring::Create(options);
  if (!ring.ok()) {
    ADD_FAILURE() << ring.status();
    return nullptr;
  }
  return *std::move(ring);
}

TEST(MsgRingSenderTest, RinglessSendIsDetectedOnNewKernels) {
  if (KernelVersion() < 6013) {
    GTEST_SKIP() << "IORING_REGISTER_SEND_MSG_RING needs Linux 6.13";
  }
  EXPECT_TRUE(MsgRingSender::RinglessSupported());
}

TEST(MsgRingSenderTest, MessageFromAnotherThreadArrivesWithUserDataAndRes) {
  // The receiving ring is created (and waited on) by this thread, as an
  // accept thread does; the sender has no ring of its own.
  std::unique_ptr<Ring> target = CreateTarget();
  ASSERT_NE(target, nullptr);
  ASSERT_TRUE(target->features().single_issuer);
  ASSERT_TRUE(target->features().defer_taskrun);
  const int fd = target->fd();

  MsgRingSender::Result result = MsgRingSender::Result::kFailed;
  std::thread sender([&] {
    MsgRingSender s;
    result = s.Send(fd, 0x1234'5678'9abc'def0ull, 42);
  });
  sender.join();
  EXPECT_EQ(result, MsgRingSender::Result::kSent);

  io_uring_cqe* cqe = nullptr;
  ASSERT_EQ(io_uring_wait_cqe(target->raw(), &cqe), 0);
  EXPECT_EQ(cqe->user_data, 0x1234'5678'9abc'def0ull);
  EXPECT_EQ(cqe->res, 42);
  io_uring_cqe_seen(target->raw(), cqe);
  EXPECT_EQ(io_uring_peek_cqe(target->raw(), &cqe), -EAGAIN);  // exactly one
}

TEST(MsgRingSenderTest, NegativeAndExtremeResultsArriveUnchanged) {
  std::unique_ptr<Ring> target = CreateTarget();
  ASSERT_NE(target, nullptr);
  const int fd = target->fd();
  const int32_t values[] = {-104, -1, 0, INT32_MAX, INT32_MIN};
  std::thread sender([&] {
    MsgRingSender s;
    for (size_t i = 0; i < std::size(values); ++i) {
      EXPECT_EQ(s.Send(fd, i, values[i]), MsgRingSender::Result::kSent);
    }
  });
  sender.join();
  for (size_t i = 0; i < std::size(values); ++i) {
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_wait_cqe(target->raw(), &cqe), 0);
    EXPECT_EQ(cqe->user_data, i);
    EXPECT_EQ(cqe->res, values[i]) << i;
    io_uring_cqe_seen(target->raw(), cqe);
  }
}

// Senders on `threads` threads post `per_thread` messages each while this
// thread reaps; every (thread, index) must arrive exactly once.
void SendManyAndCheckEachArrivesOnce(Ring& target, int threads, uint32_t per_thread) {
  const int fd = target.fd();
  std::atomic<int> failures{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      MsgRingSender s;
      for (uint32_t i = 0; i < per_thread; ++i) {
        const uint64_t user_data = (uint64_t{static_cast<uint32_t>(t)} << 32) | i;
        if (s.Send(fd, user_data, static_cast<int32_t>(i ^ 0x5555)) !=
            MsgRingSender::Result::kSent) {
          failures.fetch_add(1);
        }
      }
    });
  }
  const size_t total = size_t{static_cast<size_t>(threads)} * per_thread;
  std::vector<uint8_t> seen(total, 0);
  size_t received = 0;
  size_t bad = 0;
  while (received < total) {
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_wait_cqe(target.raw(), &cqe);
    ASSERT_EQ(ret, 0);
    const uint64_t t = cqe->user_data >> 32;
    const uint32_t i = static_cast<uint32_t>(cqe->user_data);
    if (t >= static_cast<uint64_t>(threads) || i >= per_thread ||
        cqe->res != static_cast<int32_t>(i ^ 0x5555)) {
      ++bad;
    } else {
      ++seen[t * per_thread + i];
    }
    io_uring_cqe_seen(target.raw(), cqe);
    ++received;
  }
  for (std::thread& s : senders) s.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(bad, 0u);
  size_t once = 0;
  for (uint8_t n : seen) once += n == 1;
  EXPECT_EQ(once, total);
  io_uring_cqe* cqe = nullptr;
  EXPECT_EQ(io_uring_peek_cqe(target.raw(), &cqe), -EAGAIN);  // no duplicates late
}

TEST(MsgRingSenderTest, ManyMessagesFromManyThreadsArriveExactlyOnce) {
  std::unique_ptr<Ring> target = CreateTarget();
  ASSERT_NE(target, nullptr);
  SendManyAndCheckEachArrivesOnce(*target, 4, 2500);
}

TEST(MsgRingSenderTest, BurstLargerThanTheTargetQueueIsNotDropped) {
  // A 16-entry CQ receiving 4000 messages: whether the kernel parks the
  // surplus in its overflow list or the sender retries on -EOVERFLOW, none
  // may be lost or duplicated.
  std::unique_ptr<Ring> target = CreateTarget(16);
  ASSERT_NE(target, nullptr);
  ASSERT_EQ(target->features().cq_entries, 16u);
  SendManyAndCheckEachArrivesOnce(*target, 4, 1000);
}

TEST(MsgRingSenderTest, TargetsThatAreNotRingsAreReportedGone) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  MsgRingSender s;
  EXPECT_EQ(s.Send(-1, 1, 1), MsgRingSender::Result::kTargetGone);
  EXPECT_EQ(s.Send(pipe_fds[0], 1, 1), MsgRingSender::Result::kTargetGone);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  EXPECT_EQ(s.overflow_retries(), 0u);
}

TEST(MsgRingSenderTest, ClosedTargetIsReportedGone) {
  int fd = -1;
  {
    std::unique_ptr<Ring> target = CreateTarget();
    ASSERT_NE(target, nullptr);
    fd = target->fd();
  }
  // The descriptor number is free again (nothing else opens files here).
  ASSERT_EQ(fcntl(fd, F_GETFD), -1);
  MsgRingSender s;
  EXPECT_EQ(s.Send(fd, 1, 1), MsgRingSender::Result::kTargetGone);
}

}  // namespace
}  // namespace uring_http::io
