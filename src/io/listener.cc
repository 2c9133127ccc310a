#include "src/io/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
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
namespace {

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

}  // namespace

absl::Status Listener::CheckNotListening(const std::string& address, uint16_t port) {
  if (port == 0) return absl::OkStatus();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", address));
  }
  // A probe: bind the address without SO_REUSEPORT and see whether the
  // kernel refuses. The kernel's own bind rules then decide what overlaps
  // (127.0.0.1:P and 0.0.0.0:P, either way round; an IPv6 wildcard that
  // takes IPv4 too; a listener bound to a device), which a look at the
  // port's sockets (sock_diag, /proc/net/tcp) would have to reimplement.
  // SO_REUSEADDR, as the real listeners have: what does not listen (a
  // connection in TIME_WAIT, a listener already shut by a draining server)
  // does not count, only a socket in LISTEN does. A listener that appears
  // between this probe and the real bind joins the group unseen: the probe
  // is for the mistake (a server still running), not for a race.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int result = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int saved = errno;
  close(fd);  // never listened: nothing to shut down
  if (result == 0) return absl::OkStatus();
  if (saved == EADDRINUSE) {
    return absl::AlreadyExistsError(
        absl::StrCat(address, ":", port, " is already in use by another process"));
  }
  return absl::UnavailableError(absl::StrCat("bind ", address, ":", port, ": ", strerror(saved)));
}

absl::StatusOr<Listener> Listener::Adopt(int fd) {
  if (IntOption(fd, SOL_SOCKET, SO_DOMAIN) != AF_INET ||
      IntOption(fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
      IntOption(fd, SOL_SOCKET, SO_PROTOCOL) != IPPROTO_TCP) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptor ", fd, " is not an IPv4 TCP socket (the server is IPv4 only)"));
  }
  if (IntOption(fd, SOL_SOCKET, SO_ACCEPTCONN) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not listening"));
  }
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError(absl::StrCat("getsockname: ", strerror(errno)));
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  Listener listener;
  listener.fd_ = fd;
  listener.port_ = ntohs(addr.sin_port);
  listener.adopted_ = true;
  return listener;
}

absl::Status Listener::SetOptions(int defer_accept_s) {
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (setsockopt(fd_, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_accept_s, sizeof(defer_accept_s)) <
      0) {
    return absl::InternalError(absl::StrCat("TCP_DEFER_ACCEPT: ", strerror(errno)));
  }
  return absl::OkStatus();
}

std::string Listener::address() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  char text[INET_ADDRSTRLEN] = "?";
  if (fd_ >= 0 && getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  }
  return text;
}

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
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_), adopted_(other.adopted_) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    adopted_ = other.adopted_;
  }
  return *this;
}

Listener::~Listener() { Close(); }

void Listener::Close() {
  if (adopted_) {
    CloseDescriptor();
    return;
  }
  if (fd_ >= 0) {
    // close() alone does not stop listening while another reference to the
    // socket lives on (an io_uring accept, torn down asynchronously after the
    // ring is gone): the kernel would keep queueing connections nobody takes.
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    fd_ = -1;
  }
}

void Listener::CloseDescriptor() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

}  // namespace uring_http::io
