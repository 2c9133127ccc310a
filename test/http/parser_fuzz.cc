// libFuzzer target for ParseRequestHead and FindHeadEnd: parses the input
// under several limit settings and checks what must hold for any input (views
// inside the input, framing and consumed consistent, only the documented
// error statuses), that the answer never changes as bytes arrive (every
// prefix of the input is "incomplete" or the same error), and that
// FindHeadEnd finds the end of the head exactly where the parser does.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds]
// Replay: bazel run //test/http:parser_fuzz -- FILE_OR_DIR...  (without
//         --config=fuzz the main at the bottom replays instead of fuzzing)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/body_decoder.h"
#include "src/http/parser.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http {
namespace {


constexpr size_t kMaxCapacity = 128;

// One parse of a private heap copy of exactly the given bytes, so that
// AddressSanitizer reports any read past the span.
struct Parse {
  Parse(std::string_view input, const ParseLimits& limits, size_t capacity)
      : copy(new char[input.size()]), size(input.size()) {
    if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
    result = ParseRequestHead(data(), limits, &request, headers, capacity);
  }
  std::string_view data() const { return {copy.get(), size}; }

  std::unique_ptr<char[]> copy;
  size_t size;
  Header headers[kMaxCapacity];
  Request request;
  ParseResult result;
};

bool Inside(std::string_view view, std::string_view input) {
  if (view.empty()) return true;
  return view.data() >= input.data() &&
         view.data() + view.size() <= input.data() + input.size();
}

bool IsTchar(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') ||
         (b >= 'A' && b <= 'Z') ||
         (b != 0 && std::strchr("!#$%&'*+-.^_`|~", b) != nullptr);
}

template <typename Pred>
bool AllOf(std::string_view s, Pred pred) {
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool IsVchar(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return b >= 0x21 && b <= 0x7e;
}

bool IsValueChar(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return b == '\t' || b == ' ' || (b >= 0x21 && b <= 0x7e) || b >= 0x80;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

// What must hold of a head that parsed.
void CheckHead(const Parse& p, const ParseLimits& limits, size_t capacity) {
  const Request& r = p.request;
  const std::string_view in = p.data();
  FUZZ_CHECK(r.head_bytes <= in.size());
  FUZZ_CHECK(r.num_headers <= capacity && r.num_headers <= limits.max_headers);
  FUZZ_CHECK(r.num_headers == 0 || r.headers == p.headers);
  FUZZ_CHECK(!r.method.empty() && AllOf(r.method, IsTchar));
  FUZZ_CHECK(!r.target.empty() && AllOf(r.target, IsVchar));
  FUZZ_CHECK(!r.path.empty());
  FUZZ_CHECK(r.path == "*" || r.path[0] == '/');
  FUZZ_CHECK(Inside(r.method, in) && Inside(r.target, in) &&
             Inside(r.path, in) && Inside(r.query, in) && Inside(r.host, in));
  FUZZ_CHECK(r.target.size() <= limits.max_request_line);
  FUZZ_CHECK(Inside(r.path, r.target) && Inside(r.query, r.target));

  // The request line as sent: [empty line] method SP target [SP version].
  const size_t skipped = static_cast<size_t>(r.method.data() - in.data());
  FUZZ_CHECK(in.substr(0, skipped) == "" || in.substr(0, skipped) == "\n" ||
             in.substr(0, skipped) == "\r\n");
  const size_t target_at = skipped + r.method.size() + 1;
  FUZZ_CHECK(in[target_at - 1] == ' ' &&
             r.target.data() == in.data() + target_at);
  const std::string_view after_target = in.substr(target_at + r.target.size());
  switch (r.version) {
    case Version::kHttp11:
      FUZZ_CHECK(after_target.substr(0, 9) == " HTTP/1.1");
      break;
    case Version::kHttp10:
      FUZZ_CHECK(after_target.substr(0, 9) == " HTTP/1.0");
      break;
    case Version::kBare:
      FUZZ_CHECK(after_target[0] == '\r' || after_target[0] == '\n');
      break;
  }
  // Only a Connection header moves keep_alive off its version's default.
  if ((r.version == Version::kHttp11 && !r.keep_alive) ||
      (r.version == Version::kHttp10 && r.keep_alive)) {
    bool has_connection = false;
    for (size_t i = 0; i < r.num_headers; ++i) {
      has_connection |= EqualsIgnoreCase(r.headers[i].name, "connection");
    }
    FUZZ_CHECK(has_connection);
  }
  if (r.version == Version::kBare) FUZZ_CHECK(!r.keep_alive);
  if (r.version != Version::kHttp11) FUZZ_CHECK(!r.expect_continue);

  size_t hosts = 0;
  for (size_t i = 0; i < r.num_headers; ++i) {
    const Header& h = r.headers[i];
    FUZZ_CHECK(!h.name.empty() && AllOf(h.name, IsTchar));
    FUZZ_CHECK(AllOf(h.value, IsValueChar));
    FUZZ_CHECK(h.value.empty() ||
               (!IsOws(h.value.front()) && !IsOws(h.value.back())));
    FUZZ_CHECK(Inside(h.name, in) && Inside(h.value, in));
    if (EqualsIgnoreCase(h.name, "transfer-encoding")) {
      // Accepted only as the one framing of an HTTP/1.1 body.
      FUZZ_CHECK(r.framing == BodyFraming::kChunked);
      FUZZ_CHECK(r.version == Version::kHttp11);
      FUZZ_CHECK(r.FindHeader("content-length").empty());
    }
    if (EqualsIgnoreCase(h.name, "host")) {
      ++hosts;
      FUZZ_CHECK(r.host.data() == h.value.data());
    }
    size_t first = 0;
    while (!EqualsIgnoreCase(r.headers[first].name, h.name)) ++first;
    FUZZ_CHECK(r.FindHeader(h.name).data() == r.headers[first].value.data());
  }
  FUZZ_CHECK(hosts <= 1);
  if (r.version == Version::kHttp11) FUZZ_CHECK(hosts == 1);
  if (r.content_length > 0) {
    FUZZ_CHECK(!r.FindHeader("content-length").empty());
    FUZZ_CHECK(r.framing == BodyFraming::kContentLength);
  }
  if (r.framing == BodyFraming::kChunked) {
    FUZZ_CHECK(!r.FindHeader("transfer-encoding").empty());
    FUZZ_CHECK(r.content_length == 0);
  }
  FUZZ_CHECK(r.body.empty() && r.body_reader == nullptr);
}

void CheckOne(std::string_view input, const ParseLimits& limits,
              size_t capacity) {
  Parse full(input, limits, capacity);
  const ParseResult& r = full.result;
  const std::string_view in = full.data();

  switch (r.status) {
    case ParseStatus::kError:
      FUZZ_CHECK(r.error_status == 400 || r.error_status == 414 ||
                 r.error_status == 431 || r.error_status == 501 ||
                 r.error_status == 505);
      FUZZ_CHECK(r.consumed == 0);
      break;
    case ParseStatus::kIncomplete: {
      FUZZ_CHECK(r.consumed == 0 && r.error_status == 0);
      // No end of head in sight, or the parser would have answered.
      size_t scanned = 0;
      FUZZ_CHECK(FindHeadEnd(in, &scanned) == 0);
      FUZZ_CHECK(scanned == in.size());
      break;
    }
    case ParseStatus::kComplete: {
      FUZZ_CHECK(r.error_status == 0);
      CheckHead(full, limits, capacity);
      const Request& req = full.request;
      FUZZ_CHECK(r.consumed == req.head_bytes);
      FUZZ_CHECK(r.consumed <= in.size());
      size_t scanned = 0;
      FUZZ_CHECK(FindHeadEnd(in, &scanned) == req.head_bytes);
      // The bytes after the request change nothing.
      Parse exact(input.substr(0, r.consumed), limits, capacity);
      FUZZ_CHECK(exact.result.status == ParseStatus::kComplete);
      FUZZ_CHECK(exact.result.consumed == r.consumed);
      FUZZ_CHECK(exact.request.num_headers == req.num_headers);
      FUZZ_CHECK(exact.request.target == req.target);
      FUZZ_CHECK(exact.request.keep_alive == req.keep_alive);
      break;
    }
    default:
      FUZZ_CHECK(false && "unknown status");
  }

  // Re-parsing as bytes arrive: every prefix is incomplete, or fails with
  // the same status as the whole. Long inputs check a sample of prefixes
  // and all of the last few, to keep the quadratic cost in check.
  const size_t end =
      r.status == ParseStatus::kComplete ? r.consumed : input.size();
  const size_t step = end <= 256 ? 1 : end / 64;
  const size_t dense_from = end > 16 ? end - 16 : 0;
  for (size_t k = 0; k < end; k = k >= dense_from ? k + 1 : k + step) {
    Parse prefix(input.substr(0, k), limits, capacity);
    const ParseResult& pr = prefix.result;
    if (pr.status == ParseStatus::kError) {
      FUZZ_CHECK(r.status == ParseStatus::kError);
      FUZZ_CHECK(pr.error_status == r.error_status);
      continue;
    }
    FUZZ_CHECK(pr.status == ParseStatus::kIncomplete);
  }
  // FindHeadEnd resumed over growing prefixes agrees with one call on all.
  size_t scanned = 0, fresh = 0;
  const size_t whole = FindHeadEnd(in, &fresh);
  size_t found = 0;
  for (size_t k = 0; k <= in.size() && found == 0; k += 1 + k / 8) {
    found = FindHeadEnd(in.substr(0, k), &scanned);
    FUZZ_CHECK(found == 0 || found == whole);
  }
  if (found == 0) FUZZ_CHECK(FindHeadEnd(in, &scanned) == whole);
}

// The whole request stream, as a connection reads it: a head, its body
// (Content-Length bytes, or chunked through the BodyDecoder), the next head,
// until the input ends or an answer ends the stream. Each step consumes
// something, stays inside the input, and every body keeps to its limit.
void CheckStream(std::string_view input, const ParseLimits& limits) {
  Header headers[kMaxCapacity];
  http::BodyDecoder body;
  size_t pos = 0;
  int requests = 0;
  while (pos < input.size()) {
    Request request;
    const ParseResult r = ParseRequestHead(input.substr(pos), limits, &request, headers, 64);
    if (r.status != ParseStatus::kComplete) break;  // incomplete, or answered and closed
    FUZZ_CHECK(r.consumed > 0 && r.consumed <= input.size() - pos);
    pos += r.consumed;
    ++requests;
    body.Start(request.framing, request.content_length, limits.max_body_bytes);
    if (request.framing == BodyFraming::kContentLength &&
        request.content_length > limits.max_body_bytes) {
      break;  // 413 without reading the body
    }
    bool ended = body.done();
    while (!ended && pos < input.size()) {
      const http::BodyDecoder::Result b = body.Decode(input.substr(pos));
      FUZZ_CHECK(b.consumed <= input.size() - pos);
      if (b.status == http::BodyDecoder::Status::kData) {
        FUZZ_CHECK(!b.data.empty());
        FUZZ_CHECK(b.data.data() >= input.data() + pos &&
                   b.data.data() + b.data.size() <= input.data() + pos + b.consumed);
      }
      pos += b.consumed;
      FUZZ_CHECK(body.received() <= limits.max_body_bytes);
      if (b.status == http::BodyDecoder::Status::kError) {
        FUZZ_CHECK(b.error_status == 400 || b.error_status == 413 || b.error_status == 431);
        return;  // answered and closed
      }
      if (b.status == http::BodyDecoder::Status::kNeedMore) {
        FUZZ_CHECK(pos == input.size());
        return;
      }
      ended = body.done();
    }
    if (!ended) return;
    if (!request.keep_alive) return;  // nothing after it is read
  }
  FUZZ_CHECK(static_cast<size_t>(requests) <= input.size());
}

}  // namespace
}  // namespace uring_http::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using uring_http::http::CheckOne;
  using uring_http::http::kMaxCapacity;
  using uring_http::http::ParseLimits;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  CheckOne(input, ParseLimits{}, 64);
  CheckOne(input, ParseLimits{}, 2);  // the array, not the limit, binds
  ParseLimits stream_limits;
  stream_limits.max_body_bytes = 64;
  uring_http::http::CheckStream(input, ParseLimits{});
  uring_http::http::CheckStream(input, stream_limits);

  ParseLimits small;
  small.max_request_line = 32;
  small.max_header_bytes = 64;
  small.max_headers = 4;
  small.max_body_bytes = 16;
  CheckOne(input, small, 8);

  ParseLimits zero;
  zero.max_request_line = 0;
  zero.max_header_bytes = 0;
  zero.max_headers = 0;
  zero.max_body_bytes = 0;
  CheckOne(input, zero, 0);

  // Limits chosen by the fuzzer from the first four bytes, so that it can
  // steer requests onto every limit's boundary.
  if (size >= 4) {
    ParseLimits chosen;
    chosen.max_request_line = data[0];
    chosen.max_header_bytes = static_cast<size_t>(data[1]) * 4;
    chosen.max_headers = data[2] % 16;
    chosen.max_body_bytes = data[3];
    CheckOne(input.substr(4), chosen, kMaxCapacity);
  }
  return 0;
}

