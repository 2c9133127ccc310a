// ClientAddress: the address and port of the client a request came from: the
// socket's peer, or, behind a proxy speaking the PROXY protocol
// (--proxy-protocol), the client the proxy names in its header; or "unix"
// for a connection on a Unix-domain listener (a process on this host, with
// no address or port). Fixed-size and trivially copyable, so that a request
// carries it without allocating, and laid out as a sockaddr_in/sockaddr_in6
// so that the kernel can write a socket's peer straight into it.
//
// An IPv4 client of a dual-stack [::] listener reaches us as an IPv4-mapped
// IPv6 address (::ffff:203.0.113.7); it is presented as the IPv4 address it
// is (family AF_INET, "203.0.113.7"), as a client of an IPv4 listener
// would be, whichever listener took it (Go's net/http does the same).
//
// Thread-safety: a value; safe to copy to and read on any thread.
#ifndef URING_HTTP_SRC_HTTP_CLIENT_ADDRESS_H_
#define URING_HTTP_SRC_HTTP_CLIENT_ADDRESS_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uring_http::http {

class ClientAddress {
 public:
  // Room for the longest text Format() writes ("ffff:...:255.255.255.255").
  static constexpr size_t kMaxText = INET6_ADDRSTRLEN;

  // Unknown (AF_UNSPEC): no peer address could be had.
  ClientAddress() = default;
  static ClientAddress V4(const uint8_t addr[4], uint16_t port);
  static ClientAddress V6(const uint8_t addr[16], uint16_t port);
  // A connection on a Unix-domain socket.
  static ClientAddress Unix();

  // AF_INET (an IPv4-mapped IPv6 address too), AF_INET6, AF_UNIX, or
  // AF_UNSPEC when unknown.
  sa_family_t family() const;
  bool known() const { return family() != AF_UNSPEC; }
  bool is_unix() const { return raw_.v6.sin6_family == AF_UNIX; }
  // Host byte order; 0 when unknown or a Unix socket.
  uint16_t port() const;
  // The address as text ("203.0.113.7", "2001:db8::1", "unix"), "-" when
  // unknown, written to `out` (kMaxText bytes); the view points into it.
  std::string_view Format(char* out) const;

  // Where the kernel may write a sockaddr_in or sockaddr_in6 (getsockopt
  // SO_PEERNAME); sizeof(sockaddr_in6) bytes.
  void* raw() { return &raw_; }
  // The address as the kernel wrote it: a sockaddr_in or sockaddr_in6 (an
  // IPv4 client of a dual-stack listener is a sockaddr_in6 although
  // family() says AF_INET).
  const void* raw() const { return &raw_; }

  // The IPv4 address's 4 bytes, network order, of either form (a
  // sockaddr_in, or a dual-stack listener's ::ffff:a.b.c.d); family()
  // must be AF_INET. raw() is not the place to read them from.
  const void* v4_bytes() const;

  bool operator==(const ClientAddress& other) const;

 private:
  // An IPv6 address of the form ::ffff:a.b.c.d.
  bool v4_mapped() const;

  union Raw {
    sockaddr_in v4;
    sockaddr_in6 v6;
  };
  Raw raw_{};
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_CLIENT_ADDRESS_H_
