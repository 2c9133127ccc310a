// Why the kernel refused io_uring_setup, in one message that says what to do.
//
// "io_uring_setup: Operation not permitted" has three common causes that
// call for different fixes: the sysctl kernel.io_uring_disabled (Linux 6.6+),
// a seccomp filter (a container runtime's default profile), and a Linux
// security module (SELinux, Linux 6.15+, answers EACCES). ENOSYS means a
// kernel without io_uring, or a seccomp filter that answers ENOSYS for the
// calls it does not allow (Podman's default profile does). What the process
// can see of each is read from /proc into SystemFacts; the decision is a pure
// function of the errno and those facts, so tests drive every case without a
// kernel that refuses.
//
// Thread-safety: both functions may be called from any thread.
#ifndef URING_HTTP_SRC_IO_URING_REFUSAL_H_
#define URING_HTTP_SRC_IO_URING_REFUSAL_H_

#include <cstdint>
#include <string>

namespace uring_http::io {

// What /proc says about the process and the host, as far as io_uring_setup
// cares. -1 everywhere means "could not be read".
struct SystemFacts {
  // kernel.io_uring_disabled: 0 allowed to all; 1 only to processes with
  // CAP_SYS_ADMIN or in kernel.io_uring_group; 2 refused to all. -1: no such
  // file (a kernel before 6.6, which has no such switch) or unreadable.
  int io_uring_disabled = -1;
  // kernel.io_uring_group: -1 is the kernel's "no group" (its default).
  int64_t io_uring_group = -1;
  // The process's filesystem gid or one of its supplementary groups is
  // io_uring_group (what the kernel's in_group_p() checks).
  bool in_io_uring_group = false;
  // CAP_SYS_ADMIN in the effective set (/proc/self/status CapEff).
  bool cap_sys_admin = false;
  int64_t uid = -1;  // effective
  int64_t gid = -1;  // filesystem (the one the kernel checks)
  // /proc/self/status "Seccomp:": 0 none, 1 strict, 2 filter.
  int seccomp_mode = -1;
  // "Seccomp_filters:" (Linux 5.9+): how many filters are stacked.
  int seccomp_filters = -1;
};

// Reads kernel.io_uring_disabled, kernel.io_uring_group and
// /proc/self/status below `proc` (tests point it at a directory of their
// own). Missing files leave their fields at -1.
SystemFacts ReadSystemFacts(const std::string& proc = "/proc");

// EPERM, EACCES and ENOSYS: the errors of io_uring_setup that mean "not
// here" rather than "not with these parameters" (EINVAL) or "not this much"
// (ENOMEM).
bool IsSetupRefusal(int error);

// One paragraph (no newline) for a refusal (`error` is positive: EPERM,
// EACCES, ENOSYS): which cause applies, the facts that say so, and what to
// do. Any other error gets "io_uring_setup: " and its strerror text.
std::string DescribeSetupRefusal(int error, const SystemFacts& facts);

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_URING_REFUSAL_H_
