// The error log's rate limit, driven with a clock of our own, and what one
// line looks like on stderr (captured by pointing fd 2 at a file).
#include "src/base/error_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace uring_http::base {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(LineRateLimiterTest, AdmitsTheLimitPerSecondAndReportsTheRestOnce) {
  LineRateLimiter limiter(3);
  uint64_t report = 99;
  const int64_t t0 = 5 * kSecond + 100;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.Admit(t0 + i, &report));
    EXPECT_EQ(report, 0u);
  }
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(limiter.Admit(t0 + 10 + i, &report));
  EXPECT_EQ(limiter.pending(), 7u);
  // Still the same second: nothing has ended yet.
  EXPECT_EQ(limiter.TakeEnded(t0 + kSecond / 2), 0u);
  // The next second's first line carries the count, once.
  EXPECT_TRUE(limiter.Admit(6 * kSecond, &report));
  EXPECT_EQ(report, 7u);
  EXPECT_TRUE(limiter.Admit(6 * kSecond + 1, &report));
  EXPECT_EQ(report, 0u);
  EXPECT_EQ(limiter.pending(), 0u);
}

TEST(LineRateLimiterTest, TakeEndedReportsAfterTheSecondWithoutAnotherLine) {
  LineRateLimiter limiter(1);
  uint64_t report = 0;
  EXPECT_TRUE(limiter.Admit(10 * kSecond, &report));
  EXPECT_FALSE(limiter.Admit(10 * kSecond + 5, &report));
  EXPECT_FALSE(limiter.Admit(10 * kSecond + 6, &report));
  EXPECT_EQ(limiter.TakeEnded(10 * kSecond + kSecond - 1), 0u);
  EXPECT_EQ(limiter.TakeEnded(11 * kSecond), 2u);
  EXPECT_EQ(limiter.TakeEnded(12 * kSecond), 0u);  // reported once
  // A full new window: the limit holds again there.
  EXPECT_TRUE(limiter.Admit(12 * kSecond, &report));
  EXPECT_EQ(report, 0u);
  EXPECT_FALSE(limiter.Admit(12 * kSecond + 1, &report));
}

TEST(LineRateLimiterTest, NeverMoreThanTheLimitInAnySecondOfABurst) {
  LineRateLimiter limiter(10);
  uint64_t written = 0, reported = 0;
  // 1000 lines over 3.5 s, one every 3.5 ms.
  for (int i = 0; i < 1000; ++i) {
    const int64_t t = kSecond / 3 + i * (kSecond * 35 / 10000);
    uint64_t report = 0;
    if (limiter.Admit(t, &report)) ++written;
    reported += report;
  }
  reported += limiter.TakeEnded(100 * kSecond);
  EXPECT_EQ(written, 40u);  // seconds 0, 1, 2 and 3 each admit 10
  EXPECT_EQ(written + reported, 1000u);  // every line written or counted
}

// Runs `body` with fd 2 pointing at a temporary file; returns what was written.
template <typename F>
std::string CaptureStderr(F body) {
  char path[] = "/tmp/error_log_test.XXXXXX";
  const int fd = mkstemp(path);
  unlink(path);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  body();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buf[4096];
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(ErrorLogTest, OneLinePerEventWithControlBytesReplacedAndTheLengthBounded) {
  const std::string out = CaptureStderr([] {
    LogError("handler threw: line one\nline two\r\x01 end");
  });
  EXPECT_EQ(out, "uring-http: error: handler threw: line one?line two?? end\n");
  const std::string long_out = CaptureStderr([] { LogError(std::string(5000, 'x')); });
  EXPECT_EQ(long_out, "uring-http: error: " + std::string(kMaxErrorLineBytes, 'x') + "\n");
}

}  // namespace
}  // namespace uring_http::base
