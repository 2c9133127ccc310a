#include "src/serving/acceptor.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "src/io/uring_compat.h"
#include "src/serving/user_data.h"

namespace uring_http::serving {
namespace {

// The slot field of an accept's user_data says which kind it is.
constexpr uint32_t kAcceptMultishot = 0;
constexpr uint32_t kAcceptSingle = 1;
constexpr uint32_t kAcceptSweep = 2;
// Connections a sweep accepts at most: it is for those whose wake-up was
// lost, not for a queue that a steady load keeps full (the process that
// accepts from it now empties it).
constexpr uint32_t kMaxSweep = 64;

constexpr std::string_view kRefusal =
    "HTTP/1.1 503 Service Unavailable\r\nServer: uring-http\r\nContent-Type: text/plain\r\n"
    "Content-Length: 24\r\nConnection: close\r\n\r\n503 Service Unavailable\n";

}  // namespace

void Acceptor::Init(io::Ring* ring, int listen_fd, uint32_t table_size, int listen_backlog,
                    int thread_index, uint32_t* table_used, uint32_t listener, bool multishot,
                    uint32_t max_single) {
  ring_ = ring;
  max_single_ = std::max<uint32_t>(max_single, 1);
  table_used_ = table_used;
  listener_ = listener;
  listen_fd_ = listen_fd;
  table_size_ = table_size;
  thread_index_ = thread_index;
  backoff_.tv_sec = 0;
  backoff_.tv_nsec = 100 * 1000000LL;
  // Multishot while the table has more free entries than the backlog can
  // bring in one go; small tables accept one at a time from the start.
  multishot_headroom_ = std::min<uint32_t>(static_cast<uint32_t>(listen_backlog) + kRefuseReserve,
                                           table_size / 2 + 1);
  if (table_size < 4 * kRefuseReserve || !multishot) multishot_headroom_ = table_size + 1;
}

void Acceptor::Ensure() {
  if (stopped_ || backoff_pending_ || listener_closed_) return;
  const uint32_t free_entries = table_size_ - *table_used_;
  if (free_entries >= multishot_headroom_) {
    if (!multishot_armed_) {
      io_uring_sqe* sqe = Sqe();
      // Direct: the socket goes straight into the fixed-file table
      // (IORING_FILE_INDEX_ALLOC picks a free entry), never into the
      // process's descriptor table.
      // O_NONBLOCK: io_uring's own sends and receives never look at it, but
      // a splice to the socket does (a full socket is then -EAGAIN).
      io_uring_prep_multishot_accept_direct(sqe, listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
      io_uring_sqe_set_data64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, listener_));
      multishot_armed_ = true;
    }
    return;
  }
  if (multishot_armed_) {
    if (!multishot_cancelling_) {
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, listener_), 0);
      io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
      multishot_cancelling_ = true;
    }
    return;  // single-shot accepts start once the multishot has ended
  }
  while (single_accepts_ < max_single_ && single_accepts_ < free_entries) {
    io_uring_sqe* sqe = Sqe();
    // Not io_uring_prep_accept_direct(..., IORING_FILE_INDEX_ALLOC): liburing
    // 2.3 stores index + 1, which wraps ALLOC to 0, a plain accept.
    io_uring_prep_accept(sqe, listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
    sqe->file_index = IORING_FILE_INDEX_ALLOC;
    io_uring_sqe_set_data64(sqe, PackUserData(Op::kAccept, kAcceptSingle, listener_));
    ++single_accepts_;
  }
}

int Acceptor::OnAccept(const io_uring_cqe* cqe, LoopStats& stats) {
  const int res = cqe->res;
  const uint32_t kind = UserDataSlot(cqe->user_data);
  if (kind == kAcceptSweep) {
    sweeping_ = false;
    if (res < 0) {
      sweep_pending_ = false;  // the queue is empty (EAGAIN), or no sweep here
      return -1;
    }
  } else if (kind == kAcceptSingle) {
    --single_accepts_;
  } else if (!(cqe->flags & IORING_CQE_F_MORE)) {
    multishot_armed_ = false;  // ended (error, cancel, overflow): re-armed by Ensure()
    multishot_cancelling_ = false;
  }
  MaybeSweep();
  if (res >= 0) {
    ++*table_used_;
    error_logged_ = false;
    return res;
  }
  if (res == -ECANCELED) return -1;
  if (res == -EINVAL && !Listening()) {
    // The socket no longer listens: shut down at stop by another ring that
    // accepts from it too (fewer sockets taken over than accept threads).
    // Nothing to retry, nothing to report; this ring's own stop is on its
    // way.
    listener_closed_ = true;
    return -1;
  }
  stats.accept_errors.Add();
  if (!error_logged_) {
    // Once per episode: a flood of EMFILE must not become a flood of logs.
    std::fprintf(stderr, "uring-http: thread %d: accept: %s; retrying%s\n", thread_index_,
                 strerror(-res), res == -ENFILE || res == -EMFILE ? " as descriptors free up" : "");
    error_logged_ = true;
  }
  if (!stopped_ && !backoff_pending_) {
    // Back off before accepting again: an immediate retry would spin on
    // the same EMFILE/ENFILE until something closes.
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_timeout(sqe, &backoff_, 0, 0);
    io_uring_sqe_set_data64(sqe, PackUserData(Op::kAcceptRetry, 0, listener_));
    backoff_pending_ = true;
  }
  return -1;
}

bool Acceptor::Listening() const {
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(listen_fd_, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0 || value == 0) {
    return false;
  }
  // A Unix-domain socket stays in the listening state after a shutdown
  // (its accepts then fail with EINVAL); poll says it is shut down.
  pollfd p{listen_fd_, POLLRDHUP, 0};
  return !(poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP)) != 0);
}

void Acceptor::OnBackoffDone() {
  backoff_pending_ = false;
  Ensure();
}

void Acceptor::OnEntryClosed() {
  --*table_used_;
  Ensure();
}

void Acceptor::Refuse(int file_index) {
  // A full pool answers 503 and closes. HARDLINK: the close runs even if the
  // send fails, so the fixed-file entry always comes back (kRefuseClosed).
  ring_->ReserveSqes(2);
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_send(sqe, file_index, kRefusal.data(), kRefusal.size(), MSG_NOSIGNAL);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  sqe = Sqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(file_index));
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kRefuseClosed, 0, 0));
}

void Acceptor::MaybeSweep() {
  if (!sweep_pending_ || sweeping_ || multishot_armed_ || single_accepts_ > 0) return;
  if (swept_ == kMaxSweep) {
    sweep_pending_ = false;
    return;
  }
  ++swept_;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_accept(sqe, listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
  sqe->file_index = IORING_FILE_INDEX_ALLOC;
  sqe->ioprio |= IORING_ACCEPT_DONTWAIT;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kAccept, kAcceptSweep, listener_));
  sweeping_ = true;
}

void Acceptor::Stop(bool shutdown_listener) {
  stopped_ = true;
  sweep_pending_ = !shutdown_listener && !listener_closed_;
  ring_->ReserveSqes(3);
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptMultishot, listener_),
                         IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  sqe = Sqe();
  io_uring_prep_cancel64(sqe, PackUserData(Op::kAccept, kAcceptSingle, listener_),
                         IORING_ASYNC_CANCEL_ALL);
  if (shutdown_listener) sqe->flags |= IOSQE_IO_HARDLINK;
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
  if (!shutdown_listener) {
    MaybeSweep();  // at once if nothing was armed
    return;
  }
  // Shutting the listener down takes it out of the SO_REUSEPORT group at
  // once: new connections go to the other listeners (or another process on
  // the same port) instead of waiting in a queue nobody accepts from.
  sqe = Sqe();
  io_uring_prep_shutdown(sqe, listen_fd_, SHUT_RDWR);
  io_uring_sqe_set_data64(sqe, PackUserData(Op::kIgnore, 0, 0));
}

}  // namespace uring_http::serving
