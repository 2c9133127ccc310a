#include "src/io/listener.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace uring_http::io {
namespace {

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

// What a connect() to a Unix stream socket says about it.
enum class UnixPeer { kListening, kNobody, kOtherKind, kError };

UnixPeer ProbeUnix(const SocketAddress& address, int* error) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = errno;
    return UnixPeer::kError;
  }
  // Non-blocking: a listener whose queue is full answers EAGAIN instead of
  // holding us; it listens all the same.
  const int result = connect(fd, address.get(), address.size());
  *error = errno;
  close(fd);
  if (result == 0 || *error == EAGAIN || *error == EINPROGRESS) return UnixPeer::kListening;
  if (*error == ECONNREFUSED || *error == ENOENT) return UnixPeer::kNobody;
  if (*error == EPROTOTYPE) return UnixPeer::kOtherKind;  // a datagram or seqpacket socket
  return UnixPeer::kError;
}

absl::Status InUse(const SocketAddress& address) {
  return absl::AlreadyExistsError(
      absl::StrCat(address.ToString(), " is already in use by another process"));
}

// Whether a Unix socket's name is free to bind: absent, or a socket file
// nobody listens on (`*stale`: Bind removes it).
absl::Status CheckUnix(const SocketAddress& address, bool* stale) {
  *stale = false;
  const std::string path = address.unix_path();
  if (!address.abstract()) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return absl::OkStatus();
      return absl::UnavailableError(absl::StrCat(address.ToString(), ": ", strerror(errno)));
    }
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          address.ToString(), ": ", path, " exists and is not a socket (left alone)"));
    }
  }
  int error = 0;
  switch (ProbeUnix(address, &error)) {
    case UnixPeer::kListening:
      return InUse(address);
    case UnixPeer::kNobody:
      *stale = !address.abstract();
      return absl::OkStatus();
    case UnixPeer::kOtherKind:
      return absl::FailedPreconditionError(absl::StrCat(
          address.ToString(), " is a socket of another kind than a stream (left alone)"));
    case UnixPeer::kError:
      break;
  }
  return absl::UnavailableError(absl::StrCat("connect ", address.ToString(), ": ",
                                             strerror(error)));
}

// Binds a Unix socket into *fd_out (the caller's to close either way).
absl::Status BindUnix(const SocketAddress& address, const Listener::BindOptions& options,
                      int* fd_out) {
  bool stale = false;
  if (absl::Status s = CheckUnix(address, &stale); !s.ok()) return s;
  const std::string path = address.unix_path();
  // Only a socket file nobody listens on: a server killed with SIGKILL, or
  // a crash, leaves its path behind, and bind() would fail on it for ever.
  if (stale && unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(
        absl::StrCat("cannot remove the stale socket ", path, ": ", strerror(errno)));
  }
  *fd_out = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd_out < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", strerror(errno)));
  if (bind(*fd_out, address.get(), address.size()) != 0) {
    if (errno == EADDRINUSE) return InUse(address);
    return absl::UnavailableError(absl::StrCat("bind ", address.ToString(), ": ", strerror(errno)));
  }
  // The mode before listen(): until then nobody can connect, whatever the
  // umask gave the file at bind().
  if (!address.abstract() && chmod(path.c_str(), options.unix_mode) != 0) {
    const int saved = errno;
    unlink(path.c_str());
    return absl::UnavailableError(
        absl::StrCat("chmod ", path, " ", absl::StrFormat("%04o", options.unix_mode), ": ",
                     strerror(saved)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Listener::CheckNotListening(const SocketAddress& address, bool dual_stack) {
  if (address.is_unix()) {
    bool stale = false;
    return CheckUnix(address, &stale);
  }
  if (address.port() == 0) return absl::OkStatus();
  // A probe: bind the address without SO_REUSEPORT and see whether the
  // kernel refuses. The kernel's own bind rules then decide what overlaps
  // (127.0.0.1:P and 0.0.0.0:P, either way round; a dual-stack [::] and
  // any IPv4 address; a listener bound to a device), which a look at the
  // port's sockets (sock_diag, /proc/net/tcp) would have to reimplement.
  // SO_REUSEADDR, as the real listeners have: what does not listen (a
  // connection in TIME_WAIT, a listener already shut by a draining server)
  // does not count, only a socket in LISTEN does. A listener that appears
  // between this probe and the real bind joins the group unseen: the probe
  // is for the mistake (a server still running), not for a race.
  const int fd = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.family() == AF_INET6) {
    const int v6_only = dual_stack ? 0 : 1;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6_only, sizeof(v6_only));
  }
  const int result = bind(fd, address.get(), address.size());
  const int saved = errno;
  close(fd);  // never listened: nothing to shut down
  if (result == 0) return absl::OkStatus();
  if (saved == EADDRINUSE) return InUse(address);
  return absl::UnavailableError(absl::StrCat("bind ", address.ToString(), ": ", strerror(saved)));
}

absl::Status Listener::CheckNotListening(const std::string& address, uint16_t port) {
  auto parsed = SocketAddress::ParseIp(address, port);
  if (!parsed.ok()) return parsed.status();
  return CheckNotListening(*parsed);
}

absl::StatusOr<Listener> Listener::Adopt(int fd, bool owns_path) {
  const int domain = IntOption(fd, SOL_SOCKET, SO_DOMAIN);
  const bool tcp = (domain == AF_INET || domain == AF_INET6) &&
                   IntOption(fd, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_TCP;
  if (IntOption(fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM || (!tcp && domain != AF_UNIX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "descriptor ", fd, " is not a TCP (IPv4 or IPv6) or Unix-domain stream socket"));
  }
  if (IntOption(fd, SOL_SOCKET, SO_ACCEPTCONN) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not listening"));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError(absl::StrCat("getsockname: ", strerror(errno)));
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  Listener listener;
  listener.fd_ = fd;
  listener.local_ = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&addr), len);
  listener.adopted_ = true;
  if (owns_path && listener.local_.is_unix() && !listener.local_.abstract()) {
    struct stat st;
    const std::string path = listener.local_.unix_path();
    if (!path.empty() && lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      listener.owns_path_ = true;
      listener.path_dev_ = st.st_dev;
      listener.path_ino_ = st.st_ino;
    }
  }
  return listener;
}

absl::Status Listener::SetOptions(int defer_accept_s) {
  if (is_unix()) return absl::OkStatus();
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (setsockopt(fd_, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_accept_s, sizeof(defer_accept_s)) <
      0) {
    return absl::InternalError(absl::StrCat("TCP_DEFER_ACCEPT: ", strerror(errno)));
  }
  return absl::OkStatus();
}

bool Listener::v6_only() const {
  return local_.family() == AF_INET6 && IntOption(fd_, IPPROTO_IPV6, IPV6_V6ONLY) == 1;
}

absl::StatusOr<Listener> Listener::Bind(const std::string& address, uint16_t port, int backlog,
                                        int defer_accept_s) {
  auto parsed = SocketAddress::ParseIp(address, port);
  if (!parsed.ok()) return parsed.status();
  BindOptions options;
  options.backlog = backlog;
  options.defer_accept_s = defer_accept_s;
  return Bind(*parsed, options);
}

absl::StatusOr<Listener> Listener::Bind(const SocketAddress& address,
                                        const BindOptions& options) {
  Listener listener;
  if (address.is_unix()) {
    // The descriptor is the listener's from the start, so that an error
    // below closes it.
    if (absl::Status s = BindUnix(address, options, &listener.fd_); !s.ok()) return s;
    if (!address.abstract()) {
      struct stat st;
      if (lstat(address.unix_path().c_str(), &st) == 0) {
        listener.owns_path_ = true;
        listener.path_dev_ = st.st_dev;
        listener.path_ino_ = st.st_ino;
      }
    }
  } else if (address.is_ip()) {
    listener.fd_ = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener.fd_ < 0) {
      return absl::UnavailableError(absl::StrCat("socket for ", address.ToString(), ": ",
                                                 strerror(errno)));
    }
    const int one = 1;
    setsockopt(listener.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (setsockopt(listener.fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
      return absl::InternalError(absl::StrCat("SO_REUSEPORT: ", strerror(errno)));
    }
    if (address.family() == AF_INET6) {
      // Explicit either way: the default is net.ipv6.bindv6only's.
      const int v6_only = options.dual_stack ? 0 : 1;
      if (setsockopt(listener.fd_, IPPROTO_IPV6, IPV6_V6ONLY, &v6_only, sizeof(v6_only)) < 0) {
        return absl::InternalError(absl::StrCat("IPV6_V6ONLY: ", strerror(errno)));
      }
    }
    // Responses are written whole; Nagle would only delay the last segment.
    setsockopt(listener.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (options.defer_accept_s > 0) {
      // The kernel completes the accept only once the client's first bytes
      // are in (or after about defer_accept_s, for a client that sends
      // nothing): the ring's first receive then finds the request at once,
      // instead of arming a poll, and a connection per request costs one
      // wake-up less (h2o does the same, with 1 s).
      if (setsockopt(listener.fd_, IPPROTO_TCP, TCP_DEFER_ACCEPT, &options.defer_accept_s,
                     sizeof(options.defer_accept_s)) < 0) {
        return absl::InternalError(absl::StrCat("TCP_DEFER_ACCEPT: ", strerror(errno)));
      }
    }
    if (bind(listener.fd_, address.get(), address.size()) < 0) {
      return absl::UnavailableError(
          absl::StrCat("bind ", address.ToString(), ": ", strerror(errno)));
    }
  } else {
    return absl::InvalidArgumentError("no address to listen on");
  }
  if (listen(listener.fd_, options.backlog) < 0) {
    return absl::InternalError(absl::StrCat("listen ", address.ToString(), ": ", strerror(errno)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(listener.fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  // A Unix socket's name as asked (getsockname gives the same, but an
  // abstract name's length is only ours).
  listener.local_ =
      address.is_unix() ? address
                        : SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&bound), len);
  return listener;
}

Listener::Listener(Listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      local_(other.local_),
      adopted_(other.adopted_),
      owns_path_(std::exchange(other.owns_path_, false)),
      path_dev_(other.path_dev_),
      path_ino_(other.path_ino_) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    local_ = other.local_;
    adopted_ = other.adopted_;
    owns_path_ = std::exchange(other.owns_path_, false);
    path_dev_ = other.path_dev_;
    path_ino_ = other.path_ino_;
  }
  return *this;
}

Listener::~Listener() { Close(); }

void Listener::RemovePath() {
  if (!owns_path_) return;
  owns_path_ = false;
  // Only if the path still names the socket we made: a successor, or an
  // operator, may have put another there since.
  const std::string path = local_.unix_path();
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == path_dev_ &&
      st.st_ino == path_ino_) {
    unlink(path.c_str());
  }
}

void Listener::Close() {
  if (adopted_) {
    // The path first: from then on a connect finds nobody, not a queue
    // nobody will accept from.
    if (fd_ >= 0) RemovePath();
    CloseDescriptor();
    return;
  }
  if (fd_ >= 0) {
    RemovePath();
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
  owns_path_ = false;
}

}  // namespace uring_http::io
