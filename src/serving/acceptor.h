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
  // Single-shot accepts in flight when the table is nearly full.
  static constexpr uint32_t kMaxSingleAccepts = 16;

  // `table_used`: entries holding a socket, shared by every acceptor of
  // the ring (one table). `listener`: this acceptor's number, carried in
  // its completions' user_data (the generation field; see Listener()).
  // `multishot`: false accepts one at a time always (a side listener, such
  // as the plain-HTTP one beside TLS, must not take the table's headroom).
  // `max_single`: single-shot accepts in flight at most (acceptors that
  // share a table share the reserve of kRefuseReserve entries).
  void Init(io::Ring* ring, int listen_fd, uint32_t table_size, int listen_backlog,
            int thread_index, uint32_t* table_used, uint32_t listener = 0,
            bool multishot = true, uint32_t max_single = kMaxSingleAccepts);
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
  // `shutdown_listener` false leaves the socket listening: another process
  // holds it too (a takeover's successor, or systemd), and a shutdown
  // would reset every connection waiting in its accept queue. Then, once
  // the cancelled accepts have ended, a sweep (see below).
  void Stop(bool shutdown_listener = true);
  // No accept of this acceptor is in the kernel any more (after Stop():
  // the ring may be left).
  bool idle() const { return !multishot_armed_ && single_accepts_ == 0 && !sweeping_; }

 private:
  io_uring_sqe* Sqe() { return ring_->GetSqe(); }
  // Whether the socket still listens (an error path's question).
  bool Listening() const;
  // After a Stop() that leaves the socket listening: once no accept is
  // armed, accepts that never wait, until one finds the queue empty.
  // io_uring's accepts wait as exclusive waiters: a connection's wake-up
  // goes to one waiter only. One that came to an accept of ours in the
  // instant before its cancellation is lost with it, and the connection
  // would wait in the queue, unseen by the process that accepts from it
  // now, until the next one arrives. The sweep accepts it here instead (it
  // is served like any connection accepted while draining). Needs Linux
  // 6.10 (IORING_ACCEPT_DONTWAIT); before, the sweep ends at once.
  void MaybeSweep();

  io::Ring* ring_ = nullptr;
  int listen_fd_ = -1;
  int thread_index_ = 0;
  uint32_t table_size_ = 0;
  uint32_t* table_used_ = nullptr;  // entries holding a socket (shared)
  uint32_t listener_ = 0;
  uint32_t multishot_headroom_ = 0; // free entries below which accepts go single-shot
  uint32_t single_accepts_ = 0;     // single-shot accepts in flight
  uint32_t max_single_ = kMaxSingleAccepts;
  bool multishot_armed_ = false;
  bool multishot_cancelling_ = false;
  bool backoff_pending_ = false;
  bool error_logged_ = false;
  bool stopped_ = false;
  bool listener_closed_ = false;  // an accept found it shut down (EINVAL)
  bool sweep_pending_ = false;    // stopped, the socket kept: sweep when idle
  bool sweeping_ = false;         // a sweeping accept is in flight
  uint32_t swept_ = 0;            // sweeping accepts issued
  __kernel_timespec backoff_{};
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_ACCEPTOR_H_
