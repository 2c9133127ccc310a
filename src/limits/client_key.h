// ClientKey: what a per-client rate limit counts a request against. An IPv4
// client is its address; an IPv6 client is its /64 (one host, or one
// subscriber's LAN, usually holds a whole /64 and picks addresses in it at
// will: keyed by the full address, a client could take a fresh bucket per
// request); an IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual-stack
// listener's IPv4 client) is the IPv4 client. A client with no address (a
// Unix socket without a PROXY header) has no key and is not limited: every
// request there would count against one bucket, the proxy's.
//
// Thread-safety: values and a pure function.
#ifndef URING_HTTP_SRC_LIMITS_CLIENT_KEY_H_
#define URING_HTTP_SRC_LIMITS_CLIENT_KEY_H_

#include <cstdint>

#include "src/http/client_address.h"

namespace uring_http::limits {

struct ClientKey {
  enum Kind : uint8_t { kNone = 0, kV4 = 4, kV6Prefix = 6 };
  uint64_t bits = 0;  // the IPv4 address, or the IPv6 /64 prefix
  Kind kind = kNone;

  bool known() const { return kind != kNone; }
  bool operator==(const ClientKey& o) const { return bits == o.bits && kind == o.kind; }
  uint64_t Hash() const;
};

ClientKey KeyOf(const http::ClientAddress& client);

}  // namespace uring_http::limits

#endif  // URING_HTTP_SRC_LIMITS_CLIENT_KEY_H_
