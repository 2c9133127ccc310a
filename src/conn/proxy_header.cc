#include "src/conn/proxy_header.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace uring_http::conn {
namespace {

constexpr std::string_view kV1Prefix = "PROXY ";
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};

ProxyHeader Error(uint8_t version) {
  ProxyHeader h;
  h.status = ProxyStatus::kError;
  h.version = version;
  return h;
}

ProxyHeader Incomplete(uint8_t version) {
  ProxyHeader h;
  h.version = version;
  return h;
}

// A port in v1's text: 1 to 5 digits, no leading zero, at most 65535.
bool ParsePort(std::string_view text, uint16_t* port) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return false;
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

// An address in v1's text, as inet_pton reads it (which refuses leading
// zeros in IPv4 and anything but the one family).
bool ParseAddress(std::string_view text, int family, uint16_t port, http::ClientAddress* out) {
  char buf[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof(buf)) return false;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  uint8_t bytes[16];
  if (inet_pton(family, buf, bytes) != 1) return false;
  *out = family == AF_INET ? http::ClientAddress::V4(bytes, port)
                           : http::ClientAddress::V6(bytes, port);
  return true;
}

// Splits off the text up to the next single space (none: all of it).
std::string_view NextField(std::string_view* rest) {
  const size_t space = rest->find(' ');
  std::string_view field = rest->substr(0, space);
  rest->remove_prefix(space == std::string_view::npos ? rest->size() : space + 1);
  return field;
}

// "PROXY " TCP4|TCP6 SP src SP dst SP sport SP dport CRLF, or
// "PROXY UNKNOWN" [anything] CRLF.
ProxyHeader ParseV1(std::string_view bytes) {
  // The CR must leave room for its LF within the limit.
  const size_t limit = std::min(bytes.size(), kProxyV1MaxBytes - 1);
  size_t cr = std::string_view::npos;
  for (size_t i = kV1Prefix.size(); i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      cr = i;
      break;
    }
    if (c < 0x20 || c > 0x7e) return Error(1);  // a bare LF, a NUL, binary
  }
  if (cr == std::string_view::npos) {
    // No CR within the limit: too long. Else the line goes on.
    return bytes.size() >= kProxyV1MaxBytes - 1 ? Error(1) : Incomplete(1);
  }
  if (cr + 1 >= bytes.size()) return Incomplete(1);
  if (bytes[cr + 1] != '\n') return Error(1);

  ProxyHeader h;
  h.version = 1;
  h.consumed = cr + 2;
  std::string_view rest = bytes.substr(kV1Prefix.size(), cr - kV1Prefix.size());
  const std::string_view protocol = NextField(&rest);
  if (protocol == "UNKNOWN") {
    // The spec: whatever follows UNKNOWN up to the CRLF is ignored.
    h.status = ProxyStatus::kDone;
    h.local = true;
    return h;
  }
  int family;
  if (protocol == "TCP4") {
    family = AF_INET;
  } else if (protocol == "TCP6") {
    family = AF_INET6;
  } else {
    return Error(1);
  }
  const std::string_view src = NextField(&rest);
  const std::string_view dst = NextField(&rest);
  const std::string_view sport = NextField(&rest);
  // The last field runs to the CR: no space may be left in it.
  const std::string_view dport = rest;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  if (!ParsePort(sport, &src_port) || !ParsePort(dport, &dst_port) ||
      !ParseAddress(src, family, src_port, &h.source) ||
      !ParseAddress(dst, family, dst_port, &h.destination)) {
    return Error(1);
  }
  h.status = ProxyStatus::kDone;
  return h;
}

uint16_t Load16(const unsigned char* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// The 12-byte signature, ver_cmd, fam_proto, a 16-bit length, then that many
// bytes: addresses (by family), then TLVs (type, 16-bit length, value).
ProxyHeader ParseV2(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  // Each fixed byte is judged as soon as it is there.
  bool local = false;
  if (n > 12) {
    const unsigned version = p[12] >> 4;
    const unsigned command = p[12] & 0x0f;
    if (version != 2 || command > 1) return Error(2);
    local = command == 0;
  }
  unsigned family = 0;
  unsigned protocol = 0;
  if (n > 13) {
    family = p[13] >> 4;      // 0 UNSPEC, 1 INET, 2 INET6, 3 UNIX
    protocol = p[13] & 0x0f;  // 0 UNSPEC, 1 STREAM, 2 DGRAM
    if (family > 3 || protocol > 2) return Error(2);
    // A proxied TCP connection carries a stream; a LOCAL one names nothing.
    if (!local && family != 0 && protocol != 1) return Error(2);
  }
  if (n < kProxyV2FixedBytes) return Incomplete(2);
  const size_t length = Load16(p + 14);
  if (length > kProxyV2MaxPayload) return Error(2);
  const size_t total = kProxyV2FixedBytes + length;
  if (n < total) return Incomplete(2);

  ProxyHeader h;
  h.version = 2;
  h.consumed = total;
  const unsigned char* a = p + kProxyV2FixedBytes;
  size_t address_bytes = 0;
  if (!local) {
    switch (family) {
      case 1: {
        address_bytes = 12;
        if (length < address_bytes) return Error(2);
        h.source = http::ClientAddress::V4(a, Load16(a + 8));
        h.destination = http::ClientAddress::V4(a + 4, Load16(a + 10));
        break;
      }
      case 2: {
        address_bytes = 36;
        if (length < address_bytes) return Error(2);
        h.source = http::ClientAddress::V6(a, Load16(a + 32));
        h.destination = http::ClientAddress::V6(a + 16, Load16(a + 34));
        break;
      }
      case 3:
        // Two sun_path[108]: no IP client to name.
        address_bytes = 216;
        if (length < address_bytes) return Error(2);
        break;
      default:
        break;  // UNSPEC: the spec asks to use the socket's own addresses
    }
  }
  h.local = local || family == 0 || family == 3;
  // The TLVs are skipped, but they must frame the rest exactly: a length
  // that overruns the header is a broken or hostile sender. (LOCAL's
  // payload is not ours to read: the spec says to skip it whole.)
  if (!local) {
    size_t pos = address_bytes;
    while (pos < length) {
      if (length - pos < 3) return Error(2);
      const size_t value = Load16(a + pos + 1);
      if (length - pos - 3 < value) return Error(2);
      pos += 3 + value;
    }
  }
  h.status = ProxyStatus::kDone;
  return h;
}

}  // namespace

ProxyHeader ParseProxyHeader(std::string_view bytes) {
  if (bytes.empty()) return Incomplete(0);
  if (bytes[0] == 'P') {
    const size_t k = std::min(bytes.size(), kV1Prefix.size());
    if (bytes.substr(0, k) != kV1Prefix.substr(0, k)) return Error(1);
    if (bytes.size() <= kV1Prefix.size()) return Incomplete(1);
    return ParseV1(bytes);
  }
  if (bytes[0] == '\r') {
    const size_t k = std::min(bytes.size(), kV2Signature.size());
    if (bytes.substr(0, k) != kV2Signature.substr(0, k)) return Error(2);
    if (bytes.size() <= kV2Signature.size()) return Incomplete(2);
    return ParseV2(bytes);
  }
  return Error(0);
}

}  // namespace uring_http::conn
