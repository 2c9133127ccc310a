#include "src/http/client_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace uring_http::http {

ClientAddress ClientAddress::V4(const uint8_t addr[4], uint16_t port) {
  ClientAddress a;
  a.raw_.v4.sin_family = AF_INET;
  a.raw_.v4.sin_port = htons(port);
  std::memcpy(&a.raw_.v4.sin_addr, addr, 4);
  return a;
}

ClientAddress ClientAddress::V6(const uint8_t addr[16], uint16_t port) {
  ClientAddress a;
  a.raw_.v6.sin6_family = AF_INET6;
  a.raw_.v6.sin6_port = htons(port);
  std::memcpy(&a.raw_.v6.sin6_addr, addr, 16);
  return a;
}

ClientAddress ClientAddress::Unix() {
  ClientAddress a;
  a.raw_.v6.sin6_family = AF_UNIX;
  return a;
}

bool ClientAddress::v4_mapped() const {
  return raw_.v6.sin6_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&raw_.v6.sin6_addr);
}

sa_family_t ClientAddress::family() const {
  const sa_family_t f = raw_.v6.sin6_family;
  if (f == AF_INET || f == AF_INET6 || f == AF_UNIX) return v4_mapped() ? AF_INET : f;
  return AF_UNSPEC;  // whatever else the kernel might have written
}

const void* ClientAddress::v4_bytes() const {
  return v4_mapped() ? static_cast<const void*>(&raw_.v6.sin6_addr.s6_addr[12])
                     : static_cast<const void*>(&raw_.v4.sin_addr);
}

uint16_t ClientAddress::port() const {
  // sin_port and sin6_port sit at the same offset.
  const sa_family_t f = family();
  return f == AF_INET || f == AF_INET6 ? ntohs(raw_.v4.sin_port) : 0;
}

std::string_view ClientAddress::Format(char* out) const {
  const char* text = nullptr;
  switch (family()) {
    case AF_INET:
      text = inet_ntop(AF_INET, v4_bytes(), out, kMaxText);
      break;
    case AF_INET6:
      text = inet_ntop(AF_INET6, &raw_.v6.sin6_addr, out, kMaxText);
      break;
    case AF_UNIX:
      std::memcpy(out, "unix", 5);
      text = out;
      break;
    default:
      break;
  }
  if (text == nullptr) {
    out[0] = '-';
    out[1] = '\0';
  }
  return std::string_view(out);
}

bool ClientAddress::operator==(const ClientAddress& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    return raw_.v4.sin_port == other.raw_.v4.sin_port &&
           std::memcmp(v4_bytes(), other.v4_bytes(), 4) == 0;
  }
  if (family() == AF_INET6) {
    return raw_.v6.sin6_port == other.raw_.v6.sin6_port &&
           std::memcmp(&raw_.v6.sin6_addr, &other.raw_.v6.sin6_addr, 16) == 0;
  }
  return true;
}

}  // namespace uring_http::http
