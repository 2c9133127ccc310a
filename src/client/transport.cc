#include "src/client/transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace uring_http::client {
namespace {

// Waits for `events` on fd for at most timeout_ns (0: for ever): 0 when
// ready, -ETIMEDOUT, or -errno.
int WaitFor(int fd, short events, int64_t timeout_ns) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int wait_ms = -1;
    if (timeout_ns > 0) {
      const int64_t spent = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
      if (spent >= timeout_ns) return -ETIMEDOUT;
      wait_ms = static_cast<int>((timeout_ns - spent + 999'999) / 1'000'000);
    }
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, wait_ms);
    if (n > 0) return 0;
    if (n == 0) return -ETIMEDOUT;
    if (errno != EINTR) return -errno;
  }
}

struct CachedName {
  std::vector<io::SocketAddress> addresses;
  std::chrono::steady_clock::time_point expires;
};

std::mutex cache_mutex;
std::map<std::pair<std::string, uint16_t>, CachedName>& Cache() {
  static std::map<std::pair<std::string, uint16_t>, CachedName> cache;
  return cache;
}

absl::StatusOr<std::vector<io::SocketAddress>> ResolveNow(const std::string& host, uint16_t port) {
  return io::ResolveListenHost(host, port, /*ipv6=*/io::Ipv6Available());
}

}  // namespace

int Transport::Blocking(const async::IoOp& op) {
  using Kind = async::IoOp::Kind;
  switch (op.kind) {
    case Kind::kSocket: {
      // Non-blocking, so that each step below can wait with a timeout.
      const int fd = socket(op.domain, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      return fd >= 0 ? fd : -errno;
    }
    case Kind::kConnect: {
      if (connect(op.fd, op.addr, op.addrlen) == 0) return 0;
      if (errno != EINPROGRESS) return -errno;
      const int waited = WaitFor(op.fd, POLLOUT, op.timeout_ns);
      if (waited != 0) return waited;
      int error = 0;
      socklen_t len = sizeof(error);
      if (getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return -errno;
      return -error;
    }
    case Kind::kSend:
      for (;;) {
        const ssize_t n = send(op.fd, op.buf, op.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return static_cast<int>(n);
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const int waited = WaitFor(op.fd, POLLOUT, op.timeout_ns);
        if (waited != 0) return waited;
      }
    case Kind::kRecv:
      for (;;) {
        const ssize_t n = recv(op.fd, op.buf, op.len, MSG_DONTWAIT);
        if (n >= 0) return static_cast<int>(n);
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const int waited = WaitFor(op.fd, POLLIN, op.timeout_ns);
        if (waited != 0) return waited;
      }
    case Kind::kOpen: {
      const int fd = open(op.path, O_RDONLY | O_CLOEXEC);
      return fd >= 0 ? fd : -errno;
    }
    case Kind::kRead: {
      const ssize_t n = pread(op.fd, op.buf, op.len, static_cast<off_t>(op.offset));
      return n >= 0 ? static_cast<int>(n) : -errno;
    }
    case Kind::kClose:
      return close(op.fd) == 0 ? 0 : -errno;
  }
  return -EINVAL;
}

async::Task<absl::StatusOr<std::vector<io::SocketAddress>>> Transport::Resolve(
    std::string host, uint16_t port, std::chrono::seconds ttl) {
  // A literal needs nobody.
  absl::StatusOr<io::SocketAddress> literal = io::SocketAddress::ParseIp(host, port);
  if (literal.ok()) co_return std::vector<io::SocketAddress>{*literal};
  const auto key = std::make_pair(host, port);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = Cache().find(key);
    if (it != Cache().end() && it->second.expires > now) co_return it->second.addresses;
  }
  absl::StatusOr<std::vector<io::SocketAddress>> found;
  if (ex_ == nullptr) {
    found = ResolveNow(host, port);
  } else {
    // getaddrinfo blocks (a DNS server may take seconds): not on the ring.
    absl::StatusOr<absl::StatusOr<std::vector<io::SocketAddress>>> ran =
        co_await ex_->OnWorker([&host, port] { return ResolveNow(host, port); });
    if (!ran.ok()) co_return ran.status();
    found = std::move(*ran);
  }
  if (!found.ok()) co_return absl::UnavailableError("cannot resolve " + host + ": " +
                                                    std::string(found.status().message()));
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    Cache()[key] = CachedName{*found, now + ttl};
  }
  co_return found;
}

}  // namespace uring_http::client
