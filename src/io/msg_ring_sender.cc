#include "src/io/msg_ring_sender.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "src/io/kernel_features.h"
#include "src/io/uring_compat.h"

namespace uring_http::io {
namespace {

int SendRingless(int target_ring_fd, uint64_t user_data, int32_t res) {
  io_uring_sqe sqe{};
  io_uring_prep_msg_ring(&sqe, target_ring_fd, static_cast<unsigned>(res), user_data, 0);
  long ret = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1);
  return ret < 0 ? -errno : 0;
}

std::atomic<int> injected_error{0};
std::atomic<int> injected_count{0};

// Takes one injected failure, if any are left.
int TakeInjectedFailure() {
  int left = injected_count.load(std::memory_order_relaxed);
  while (left > 0) {
    if (injected_count.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel)) {
      return injected_error.load(std::memory_order_relaxed);
    }
  }
  return 0;
}

}  // namespace

bool MsgRingSender::RinglessSupported() { return RinglessMsgRingSupported(); }

void MsgRingSender::InjectFailuresForTest(int error, int count) {
  injected_error.store(error, std::memory_order_relaxed);
  injected_count.store(count, std::memory_order_release);
}

int MsgRingSender::SendOnce(int target_ring_fd, uint64_t user_data, int32_t res) {
  if (const int injected = TakeInjectedFailure(); injected != 0) [[unlikely]] return -injected;
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
  int shortages = 0;
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
    if ((ret == -ENOMEM || ret == -ENOBUFS) && ++shortages <= 8) {
      // Memory for the message (or the private ring's request) may come
      // back in a moment; if it does not, the caller's fallback takes over.
      std::this_thread::sleep_for(std::chrono::microseconds(100 << shortages));
      continue;
    }
    if (ret == -EOWNERDEAD || ret == -EBADFD || ret == -EBADF) return Result::kTargetGone;
    return Result::kFailed;
  }
}

}  // namespace uring_http::io
