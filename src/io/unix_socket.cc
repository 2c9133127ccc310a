#include "src/io/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uring_http::io {
namespace {

struct UnixAddress {
  sockaddr_un addr{};
  socklen_t len = 0;
  bool abstract = false;
};

absl::StatusOr<UnixAddress> AddressOf(std::string_view name) {
  UnixAddress a;
  a.addr.sun_family = AF_UNIX;
  if (name.empty() || name == "@") return absl::InvalidArgumentError("empty socket name");
  if (name.size() >= sizeof(a.addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket name longer than ", sizeof(a.addr.sun_path) - 1, " bytes: ", std::string(name)));
  }
  if (name.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("socket name with a NUL byte");
  }
  std::memcpy(a.addr.sun_path, name.data(), name.size());
  a.abstract = name[0] == '@';
  if (a.abstract) a.addr.sun_path[0] = '\0';
  // An abstract name is exactly its bytes (no terminating NUL counted); a
  // path's length may include its NUL.
  a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                 (a.abstract ? 0 : 1));
  return a;
}

absl::StatusOr<OwnedFd> NewSocket() {
  OwnedFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", strerror(errno)));
  return fd;
}

}  // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void OwnedFd::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

absl::StatusOr<UnixListener> UnixListener::Listen(std::string_view name_view) {
  const std::string name(name_view);
  auto address = AddressOf(name);
  if (!address.ok()) return address.status();
  auto fd = NewSocket();
  if (!fd.ok()) return fd.status();
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&address->addr);
  int result = bind(fd->get(), addr, address->len);
  if (result != 0 && errno == EADDRINUSE && !address->abstract) {
    // A path outlives its process. If nobody answers on it, it is left over
    // from one that is gone: replace it.
    if (!ConnectUnix(name).ok()) {
      unlink(name.c_str());
      result = bind(fd->get(), addr, address->len);
    } else {
      errno = EADDRINUSE;
    }
  }
  if (result != 0) {
    if (errno == EADDRINUSE) {
      return absl::FailedPreconditionError(
          absl::StrCat("control socket ", name, " is in use by another process"));
    }
    return absl::UnavailableError(absl::StrCat("bind ", name, ": ", strerror(errno)));
  }
  UnixListener listener;
  listener.name_ = name;
  listener.fd_ = *std::move(fd);
  // Only the owner may connect to a path (the peer's uid is checked all the
  // same, and is all an abstract name has).
  if (!address->abstract) chmod(listener.name_.c_str(), 0600);
  if (listen(listener.fd(), 4) != 0) {
    return absl::InternalError(absl::StrCat("listen ", name, ": ", strerror(errno)));
  }
  return listener;
}

UnixListener::UnixListener(UnixListener&& other) noexcept
    : fd_(std::move(other.fd_)), name_(std::exchange(other.name_, {})) {}

UnixListener& UnixListener::operator=(UnixListener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::move(other.fd_);
    name_ = std::exchange(other.name_, {});
  }
  return *this;
}

void UnixListener::Close() {
  if (fd_.get() < 0) return;
  // The name goes first: from then on a connect finds nobody, not a queue
  // that nobody will accept from.
  if (!name_.empty() && name_[0] != '@') unlink(name_.c_str());
  fd_.Reset();
  name_.clear();
}

absl::StatusOr<OwnedFd> ConnectUnix(std::string_view name_view) {
  const std::string name(name_view);
  auto address = AddressOf(name);
  if (!address.ok()) return address.status();
  auto fd = NewSocket();
  if (!fd.ok()) return fd.status();
  if (connect(fd->get(), reinterpret_cast<const sockaddr*>(&address->addr), address->len) != 0) {
    const int saved = errno;
    if (saved == ENOENT || saved == ECONNREFUSED) {
      return absl::NotFoundError(absl::StrCat("nobody listens on ", name));
    }
    return absl::UnavailableError(absl::StrCat("connect ", name, ": ", strerror(saved)));
  }
  return fd;
}

absl::StatusOr<uid_t> PeerUid(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::InternalError(absl::StrCat("SO_PEERCRED: ", strerror(errno)));
  }
  return cred.uid;
}

bool TrustedPeer(uid_t peer) { return peer == geteuid() || peer == 0; }

absl::Status SendMessage(int fd, std::string_view bytes, std::span<const int> fds) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return absl::UnavailableError(absl::StrCat("sendmsg: ", strerror(errno)));
  if (static_cast<size_t>(n) != bytes.size()) return absl::DataLossError("sendmsg: short send");
  return absl::OkStatus();
}

absl::StatusOr<Message> ReceiveMessage(int fd, int timeout_ms, size_t max_bytes,
                                       size_t max_fds) {
  pollfd p{fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
  if (ready == 0) return absl::DeadlineExceededError("no message in time");

  Message message;
  message.bytes.resize(max_bytes);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * max_fds));
  iovec iov{message.bytes.data(), message.bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    // MSG_CMSG_CLOEXEC: descriptors received here must not leak into a
    // program this process starts.
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == ECONNRESET) return absl::UnavailableError("the peer closed the connection");
    return absl::InternalError(absl::StrCat("recvmsg: ", strerror(errno)));
  }
  // Whatever descriptors came are owned (and closed on every error) from here.
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
      message.fds.emplace_back(received);
    }
  }
  if (n == 0 && message.fds.empty()) {
    return absl::UnavailableError("the peer closed the connection");
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    return absl::DataLossError(absl::StrCat("message larger than ", max_bytes, " bytes or with more than ",
                                            max_fds, " descriptors"));
  }
  message.bytes.resize(static_cast<size_t>(n));
  return message;
}

}  // namespace uring_http::io
