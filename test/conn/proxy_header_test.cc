// ParseProxyHeader over every prefix of valid headers (each must be "need
// more" until the last byte), and over the ways a header can be wrong.
#include "src/conn/proxy_header.h"

#include <arpa/inet.h>

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace uring_http::conn {
namespace {

using std::string_literals::operator""s;

std::string Text(const http::ClientAddress& a) {
  char buf[http::ClientAddress::kMaxText];
  return std::string(a.Format(buf));
}

const std::string kSig = "\r\n\r\n\0\r\nQUIT\n"s;

// A v2 header: signature, ver_cmd, fam_proto, length, payload.
std::string V2(uint8_t ver_cmd, uint8_t fam_proto, const std::string& payload) {
  std::string h = kSig;
  h += static_cast<char>(ver_cmd);
  h += static_cast<char>(fam_proto);
  h += static_cast<char>(payload.size() >> 8);
  h += static_cast<char>(payload.size() & 0xff);
  return h + payload;
}

std::string V4Payload() {
  // 203.0.113.7:51000 -> 192.0.2.1:443
  return "\xcb\x00\x71\x07"s + "\xc0\x00\x02\x01"s + "\xc7\x38"s + "\x01\xbb"s;
}

std::string V6Payload() {
  std::string p(36, '\0');
  uint8_t src[16], dst[16];
  inet_pton(AF_INET6, "2001:db8::7", src);
  inet_pton(AF_INET6, "2001:db8::1", dst);
  p.replace(0, 16, reinterpret_cast<const char*>(src), 16);
  p.replace(16, 16, reinterpret_cast<const char*>(dst), 16);
  p[32] = '\x30';  // 12345
  p[33] = '\x39';
  p[34] = '\x00';  // 80
  p[35] = '\x50';
  return p;
}

// Every proper prefix is incomplete; the whole header (followed by the
// client's bytes) is done with exactly its length consumed.
ProxyHeader ParseByteByByte(const std::string& header) {
  for (size_t n = 0; n < header.size(); ++n) {
    const ProxyHeader h = ParseProxyHeader(std::string_view(header.data(), n));
    EXPECT_EQ(h.status, ProxyStatus::kIncomplete) << "prefix " << n;
  }
  const std::string with_request = header + "GET / HTTP/1.1\r\n\r\n";
  const ProxyHeader h = ParseProxyHeader(with_request);
  EXPECT_EQ(h.status, ProxyStatus::kDone);
  EXPECT_EQ(h.consumed, header.size());
  return h;
}

ProxyStatus StatusOf(std::string_view bytes) { return ParseProxyHeader(bytes).status; }

TEST(ProxyHeaderTest, V1Tcp4) {
  const ProxyHeader h = ParseByteByByte("PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n");
  EXPECT_EQ(h.version, 1);
  EXPECT_FALSE(h.local);
  EXPECT_EQ(h.source.family(), AF_INET);
  EXPECT_EQ(Text(h.source), "203.0.113.7");
  EXPECT_EQ(h.source.port(), 51000);
  EXPECT_EQ(Text(h.destination), "192.0.2.1");
  EXPECT_EQ(h.destination.port(), 443);
}

TEST(ProxyHeaderTest, V1Tcp6) {
  const ProxyHeader h = ParseByteByByte("PROXY TCP6 2001:db8::7 2001:db8::1 0 65535\r\n");
  EXPECT_FALSE(h.local);
  EXPECT_EQ(h.source.family(), AF_INET6);
  EXPECT_EQ(Text(h.source), "2001:db8::7");
  EXPECT_EQ(h.source.port(), 0);
  EXPECT_EQ(Text(h.destination), "2001:db8::1");
  EXPECT_EQ(h.destination.port(), 65535);
}

TEST(ProxyHeaderTest, V1LongestTcp6FitsTheLimit) {
  const std::string full = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
  const std::string line = "PROXY TCP6 " + full + " " + full + " 65535 65535\r\n";
  EXPECT_EQ(line.size(), 104u);
  const ProxyHeader h = ParseByteByByte(line);
  EXPECT_EQ(Text(h.source), full);
}

TEST(ProxyHeaderTest, V1Unknown) {
  ProxyHeader h = ParseByteByByte("PROXY UNKNOWN\r\n");
  EXPECT_TRUE(h.local);
  EXPECT_FALSE(h.source.known());
  // The spec: anything after UNKNOWN up to the CRLF is ignored.
  h = ParseByteByByte("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n");
  EXPECT_TRUE(h.local);
}

TEST(ProxyHeaderTest, V1Malformed) {
  for (const char* bad : {
           "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",          // unknown protocol
           "PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n",          // case matters
           "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",            // a field missing
           "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",        // one too many
           "PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n",         // two spaces
           "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",         // trailing space
           "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",      // port too large
           "PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n",        // leading zero
           "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",         // not a number
           "PROXY TCP4 1.2.3.4 5.6.7.8 1 999999\r\n",     // too many digits
           "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",        // not an address
           "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",         // leading zero
           "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",            // three parts
           "PROXY TCP4 ::1 5.6.7.8 1 2\r\n",              // IPv6 in TCP4
           "PROXY TCP6 1.2.3.4 ::1 1 2\r\n",              // IPv4 in TCP6
           "PROXY TCP6 ::1 ::g 1 2\r\n",                  // not an address
           "PROXY UNKNOWNX\r\n",                          // not UNKNOWN
           "PROXY \r\n",                                  // no protocol
       }) {
    EXPECT_EQ(StatusOf(bad), ProxyStatus::kError) << bad;
  }
}

TEST(ProxyHeaderTest, V1BadLineEndsAreRefusedAtTheirByte) {
  // A CR not followed by LF, a bare LF, a NUL: refused as soon as seen,
  // without waiting for more.
  EXPECT_EQ(StatusOf("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("PROXY TCP4 1.2.3.4\0"s), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"), ProxyStatus::kIncomplete);
}

TEST(ProxyHeaderTest, V1LongerThan107BytesIsRefused) {
  std::string line = "PROXY UNKNOWN " + std::string(200, 'x');
  // Incomplete while a CRLF could still end it within 107 bytes; refused
  // once the first 106 hold no CR.
  EXPECT_EQ(StatusOf(std::string_view(line).substr(0, 105)), ProxyStatus::kIncomplete);
  EXPECT_EQ(StatusOf(std::string_view(line).substr(0, 106)), ProxyStatus::kError);
  // A CRLF that ends the 107th byte is still inside the limit.
  std::string at_limit = "PROXY UNKNOWN " + std::string(107 - 16, 'x') + "\r\n";
  ASSERT_EQ(at_limit.size(), 107u);
  EXPECT_EQ(StatusOf(at_limit), ProxyStatus::kDone);
  std::string past_limit = "PROXY UNKNOWN " + std::string(108 - 16, 'x') + "\r\n";
  EXPECT_EQ(StatusOf(past_limit), ProxyStatus::kError);
}

TEST(ProxyHeaderTest, V2Inet) {
  const ProxyHeader h = ParseByteByByte(V2(0x21, 0x11, V4Payload()));
  EXPECT_EQ(h.version, 2);
  EXPECT_FALSE(h.local);
  EXPECT_EQ(Text(h.source), "203.0.113.7");
  EXPECT_EQ(h.source.port(), 51000);
  EXPECT_EQ(Text(h.destination), "192.0.2.1");
  EXPECT_EQ(h.destination.port(), 443);
}

TEST(ProxyHeaderTest, V2Inet6) {
  const ProxyHeader h = ParseByteByByte(V2(0x21, 0x21, V6Payload()));
  EXPECT_FALSE(h.local);
  EXPECT_EQ(h.source.family(), AF_INET6);
  EXPECT_EQ(Text(h.source), "2001:db8::7");
  EXPECT_EQ(h.source.port(), 12345);
  EXPECT_EQ(Text(h.destination), "2001:db8::1");
  EXPECT_EQ(h.destination.port(), 80);
}

TEST(ProxyHeaderTest, V2TlvsAreSkipped) {
  // PP2_TYPE_ALPN "h2", PP2_TYPE_NOOP with an empty value, an AWS-style
  // custom TLV: the header ends after them, the client stays the same.
  const std::string tlvs = "\x01\x00\x02h2"s + "\x04\x00\x00"s + "\xea\x00\x05vpc-1"s;
  const ProxyHeader h = ParseByteByByte(V2(0x21, 0x11, V4Payload() + tlvs));
  EXPECT_EQ(Text(h.source), "203.0.113.7");
  EXPECT_EQ(h.consumed, 16 + 12 + tlvs.size());
}

TEST(ProxyHeaderTest, V2Local) {
  // A health check from the proxy itself: no client named; the payload,
  // whatever it is, is skipped.
  ProxyHeader h = ParseByteByByte(V2(0x20, 0x00, ""));
  EXPECT_TRUE(h.local);
  EXPECT_FALSE(h.source.known());
  h = ParseByteByByte(V2(0x20, 0x11, V4Payload()));
  EXPECT_TRUE(h.local);
  h = ParseByteByByte(V2(0x20, 0x12, "\xff\xff\xff"s));  // not even TLVs
  EXPECT_TRUE(h.local);
}

TEST(ProxyHeaderTest, V2UnspecAndUnixNameNoClient) {
  ProxyHeader h = ParseByteByByte(V2(0x21, 0x00, ""));
  EXPECT_TRUE(h.local);
  h = ParseByteByByte(V2(0x21, 0x31, std::string(216, '\0')));
  EXPECT_TRUE(h.local);
  EXPECT_FALSE(h.source.known());
}

TEST(ProxyHeaderTest, V2BadSignature) {
  for (size_t i = 0; i < kSig.size(); ++i) {
    std::string h = V2(0x21, 0x11, V4Payload());
    h[i] ^= 0x40;
    // Refused at the byte that differs (not later).
    EXPECT_EQ(StatusOf(std::string_view(h).substr(0, i + 1)), ProxyStatus::kError) << i;
  }
}

TEST(ProxyHeaderTest, V2BadFixedFieldsAreRefusedAtTheirByte) {
  const std::string payload = V4Payload();
  auto prefix = [](const std::string& h, size_t n) { return std::string_view(h).substr(0, n); };
  // Version 1 or 3 in the high nibble; a command past PROXY.
  for (uint8_t ver_cmd : {0x11, 0x31, 0x22, 0x2f}) {
    EXPECT_EQ(StatusOf(prefix(V2(ver_cmd, 0x11, payload), 13)), ProxyStatus::kError)
        << int{ver_cmd};
  }
  // A family past AF_UNIX, a protocol past DGRAM, a proxied DGRAM or
  // UNSPEC protocol over an address family.
  for (uint8_t fam_proto : {0x41, 0x13, 0x12, 0x10, 0x22}) {
    EXPECT_EQ(StatusOf(prefix(V2(0x21, fam_proto, payload), 14)), ProxyStatus::kError)
        << int{fam_proto};
  }
}

TEST(ProxyHeaderTest, V2LengthIsBounded) {
  std::string h = V2(0x21, 0x11, std::string(kProxyV2MaxPayload + 1, '\0'));
  // Refused from the length field alone, before the payload arrives.
  EXPECT_EQ(StatusOf(std::string_view(h).substr(0, 16)), ProxyStatus::kError);
  // The bound itself is accepted (padding in one NOOP TLV).
  std::string tlv = "\x04"s;
  const size_t value = kProxyV2MaxPayload - 12 - 3;
  tlv += static_cast<char>(value >> 8);
  tlv += static_cast<char>(value & 0xff);
  tlv += std::string(value, '\0');
  EXPECT_EQ(StatusOf(V2(0x21, 0x11, V4Payload() + tlv)), ProxyStatus::kDone);
}

TEST(ProxyHeaderTest, V2PayloadTooShortForItsAddresses) {
  EXPECT_EQ(StatusOf(V2(0x21, 0x11, V4Payload().substr(0, 11))), ProxyStatus::kError);
  EXPECT_EQ(StatusOf(V2(0x21, 0x21, V6Payload().substr(0, 35))), ProxyStatus::kError);
  EXPECT_EQ(StatusOf(V2(0x21, 0x31, std::string(215, '\0'))), ProxyStatus::kError);
}

TEST(ProxyHeaderTest, V2TlvsMustFrameThePayload) {
  // A TLV whose length runs past the header, a TLV cut in its type and
  // length.
  EXPECT_EQ(StatusOf(V2(0x21, 0x11, V4Payload() + "\x01\x00\x05h2"s)), ProxyStatus::kError);
  EXPECT_EQ(StatusOf(V2(0x21, 0x11, V4Payload() + "\x01\x00"s)), ProxyStatus::kError);
  EXPECT_EQ(StatusOf(V2(0x21, 0x11, V4Payload() + "\x01"s)), ProxyStatus::kError);
}

TEST(ProxyHeaderTest, NotAProxyHeader) {
  EXPECT_EQ(StatusOf(""), ProxyStatus::kIncomplete);
  // Plain HTTP is refused at its first byte (unless it starts like PROXY).
  EXPECT_EQ(StatusOf("G"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n\r\n"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("P"), ProxyStatus::kIncomplete);
  EXPECT_EQ(StatusOf("POST / HTTP/1.1\r\n"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("PROXY"), ProxyStatus::kIncomplete);
  EXPECT_EQ(StatusOf("PROXYX"), ProxyStatus::kError);
  // TLS's first byte, and a bare CRLF that is not v2's signature.
  EXPECT_EQ(StatusOf("\x16\x03\x01"), ProxyStatus::kError);
  EXPECT_EQ(StatusOf("\r\n\r\nGET"), ProxyStatus::kError);
}

}  // namespace
}  // namespace uring_http::conn
