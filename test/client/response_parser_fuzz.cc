// libFuzzer target for the client's ParseResponseHead: the first byte picks
// whether the request was HEAD and which limits apply; the rest is parsed
// whole, checked against what must hold for any input (consumed within the
// input, views inside it, framing consistent with the status, the request
// and the fields, only the documented errors), then re-parsed at every
// prefix (a sample of them for long inputs): each prefix is incomplete or
// gives the whole input's answer, so that a caller re-parsing as bytes
// arrive never sees an answer change.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] //test/client:response_parser_fuzz
// Replay: bazel run //test/client:response_parser_fuzz -- FILE_OR_DIR...
//         (without --config=fuzz the main in replay_main.h replays)
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "src/client/response_parser.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::client {
namespace {

using http::ParseStatus;

constexpr size_t kMaxCapacity = 128;

// One parse of a private heap copy of exactly the given bytes, so that
// AddressSanitizer reports any read past the span.
struct Parse {
  Parse(std::string_view input, const ResponseLimits& limits, bool head_request, size_t capacity)
      : copy(new char[input.size()]), size(input.size()) {
    if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
    result = ParseResponseHead(data(), limits, head_request, &head, headers, capacity);
  }
  std::string_view data() const { return {copy.get(), size}; }

  std::unique_ptr<char[]> copy;
  size_t size;
  http::Header headers[kMaxCapacity];
  ResponseHead head;
  ResponseParseResult result;
};

bool Inside(std::string_view view, std::string_view input) {
  if (view.empty()) return true;
  return view.data() >= input.data() && view.data() + view.size() <= input.data() + input.size();
}

bool IsTchar(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
         (b != 0 && std::strchr("!#$%&'*+-.^_`|~", b) != nullptr);
}

bool IsValueChar(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return b == '\t' || b == ' ' || (b >= 0x21 && b <= 0x7e) || b >= 0x80;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

template <typename Pred>
bool AllOf(std::string_view s, Pred pred) {
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (x != lower[i]) return false;
  }
  return true;
}

bool HasHeader(const ResponseHead& h, std::string_view lower_name) {
  for (size_t i = 0; i < h.num_headers; ++i) {
    if (EqualsIgnoreCase(h.headers[i].name, lower_name)) return true;
  }
  return false;
}

bool SameError(const char* a, const char* b) {
  return a != nullptr && b != nullptr && std::strcmp(a, b) == 0;
}

// What must hold of a head that parsed.
void CheckHead(const Parse& p, const ResponseLimits& limits, bool head_request, size_t capacity) {
  const ResponseHead& h = p.head;
  const std::string_view in = p.data();
  FUZZ_CHECK(h.head_bytes == p.result.consumed);
  FUZZ_CHECK(h.head_bytes >= 14 && h.head_bytes <= in.size());  // "HTTP/1.0 200\n\n"
  FUZZ_CHECK(in[h.head_bytes - 1] == '\n');
  FUZZ_CHECK(h.headers == p.headers);
  FUZZ_CHECK(h.num_headers <= capacity && h.num_headers <= limits.max_headers);

  // The status line: "HTTP/1.x" SP 3DIGIT [SP reason].
  FUZZ_CHECK(in.substr(0, 7) == "HTTP/1." && in[8] == ' ');
  FUZZ_CHECK(h.version == (in[7] == '1' ? http::Version::kHttp11 : http::Version::kHttp10));
  FUZZ_CHECK(in[7] == '0' || in[7] == '1');
  FUZZ_CHECK(h.status >= 100 && h.status <= 599 && h.status != 101);
  FUZZ_CHECK((in[9] - '0') * 100 + (in[10] - '0') * 10 + (in[11] - '0') == h.status);
  FUZZ_CHECK(Inside(h.reason, in) && AllOf(h.reason, IsValueChar));
  if (!h.reason.empty()) FUZZ_CHECK(h.reason.data() == in.data() + 13 && in[12] == ' ');
  const size_t status_line_end = in.find('\n');
  FUZZ_CHECK(status_line_end < h.head_bytes);
  size_t status_line = status_line_end;
  if (status_line > 0 && in[status_line - 1] == '\r') --status_line;
  FUZZ_CHECK(status_line <= limits.max_status_line);
  FUZZ_CHECK(h.head_bytes - (status_line_end + 1) <= limits.max_header_bytes);

  for (size_t i = 0; i < h.num_headers; ++i) {
    const http::Header& f = h.headers[i];
    FUZZ_CHECK(!f.name.empty() && AllOf(f.name, IsTchar));
    FUZZ_CHECK(AllOf(f.value, IsValueChar));
    FUZZ_CHECK(f.value.empty() || (!IsOws(f.value.front()) && !IsOws(f.value.back())));
    FUZZ_CHECK(Inside(f.name, in) && Inside(f.value, in));
    FUZZ_CHECK(f.name.data() + f.name.size() <= in.data() + h.head_bytes);
    FUZZ_CHECK(f.name.data()[f.name.size()] == ':');
    FUZZ_CHECK(f.value.empty() || f.value.data() + f.value.size() <= in.data() + h.head_bytes);
    if (i > 0) FUZZ_CHECK(f.name.data() > h.headers[i - 1].name.data());
  }

  // Framing (RFC 9112 6.3), against the fields that decide it.
  const bool has_te = HasHeader(h, "transfer-encoding");
  const bool has_cl = HasHeader(h, "content-length");
  FUZZ_CHECK(!(has_te && has_cl));
  if (has_te) FUZZ_CHECK(h.version == http::Version::kHttp11);
  const bool no_body =
      head_request || h.interim() || h.status == 204 || h.status == 304;
  if (h.interim()) FUZZ_CHECK(h.framing == ResponseFraming::kNone);
  switch (h.framing) {
    case ResponseFraming::kNone:
      FUZZ_CHECK(no_body || (has_cl && h.content_length == 0));
      FUZZ_CHECK(h.content_length == 0);
      break;
    case ResponseFraming::kContentLength:
      FUZZ_CHECK(!no_body && has_cl && h.content_length > 0);
      break;
    case ResponseFraming::kChunked:
      FUZZ_CHECK(!no_body && has_te && h.content_length == 0);
      break;
    case ResponseFraming::kUntilClose:
      FUZZ_CHECK(!no_body && !has_te && !has_cl && h.content_length == 0);
      FUZZ_CHECK(!h.keep_alive);
      break;
    default:
      FUZZ_CHECK(false && "unknown framing");
  }
  // Only a Connection field moves keep_alive off its version's default.
  const bool has_connection = HasHeader(h, "connection");
  if (h.version == http::Version::kHttp10 && h.keep_alive) FUZZ_CHECK(has_connection);
  if (h.version == http::Version::kHttp11 && !h.keep_alive &&
      h.framing != ResponseFraming::kUntilClose) {
    FUZZ_CHECK(has_connection);
  }
}

void CheckOne(std::string_view input, const ResponseLimits& limits, bool head_request,
              size_t capacity) {
  Parse full(input, limits, head_request, capacity);
  const ResponseParseResult& r = full.result;

  FUZZ_CHECK(r.consumed <= input.size());
  switch (r.status) {
    case ParseStatus::kError:
      FUZZ_CHECK(r.consumed == 0 && r.error != nullptr && r.error[0] != '\0');
      break;
    case ParseStatus::kIncomplete:
      FUZZ_CHECK(r.consumed == 0 && r.error == nullptr);
      // No blank line anywhere after a status line would have been missed:
      // an incomplete input holds no "\n\n" or "\n\r\n" past its first LF.
      {
        const size_t first_lf = input.find('\n');
        if (first_lf != std::string_view::npos) {
          const std::string_view rest = input.substr(first_lf);
          FUZZ_CHECK(rest.find("\n\n") == std::string_view::npos &&
                     rest.find("\n\r\n") == std::string_view::npos);
        }
      }
      break;
    case ParseStatus::kComplete: {
      FUZZ_CHECK(r.error == nullptr);
      CheckHead(full, limits, head_request, capacity);
      // The bytes after the head change nothing.
      Parse exact(input.substr(0, r.consumed), limits, head_request, capacity);
      FUZZ_CHECK(exact.result.status == ParseStatus::kComplete);
      FUZZ_CHECK(exact.result.consumed == r.consumed);
      FUZZ_CHECK(exact.head.status == full.head.status);
      FUZZ_CHECK(exact.head.framing == full.head.framing);
      FUZZ_CHECK(exact.head.content_length == full.head.content_length);
      FUZZ_CHECK(exact.head.keep_alive == full.head.keep_alive);
      FUZZ_CHECK(exact.head.num_headers == full.head.num_headers);
      FUZZ_CHECK(exact.head.reason == full.head.reason);
      // The same head as a response to HEAD, or not, differs in framing only.
      Parse other(input, limits, !head_request, capacity);
      FUZZ_CHECK(other.result.status == ParseStatus::kComplete);
      FUZZ_CHECK(other.result.consumed == r.consumed);
      FUZZ_CHECK(other.head.num_headers == full.head.num_headers);
      break;
    }
    default:
      FUZZ_CHECK(false && "unknown status");
  }

  // Re-parsing as bytes arrive: every prefix is incomplete, or answers as
  // the whole does. Long inputs check a sample of prefixes and all of the
  // last few, to keep the quadratic cost in check.
  const size_t end = r.status == ParseStatus::kComplete ? r.consumed : input.size();
  const size_t step = end <= 256 ? 1 : end / 64;
  const size_t dense_from = end > 16 ? end - 16 : 0;
  for (size_t k = 0; k < end; k = k >= dense_from ? k + 1 : k + step) {
    Parse prefix(input.substr(0, k), limits, head_request, capacity);
    const ResponseParseResult& pr = prefix.result;
    if (pr.status == ParseStatus::kIncomplete) {
      FUZZ_CHECK(pr.consumed == 0 && pr.error == nullptr);
      continue;
    }
    // Shorter than the head: never complete. Past an error: the same error.
    FUZZ_CHECK(pr.status == ParseStatus::kError);
    FUZZ_CHECK(r.status == ParseStatus::kError);
    FUZZ_CHECK(SameError(pr.error, r.error));
  }
}

}  // namespace
}  // namespace uring_http::client

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using uring_http::client::CheckOne;
  using uring_http::client::kMaxCapacity;
  using uring_http::client::ResponseLimits;
  if (size == 0) return 0;
  // First byte: bit 0, the request was HEAD; bits 1-3, the limits.
  const bool head_request = (data[0] & 1) != 0;
  const int variant = (data[0] >> 1) & 7;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  ResponseLimits limits;
  size_t capacity = 64;
  switch (variant) {
    case 0:  // the defaults
    case 1:
      break;
    case 2:  // the array, not the limit, binds
      capacity = 2;
      break;
    case 3:  // small limits, met by short inputs
      limits.max_status_line = 32;
      limits.max_header_bytes = 64;
      limits.max_headers = 4;
      capacity = 8;
      break;
    case 4:  // nothing allowed
      limits.max_status_line = 0;
      limits.max_header_bytes = 0;
      limits.max_headers = 0;
      capacity = 0;
      break;
    case 5:  // limits chosen by the fuzzer from the next three bytes
    case 6:
      if (input.size() < 3) return 0;
      limits.max_status_line = static_cast<uint8_t>(input[0]);
      limits.max_header_bytes = static_cast<size_t>(static_cast<uint8_t>(input[1])) * 2;
      limits.max_headers = static_cast<uint8_t>(input[2]) % 16;
      capacity = kMaxCapacity;
      input.remove_prefix(3);
      break;
    default:  // 7: both the limit and the array tight
      limits.max_headers = 3;
      capacity = 5;
      break;
  }
  CheckOne(input, limits, head_request, capacity);
  return 0;
}
