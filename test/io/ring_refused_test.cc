// Ring::Create when the kernel refuses io_uring for real: a child process
// installs a seccomp filter that makes io_uring_setup fail with EPERM (as
// Docker's and containerd's default profiles do) or ENOSYS (as Podman's
// does), creates a ring, and hands the status back through a pipe. The
// message must say that a seccomp filter is the cause and how to run with
// deploy/seccomp.json. The child only creates the ring, writes and _exits,
// so it is safe to fork under the sanitizers.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/io/ring.h"
#include "test/io/seccomp_refusal.h"

namespace uring_http::io {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Outcome {
  bool exited = false;  // the child exited normally, with status 0
  std::string report;   // what it wrote: "<code> <message>", or why it failed
};

// In a child under a filter that refuses io_uring_setup with `error`,
// Ring::Create; the status code and message come back as "<code> <message>".
Outcome CreateRingRefused(int error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {false, std::string("pipe2: ") + strerror(errno)};
  const pid_t pid = fork();
  if (pid < 0) return {false, std::string("fork: ") + strerror(errno)};
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    if (const int e = testing::RefuseIoUringSetup(error); e != 0) {
      report = std::string("installing the filter: ") + strerror(e);
    } else {
      RingOptions options;
      options.sq_entries = 8;
      options.cq_entries = 16;
      auto ring = Ring::Create(options);
      report = ring.ok() ? "ring created under the filter"
                         : std::to_string(static_cast<int>(ring.status().code())) + " " +
                               std::string(ring.status().message());
    }
    size_t done = 0;
    while (done < report.size()) {
      const ssize_t n = write(fds[1], report.data() + done, report.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  Outcome outcome;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) outcome.report.append(buffer, n);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return outcome;
}

std::string Code(absl::StatusCode code) { return std::to_string(static_cast<int>(code)) + " "; }

TEST(RingRefusedTest, EpermFromASeccompFilterNamesSeccompAndTheProfile) {
  const Outcome outcome = CreateRingRefused(EPERM);
  ASSERT_TRUE(outcome.exited) << outcome.report;
  EXPECT_THAT(outcome.report,
              AllOf(StartsWith(Code(absl::StatusCode::kPermissionDenied) +
                               "io_uring is blocked by a seccomp filter: io_uring_setup failed "
                               "with EPERM"),
                    HasSubstr("--security-opt seccomp=deploy/seccomp.json"),
                    Not(HasSubstr("\n"))));
}

TEST(RingRefusedTest, EnosysFromASeccompFilterIsNotTakenForAKernelWithoutIoUring) {
  const Outcome outcome = CreateRingRefused(ENOSYS);
  ASSERT_TRUE(outcome.exited) << outcome.report;
  EXPECT_THAT(outcome.report,
              AllOf(StartsWith(Code(absl::StatusCode::kUnimplemented) +
                               "io_uring is probably blocked by a seccomp filter: io_uring_setup "
                               "failed with ENOSYS"),
                    HasSubstr("--security-opt seccomp=deploy/seccomp.json"),
                    Not(HasSubstr("\n"))));
}

// The filter refuses io_uring_setup only: without it, this process makes
// rings (so the messages above come from the filter, not from the host).
TEST(RingRefusedTest, WithoutTheFilterARingIsCreated) {
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 16;
  auto ring = Ring::Create(options);
  EXPECT_TRUE(ring.ok()) << ring.status();
}

}  // namespace
}  // namespace uring_http::io
