// Listener: a TCP listening socket bound with SO_REUSEPORT, one per accept
// thread, so the kernel spreads incoming connections over the threads.
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
  Listener() = default;
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  ~Listener();

  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  // Closes the socket now (on shutdown, so the kernel stops queueing for it).
  void Close();

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_LISTENER_H_
