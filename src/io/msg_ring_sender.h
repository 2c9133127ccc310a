// MsgRingSender: posts a completion into another thread's ring with
// IORING_OP_MSG_RING, from a thread that has no ring of its own (a worker, or
// whoever asks the server to stop).
//
// On Linux 6.13+ the message is sent without any source ring
// (IORING_REGISTER_SEND_MSG_RING); otherwise the sender creates a tiny private
// ring on first use. Either way one syscall per message.
//
// Thread-safety: one instance per thread (the private ring is single-issuer).
#ifndef URING_HTTP_SRC_IO_MSG_RING_SENDER_H_
#define URING_HTTP_SRC_IO_MSG_RING_SENDER_H_

#include <cstdint>
#include <memory>

#include "src/io/ring.h"

namespace uring_http::io {

class MsgRingSender {
 public:
  MsgRingSender() = default;
  MsgRingSender(const MsgRingSender&) = delete;
  MsgRingSender& operator=(const MsgRingSender&) = delete;

  // Whether this kernel can send MSG_RING without a source ring (probed once).
  static bool RinglessSupported();

  enum class Result { kSent, kTargetGone, kFailed };
  // Posts a CQE with `user_data` and res = `res` on the ring `target_ring_fd`.
  // A full target CQ (-EOVERFLOW, -EAGAIN, -EINTR) is retried after a short
  // pause until it drains: the message is never dropped while the target
  // ring lives. A transient shortage (-ENOMEM, -ENOBUFS) is retried a few
  // times; if it persists, or for any other error, kFailed: the caller must
  // deliver the message another way (worker::Mailbox).
  Result Send(int target_ring_fd, uint64_t user_data, int32_t res);

  // Messages that had to be retried because the target CQ was full.
  uint64_t overflow_retries() const { return overflow_retries_; }

  // Tests: the next `count` sends from any thread fail with -error before
  // reaching the kernel (e.g. ENOMEM), as a kernel under pressure would.
  static void InjectFailuresForTest(int error, int count);

 private:
  int SendOnce(int target_ring_fd, uint64_t user_data, int32_t res);

  std::unique_ptr<Ring> private_ring_;
  uint64_t overflow_retries_ = 0;
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_MSG_RING_SENDER_H_
