// ClientAddress: the address and port of the client a request came from: the
// socket's peer, or, behind a proxy speaking the PROXY protocol
// (--proxy-protocol), the client the proxy names in its header. Fixed-size
// and trivially copyable, so that a request carries it without allocating,
// and laid out as a sockaddr_in/sockaddr_in6 so that the kernel can write a
// socket's peer straight into it.
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

  // AF_INET, AF_INET6, or AF_UNSPEC when unknown.
  sa_family_t family() const { return raw_.v6.sin6_family; }
  bool known() const { return family() == AF_INET || family() == AF_INET6; }
  // Host byte order; 0 when unknown.
  uint16_t port() const;
  // The address as text ("203.0.113.7", "2001:db8::1"), "-" when unknown,
  // written to `out` (kMaxText bytes); the view points into it.
  std::string_view Format(char* out) const;

  // Where the kernel may write a sockaddr_in or sockaddr_in6 (getsockopt
  // SO_PEERNAME); sizeof(sockaddr_in6) bytes.
  void* raw() { return &raw_; }
  // The address as a sockaddr_in or sockaddr_in6 (by family()).
  const void* raw() const { return &raw_; }

  bool operator==(const ClientAddress& other) const;

 private:
  union Raw {
    sockaddr_in v4;
    sockaddr_in6 v6;
  };
  Raw raw_{};
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_CLIENT_ADDRESS_H_
