// Connection: one slot of an accept thread's preallocated connection pool,
// and the state of the HTTP/1.1 exchange on it.
//
// A slot is reused only after every operation that names it has completed
// (receive, send, shutdown, close, and a SLOW task on a worker), so a
// completion always finds the slot it was issued for. The generation counts
// reuses and travels in every completion's user_data as a second check.
//
// Memory: the slot itself is small; bytes live in chunks of the thread's arena
// that the slot holds only while it needs them (staged partial input, pending
// output, an in-flight SLOW task), so an idle keep-alive connection holds no
// buffer at all.
//
// Thread-safety: owned by its accept thread. Only the TaskBuffer it points to
// is shared with a worker, under the protocol described in slow_task.h.
#ifndef URING_HTTP_SRC_SERVING_CONNECTION_H_
#define URING_HTTP_SRC_SERVING_CONNECTION_H_

#include <cstdint>

#include "src/worker/slow_task.h"

namespace uring_http::serving {

// What a completion is for: the top byte of its user_data.
enum class Op : uint8_t {
  kAccept = 1,
  kRecv,
  kSend,
  kShutdown,   // SHUT_WR of a graceful close
  kClose,      // shutdown+close of a connection, or its close alone
  kTaskDone,   // MSG_RING from a worker: the SLOW response is ready
  kTimerTick,  // the timer wheel's IORING_OP_TIMEOUT
  kAcceptRetry,// back-off timeout after EMFILE/ENFILE
  kRefuseClosed,// the close of a refused connection (its table entry is free)
  kSignal,     // read on the signalfd
  kStop,       // MSG_RING: the server is stopping
  kLogWrite,   // the access log's write to its file
  kIgnore,     // completions nobody waits for (refusals, cancels)
};

// user_data = op (8 bits) | slot (24 bits) | generation (32 bits).
inline uint64_t PackUserData(Op op, uint32_t slot, uint32_t generation) {
  return (uint64_t{static_cast<uint8_t>(op)} << 56) | (uint64_t{slot & 0xFFFFFF} << 32) |
         generation;
}
inline Op UserDataOp(uint64_t user_data) { return static_cast<Op>(user_data >> 56); }
inline uint32_t UserDataSlot(uint64_t user_data) {
  return static_cast<uint32_t>(user_data >> 32) & 0xFFFFFF;
}
inline uint32_t UserDataGeneration(uint64_t user_data) {
  return static_cast<uint32_t>(user_data);
}
inline constexpr uint32_t kMaxSlots = 1u << 24;

struct Connection {
  uint32_t generation = 0;
  uint32_t file_index = 0;  // io_uring direct descriptor
  uint32_t next_free = 0;   // free-list link while unused

  bool in_use : 1 = false;
  bool recv_armed : 1 = false;      // a multishot receive is live
  bool recv_paused : 1 = false;     // stopped reading: too much staged input
  bool send_inflight : 1 = false;
  bool task_inflight : 1 = false;   // a worker holds task
  bool close_after_send : 1 = false;// answer what is queued, then close
  bool peer_eof : 1 = false;        // the peer shut down its side
  bool lingering : 1 = false;       // our FIN is out; discarding until the peer's
  bool closing : 1 = false;         // close submitted; waiting for stragglers
  bool close_done : 1 = false;      // the close completed
  bool sent_continue : 1 = false;   // 100 Continue sent for the current request
  bool shutdown_pending : 1 = false;// our SHUT_WR has not completed yet
  bool close_deferred : 1 = false;  // close waits for that shutdown
  bool linger : 1 = false;          // input was left unread: close lingering
  bool send_is_zc : 1 = false;      // the send in flight is an IORING_OP_SEND_ZC
  bool zc_notif_pending : 1 = false;// its buffer is still the kernel's (see zc_hold)
  uint8_t timer_kind = 0;

  // Staged input: bytes of an incomplete request, or requests waiting behind
  // a SLOW one. A chunk, or the heap when larger.
  char* in = nullptr;
  uint32_t in_len = 0;
  uint32_t in_cap = 0;

  // Output: responses not yet sent. out[out_sent..out_len) is what remains.
  char* out = nullptr;
  char* out_retired = nullptr;  // replaced while a send still read from it
  // A zero-copy send's bytes stay in use by the kernel until its notification
  // completion, after the send's own. Until then they must not move or be
  // freed: zc_hold is the buffer to release at the notification, or null while
  // `out` itself is that buffer (then it is not compacted or released).
  char* zc_hold = nullptr;
  uint32_t out_len = 0;
  uint32_t out_sent = 0;
  uint32_t out_cap = 0;

  worker::TaskBuffer* task = nullptr;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_CONNECTION_H_
