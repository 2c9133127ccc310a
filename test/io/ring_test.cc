// Tests for Ring on the running kernel: creation with the fastest flags this
// kernel accepts, the features it reports, and GetSqe() never returning null
// when more SQEs are prepared than the submission queue holds.
#include "src/io/ring.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/utsname.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::io {
namespace {

// Kernel version as major * 1000 + minor (6.18 -> 6018).
int KernelVersion() {
  utsname u;
  if (uname(&u) != 0) return 0;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major * 1000 + minor;
}

// Submits what is queued and reaps `expected` completions, returning their
// user_data (each must have res == 0, as NOPs do).
std::vector<uint64_t> ReapNops(Ring& ring, size_t expected) {
  std::vector<uint64_t> seen;
  io_uring_submit(ring.raw());
  while (seen.size() < expected) {
    io_uring_cqe* cqe = nullptr;
    int ret = io_uring_wait_cqe(ring.raw(), &cqe);
    if (ret < 0) {
      ADD_FAILURE() << "io_uring_wait_cqe: " << ret;
      break;
    }
    EXPECT_EQ(cqe->res, 0);
    seen.push_back(cqe->user_data);
    io_uring_cqe_seen(ring.raw(), cqe);
  }
  return seen;
}

// Under the locked-memory limit a ring too large for it is made smaller
// rather than refused (unless asked not to).
TEST(RingTest, EnomemShrinksTheRings) {
  rlimit old_limit{};
  getrlimit(RLIMIT_MEMLOCK, &old_limit);
  bool ran = false;
  // Capabilities are per thread: drop CAP_IPC_LOCK on a thread of its own
  // (a root process otherwise ignores the limit).
  std::thread t([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) return;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &header, data) != 0) return;
    rlimit low{256 * 1024, old_limit.rlim_max};
    if (setrlimit(RLIMIT_MEMLOCK, &low) != 0) return;
    RingOptions options;
    options.sq_entries = 4096;
    options.cq_entries = 65536;  // about 1.3 MB: over the limit
    auto small = Ring::Create(options);
    options.shrink_on_enomem = false;
    auto refused = Ring::Create(options);
    setrlimit(RLIMIT_MEMLOCK, &old_limit);
    ran = true;
    ASSERT_TRUE(small.ok()) << small.status();
    EXPECT_LT((*small)->features().cq_entries, 65536u);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  });
  t.join();
  setrlimit(RLIMIT_MEMLOCK, &old_limit);
  if (!ran) GTEST_SKIP() << "could not drop CAP_IPC_LOCK or lower RLIMIT_MEMLOCK";
}

TEST(RingTest, CreateWithDefaultsUsesTheFastestFlags) {
  // Inside Bazel's sandbox ring memory counts against RLIMIT_MEMLOCK, one
  // budget for every sandboxed process of this user; a default ring needs
  // about 1.3 MB of it. Other tests running at the same time may hold the
  // rest for a moment, so ENOMEM is retried (a resource wait, not a timing
  // assertion).
  RingOptions full;
  full.shrink_on_enomem = false;  // this test wants the full size
  auto ring = Ring::Create(full);
  for (int i = 0; i < 100 && ring.status().code() == absl::StatusCode::kResourceExhausted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ring = Ring::Create(full);
  }
  ASSERT_TRUE(ring.ok()) << ring.status();
  const RingFeatures& f = (*ring)->features();
  EXPECT_GE((*ring)->fd(), 0);
  EXPECT_EQ(f.sq_entries, 4096u);
  EXPECT_EQ(f.cq_entries, 65536u);
  EXPECT_FALSE(f.sqpoll);
  if (KernelVersion() >= 6001) {
    // SINGLE_ISSUER and DEFER_TASKRUN both exist since Linux 6.1.
    EXPECT_TRUE(f.single_issuer);
    EXPECT_TRUE(f.defer_taskrun);
    EXPECT_TRUE(f.submit_all);
    EXPECT_TRUE(f.registered_ring_fd);
    // The best combination is taken; the weaker fallback is not mixed in.
    EXPECT_FALSE(f.coop_taskrun);
  }
  // What features() says matches the ring the kernel set up.
  EXPECT_EQ((*ring)->raw()->sq.ring_entries, f.sq_entries);
  EXPECT_EQ((*ring)->raw()->cq.ring_entries, f.cq_entries);
  EXPECT_EQ(((*ring)->raw()->flags & IORING_SETUP_DEFER_TASKRUN) != 0, f.defer_taskrun);
  EXPECT_EQ(((*ring)->raw()->flags & IORING_SETUP_SINGLE_ISSUER) != 0, f.single_issuer);
}

// --io-uring-disable: each feature can be turned off (to measure what it
// gives), and the ring then takes the next best combination without it.
TEST(RingTest, DisabledFeaturesAreNotUsed) {
  if (KernelVersion() < 6001) GTEST_SKIP() << "needs SINGLE_ISSUER/DEFER_TASKRUN (6.1)";
  struct Case {
    const char* name;
    bool single_issuer, defer_taskrun, coop_taskrun, registered_ring_fd;
    bool want_single, want_defer, want_coop, want_registered;
  };
  const Case cases[] = {
      {"defer-taskrun off", true, false, true, true, true, false, true, true},
      {"single-issuer off (takes defer-taskrun along)", false, true, true, true, false, false,
       true, true},
      {"defer and coop off", true, false, false, true, true, false, false, true},
      {"registered ring fd off", true, true, true, false, true, true, false, false},
      {"all off", false, false, false, false, false, false, false, false},
  };
  for (const Case& c : cases) {
    RingOptions options;
    options.sq_entries = 8;
    options.cq_entries = 64;
    options.single_issuer = c.single_issuer;
    options.defer_taskrun = c.defer_taskrun;
    options.coop_taskrun = c.coop_taskrun;
    options.registered_ring_fd = c.registered_ring_fd;
    auto ring = Ring::Create(options);
    ASSERT_TRUE(ring.ok()) << c.name << ": " << ring.status();
    const RingFeatures& f = (*ring)->features();
    EXPECT_EQ(f.single_issuer, c.want_single) << c.name;
    EXPECT_EQ(f.defer_taskrun, c.want_defer) << c.name;
    EXPECT_EQ(f.coop_taskrun, c.want_coop) << c.name;
    EXPECT_EQ(f.registered_ring_fd, c.want_registered) << c.name;
    EXPECT_EQ(((*ring)->raw()->flags & IORING_SETUP_DEFER_TASKRUN) != 0, f.defer_taskrun);
    EXPECT_EQ(((*ring)->raw()->flags & IORING_SETUP_SINGLE_ISSUER) != 0, f.single_issuer);
    EXPECT_EQ(((*ring)->raw()->flags & IORING_SETUP_COOP_TASKRUN) != 0, f.coop_taskrun);
    // Still a working ring: a NOP goes through.
    io_uring_sqe* sqe = (*ring)->GetSqe();
    io_uring_prep_nop(sqe);
    ASSERT_EQ(io_uring_submit_and_wait((*ring)->raw(), 1), 1) << c.name;
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_peek_cqe((*ring)->raw(), &cqe), 0) << c.name;
    io_uring_cqe_seen((*ring)->raw(), cqe);
  }
}

TEST(RingTest, HonoursTheRequestedSizes) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 64;
  auto ring = Ring::Create(options);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ((*ring)->features().sq_entries, 8u);
  EXPECT_EQ((*ring)->features().cq_entries, 64u);
}

TEST(RingTest, OversizedCompletionQueueIsClampedNotRefused) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 1u << 30;  // far above the kernel's limit
  auto ring = Ring::Create(options);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_GE((*ring)->features().cq_entries, 8u);
  EXPECT_LT((*ring)->features().cq_entries, 1u << 30);
}

TEST(RingTest, GetSqeNeverReturnsNullWhenTheQueueIsFull) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 256;
  auto created = Ring::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Ring& ring = **created;
  ASSERT_EQ(ring.raw()->sq.ring_entries, 8u);

  // 100 NOPs through an 8-entry queue: GetSqe must submit on its own to make
  // room, and every one of them must complete exactly once.
  constexpr uint64_t kCount = 100;
  for (uint64_t i = 0; i < kCount; ++i) {
    io_uring_sqe* sqe = ring.GetSqe();
    ASSERT_NE(sqe, nullptr) << i;
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, 1000 + i);
  }
  std::vector<uint64_t> seen = ReapNops(ring, kCount);
  ASSERT_EQ(seen.size(), kCount);
  std::set<uint64_t> unique(seen.begin(), seen.end());
  EXPECT_EQ(unique.size(), kCount);
  EXPECT_EQ(*unique.begin(), 1000u);
  EXPECT_EQ(*unique.rbegin(), 1000u + kCount - 1);

  // Nothing beyond what was prepared.
  io_uring_cqe* cqe = nullptr;
  EXPECT_EQ(io_uring_peek_cqe(ring.raw(), &cqe), -EAGAIN);
}

TEST(RingTest, RingStaysUsableAfterManyFullQueues) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 64;
  auto created = Ring::Create(options);
  ASSERT_TRUE(created.ok());
  Ring& ring = **created;
  // Rounds of 20 NOPs (more than the SQ, less than the CQ), each reaped
  // before the next, so the SQ wraps many times.
  for (uint64_t round = 0; round < 50; ++round) {
    for (uint64_t i = 0; i < 20; ++i) {
      io_uring_sqe* sqe = ring.GetSqe();
      ASSERT_NE(sqe, nullptr);
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, round * 100 + i);
    }
    std::vector<uint64_t> seen = ReapNops(ring, 20);
    std::set<uint64_t> unique(seen.begin(), seen.end());
    ASSERT_EQ(unique.size(), 20u) << "round " << round;
    EXPECT_EQ(*unique.begin(), round * 100);
    EXPECT_EQ(*unique.rbegin(), round * 100 + 19);
  }
}

TEST(RingTest, SqpollRingReportsSqpollWithoutDeferTaskrun) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 64;
  options.sqpoll = true;
  options.sqpoll_idle_ms = 10;
  auto created = Ring::Create(options);
  if (!created.ok()) GTEST_SKIP() << "SQPOLL unavailable here: " << created.status();
  Ring& ring = **created;
  EXPECT_TRUE(ring.features().sqpoll);
  EXPECT_FALSE(ring.features().defer_taskrun);  // the kernel refuses that pair
  EXPECT_NE(ring.features().Describe().find("sqpoll"), std::string::npos);
  // The kernel thread consumes the SQ; GetSqe still never fails.
  for (uint64_t i = 0; i < 40; ++i) {
    io_uring_sqe* sqe = ring.GetSqe();
    ASSERT_NE(sqe, nullptr);
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, i);
  }
  std::vector<uint64_t> seen = ReapNops(ring, 40);
  EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), 40u);
}

TEST(RingFeaturesTest, DescribeListsWhatWasAccepted) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 64;
  auto ring = Ring::Create(options);
  ASSERT_TRUE(ring.ok()) << ring.status();
  const RingFeatures& f = (*ring)->features();
  const std::string text = f.Describe();
  EXPECT_FALSE(text.empty());
  EXPECT_NE(text.find("sq=8,cq=64"), std::string::npos) << text;
  EXPECT_EQ(text.find("single-issuer") != std::string::npos, f.single_issuer) << text;
  EXPECT_EQ(text.find("defer-taskrun") != std::string::npos, f.defer_taskrun) << text;
  EXPECT_EQ(text.find("sqpoll") != std::string::npos, f.sqpoll) << text;
}

TEST(RingFeaturesTest, DescribeOfEveryFeature) {
  RingFeatures f;
  EXPECT_EQ(f.Describe(), "sq=0,cq=0");
  f.single_issuer = f.defer_taskrun = f.coop_taskrun = f.sqpoll = true;
  f.registered_ring_fd = f.submit_all = true;
  f.sq_entries = 8;
  f.cq_entries = 16;
  EXPECT_EQ(f.Describe(),
            "single-issuer,defer-taskrun,coop-taskrun,sqpoll,registered-ring-fd,submit-all,"
            "sq=8,cq=16");
}

}  // namespace
}  // namespace uring_http::io
