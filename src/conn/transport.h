// Transport: what a protocol (HTTP/1 today, HTTP/2 next) asks of the
// socket beneath it, and what it shares with the other connections of its
// loop. It is the narrow waist between the protocols and I/O: "receive",
// "send these bytes", "shut down", "close", "wake me at tick T". The loop
// implements it with io_uring SQEs; the TLS layer implements it for the
// protocol above it by encrypting into the loop's transport below, so TLS
// sits beneath any protocol and knows none. Every call only queues work:
// none calls back into the protocol before it returns. Its completions come
// back as the conn::Protocol events (protocol.h).
//
// Thread-safety: all of it belongs to the loop's ring thread.
#ifndef URING_HTTP_SRC_CONN_TRANSPORT_H_
#define URING_HTTP_SRC_CONN_TRANSPORT_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>

#include "src/base/counter.h"

namespace uring_http::conn {

class Transport {
 public:
  // A multishot receive into the loop's provided buffers: small ones, or
  // (`bulk`) large ones for a large request body. Its completions come back
  // as Protocol::OnRecv (with F_MORE) and, when it ends, OnRecvEnd.
  // `once`: a single-shot receive instead, which ends (OnRecvEnd with the
  // byte count) after its first completion. A connection's first receive is
  // one: the request is usually there already, and a multishot receive
  // would look again at once, find nothing and arm a poll that a
  // connection-per-request client's close only has to cancel.
  virtual void ArmRecv(uint32_t slot, bool bulk, bool once) = 0;
  // Ends that receive early; it then completes with OnRecvEnd(-ECANCELED)
  // (or another final result if it was ending anyway).
  virtual void CancelRecv(uint32_t slot) = 0;
  // One send of the iovecs (count >= 1; they, and `msg`, room for a
  // gathered send's header, stay valid until it completes: OnSend).
  // `zero_copy`: IORING_OP_SEND_ZC of the one iovec, whose bytes the kernel
  // may read until OnSendNotification. `dont_wait`: a socket with no room
  // at all completes it with -EAGAIN at once (MSG_DONTWAIT) instead of
  // keeping it (and its buffers) until the peer reads.
  virtual void Send(uint32_t slot, const iovec* iov, unsigned count, bool zero_copy,
                    msghdr* msg, bool dont_wait) = 0;
  // The connection's last bytes, then its close, in one submission: the
  // send (all of it, MSG_WAITALL) hard-linked to the close, which runs when
  // the send ends however it ends. Completes with OnSend, then OnClosed.
  // Nothing else may be armed on the socket.
  virtual void SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count,
                                msghdr* msg) = 0;
  // Ends the send in flight early (its OnSend comes with -ECANCELED).
  virtual void CancelSend(uint32_t slot) = 0;
  // Our FIN (shutdown SHUT_WR); completes with OnShutdownDone.
  virtual void ShutdownWrite(uint32_t slot) = 0;
  // Closes the descriptor, first cancelling what is still armed on it (a
  // close alone would not end them); completes with OnClosed.
  virtual void Close(uint32_t slot, bool recv_armed, bool send_inflight) = 0;
  // The connection's next deadline, in ticks (0: none). The loop calls
  // OnDeadline at or after it.
  virtual void SetDeadline(uint32_t slot, uint64_t tick) = 0;
  // Waits until the socket has room: OnWritable(POLLOUT or -errno). (The
  // TLS layer answers it for room in its own output.)
  virtual void PollWritable(uint32_t slot) = 0;
  // Calls the protocol's OnBatchEnd() once the loop has no completion left
  // to handle (before it would sleep); at most once per call.
  virtual void AfterBatch(uint32_t slot) = 0;

  // Splicing, for large file bodies: file -> pipe -> socket, so the bytes
  // never pass through user space (what sendfile does, without blocking the
  // ring: io_uring runs each splice on its io-wq). A pipe comes from the
  // loop's pool; false when there is none to give, or when the transport
  // cannot take spliced bytes (TLS must encrypt them): the file is read
  // instead. A pipe given back with bytes still in it is closed.
  struct Pipe {
    int read_fd = -1;
    int write_fd = -1;
    uint32_t capacity = 0;
  };
  virtual bool AcquirePipe(Pipe* pipe) = 0;
  virtual void ReleasePipe(const Pipe& pipe, bool empty) = 0;
  // Up to len bytes from the pipe to the socket, never waiting for room
  // in it: the protocol's splice completion (bytes, -EAGAIN when the socket
  // is full). `more`: more of the body follows (MSG_MORE).
  virtual void SpliceToSocket(uint32_t slot, int pipe_read, uint32_t len, bool more) = 0;

 protected:
  ~Transport() = default;
};

// The settings the transports of a loop read (the protocols' settings
// extend them: exchange::ConnectionConfig).
struct TransportConfig {
  uint32_t send_timeout_ms = 30'000;    // no progress on our output for this long
  uint32_t tick_ms = 100;               // the loop's timer resolution
  // Every connection starts with a PROXY protocol header (v1 or v2),
  // read by the lowest layer that sees clear bytes (proxy_header.h).
  bool proxy_protocol = false;
};

// What the loop updates for all of its connections: now_tick once per
// batch of completions, draining once.
struct LoopState {
  uint64_t now_tick = 0;
  bool draining = false;
};

// Counters a transport shares with the protocols above it (one writer:
// the ring thread).
struct TransportStats {
  base::Counter timeouts;             // deadlines that ended a connection or a request
  base::Counter proxy_header_errors;  // --proxy-protocol: missing, malformed or late
};

}  // namespace uring_http::conn

#endif  // URING_HTTP_SRC_CONN_TRANSPORT_H_
