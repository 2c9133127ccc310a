// Acceptor: how one ring accepts connections from its listener into its
// fixed-file table, and how it refuses them when its pool is full.
//
// Two ways of accepting. While the table has plenty of room, one multishot
// accept takes every connection as it comes, straight into the table
// (IORING_FILE_INDEX_ALLOC: never into the process's descriptor table). A
// multishot accept drains the whole backlog at once, and a socket it accepts
// into a full table is closed by the kernel without a word (ENFILE), so near
// the top it gives way to a few single-shot accepts, never more than the free
// entries: every connection accepted then gets a slot or a clean 503. An
// accept error (EMFILE, ENFILE) backs off for 100 ms instead of spinning.
//
// Thread-safety: the ring's owning thread.
#ifndef URING_HTTP_SRC_SERVING_ACCEPTOR_H_
#define URING_HTTP_SRC_SERVING_ACCEPTOR_H_

#include <liburing.h>

#include <cstdint>

#include "src/io/ring.h"
#include "src/serving/loop_stats.h"
#include "src/serving/user_data.h"

namespace uring_http::serving {

class Acceptor {
 public:
  // Entries kept free in the table beyond the pool, so that a connection
  // arriving at a full pool can still be accepted and refused with a 503
  // instead of waiting unanswered in the backlog.
  static constexpr uint32_t kRefuseReserve = 64;

  // `table_used`: entries holding a socket, shared by every acceptor of
  // the ring (one table). `listener`: this acceptor's number, carried in
  // its completions' user_data (the generation field; see Listener()).
  // `multishot`: false accepts one at a time always (a side listener, such
  // as the plain-HTTP one beside TLS, must not take the table's headroom).
  void Init(io::Ring* ring, int listen_fd, uint32_t table_size, int listen_backlog,
            int thread_index, uint32_t* table_used, uint32_t listener = 0,
            bool multishot = true);
  // Which acceptor an accept or back-off completion belongs to.
  static uint32_t Listener(uint64_t user_data) { return UserDataGeneration(user_data); }

  // Arms accepts as the table's room allows (see above).
  void Ensure();
  // An accept completion: the accepted direct descriptor, or -1 (an error,
  // counted and logged once per episode, or the end of a multishot).
  int OnAccept(const io_uring_cqe* cqe, LoopStats& stats);
  // The back-off after an accept error is over.
  void OnBackoffDone();
  // A table entry came free (a connection's close, or a refusal's).
  void OnEntryClosed();
  // A 503 and a close for a connection the pool has no slot for.
  void Refuse(int file_index);
  // No more accepts: cancels them and takes the listener out of its
  // SO_REUSEPORT group, so new connections go to the other listeners.
  void Stop();

 private:
  io_uring_sqe* Sqe() { return ring_->GetSqe(); }

  io::Ring* ring_ = nullptr;
  int listen_fd_ = -1;
  int thread_index_ = 0;
  uint32_t table_size_ = 0;
  uint32_t* table_used_ = nullptr;  // entries holding a socket (shared)
  uint32_t listener_ = 0;
  uint32_t multishot_headroom_ = 0; // free entries below which accepts go single-shot
  uint32_t single_accepts_ = 0;     // single-shot accepts in flight
  bool multishot_armed_ = false;
  bool multishot_cancelling_ = false;
  bool backoff_pending_ = false;
  bool error_logged_ = false;
  bool stopped_ = false;
  __kernel_timespec backoff_{};
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_ACCEPTOR_H_
