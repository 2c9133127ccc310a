// Listener: a listening stream socket. For TCP (IPv4 or IPv6) it is bound
// with SO_REUSEPORT, one per accept thread, so the kernel spreads incoming
// connections over the threads; an IPv6 wildcard [::] is dual-stack
// (IPV6_V6ONLY off: IPv4 clients arrive as ::ffff:a.b.c.d) unless asked
// otherwise. A Unix-domain stream socket (a path, or an abstract @name)
// is one socket, shared by the threads: SO_REUSEPORT does not apply to
// AF_UNIX, and a second bind of a path fails. Or a socket this process was
// given, already listening (by systemd's socket activation, or by the
// server it takes over from: src/serving/takeover.h).
//
// Options set here (TCP_NODELAY, TCP_DEFER_ACCEPT) are inherited by every
// accepted TCP socket, which saves a setsockopt per connection on the
// accept path.
//
// A Unix socket's path: a file left there by a process that is gone (a
// socket nobody listens on: connect() is refused) is replaced; anything
// else there (a socket somebody listens on, a file that is not a socket)
// is refused and left alone. The path gets the mode asked for (0660 by
// default: the server's user and group, e.g. a proxy's), and is removed
// when the listener that made it closes for good (Close(): not when it is
// handed to a successor, which removes it in its turn), if the path still
// names that socket.
//
// Thread-safety: created at start-up on the main thread; afterwards only its
// owning rings use the descriptor.
#ifndef URING_HTTP_SRC_IO_LISTENER_H_
#define URING_HTTP_SRC_IO_LISTENER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "src/io/socket_address.h"

namespace uring_http::io {

class Listener {
 public:
  struct BindOptions {
    int backlog = 4096;
    // > 0: TCP_DEFER_ACCEPT, a connection is accepted once its first bytes
    // arrive (or after about that many seconds without any).
    int defer_accept_s = 0;
    // An IPv6 socket takes IPv4 too (IPV6_V6ONLY off; what matters is the
    // wildcard [::]). false: IPv6 only.
    bool dual_stack = true;
    // A Unix socket's file mode.
    uint32_t unix_mode = 0660;
  };

  // Binds `address` and listens. Port 0 picks an ephemeral port; bind the
  // first listener with 0 and the others with its port().
  static absl::StatusOr<Listener> Bind(const SocketAddress& address, const BindOptions& options);
  // The same for a numeric IPv4 or IPv6 address (InvalidArgument else).
  static absl::StatusOr<Listener> Bind(const std::string& address, uint16_t port, int backlog,
                                       int defer_accept_s = 0);
  // OK when no socket listens on `address` (nor on one that overlaps it:
  // the wildcard and a specific address, either way round; a dual-stack [::]
  // and IPv4 ones), or, for a Unix socket, when its path is free or left
  // over (see above); AlreadyExists naming the address when one does
  // (whichever process owns it); FailedPrecondition for a path that is not
  // a socket. Bind() alone cannot tell: with SO_REUSEPORT it joins a
  // listener of the same user instead of failing. Port 0 is always free.
  static absl::Status CheckNotListening(const SocketAddress& address, bool dual_stack = true);
  static absl::Status CheckNotListening(const std::string& address, uint16_t port);
  // Takes over `fd`, which must be a listening TCP (IPv4 or IPv6) or
  // Unix-domain stream socket (else InvalidArgument, and the descriptor
  // stays the caller's). Changes nothing on the socket: see SetOptions().
  // `owns_path`: a Unix socket's path becomes this listener's to remove
  // on Close() (a predecessor's socket; not systemd's, which systemd
  // removes).
  static absl::StatusOr<Listener> Adopt(int fd, bool owns_path = false);
  // The options Bind() sets that can change after listen(), for an adopted
  // TCP socket: TCP_NODELAY, and TCP_DEFER_ACCEPT (`defer_accept_s`, 0
  // clears it). Nothing for a Unix socket.
  absl::Status SetOptions(int defer_accept_s);
  Listener() = default;
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  ~Listener();

  int fd() const { return fd_; }
  // Where the socket is bound (its port is the real one, after port 0).
  const SocketAddress& local() const { return local_; }
  uint16_t port() const { return local_.port(); }
  bool is_unix() const { return local_.is_unix(); }
  // The address the socket is bound to, without the port ("0.0.0.0": any;
  // "::"; "unix:/run/app.sock").
  std::string address() const { return local_.HostText(); }
  // An IPv6 socket that refuses IPv4 (IPV6_V6ONLY on).
  bool v6_only() const;
  // Closes the socket now (on shutdown, so the kernel stops queueing for
  // it), and removes a Unix socket's path if it is this listener's. An
  // adopted listener's descriptor is only closed (as CloseDescriptor()):
  // the socket may be another process's too.
  void Close();
  // Closes this descriptor only. A shutdown() would end the listening for
  // every process holding the socket and reset the connections waiting in
  // its accept queue; without it, the socket and its queue live on in
  // whoever else holds it (the server that took it over, or systemd), and
  // go only with the last descriptor. A Unix socket's path stays.
  void CloseDescriptor();

 private:
  // Removes the Unix socket's path if it is ours and still names our socket.
  void RemovePath();

  int fd_ = -1;
  SocketAddress local_;
  bool adopted_ = false;
  bool owns_path_ = false;
  dev_t path_dev_ = 0;  // the path's file, as bound or adopted
  ino_t path_ino_ = 0;
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_LISTENER_H_
