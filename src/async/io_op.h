// IoOp: one operation an ASYNC handler awaits on its ring (Exchange::Io):
// for code that talks to other servers from the ring (the HTTP client,
// src/client/), make a socket, connect it, send, receive; for a file, open
// it, read it at an offset, close it.
// Each is one SQE; with a timeout, an IORING_OP_LINK_TIMEOUT linked to it
// cancels it when the time is up, so a stalled peer costs no timer of our
// own and no thread.
//
// Sockets and files opened this way are ordinary descriptors, not the ring's direct
// ones: a client connection outlives the exchange that made it (a pool
// keeps it for the next one, maybe on a worker's blocking call), and the
// file table is the server's for its accepted connections.
//
// Thread-safety: a value.
#ifndef URING_HTTP_SRC_ASYNC_IO_OP_H_
#define URING_HTTP_SRC_ASYNC_IO_OP_H_

#include <linux/time_types.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace uring_http::async {

struct IoOp {
  enum class Kind : uint8_t {
    kSocket,   // socket(domain, SOCK_STREAM | SOCK_CLOEXEC): the result is the fd
    kConnect,  // connect(fd, addr, addrlen)
    kSend,     // send(fd, buf, len, MSG_NOSIGNAL): the count taken
    kRecv,     // recv(fd, buf, len): the count, 0 at the peer's end
    kOpen,     // openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC): the fd
    kRead,     // pread(fd, buf, len, offset): the count, 0 at the end
    kClose,    // close(fd)
  };
  Kind kind = Kind::kRecv;
  int fd = -1;
  int domain = 0;                  // kSocket
  const sockaddr* addr = nullptr;  // kConnect: valid until the completion
  socklen_t addrlen = 0;
  void* buf = nullptr;             // kSend, kRecv, kRead: valid until the completion
  size_t len = 0;
  uint64_t offset = 0;             // kRead
  const char* path = nullptr;      // kOpen: valid until the completion
  // Cancelled after this long (0: never); the await then says -ETIMEDOUT.
  int64_t timeout_ns = 0;
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_IO_OP_H_
