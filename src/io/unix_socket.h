// Unix-domain sockets for passing descriptors between processes: a named
// socket to listen on or connect to, the peer's user id, and messages with
// descriptors attached (SCM_RIGHTS). The takeover's control socket
// (src/serving/takeover.h) is built on these.
//
// Names: "@name" is a socket in the abstract namespace (a leading NUL, as
// systemd's NOTIFY_SOCKET writes it): it has no file, so a process killed
// with SIGKILL leaves nothing behind that blocks the next one, and it lives
// in the network namespace, as the port it serves does. Anything else is a
// path in the file system, created with mode 0600 and removed on close.
//
// Every call here blocks (with the timeouts given): they run at start-up and
// shutdown only, never on a ring.
//
// Thread-safety: the functions are thread-safe; a UnixListener or a
// descriptor belongs to one thread at a time.
#ifndef URING_HTTP_SRC_IO_UNIX_SOCKET_H_
#define URING_HTTP_SRC_IO_UNIX_SOCKET_H_

#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace uring_http::io {

// An owned descriptor: closed by the destructor.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept;
  ~OwnedFd() { Reset(); }

  int get() const { return fd_; }
  // Gives the descriptor up without closing it.
  int Release() { return std::exchange(fd_, -1); }
  void Reset();

 private:
  int fd_ = -1;
};

// A listening SOCK_SEQPACKET socket under a name (see above).
class UnixListener {
 public:
  // FailedPrecondition if the name is taken by a socket somebody listens
  // on; a path left by a process that is gone is replaced.
  static absl::StatusOr<UnixListener> Listen(std::string_view name);
  UnixListener() = default;
  UnixListener(UnixListener&& other) noexcept;
  UnixListener& operator=(UnixListener&& other) noexcept;
  ~UnixListener() { Close(); }

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }
  // Closes the socket, and removes its file (a path name).
  void Close();

 private:
  OwnedFd fd_;
  std::string name_;
};

// Connects to a SOCK_SEQPACKET socket listening under `name`. NotFound when
// nobody listens there (no such name, or refused).
absl::StatusOr<OwnedFd> ConnectUnix(std::string_view name);

// The user id of the process at the other end (SO_PEERCRED).
absl::StatusOr<uid_t> PeerUid(int fd);
// Whether the process at the other end may hand sockets to us or take ours:
// the same user as this process, or root (never a less privileged user
// taking a root server's port).
bool TrustedPeer(uid_t peer);

// Sends one message (one SOCK_SEQPACKET record) with `fds` attached.
absl::Status SendMessage(int fd, std::string_view bytes, std::span<const int> fds = {});

struct Message {
  std::string bytes;
  std::vector<OwnedFd> fds;  // close-on-exec
};
// Receives one message, waiting at most `timeout_ms` (-1: for ever).
// DeadlineExceeded on the timeout, Unavailable when the peer has closed,
// DataLoss when the message or its descriptors did not fit (the
// descriptors that came are closed).
absl::StatusOr<Message> ReceiveMessage(int fd, int timeout_ms, size_t max_bytes = 512,
                                       size_t max_fds = 64);

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_UNIX_SOCKET_H_
