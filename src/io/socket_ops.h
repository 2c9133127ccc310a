// SQE preparation for the operations a connection's socket needs, in one
// place: each sets the flags it must have and says why. Sockets are io_uring
// direct descriptors (the fixed-file table), so every op carries
// IOSQE_FIXED_FILE. Nothing here submits; the ring does that in batches.
//
// Thread-safety: the ring's owning thread (they fill that ring's SQEs).
#ifndef URING_HTTP_SRC_IO_SOCKET_OPS_H_
#define URING_HTTP_SRC_IO_SOCKET_OPS_H_

#include <liburing.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>

#include "src/io/uring_compat.h"

namespace uring_http::io {

// Multishot receive with buffer selection: the kernel picks a provided buffer
// from `group` per completion, so no memory is committed to an idle
// connection. It runs until an error, EOF, ENOBUFS or a cancel ends it (the
// last completion lacks IORING_CQE_F_MORE); re-arm only then.
inline void PrepRecvMultishot(io_uring_sqe* sqe, uint32_t file_index, uint16_t group,
                              uint64_t user_data) {
  io_uring_prep_recv_multishot(sqe, static_cast<int>(file_index), nullptr, 0, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
  sqe->buf_group = group;
  io_uring_sqe_set_data64(sqe, user_data);
}

// A single-shot receive with buffer selection: one completion (never
// F_MORE), with the bytes or the error. If nothing has arrived it waits
// (an internal poll) like the multishot one; when the bytes are there, as
// for a connection's first request, it completes at submission and leaves
// nothing armed.
inline void PrepRecvOnce(io_uring_sqe* sqe, uint32_t file_index, uint16_t group,
                         uint64_t user_data) {
  io_uring_prep_recv(sqe, static_cast<int>(file_index), nullptr, 0, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
  sqe->buf_group = group;
  io_uring_sqe_set_data64(sqe, user_data);
}

// One send of the given bytes. No MSG_WAITALL: a send the socket cannot take
// whole completes with what it took (after waiting for room), so the caller
// sees every step of a large send's progress (the send deadline measures
// it) and sends the rest itself. MSG_NOSIGNAL: a reset peer is an EPIPE
// result, not a SIGPIPE. Several iovecs go as one IORING_OP_SENDMSG; `msg`
// and `iov` must stay valid until the completion. `dont_wait`: MSG_DONTWAIT
// makes io_uring complete a send the socket has no room for with -EAGAIN
// instead of arming its internal poll (the socket's own O_NONBLOCK does
// not: io_uring sends ignore it).
inline void PrepSend(io_uring_sqe* sqe, uint32_t file_index, const iovec* iov, unsigned count,
                     msghdr* msg, bool dont_wait, uint64_t user_data) {
  const int flags = MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0);
  if (count == 1) {
    io_uring_prep_send(sqe, static_cast<int>(file_index), iov[0].iov_base, iov[0].iov_len,
                       flags);
  } else {
    *msg = msghdr{};
    msg->msg_iov = const_cast<iovec*>(iov);
    msg->msg_iovlen = count;
    io_uring_prep_sendmsg(sqe, static_cast<int>(file_index), msg, flags);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

// A send of all the bytes (MSG_WAITALL): a socket that takes only part of
// them has the rest retried by the kernel, and the send completes with the
// whole count or an error, never short. For a send hard-linked to a close:
// without WAITALL a short send would count as done and the close would
// truncate the answer.
inline void PrepSendWhole(io_uring_sqe* sqe, uint32_t file_index, const iovec* iov,
                          unsigned count, msghdr* msg, uint64_t user_data) {
  PrepSend(sqe, file_index, iov, count, msg, /*dont_wait=*/false, user_data);
  sqe->msg_flags |= MSG_WAITALL;
}

// Zero-copy send: the kernel sends from our pages and completes twice, the
// result (with IORING_CQE_F_MORE) and later a notification (F_NOTIF) once it
// no longer reads them. REPORT_USAGE: the notification says whether the
// kernel copied after all (it does on loopback).
inline void PrepSendZc(io_uring_sqe* sqe, uint32_t file_index, const iovec& iov,
                       uint64_t user_data) {
  io_uring_prep_send_zc(sqe, static_cast<int>(file_index), iov.iov_base, iov.iov_len,
                        MSG_NOSIGNAL, IORING_SEND_ZC_REPORT_USAGE);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

// Our FIN. Runs asynchronously and resolves the descriptor late: a close of
// the same table entry must wait for its completion (the entry could be
// reused by the next accept, and this shutdown would hit that connection).
inline void PrepShutdownWrite(io_uring_sqe* sqe, uint32_t file_index, uint64_t user_data) {
  io_uring_prep_shutdown(sqe, static_cast<int>(file_index), SHUT_WR);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

// Cancels the request submitted with `target` as its user_data: one hash
// lookup, where cancelling by descriptor walks every armed request.
inline void PrepCancel(io_uring_sqe* sqe, uint64_t target, uint64_t user_data) {
  io_uring_prep_cancel64(sqe, target, 0);
  io_uring_sqe_set_data64(sqe, user_data);
}

// Cancels everything armed on a fixed descriptor (a send and a receive).
inline void PrepCancelAll(io_uring_sqe* sqe, uint32_t file_index, uint64_t user_data) {
  io_uring_prep_cancel_fd(sqe, static_cast<int>(file_index),
                          IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
  io_uring_sqe_set_data64(sqe, user_data);
}

// Frees the fixed-file entry (and closes the socket once no request holds it).
inline void PrepCloseDirect(io_uring_sqe* sqe, uint32_t file_index, uint64_t user_data) {
  io_uring_prep_close_direct(sqe, file_index);
  io_uring_sqe_set_data64(sqe, user_data);
}

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_SOCKET_OPS_H_
