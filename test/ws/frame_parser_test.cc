// The client frames' parser, rule by rule (RFC 6455 5 and 7.4), each input
// also fed a byte at a time and cut at every point: the same events (data
// joined) whatever the split.
#include "src/ws/frame_parser.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/ws/frame.h"

namespace uring_http::ws {
namespace {

constexpr uint8_t kMask[4] = {0x37, 0xFA, 0x21, 0x3D};

// A client frame: masked (unless told not to), its length in the
// shortest form unless `form` says 126 or 127.
std::string Frame(uint8_t opcode, std::string_view payload, bool fin = true, uint8_t rsv = 0,
                  bool masked = true, int form = 0) {
  std::string f;
  f.push_back(static_cast<char>((fin ? 0x80 : 0) | (rsv << 4) | opcode));
  const uint8_t m = masked ? 0x80 : 0;
  const size_t n = payload.size();
  if (form == 127 || n > 0xFFFF) {
    f.push_back(static_cast<char>(m | 127));
    for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>((uint64_t{n} >> (8 * i)) & 0xFF));
  } else if (form == 126 || n > 125) {
    f.push_back(static_cast<char>(m | 126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xFF));
  } else {
    f.push_back(static_cast<char>(m | n));
  }
  if (masked) f.append(reinterpret_cast<const char*>(kMask), 4);
  for (size_t i = 0; i < n; ++i) {
    f.push_back(static_cast<char>(payload[i] ^ (masked ? kMask[i & 3] : 0)));
  }
  return f;
}

std::string Close(uint16_t code, std::string_view reason = "") {
  std::string p;
  p.push_back(static_cast<char>(code >> 8));
  p.push_back(static_cast<char>(code & 0xFF));
  p.append(reason);
  return Frame(0x8, p);
}

// The events for `wire` fed in pieces cut at `cuts`, as text: "data:T:hello",
// "end" after a message's last piece, "ping:x", "close:1000:bye", "error:1002".
// Data pieces of one message are joined (their cuts depend on the input's).
std::vector<std::string> Parse(const std::string& wire, const std::vector<size_t>& cuts,
                             FrameParser::Options options = {}) {
  FrameParser parser(options);
  std::vector<std::string> out;
  std::string buffer = wire;  // unmasked in place
  size_t at = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(wire.size());
  std::string message;
  bool in_message = false;
  for (size_t end : ends) {
    while (true) {
      const FrameParser::Event e = parser.Feed(buffer.data() + at, end - at);
      at += e.consumed;
      if (e.kind == FrameParser::Kind::kNeedMore) {
        EXPECT_EQ(at, end);
        break;
      }
      if (e.kind == FrameParser::Kind::kError) {
        out.push_back("error:" + std::to_string(e.close_code));
        return out;
      }
      if (e.kind == FrameParser::Kind::kData) {
        if (!in_message) message = std::string(e.opcode == Opcode::kText ? "T" : "B") + (e.compressed ? "z:" : ":");
        in_message = true;
        message.append(e.data);
        if (e.message_end) {
          out.push_back("data:" + message);
          in_message = false;
        }
      } else {
        if (e.opcode == Opcode::kClose) {
          out.push_back("close:" + std::to_string(e.close_code) + ":" + std::string(e.data));
        } else {
          out.push_back(std::string(e.opcode == Opcode::kPing ? "ping:" : "pong:") + std::string(e.data));
        }
      }
      if (at == end) break;
    }
  }
  if (in_message) out.push_back("partial:" + message);
  return out;
}

// Whole, a byte at a time, and cut once at every point: all the same.
std::vector<std::string> Events(const std::string& wire, FrameParser::Options options = {}) {
  const std::vector<std::string> whole = Parse(wire, {}, options);
  std::vector<size_t> bytes;
  for (size_t i = 1; i < wire.size(); ++i) bytes.push_back(i);
  EXPECT_EQ(Parse(wire, bytes, options), whole) << "fed a byte at a time";
  for (size_t cut = 1; cut < wire.size() && wire.size() < 4096; ++cut) {
    EXPECT_EQ(Parse(wire, {cut}, options), whole) << "cut at " << cut;
  }
  return whole;
}

using V = std::vector<std::string>;

TEST(UnmaskTest, EveryLengthAndOffsetMatchesByteByByte) {
  // Past the 64-byte vector steps and the 8-byte ones, at every offset of
  // the mask, and at addresses that are not aligned.
  const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  std::string buffer(300, '\0');
  for (size_t start = 0; start < 3; ++start) {
    for (size_t len = 0; len <= 280; len += (len < 140 ? 1 : 13)) {
      for (uint64_t offset = 0; offset < 6; ++offset) {
        for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(i * 7 + len);
        std::string expected = buffer;
        for (size_t i = 0; i < len; ++i) {
          expected[start + i] = static_cast<char>(expected[start + i] ^ mask[(offset + i) & 3]);
        }
        Unmask(buffer.data() + start, len, mask, offset);
        ASSERT_EQ(buffer, expected) << "start " << start << " len " << len << " offset " << offset;
      }
    }
  }
}

TEST(FrameParserTest, TheRfcsMaskedHello) {
  const std::string wire = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";
  EXPECT_EQ(Events(wire), V{"data:T:Hello"});
}

TEST(FrameParserTest, FragmentsWithControlFramesBetween) {
  const std::string wire = Frame(0x1, "Hel", false) + Frame(0x9, "p1") + Frame(0x0, "l", false) +
                           Frame(0xA, "") + Frame(0x0, "o", true) + Frame(0x2, std::string("\0\1", 2));
  EXPECT_EQ(Events(wire), (V{"ping:p1", "pong:", "data:T:Hello", "data:B:" + std::string("\0\1", 2)}));
}

TEST(FrameParserTest, LengthsInEachForm) {
  const std::string mid(200, 'm');
  const std::string big(70000, 'b');
  EXPECT_EQ(Parse(Frame(0x2, mid), {}), V{"data:B:" + mid});
  EXPECT_EQ(Parse(Frame(0x2, big), {}), V{"data:B:" + big});
  // The longer forms for short lengths are taken too (5.2 asks senders for
  // the shortest; a reader loses nothing by reading the others).
  EXPECT_EQ(Events(Frame(0x1, "hi", true, 0, true, 126)), V{"data:T:hi"});
  EXPECT_EQ(Events(Frame(0x1, "hi", true, 0, true, 127)), V{"data:T:hi"});
  std::vector<size_t> every_kilobyte;
  for (size_t i = 1024; i < big.size(); i += 1024) every_kilobyte.push_back(i + 3);
  EXPECT_EQ(Parse(Frame(0x2, big), every_kilobyte), V{"data:B:" + big});
}

TEST(FrameParserTest, EmptyFramesAndAnEmptyLastFragment) {
  EXPECT_EQ(Events(Frame(0x1, "")), V{"data:T:"});
  EXPECT_EQ(Events(Frame(0x1, "ab", false) + Frame(0x0, "", false) + Frame(0x0, "")), V{"data:T:ab"});
}

TEST(FrameParserTest, CloseFrames) {
  EXPECT_EQ(Events(Frame(0x8, "")), V{"close:1005:"});
  EXPECT_EQ(Events(Close(1000, "bye")), V{"close:1000:bye"});
  for (uint16_t code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000,
                        3999, 4000, 4999}) {
    EXPECT_EQ(Parse(Close(code), {}), V{"close:" + std::to_string(code) + ":"}) << code;
  }
  for (uint16_t code : {0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535}) {
    EXPECT_EQ(Parse(Close(code), {}), V{"error:1002"}) << code;
  }
  EXPECT_EQ(Events(Frame(0x8, "\x03")), V{"error:1002"});  // one byte
  EXPECT_EQ(Events(Close(1000, "\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5\xED\xA0\x80")), V{"error:1007"});
}

TEST(FrameParserTest, ProtocolErrorsAre1002) {
  const std::string hello = Frame(0x1, "hello");
  EXPECT_EQ(Events(Frame(0x1, "hello", true, 0, /*masked=*/false)), V{"error:1002"});
  EXPECT_EQ(Events(Frame(0x1, "x", true, 2)), V{"error:1002"});  // RSV2
  EXPECT_EQ(Events(Frame(0x1, "x", true, 1)), V{"error:1002"});  // RSV3
  EXPECT_EQ(Events(Frame(0x1, "x", true, 4)), V{"error:1002"});  // RSV1 without deflate
  for (uint8_t op : {3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF}) {
    EXPECT_EQ(Events(Frame(op, "x")), V{"error:1002"}) << int(op);
  }
  EXPECT_EQ(Events(Frame(0x9, "x", /*fin=*/false)), V{"error:1002"});
  EXPECT_EQ(Events(Frame(0x9, std::string(126, 'p'))), V{"error:1002"});
  EXPECT_EQ(Events(Frame(0x0, "x")), V{"error:1002"});  // continuation, no message
  EXPECT_EQ(Events(Frame(0x1, "a", false) + Frame(0x1, "b")), V{"error:1002"});
  // A 64-bit length with its top bit set.
  std::string huge = "\x82\xFF\x80";
  huge.append(7, '\0');
  huge.append(reinterpret_cast<const char*>(kMask), 4);
  EXPECT_EQ(Events(huge), V{"error:1002"});
  // What came before the error was given; nothing after it.
  EXPECT_EQ(Events(hello + Frame(0x1, "x", true, 2) + hello), (V{"data:T:hello", "error:1002"}));
}

TEST(FrameParserTest, AnErrorStays) {
  FrameParser parser({});
  std::string bad = Frame(0x3, "x");
  EXPECT_EQ(parser.Feed(bad.data(), bad.size()).kind, FrameParser::Kind::kError);
  std::string good = Frame(0x1, "ok");
  const FrameParser::Event e = parser.Feed(good.data(), good.size());
  EXPECT_EQ(e.kind, FrameParser::Kind::kError);
  EXPECT_EQ(e.close_code, 1002);
  EXPECT_TRUE(parser.failed());
}

TEST(FrameParserTest, AMessageOverTheLimitIs1009AtTheHeaderThatPassesIt) {
  FrameParser::Options small;
  small.max_message = 10;
  EXPECT_EQ(Events(Frame(0x2, std::string(10, 'a')), small), V{"data:B:aaaaaaaaaa"});
  EXPECT_EQ(Events(Frame(0x2, std::string(11, 'a')), small), V{"error:1009"});
  // Across fragments; control frames between do not count.
  EXPECT_EQ(Events(Frame(0x1, "12345", false) + Frame(0x9, "ping") + Frame(0x0, "678901"), small),
            (V{"ping:ping", "error:1009"}));
  // A declared length far past it: refused before any payload is read.
  std::string declared = "\x82\xFF";
  for (int i = 7; i >= 0; --i) declared.push_back(static_cast<char>((uint64_t{1} << 40) >> (8 * i)));
  declared.append(reinterpret_cast<const char*>(kMask), 4);
  EXPECT_EQ(Parse(declared, {}, small), V{"error:1009"});
}

TEST(FrameParserTest, Rsv1MarksACompressedMessageWhenDeflateWasAgreed) {
  FrameParser::Options deflate;
  deflate.deflate = true;
  EXPECT_EQ(Events(Frame(0x1, "zz", false, 4) + Frame(0x0, "zz"), deflate), V{"data:Tz:zzzz"});
  EXPECT_EQ(Events(Frame(0x1, "plain"), deflate), V{"data:T:plain"});
  // Never on a continuation or a control frame.
  EXPECT_EQ(Events(Frame(0x1, "a", false, 4) + Frame(0x0, "b", true, 4), deflate), V{"error:1002"});
  EXPECT_EQ(Events(Frame(0x9, "a", true, 4), deflate), V{"error:1002"});
}

TEST(FrameTest, ServerHeadersAndClosePayloads) {
  char h[kMaxServerFrameHeader];
  ASSERT_EQ(WriteFrameHeader(h, Opcode::kText, true, false, 5), 2u);
  EXPECT_EQ(std::string(h, 2), "\x81\x05");
  ASSERT_EQ(WriteFrameHeader(h, Opcode::kBinary, false, true, 300), 4u);
  EXPECT_EQ(std::string(h, 4), "\x42\x7E\x01\x2C");
  ASSERT_EQ(WriteFrameHeader(h, Opcode::kBinary, true, false, 70000), 10u);
  EXPECT_EQ(std::string(h, 10), std::string("\x82\x7F\0\0\0\0\0\x01\x11\x70", 10));
  EXPECT_EQ(ClosePayload(1000, "bye"), std::string("\x03\xE8" "bye", 5));
  // A reason cut to fit 125 bytes, at a character's boundary.
  std::string euros;
  for (int i = 0; i < 50; ++i) euros += "\xE2\x82\xAC";
  const std::string p = ClosePayload(1001, euros);
  EXPECT_LE(p.size(), kMaxControlPayload);
  EXPECT_EQ((p.size() - 2) % 3, 0u);
}

}  // namespace
}  // namespace uring_http::ws
