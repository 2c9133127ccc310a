#include "src/io/listen_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace uring_http::io {
namespace {

// A plain decimal without sign or spaces, below 2^31; -1 otherwise.
long Decimal(std::string_view s) {
  if (s.empty() || s.size() > 10) return -1;
  long n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n <= 0x7fffffff ? n : -1;
}

}  // namespace

absl::StatusOr<int> ParseListenFds(const char* listen_pid, const char* listen_fds, pid_t self,
                                   int max) {
  if (listen_pid == nullptr || listen_fds == nullptr) return 0;
  const long pid = Decimal(listen_pid);
  if (pid <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LISTEN_PID is not a process id: '", listen_pid, "'"));
  }
  if (pid != self) return 0;  // inherited from a parent that was activated
  const long n = Decimal(listen_fds);
  if (n <= 0 || n > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LISTEN_FDS is not a number of descriptors in [1, ", max, "]: '", listen_fds, "'"));
  }
  return static_cast<int>(n);
}

absl::StatusOr<std::vector<int>> TakeListenFds() {
  auto count = ParseListenFds(std::getenv("LISTEN_PID"), std::getenv("LISTEN_FDS"), getpid());
  // Unset either way: a malformed set must not reach a child either.
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!count.ok()) return count.status();
  std::vector<int> fds;
  for (int fd = kListenFdsStart; fd < kListenFdsStart + *count; ++fd) {
    const int flags = fcntl(fd, F_GETFD);
    if (flags < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("LISTEN_FDS=", *count, " but descriptor ", fd, " is not open"));
    }
    fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    fds.push_back(fd);
  }
  return fds;
}

}  // namespace uring_http::io
