// libFuzzer target for the WebSocket frame parser: the first byte picks the
// options (permessage-deflate agreed, a small message limit); the rest is
// a client's byte stream, parsed whole, then fed a byte at a time and cut
// at a point the input names. The events must be the same (a message's
// data pieces joined), and each must hold what the parser promises: a
// consumed count within the input, data inside the caller's buffer, a
// control payload of at most 125 bytes, a close code a peer may send, only
// 1002, 1007 or 1009 as errors, and nothing after an error.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] //test/ws:frame_parser_fuzz
// Replay: bazel run //test/ws:frame_parser_fuzz -- FILE_OR_DIR...
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "src/ws/frame.h"
#include "src/ws/frame_parser.h"
#include "test/fuzz/replay_main.h"

namespace uring_http::ws {
namespace {

// The events of `wire` fed in pieces that end at `ends` (the last is its
// size), as text.
std::vector<std::string> Parse(const std::string& wire, const std::vector<size_t>& ends,
                               const FrameParser::Options& options) {
  FrameParser parser(options);
  std::string buffer = wire;
  std::vector<std::string> out;
  std::string message;
  bool in_message = false;
  bool failed = false;
  size_t at = 0;
  for (size_t end : ends) {
    for (;;) {
      char* base = buffer.data() + at;
      const size_t len = end - at;
      const FrameParser::Event e = parser.Feed(base, len);
      FUZZ_CHECK(e.consumed <= len);
      if (failed) FUZZ_CHECK(e.kind == FrameParser::Kind::kError && e.consumed == 0);
      at += e.consumed;
      if (e.kind == FrameParser::Kind::kNeedMore) {
        FUZZ_CHECK(at == end);
        break;
      }
      if (e.kind == FrameParser::Kind::kError) {
        FUZZ_CHECK(e.close_code == close_code::kProtocolError ||
                   e.close_code == close_code::kInvalidPayload || e.close_code == close_code::kTooBig);
        FUZZ_CHECK(parser.failed());
        if (!failed) out.push_back("error " + std::to_string(e.close_code));
        failed = true;
        break;
      }
      if (e.kind == FrameParser::Kind::kData) {
        FUZZ_CHECK(e.opcode == Opcode::kText || e.opcode == Opcode::kBinary);
        if (!e.data.empty()) {
          FUZZ_CHECK(e.data.data() >= base && e.data.data() + e.data.size() <= base + len);
        }
        FUZZ_CHECK(!e.compressed || options.deflate);
        message.append(e.data);
        in_message = true;
        FUZZ_CHECK(message.size() <= options.max_message);
        if (e.message_end) {
          out.push_back(std::string(e.opcode == Opcode::kText ? "text " : "binary ") + message);
          message.clear();
          in_message = false;
          FUZZ_CHECK(!parser.in_message());
        }
      } else {
        FUZZ_CHECK(e.kind == FrameParser::Kind::kControl && IsControl(e.opcode));
        FUZZ_CHECK(e.data.size() <= kMaxControlPayload);
        if (e.opcode == Opcode::kClose) {
          FUZZ_CHECK(e.close_code == close_code::kNoStatus || CloseCodeValid(e.close_code));
        }
        out.push_back("control " + std::to_string(static_cast<int>(e.opcode)) + " " +
                      std::to_string(e.close_code) + " " + std::string(e.data));
      }
      if (at == end) break;
    }
    if (failed) break;
  }
  if (in_message) out.push_back("partial " + message);
  return out;
}

}  // namespace
}  // namespace uring_http::ws

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uring_http::ws;
  if (size < 2) return 0;
  FrameParser::Options options;
  options.deflate = (data[0] & 1) != 0;
  if ((data[0] & 2) != 0) options.max_message = data[1];
  const std::string wire(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::vector<std::string> whole = Parse(wire, {wire.size()}, options);
  std::vector<size_t> bytes;
  for (size_t i = 1; i <= wire.size(); ++i) bytes.push_back(i);
  if (wire.empty()) bytes.push_back(0);
  FUZZ_CHECK(Parse(wire, bytes, options) == whole);
  if (!wire.empty()) {
    const size_t cut = data[1] % wire.size();
    FUZZ_CHECK(Parse(wire, {cut, wire.size()}, options) == whole);
  }
  return 0;
}
