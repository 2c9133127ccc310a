#include "src/limits/client_key.h"

#include <netinet/in.h>

#include <cstring>

namespace uring_http::limits {

uint64_t ClientKey::Hash() const {
  // splitmix64's finalizer: addresses of one subnet differ in a few bits,
  // which must spread over the table's shards and sets.
  uint64_t x = bits ^ (uint64_t{kind} << 56);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

ClientKey KeyOf(const http::ClientAddress& client) {
  ClientKey key;
  const void* raw = client.raw();
  if (client.family() == AF_INET) {
    // An IPv4 client of a dual-stack listener comes as ::ffff:a.b.c.d and
    // reports AF_INET: v4_bytes() finds its four bytes either way (the
    // sockaddr_in's would be the IPv6 flow info, the same for every
    // client, and every IPv4 client would share one bucket).
    uint32_t a;
    std::memcpy(&a, client.v4_bytes(), 4);
    key.bits = a;
    key.kind = ClientKey::kV4;
  } else if (client.family() == AF_INET6) {
    const auto* v6 = static_cast<const sockaddr_in6*>(raw);
    const uint8_t* b = v6->sin6_addr.s6_addr;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b, kMapped, sizeof(kMapped)) == 0) {
      uint32_t a;
      std::memcpy(&a, b + 12, 4);
      key.bits = a;
      key.kind = ClientKey::kV4;
    } else {
      std::memcpy(&key.bits, b, 8);  // the /64
      key.kind = ClientKey::kV6Prefix;
    }
  }
  return key;
}

}  // namespace uring_http::limits
