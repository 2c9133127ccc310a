#include "src/io/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uring_http::io {

absl::StatusOr<Listener> Listener::Bind(const std::string& address, uint16_t port,
                                        int backlog, int defer_accept_s) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", address));
  }
  Listener listener;
  listener.fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener.fd_ < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  const int one = 1;
  setsockopt(listener.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (setsockopt(listener.fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
    return absl::InternalError(absl::StrCat("SO_REUSEPORT: ", strerror(errno)));
  }
  // Responses are written whole; Nagle would only delay the last segment.
  setsockopt(listener.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (defer_accept_s > 0) {
    // The kernel completes the accept only once the client's first bytes
    // are in (or after about defer_accept_s, for a client that sends
    // nothing): the ring's first receive then finds the request at once,
    // instead of arming a poll, and a connection per request costs one
    // wake-up less (h2o does the same, with 1 s).
    if (setsockopt(listener.fd_, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_accept_s,
                   sizeof(defer_accept_s)) < 0) {
      return absl::InternalError(absl::StrCat("TCP_DEFER_ACCEPT: ", strerror(errno)));
    }
  }
  if (bind(listener.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    return absl::UnavailableError(
        absl::StrCat("bind ", address, ":", port, ": ", strerror(errno)));
  }
  if (listen(listener.fd_, backlog) < 0) {
    return absl::InternalError(absl::StrCat("listen: ", strerror(errno)));
  }
  socklen_t len = sizeof(addr);
  getsockname(listener.fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  listener.port_ = ntohs(addr.sin_port);
  return listener;
}

Listener::Listener(Listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

Listener::~Listener() { Close(); }

void Listener::Close() {
  if (fd_ >= 0) {
    // close() alone does not stop listening while another reference to the
    // socket lives on (an io_uring accept, torn down asynchronously after the
    // ring is gone): the kernel would keep queueing connections nobody takes.
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    fd_ = -1;
  }
}

}  // namespace uring_http::io
