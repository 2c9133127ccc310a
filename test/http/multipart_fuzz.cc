// libFuzzer target for the multipart/form-data parser (src/http/multipart.h).
// The input's first byte picks a boundary and a set of limits, its second
// seeds how the rest (the body) is split; the rest is the body. Checked for
// any input:
//   - the body parsed whole and parsed in pieces (sizes from the seed, and
//     byte by byte for short bodies) tell the same story: events, part
//     heads, body bytes, the error and its status;
//   - every result consumes at most its input, kNeedMore and kDone all of
//     it; a kData piece is never empty and is a view into the input or a
//     prefix of the delimiter (the bytes the parser held back);
//   - a part's body never exceeds max_part_bytes, nor the parts
//     max_parts, nor what was consumed max_total_bytes;
//   - a body that parses: no part body holds a real delimiter, and the parts
//     written out again with the same boundary parse to the same story.
// A failed parse reports 400 or 413 with a message.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] multipart_fuzz
// Replay: bazel run //test/http:multipart_fuzz -- FILE_OR_DIR...  (without
//         --config=fuzz the main at the bottom replays instead of fuzzing)
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/multipart.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http {
namespace {

constexpr size_t kMaxInput = 4096;
constexpr std::string_view kBoundaries[] = {"b", "AaB03x", "simple boundary",
                                            "----WebKitFormBoundary7MA4YWxkTrZu0gW"};

struct Part {
  std::string name, filename, content_type, header_lines, body;
  bool has_filename = false;
  bool operator==(const Part&) const = default;
};

struct Story {
  std::vector<Part> parts;
  bool ok = false;
  int status = 0;
  std::string message;
  bool operator==(const Story&) const = default;
};

bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

Story Run(std::string_view boundary, std::string_view body, const std::vector<size_t>& sizes,
          const MultipartLimits& limits) {
  MultipartParser parser(boundary, limits);
  const std::string delim = "\r\n--" + std::string(boundary) + "-";
  Story story;
  bool in_part = false;
  size_t at = 0;
  size_t k = 0;
  while (at <= body.size()) {
    size_t n = body.size() - at;
    if (!sizes.empty()) n = std::min(n, sizes[k++ % sizes.size()]);
    std::string_view in = body.substr(at, n);
    at += n;
    while (true) {
      const MultipartParser::Result r = parser.Parse(in);
      FUZZ_CHECK(r.consumed <= in.size());
      FUZZ_CHECK(parser.total_bytes() <= limits.max_total_bytes);
      switch (r.event) {
        case MultipartParser::Event::kPartBegin: {
          FUZZ_CHECK(!in_part);
          in_part = true;
          const MultipartPart& p = parser.part();
          FUZZ_CHECK(p.index == story.parts.size());
          story.parts.push_back({std::string(p.name), std::string(p.filename),
                                 std::string(p.content_type), std::string(p.header_lines), "",
                                 p.has_filename});
          FUZZ_CHECK(story.parts.size() <= limits.max_parts);
          break;
        }
        case MultipartParser::Event::kData:
          FUZZ_CHECK(in_part);
          FUZZ_CHECK(!r.data.empty());
          FUZZ_CHECK(Inside(r.data, in) ||
                     std::string_view(delim).substr(0, r.data.size()) == r.data);
          story.parts.back().body += r.data;
          FUZZ_CHECK(story.parts.back().body.size() <= limits.max_part_bytes);
          break;
        case MultipartParser::Event::kPartEnd:
          FUZZ_CHECK(in_part);
          in_part = false;
          break;
        case MultipartParser::Event::kNeedMore:
        case MultipartParser::Event::kDone:
          FUZZ_CHECK(r.consumed == in.size());
          break;
        case MultipartParser::Event::kError:
          FUZZ_CHECK(parser.failed());
          break;
      }
      in.remove_prefix(r.consumed);
      if (r.event != MultipartParser::Event::kPartBegin &&
          r.event != MultipartParser::Event::kData && r.event != MultipartParser::Event::kPartEnd) {
        break;
      }
    }
    if (parser.failed() || n == 0) break;
  }
  story.ok = parser.Finish();
  FUZZ_CHECK(story.ok == parser.done());
  if (!story.ok) {
    story.status = parser.error_status();
    story.message = parser.error_message();
    FUZZ_CHECK(story.status == 400 || story.status == 413);
    FUZZ_CHECK(!story.message.empty());
    FUZZ_CHECK(parser.error_offset() <= body.size());
  }
  return story;
}

// Whether `body`, followed by the CRLF that ends it in a body, holds D
// followed by what makes it a delimiter.
bool HoldsDelimiter(std::string_view part_body, std::string_view boundary) {
  const std::string body = std::string(part_body) + "\r\n";
  const std::string d = "\r\n--" + std::string(boundary);
  for (size_t at = body.find(d); at != std::string::npos; at = body.find(d, at + 1)) {
    const size_t q = at + d.size();
    if (q >= body.size()) return true;
    const char c = body[q];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return true;
    if (c == '-' && q + 1 < body.size() && body[q + 1] == '-') return true;
  }
  return false;
}

}  // namespace
}  // namespace uring_http::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uring_http::http;
  if (size < 2 || size > kMaxInput) return 0;
  const std::string_view boundary = kBoundaries[data[0] & 3];
  MultipartLimits limits;
  if (data[0] & 4) limits.max_parts = 3;
  if (data[0] & 8) limits.max_header_bytes = 64;
  if (data[0] & 16) limits.max_part_bytes = 32;
  if (data[0] & 32) limits.max_total_bytes = 300;
  uint32_t seed = data[1] * 2654435761u + 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Story whole = Run(boundary, body, {}, limits);
  std::vector<size_t> sizes;
  for (int i = 0; i < 16; ++i) {
    seed = seed * 1103515245u + 12345u;
    sizes.push_back(1 + (seed >> 16) % 24);
  }
  FUZZ_CHECK(Run(boundary, body, sizes, limits) == whole);
  if (body.size() <= 512) FUZZ_CHECK(Run(boundary, body, {1}, limits) == whole);

  if (whole.ok) {
    std::string again;
    for (const Part& p : whole.parts) {
      FUZZ_CHECK(!HoldsDelimiter(p.body, boundary));
      again += "--" + std::string(boundary) + "\r\n" + p.header_lines + "\r\n" + p.body + "\r\n";
    }
    again += "--" + std::string(boundary) + "--";
    MultipartLimits unlimited;
    const Story reread = Run(boundary, again, {}, unlimited);
    FUZZ_CHECK(reread.ok);
    FUZZ_CHECK(reread.parts == whole.parts);
  }
  return 0;
}
