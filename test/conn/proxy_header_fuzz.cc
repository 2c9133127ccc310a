// libFuzzer target for ParseProxyHeader (src/conn/proxy_header.h). For any
// input: the whole input and each of its prefixes agree (a header is
// incomplete until its last byte and the same header after it, whatever
// follows; an error stays an error as bytes are added, and nothing before
// it is one); what is consumed stays within the input and the version's
// bound; a v1 header ends in CRLF and, for TCP4, reads back as the same text
// from the parsed addresses; a v2 header is exactly 16 bytes plus its
// length field; a header that names a client names a known address.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] //test/conn:proxy_header_fuzz
// Replay: bazel run //test/conn:proxy_header_fuzz -- FILE_OR_DIR...
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/conn/proxy_header.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::conn {
namespace {

// Past the longest header (16 + 2048), a few request bytes after it.
constexpr size_t kMaxInput = kProxyV2FixedBytes + kProxyV2MaxPayload + 64;

std::string Text(const http::ClientAddress& a) {
  char buf[http::ClientAddress::kMaxText];
  return std::string(a.Format(buf));
}

// The address block's family as the header wrote it: family() presents an
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) as AF_INET, as it does a
// dual-stack listener's IPv4 clients, so a v2 header with a mapped source
// and a plain IPv6 destination has two families by family().
sa_family_t WrittenFamily(const http::ClientAddress& a) {
  sa_family_t family;
  std::memcpy(&family, a.raw(), sizeof(family));
  return family;
}

bool Same(const ProxyHeader& a, const ProxyHeader& b) {
  return a.status == b.status && a.consumed == b.consumed && a.local == b.local &&
         a.source == b.source && a.destination == b.destination;
}

void Check(std::string_view input) {
  const ProxyHeader whole = ParseProxyHeader(input);
  FUZZ_CHECK(whole.consumed <= input.size());
  if (whole.status == ProxyStatus::kDone) {
    FUZZ_CHECK(whole.consumed > 0);
    FUZZ_CHECK(whole.version == 1 || whole.version == 2);
    FUZZ_CHECK(whole.local || (whole.source.known() && whole.destination.known()));
    FUZZ_CHECK(whole.local ||
               WrittenFamily(whole.source) == WrittenFamily(whole.destination));
    const std::string_view header = input.substr(0, whole.consumed);
    if (whole.version == 1) {
      FUZZ_CHECK(header.size() <= kProxyV1MaxBytes);
      FUZZ_CHECK(header.substr(0, 6) == "PROXY ");
      FUZZ_CHECK(header.substr(header.size() - 2) == "\r\n");
      FUZZ_CHECK(header.find('\r') == header.size() - 2);
      if (!whole.local && whole.source.family() == AF_INET) {
        // IPv4 text has one form (no leading zeros): it reads back.
        const std::string again = "PROXY TCP4 " + Text(whole.source) + " " +
                                  Text(whole.destination) + " " +
                                  std::to_string(whole.source.port()) + " " +
                                  std::to_string(whole.destination.port()) + "\r\n";
        FUZZ_CHECK(again == header);
      }
      if (whole.local) FUZZ_CHECK(header.substr(0, 13) == "PROXY UNKNOWN");
    } else {
      FUZZ_CHECK(header.size() >= kProxyV2FixedBytes);
      const auto* p = reinterpret_cast<const unsigned char*>(header.data());
      FUZZ_CHECK(header.size() == kProxyV2FixedBytes + ((p[14] << 8) | p[15]));
      FUZZ_CHECK(header.size() <= kProxyV2FixedBytes + kProxyV2MaxPayload);
    }
  }
  // Prefixes: incomplete before the header's end (or the error's first
  // byte), then the same result as the whole.
  bool seen_error = false;
  const size_t last =
      whole.status == ProxyStatus::kDone ? std::min(input.size(), whole.consumed + 8)
                                         : input.size();
  for (size_t n = 0; n < last; ++n) {
    const ProxyHeader part = ParseProxyHeader(input.substr(0, n));
    switch (whole.status) {
      case ProxyStatus::kIncomplete:
        FUZZ_CHECK(part.status == ProxyStatus::kIncomplete);
        break;
      case ProxyStatus::kDone:
        if (n < whole.consumed) {
          FUZZ_CHECK(part.status == ProxyStatus::kIncomplete);
        } else {
          FUZZ_CHECK(Same(part, whole));
        }
        break;
      case ProxyStatus::kError:
        if (seen_error) FUZZ_CHECK(part.status == ProxyStatus::kError);
        FUZZ_CHECK(part.status != ProxyStatus::kDone);
        seen_error = part.status == ProxyStatus::kError;
        break;
    }
  }
}

}  // namespace
}  // namespace uring_http::conn

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > uring_http::conn::kMaxInput) return 0;
  uring_http::conn::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
