// Ring: one io_uring instance, owned by one thread.
//
// Create() must run on the thread that will use the ring: with
// IORING_SETUP_SINGLE_ISSUER the kernel binds the ring to its creator and
// rejects submissions from any other thread. Set-up flags are tried from the
// fastest combination down to none, so the server still runs on older
// kernels; features() says which were accepted (printed in the ready line).
//
// Thread-safety: everything except fd() belongs to the owning thread. fd() is
// the target other threads name in IORING_OP_MSG_RING.
#ifndef URING_HTTP_SRC_IO_RING_H_
#define URING_HTTP_SRC_IO_RING_H_

#include <liburing.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace uring_http::io {

struct RingOptions {
  unsigned sq_entries = 4096;
  // Multishot accept/receive and MSG_RING post completions without an SQE of
  // their own, so the CQ is sized explicitly rather than 2 x sq_entries.
  unsigned cq_entries = 65536;
  bool sqpoll = false;      // kernel submission thread (IORING_SETUP_SQPOLL)
  int sqpoll_cpu = -1;      // pin that thread (IORING_SETUP_SQ_AFF) if >= 0
  unsigned sqpoll_idle_ms = 1000;
  // Each on by default and used when the kernel has it; turned off only to
  // measure what it gives (--io-uring-disable). DEFER_TASKRUN needs
  // SINGLE_ISSUER, so turning that off turns off both.
  bool single_issuer = true;
  bool defer_taskrun = true;
  bool coop_taskrun = true;
  bool registered_ring_fd = true;
  // ENOMEM (the locked-memory limit, memory pressure): halve both rings and
  // try again, down to 64 and 256 entries, rather than fail.
  bool shrink_on_enomem = true;
};

struct RingFeatures {
  bool single_issuer = false;
  bool defer_taskrun = false;
  bool coop_taskrun = false;
  bool sqpoll = false;
  bool registered_ring_fd = false;
  bool submit_all = false;
  unsigned sq_entries = 0;
  unsigned cq_entries = 0;

  // Short comma-separated list for the ready line.
  std::string Describe() const;
};

class Ring {
 public:
  static absl::StatusOr<std::unique_ptr<Ring>> Create(const RingOptions& options);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  io_uring* raw() { return &ring_; }
  int fd() const { return ring_.ring_fd; }
  const RingFeatures& features() const { return features_; }

  // Never returns null: when the SQ is full it submits what is queued (the
  // kernel copies SQEs at submit time, so their slots are free again).
  // Makes room for `n` SQEs that must go into one submission (a linked
  // chain must not be split by GetSqe()'s flush on a full SQ).
  void ReserveSqes(unsigned n) {
    if (io_uring_sq_space_left(&ring_) < n) io_uring_submit(&ring_);
  }

  io_uring_sqe* GetSqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) [[unlikely]] return GetSqeSlow();
    return sqe;
  }

 private:
  Ring() = default;
  io_uring_sqe* GetSqeSlow();

  io_uring ring_{};
  bool initialized_ = false;
  RingFeatures features_;
};

// The most entries a ring's sparse fixed-file table can have: the kernel
// checks a registration against RLIMIT_NOFILE, but direct descriptors never
// count against it afterwards, so RegisterFileTable() lifts the soft limit
// up to the hard one for the registration alone. Also capped at the
// kernel's 1 << 20.
uint64_t FileTableLimit();
// Registers a sparse table of `entries` (at most FileTableLimit()). The
// process's soft limit is what it was before when this returns; the
// registrations of several threads take turns.
absl::Status RegisterFileTable(io_uring* ring, uint32_t entries);

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_RING_H_
