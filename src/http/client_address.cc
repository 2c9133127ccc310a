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

uint16_t ClientAddress::port() const {
  // sin_port and sin6_port sit at the same offset.
  return known() ? ntohs(raw_.v4.sin_port) : 0;
}

std::string_view ClientAddress::Format(char* out) const {
  const char* text = nullptr;
  if (family() == AF_INET) {
    text = inet_ntop(AF_INET, &raw_.v4.sin_addr, out, kMaxText);
  } else if (family() == AF_INET6) {
    text = inet_ntop(AF_INET6, &raw_.v6.sin6_addr, out, kMaxText);
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
           std::memcmp(&raw_.v4.sin_addr, &other.raw_.v4.sin_addr, 4) == 0;
  }
  if (family() == AF_INET6) {
    return raw_.v6.sin6_port == other.raw_.v6.sin6_port &&
           std::memcmp(&raw_.v6.sin6_addr, &other.raw_.v6.sin6_addr, 16) == 0;
  }
  return true;
}

}  // namespace uring_http::http
