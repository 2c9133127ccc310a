// What a completion is for, packed into its user_data: the operation, the
// connection slot and the slot's generation. The generation counts the
// slot's reuses, so a completion can be checked against the connection it
// was issued for (a slot is only reused once nothing names it, but a worker
// message is checked all the same).
#ifndef URING_HTTP_SRC_SERVING_USER_DATA_H_
#define URING_HTTP_SRC_SERVING_USER_DATA_H_

#include <cstdint>

namespace uring_http::serving {

// The top byte of a completion's user_data.
enum class Op : uint8_t {
  kAccept = 1,
  kRecv,        // a multishot receive on the small-buffer group
  kRecvBulk,    // ... on the bulk group (a large body is being read)
  kSend,
  kShutdown,    // SHUT_WR of a lingering close
  kClose,       // a connection's close
  kTaskDone,    // MSG_RING from a worker: the SLOW handler returned
  kStreamNotify,// MSG_RING from a worker: progress on one of the connection's streams
  kTimerTick,   // the timer wheel's IORING_OP_TIMEOUT
  kAcceptRetry, // back-off timeout after EMFILE/ENFILE
  kRefuseClosed,// the close of a refused connection (its table entry is free)
  kSignal,      // read on the signalfd
  kStop,        // MSG_RING: the server is stopping
  kLogWrite,    // the access log's write to its file
  kFileStat,    // a static file's statx, for a connection
  kFileOpen,    // ... its openat2 into a direct descriptor
  kFileRead,    // ... a read of its bytes
  kFileSplice,  // ... a splice of them (file -> pipe, or pipe -> socket)
  kFileWritable,// ... a POLLOUT on the socket between splices
  kTlsJob,      // MSG_RING from a worker: a TLS handshake step it ran is done
  kAsync,       // an ASYNC exchange's await (slot: the exchange; async/runner.h)
  kAsyncInbox,  // MSG_RING from any thread: push streams have bytes (async/push_stream.h)
  kWsInbox,     // MSG_RING from any thread: WebSocket senders have sends (ws/sender.h)
  kWsJob,       // MSG_RING from a worker: a WebSocket's Offload ran (slot: the job)
  kIgnore,      // completions nobody waits for (refusals, cancels)
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

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_USER_DATA_H_
