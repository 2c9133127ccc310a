// Seccomp filters for tests: io_uring_setup fails with a chosen errno, as
// it does under a container runtime's default profile; or IPv6 sockets
// cannot be made, as on a host without IPv6. Every other system call is
// allowed. It is a way to make the kernel refuse, not a sandbox.
//
// Thread-safety: the filter binds the calling thread and what it forks or
// execs afterwards, for good. Install it in a child process (fork, then
// install, then exec or _exit), never in a test's own process.
#ifndef URING_HTTP_TEST_IO_SECCOMP_REFUSAL_H_
#define URING_HTTP_TEST_IO_SECCOMP_REFUSAL_H_

namespace uring_http::io::testing {

// Sets no_new_privs (so no privilege is needed) and installs the filter.
// 0 on success, else the errno of the prctl that failed.
int RefuseIoUringSetup(int error);

// The same for IPv6: socket(AF_INET6, ...) fails with EAFNOSUPPORT, as on a
// kernel booted with ipv6.disable=1.
int RefuseIpv6Sockets();

}  // namespace uring_http::io::testing

#endif  // URING_HTTP_TEST_IO_SECCOMP_REFUSAL_H_
