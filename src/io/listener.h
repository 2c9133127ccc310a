// Listener: a TCP listening socket bound with SO_REUSEPORT, one per accept
// thread, so the kernel spreads incoming connections over the threads; or
// one this process was given, already listening (by systemd's socket
// activation, or by the server it takes over from: src/serving/takeover.h).
//
// Options set here (TCP_NODELAY, TCP_DEFER_ACCEPT) are inherited by every accepted socket,
// which saves a setsockopt per connection on the accept path.
//
// Thread-safety: created at start-up on the main thread; afterwards only its
// owning ring uses the descriptor.
#ifndef URING_HTTP_SRC_IO_LISTENER_H_
#define URING_HTTP_SRC_IO_LISTENER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace uring_http::io {

class Listener {
 public:
  // Binds `address:port` (IPv4 dotted quad). Port 0 picks an ephemeral port;
  // bind the first listener with 0 and the others with its port().
  // `defer_accept_s` > 0: TCP_DEFER_ACCEPT, a connection is accepted once its
  // first bytes arrive (or after about that many seconds without any).
  static absl::StatusOr<Listener> Bind(const std::string& address, uint16_t port, int backlog,
                                       int defer_accept_s = 0);
  // OK when no socket listens on `address:port` (nor on an address that
  // overlaps it: the wildcard and a specific address, either way round);
  // AlreadyExists naming the address when one does (whichever process owns
  // it). Bind() alone cannot tell: with SO_REUSEPORT it joins a listener of
  // the same user instead of failing. Port 0 is always free.
  static absl::Status CheckNotListening(const std::string& address, uint16_t port);
  // Takes over `fd`, which must be a listening IPv4 TCP socket (else
  // InvalidArgument, and the descriptor stays the caller's). Changes
  // nothing on the socket: see SetOptions().
  static absl::StatusOr<Listener> Adopt(int fd);
  // The options Bind() sets that can change after listen(), for an adopted
  // socket: TCP_NODELAY, and TCP_DEFER_ACCEPT (`defer_accept_s`, 0 clears it).
  absl::Status SetOptions(int defer_accept_s);
  Listener() = default;
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  ~Listener();

  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  // The dotted quad the socket is bound to ("0.0.0.0": any).
  std::string address() const;
  // Closes the socket now (on shutdown, so the kernel stops queueing for
  // it). An adopted listener's descriptor is only closed (as
  // CloseDescriptor()): the socket may be another process's too.
  void Close();
  // Closes this descriptor only. A shutdown() would end the listening for
  // every process holding the socket and reset the connections waiting in
  // its accept queue; without it, the socket and its queue live on in
  // whoever else holds it (the server that took it over, or systemd), and
  // go only with the last descriptor.
  void CloseDescriptor();

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  bool adopted_ = false;
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_LISTENER_H_
