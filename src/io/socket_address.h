// SocketAddress: where a listening socket is bound: an IPv4 or IPv6 address
// and a port, or a Unix-domain stream socket's path ("/run/app.sock") or
// abstract name ("@app"). It holds the sockaddr the kernel takes and gives
// back, and the text the server prints ("127.0.0.1:80", "[::1]:80",
// "unix:/run/app.sock").
//
// ResolveListenHost turns a host as a user writes it (a literal, with or
// without brackets, a name, or "" for every address) into the addresses to
// bind. Names are resolved once, at start-up (getaddrinfo blocks): nothing
// here runs on a ring.
//
// Thread-safety: SocketAddress is a value; the functions are thread-safe.
#ifndef URING_HTTP_SRC_IO_SOCKET_ADDRESS_H_
#define URING_HTTP_SRC_IO_SOCKET_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace uring_http::io {

class SocketAddress {
 public:
  // Unset (AF_UNSPEC).
  SocketAddress() = default;
  // What the kernel wrote (getsockname, getaddrinfo). `len` beyond the
  // storage is cut.
  static SocketAddress FromSockaddr(const sockaddr* addr, socklen_t len);
  // A numeric IPv4 or IPv6 address ("127.0.0.1", "::1", "[::1]",
  // "fe80::1%eth0"); InvalidArgument for anything else (names included).
  static absl::StatusOr<SocketAddress> ParseIp(std::string_view host, uint16_t port);
  // A Unix-domain socket: an absolute path, or "@name" for the abstract
  // namespace. InvalidArgument when it is neither or too long (107 bytes).
  static absl::StatusOr<SocketAddress> Unix(std::string_view path);
  // 0.0.0.0 or [::] (IPv6 when `ipv6`).
  static SocketAddress Any(bool ipv6, uint16_t port);

  int family() const { return storage_.ss_family; }
  bool is_unix() const { return family() == AF_UNIX; }
  bool is_ip() const { return family() == AF_INET || family() == AF_INET6; }
  // 0.0.0.0 or ::.
  bool is_wildcard() const;
  // Host byte order; 0 for a Unix socket.
  uint16_t port() const;
  void set_port(uint16_t port);
  // A Unix socket's path, or "@name" for an abstract one; "" otherwise.
  std::string unix_path() const;
  bool abstract() const { return is_unix() && unix_path().starts_with("@"); }

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t size() const { return len_; }

  // "127.0.0.1:80", "[::1]:80", "[fe80::1%eth0]:80", "unix:/run/app.sock",
  // "unix:@app"; "-" when unset.
  std::string ToString() const;
  // The address without the port: "127.0.0.1", "::1", "unix:/run/app.sock".
  std::string HostText() const;

  // Same family, address (scope too) and port; the same path for Unix
  // sockets.
  bool operator==(const SocketAddress& other) const;

 private:
  sockaddr_storage storage_{};
  socklen_t len_ = 0;
};

// Whether this host can have IPv6 sockets: an AF_INET6 socket can be bound
// to [::] with IPV6_V6ONLY off (so it takes IPv4 too). False when the kernel
// has no IPv6 (ipv6.disable=1, a seccomp profile refusing AF_INET6). Asks
// the kernel each time.
bool Ipv6Available();

// The addresses to bind for `host` and `port`:
//   ""            every address: [::] when `ipv6` (dual-stack), else 0.0.0.0
//   a literal     itself ("::1" and "[::1]" alike), IPv6 refused without
//                 `ipv6`
//   "localhost"   (and names ending in ".localhost", RFC 6761) ::1 (when
//                 `ipv6`) and 127.0.0.1, without asking a resolver
//   another name  what getaddrinfo gives, IPv6 ones only when `ipv6`, each
//                 once, in its order
// InvalidArgument (naming the host) when nothing is left, or a name does not
// resolve.
absl::StatusOr<std::vector<SocketAddress>> ResolveListenHost(std::string_view host,
                                                             uint16_t port, bool ipv6);

// A listen address as written in ServerConfig::listen and --listen:
// "HOST:PORT" (HOST as ResolveListenHost takes it, an IPv6 literal in
// brackets: "[::1]:8080"; ":8080" for every address) or "unix:PATH" /
// "unix:@NAME". CheckListenAddress checks its form only (no resolver);
// ResolveListenAddress gives the addresses to bind.
absl::Status CheckListenAddress(std::string_view text);
absl::StatusOr<std::vector<SocketAddress>> ResolveListenAddress(std::string_view text,
                                                                bool ipv6);

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_SOCKET_ADDRESS_H_
