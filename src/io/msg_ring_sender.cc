#include "src/io/msg_ring_sender.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "src/io/uring_compat.h"

namespace uring_http::io {
namespace {

int SendRingless(int target_ring_fd, uint64_t user_data, int32_t res) {
  io_uring_sqe sqe{};
  io_uring_prep_msg_ring(&sqe, target_ring_fd, static_cast<unsigned>(res), user_data, 0);
  long ret = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1);
  return ret < 0 ? -errno : 0;
}

bool ProbeRingless() {
  io_uring ring;
  if (io_uring_queue_init(4, &ring, 0) < 0) return false;
  bool ok = SendRingless(ring.ring_fd, 0x5eed, 7) == 0;
  if (ok) {
    io_uring_cqe* cqe = nullptr;
    ok = io_uring_peek_cqe(&ring, &cqe) == 0 && cqe->user_data == 0x5eed && cqe->res == 7;
  }
  io_uring_queue_exit(&ring);
  return ok;
}

}  // namespace

bool MsgRingSender::RinglessSupported() {
  static const bool supported = ProbeRingless();
  return supported;
}

int MsgRingSender::SendOnce(int target_ring_fd, uint64_t user_data, int32_t res) {
  if (RinglessSupported()) return SendRingless(target_ring_fd, user_data, res);
  if (private_ring_ == nullptr) {
    RingOptions options;
    options.sq_entries = 4;
    options.cq_entries = 8;
    auto ring = Ring::Create(options);
    if (!ring.ok()) return -ENOMEM;
    private_ring_ = *std::move(ring);
  }
  io_uring* ring = private_ring_->raw();
  io_uring_sqe* sqe = private_ring_->GetSqe();
  io_uring_prep_msg_ring(sqe, target_ring_fd, static_cast<unsigned>(res), user_data, 0);
  sqe->user_data = 0;
  io_uring_cqe* cqe = nullptr;
  int ret = io_uring_submit_and_wait(ring, 1);
  if (ret < 0) return ret;
  ret = io_uring_wait_cqe(ring, &cqe);
  if (ret < 0) return ret;
  int result = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  return result;
}

MsgRingSender::Result MsgRingSender::Send(int target_ring_fd, uint64_t user_data, int32_t res) {
  for (;;) {
    int ret = SendOnce(target_ring_fd, user_data, res);
    if (ret >= 0) return Result::kSent;
    if (ret == -EOVERFLOW || ret == -EAGAIN || ret == -EINTR) {
      // The target's CQ is full: it drains as its thread runs. Retry rather
      // than lose a result a connection is waiting for.
      ++overflow_retries_;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    if (ret == -EOWNERDEAD || ret == -EBADFD || ret == -EBADF) return Result::kTargetGone;
    return Result::kFailed;
  }
}

}  // namespace uring_http::io
