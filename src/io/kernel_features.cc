#include "src/io/kernel_features.h"

#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "src/io/uring_compat.h"

namespace uring_http::io {

bool SendZcSupported(io_uring* ring) {
  io_uring_probe* probe = io_uring_get_probe_ring(ring);
  if (probe == nullptr) return false;
  const bool opcode = io_uring_opcode_supported(probe, IORING_OP_SEND_ZC);
  io_uring_free_probe(probe);
  utsname u{};
  unsigned major = 0, minor = 0;
  if (!opcode || uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) {
    return false;
  }
  return major > 6 || (major == 6 && minor >= 2);
}

namespace {

bool ProbeRingless() {
  io_uring ring;
  if (io_uring_queue_init(4, &ring, 0) < 0) return false;
  io_uring_sqe sqe{};
  io_uring_prep_msg_ring(&sqe, ring.ring_fd, 7, 0x5eed, 0);
  bool ok = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1) >= 0;
  if (ok) {
    io_uring_cqe* cqe = nullptr;
    ok = io_uring_peek_cqe(&ring, &cqe) == 0 && cqe->user_data == 0x5eed && cqe->res == 7;
  }
  io_uring_queue_exit(&ring);
  return ok;
}

}  // namespace

bool RinglessMsgRingSupported() {
  static const bool supported = ProbeRingless();
  return supported;
}

}  // namespace uring_http::io
