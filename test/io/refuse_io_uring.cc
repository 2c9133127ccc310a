// refuse_io_uring: runs a program with io_uring_setup refused by a seccomp
// filter, as a container runtime's default profile refuses it, to see what
// the program says.
//
//   refuse_io_uring EPERM|ENOSYS PROGRAM [ARGS...]
//
// Exits 127 if the filter cannot be installed or PROGRAM cannot be run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "test/io/seccomp_refusal.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s EPERM|ENOSYS PROGRAM [ARGS...]\n", argv[0]);
    return 127;
  }
  const std::string_view name = argv[1];
  const int error = name == "EPERM" ? EPERM : name == "ENOSYS" ? ENOSYS : 0;
  if (error == 0) {
    std::fprintf(stderr, "refuse_io_uring: unknown errno %s (EPERM or ENOSYS)\n", argv[1]);
    return 127;
  }
  if (const int e = uring_http::io::testing::RefuseIoUringSetup(error); e != 0) {
    std::fprintf(stderr, "refuse_io_uring: installing the filter: %s\n", std::strerror(e));
    return 127;
  }
  execv(argv[2], argv + 2);
  std::fprintf(stderr, "refuse_io_uring: %s: %s\n", argv[2], std::strerror(errno));
  return 127;
}
