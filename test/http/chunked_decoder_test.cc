#include "src/http/chunked_decoder.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

using namespace std::string_literals;
using Status = ChunkedDecoder::Status;

std::string Repeat(char c, size_t n) { return std::string(n, c); }

// Keeps failure messages readable.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 ||
               static_cast<unsigned char>(c) >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

const char* StatusName(Status s) {
  switch (s) {
    case Status::kNeedMore: return "kNeedMore";
    case Status::kData: return "kData";
    case Status::kDone: return "kDone";
    case Status::kError: return "kError";
  }
  return "?";
}

// What a caller ends up with after feeding a whole input, however split.
struct Outcome {
  Status status = Status::kNeedMore;  // kNeedMore, kDone or kError
  std::string body;
  size_t consumed = 0;  // kError: where the offending byte is
  int error_status = 0;
  uint64_t body_bytes = 0;
  size_t trailer_count = 0;

  bool operator==(const Outcome&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const Outcome& o) {
    return os << StatusName(o.status) << " consumed=" << o.consumed
              << " error_status=" << o.error_status << " body=\""
              << Printable(o.body) << "\" body_bytes=" << o.body_bytes
              << " trailers=" << o.trailer_count;
  }
};

// Feeds `input` to a fresh decoder in pieces cut at the ascending offsets
// `cuts`, looping over each piece the way a caller does. Each piece is a
// private heap copy of exactly its bytes, so that AddressSanitizer catches
// any read past it. Checks what must hold of every single call.
Outcome Feed(std::string_view input, const ChunkedLimits& limits,
             const std::vector<size_t>& cuts) {
  ChunkedDecoder d(limits);
  Outcome out;
  size_t start = 0;
  for (size_t p = 0; p <= cuts.size(); ++p) {
    const size_t end = p < cuts.size() ? cuts[p] : input.size();
    const size_t size = end - start;
    std::unique_ptr<char[]> copy(new char[size]);
    if (size > 0) std::memcpy(copy.get(), input.data() + start, size);
    std::string_view in(copy.get(), size);
    while (!in.empty()) {
      const ChunkedDecoder::Result r = d.Decode(in);
      EXPECT_LE(r.consumed, in.size());
      if (r.status == Status::kData) {
        EXPECT_FALSE(r.data.empty());
        EXPECT_GE(r.data.data(), in.data());
        EXPECT_LE(r.data.data() + r.data.size(), in.data() + r.consumed);
        out.body.append(r.data);
      } else {
        EXPECT_TRUE(r.data.empty());
      }
      if (r.status == Status::kNeedMore) {
        EXPECT_EQ(r.consumed, in.size());
      }
      EXPECT_EQ(r.error_status != 0, r.status == Status::kError);
      if (r.status == Status::kDone || r.status == Status::kError) {
        out.status = r.status;
        out.consumed = start + static_cast<size_t>(in.data() - copy.get()) +
                       r.consumed;
        out.error_status = r.error_status;
        EXPECT_EQ(d.done(), r.status == Status::kDone);
        EXPECT_EQ(d.failed(), r.status == Status::kError);
        // Sticky: the next call says the same and consumes nothing.
        const ChunkedDecoder::Result again = d.Decode(in.substr(r.consumed));
        EXPECT_EQ(again.status, r.status);
        EXPECT_EQ(again.consumed, 0u);
        EXPECT_EQ(again.error_status, r.error_status);
        out.body_bytes = d.body_bytes();
        out.trailer_count = d.trailer_count();
        return out;
      }
      in.remove_prefix(r.consumed);
    }
    start = end;
  }
  out.consumed = input.size();
  out.body_bytes = d.body_bytes();
  out.trailer_count = d.trailer_count();
  EXPECT_FALSE(d.done() || d.failed());
  return out;
}

Outcome Whole(std::string_view input, const ChunkedLimits& limits = {}) {
  return Feed(input, limits, {});
}

Outcome ByteByByte(std::string_view input, const ChunkedLimits& limits = {}) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
  return Feed(input, limits, cuts);
}

// Every position for short inputs; for long ones a sample, with every
// position near both ends and around `focus`.
std::vector<size_t> Positions(size_t n, size_t focus) {
  std::vector<size_t> out;
  for (size_t k = 0; k <= n; ++k) {
    if (n <= 2048 || k < 32 || n - k < 32 || k % (n / 64) == 0 ||
        (k + 32 > focus && k < focus + 32)) {
      out.push_back(k);
    }
  }
  return out;
}

ChunkedLimits Limits(size_t digits, size_t extension, size_t trailer_bytes,
                     size_t trailers) {
  ChunkedLimits l;
  l.max_size_digits = digits;
  l.max_extension_bytes = extension;
  l.max_trailer_bytes = trailer_bytes;
  l.max_trailers = trailers;
  return l;
}

constexpr size_t kDefault = static_cast<size_t>(-1);

struct Case {
  const char* name;
  std::string input;
  Status status;  // kNeedMore, kDone or kError
  std::string body = "";
  // kDone: where the chunked body ends (default: the whole input).
  // kError: where the offending byte is (default: the last byte).
  size_t consumed = kDefault;
  int error_status = 0;
  ChunkedLimits limits = {};
  size_t trailers = 0;

  Outcome Expected() const {
    Outcome o;
    o.status = status;
    o.body = body;
    o.error_status = error_status;
    o.body_bytes = body.size();
    o.trailer_count = trailers;
    if (consumed != kDefault) {
      o.consumed = consumed;
    } else {
      o.consumed = status == Status::kError ? input.size() - 1 : input.size();
    }
    return o;
  }
  friend std::ostream& operator<<(std::ostream& os, const Case& c) {
    return os << Printable(c.input);
  }
};

// The trailer count is not compared for errors: how many fields were seen
// before the offending byte is no part of the contract.
Outcome ForCompare(Outcome o, Status status) {
  if (status == Status::kError) o.trailer_count = 0;
  return o;
}

Case Bad(const char* name, std::string input, int status = 400,
         ChunkedLimits limits = {}, size_t at = kDefault) {
  return {.name = name, .input = std::move(input), .status = Status::kError,
          .consumed = at, .error_status = status, .limits = limits};
}

// An error after some data: the data before it was delivered.
Case BadAfter(const char* name, std::string input, std::string body,
              size_t at = kDefault) {
  Case c = Bad(name, std::move(input), 400, {}, at);
  c.body = std::move(body);
  return c;
}

std::string ManyTrailers(size_t n) {
  std::string s = "0\r\n";
  for (size_t i = 0; i < n; ++i) s += "x-t" + std::to_string(i) + ": v\r\n";
  return s;
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // Valid bodies.
      {"Simple", "5\r\nhello\r\n0\r\n\r\n", Status::kDone, "hello"},
      {"EmptyBody", "0\r\n\r\n", Status::kDone},
      {"MultipleChunks", "5\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n",
       Status::kDone, "hello world!"},
      {"HexLowerUpperMixed",
       "a\r\n0123456789\r\nB\r\nabcdefghijk\r\n1f\r\n" + Repeat('x', 31) +
           "\r\n1F\r\n" + Repeat('y', 31) + "\r\n0\r\n\r\n",
       Status::kDone, "0123456789abcdefghijk" + Repeat('x', 31) +
           Repeat('y', 31)},
      {"BinaryData", "6\r\n\r\n\0\xff\r\n\r\n0\r\n\r\n"s, Status::kDone,
       "\r\n\0\xff\r\n"s},
      {"LeadingZerosUpToLimit",
       "000000000000005\r\nhello\r\n0000000000000000\r\n\r\n", Status::kDone,
       "hello"},
      {"LastChunkManyZeros", "000\r\n\r\n", Status::kDone},
      {"PipelinedRequestLeftOver",
       "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", Status::kDone,
       "abc", 13},
      {"PipelinedLeftOverLooksLikeChunk", "0\r\n\r\n5\r\nhello\r\n",
       Status::kDone, "", 5},
      {"HugeSizeNeedsMore", "ffffffffffffffff\r\nabc", Status::kNeedMore,
       "abc"},
      {"HugeSizeUpperCase", "FFFFFFFFFFFFFFFF\r\n", Status::kNeedMore},
      {"LargerDigitLimitNoOverflow", "0000ffffffffffffffff\r\nab",
       Status::kNeedMore, "ab", kDefault, 0, Limits(20, 1024, 16384, 100)},
      {"EmptyInput", "", Status::kNeedMore},
      {"NeedMoreInSize", "1", Status::kNeedMore},
      {"NeedMoreInData", "5\r\nhel", Status::kNeedMore, "hel"},
      {"NeedMoreBeforeDataCrlf", "5\r\nhello", Status::kNeedMore, "hello"},
      {"NeedMoreInDataCrlf", "5\r\nhello\r", Status::kNeedMore, "hello"},
      {"NeedMoreInFinalCrlf", "0\r\n\r", Status::kNeedMore},
      {"NeedMoreInTrailer", "0\r\nab: c", Status::kNeedMore, "", kDefault, 0,
       {}, 1},
      {"NeedMoreInQuotedExtension", "5;a=\"x;y", Status::kNeedMore},

      // Extensions: parsed and ignored.
      {"ExtensionName", "5;foo\r\nhello\r\n0;bar\r\n\r\n", Status::kDone,
       "hello"},
      {"ExtensionValue", "5;foo=bar\r\nhello\r\n0\r\n\r\n", Status::kDone,
       "hello"},
      {"ExtensionQuotedValue",
       "5;foo=\"a;b=c\\\"d\\\\\"\r\nhello\r\n0\r\n\r\n", Status::kDone,
       "hello"},
      {"ExtensionQuotedEmpty", "5;a=\"\"\r\nhello\r\n0\r\n\r\n", Status::kDone,
       "hello"},
      {"ExtensionQuotedTabSpaceObsText",
       "5;a=\"x\ty \x80\xff\\\t\\ \\\x80\"\r\nhello\r\n0\r\n\r\n",
       Status::kDone, "hello"},
      {"SeveralExtensions", "5;a=1;b;c=\"x\";d\r\nhello\r\n0\r\n\r\n",
       Status::kDone, "hello"},
      {"ExtensionBws", "5 ;\ta \t= \"v\" ; b\t=\tw\t;c\r\nhello\r\n0\r\n\r\n",
       Status::kDone, "hello"},
      {"ExtensionTcharsAll",
       "5;!#$%&'*+-.^_`|~09azAZ=!#$%&'*+-.^_`|~\r\nhello\r\n0\r\n\r\n",
       Status::kDone, "hello"},
      {"ExtensionAtLimit", "5;abc\r\nhello\r\n0\r\n\r\n", Status::kDone,
       "hello", kDefault, 0, Limits(16, 4, 16384, 100)},
      {"ExtensionAtDefaultLimit",
       "5;" + Repeat('a', 1023) + "\r\nhello\r\n0\r\n\r\n", Status::kDone,
       "hello"},

      // Trailers: validated and dropped.
      {"OneTrailer", "0\r\nExpires: x\r\n\r\n", Status::kDone, "", kDefault, 0,
       {}, 1},
      {"SeveralTrailers",
       "3\r\nabc\r\n0\r\nA: 1\r\nb-c:2\r\nD:\r\nE: \t v \x80\xff \t\r\n\r\n",
       Status::kDone, "abc", kDefault, 0, {}, 4},
      {"TrailersThenPipelined", "0\r\nA: 1\r\n\r\nGET", Status::kDone, "", 11,
       0, {}, 1},
      {"TrailerCountAtLimit", ManyTrailers(100) + "\r\n", Status::kDone, "",
       kDefault, 0, {}, 100},
      {"TrailerBytesAtLimit", "0\r\nab:1234\r\n\r\n", Status::kDone, "",
       kDefault, 0, Limits(16, 1024, 9, 100), 1},
      {"NoTrailersWithZeroLimits", "0\r\n\r\n", Status::kDone, "", kDefault, 0,
       Limits(16, 0, 0, 0)},

      // chunk-size.
      Bad("EmptySizeCr", "\r"),
      Bad("EmptySizeSemicolon", ";"),
      Bad("EmptySizeLf", "\n"),
      Bad("NonHexSize", "g"),
      Bad("MinusSize", "-"),
      Bad("PlusSize", "+"),
      Bad("HexPrefix", "0x"),
      Bad("LeadingSpace", " "),
      Bad("TrailingSpace", "5 \r"),
      Bad("TrailingTab", "5\t\r"),
      Bad("SeventeenDigitsLeadingZeros", "00000000000000005"),
      Bad("SeventeenDigits", "10000000000000000"),
      Bad("SizeOverflow", "10000000000000000", 400,
          Limits(20, 1024, 16384, 100)),
      Bad("SizeOverflowAllF", "fffffffffffffffff", 400,
          Limits(20, 1024, 16384, 100)),
      Bad("ZeroDigitsAllowed", "0", 400, Limits(0, 1024, 16384, 100)),
      Bad("BareLfAfterSize", "5\n"),
      Bad("CrNotLfAfterSize", "5\rX"),
      Bad("CrCrAfterSize", "5\r\r"),
      Bad("NulInSize", "5\0"s),
      Bad("ErrorBeforeMoreBytes", "5 \r\nhello\r\n0\r\n\r\n", 400, {}, 2),

      // chunk-ext.
      Bad("ExtensionEmptyName", "5;\r"),
      Bad("ExtensionEmptyNameWithValue", "5;="),
      Bad("ExtensionEmptyValue", "5;a=\r"),
      Bad("ExtensionSpaceBeforeCrlf", "5;a \r"),
      Bad("ExtensionValueSpaceBeforeCrlf", "5;a=b \r"),
      Bad("ExtensionQuotedSpaceBeforeCrlf", "5;a=\"b\" \r"),
      Bad("ExtensionTwoEquals", "5;a=b="),
      Bad("ExtensionTokenThenQuote", "5;a=b\""),
      Bad("ExtensionQuoteThenToken", "5;a=\"b\"c"),
      Bad("ExtensionNameQuoted", "5;\""),
      Bad("ExtensionCrInQuotes", "5;a=\"b\r"),
      Bad("ExtensionLfInQuotes", "5;a=\"b\n"),
      Bad("ExtensionNulInQuotes", "5;a=\"b\0"s),
      Bad("ExtensionDelInQuotes", "5;a=\"b\x7f"),
      Bad("ExtensionCrInQuotedPair", "5;a=\"\\\r"),
      Bad("ExtensionNulInQuotedPair", "5;a=\"\\\0"s),
      Bad("ExtensionUnterminatedQuote", "5;a=\"bc\r"),
      Bad("ExtensionNulInName", "5;a\0"s),
      Bad("ExtensionCtlInValue", "5;a=b\x01"),
      Bad("ExtensionLfAfterName", "5;a\n"),
      Bad("ExtensionLfAfterValue", "5;a=b\n"),
      Bad("ExtensionCrNotLf", "5;a\rX"),
      Bad("ExtensionTooLong", "5;abcd", 400, Limits(16, 4, 16384, 100)),
      Bad("ExtensionTooLongAtDefault", "5;" + Repeat('a', 1023) + "b"),
      Bad("ExtensionEndlessBws", "5" + Repeat(' ', 1025)),
      Bad("ExtensionEndlessQuoted", "5;a=\"" + Repeat('q', 1021)),
      Bad("ExtensionNotAllowed", "5;", 400, Limits(16, 0, 16384, 100)),

      // chunk-data and its CRLF.
      BadAfter("DataThenLf", "3\r\nabc\n", "abc"),
      BadAfter("DataThenXY", "3\r\nabcXY", "abc", 6),
      BadAfter("DataThenCrX", "3\r\nabc\rX", "abc"),
      BadAfter("DataThenNextSize", "3\r\nabc0", "abc"),
      BadAfter("DataTooLong", "3\r\nabcd", "abc"),
      BadAfter("DataThenCrCr", "3\r\nabc\r\r", "abc"),
      BadAfter("SecondChunkBad", "1\r\na\r\n2\r\nbc\r\n-", "abc"),

      // The last chunk, the trailer section and the end.
      Bad("BareLfAfterLastChunk", "0\n"),
      Bad("BareLfEndsBody", "0\r\n\n"),
      Bad("FinalCrNotLf", "0\r\n\rX"),
      Bad("TrailerBareLfTerminator", "0\r\na:b\n"),
      Bad("BareLfAfterTrailers", "0\r\na:b\r\n\n"),
      Bad("TrailerObsFold", "0\r\na:1\r\n "),
      Bad("TrailerObsFoldTab", "0\r\na:1\r\n\t"),
      Bad("TrailerLeadingSpace", "0\r\n "),
      Bad("TrailerSpaceBeforeColon", "0\r\na "),
      Bad("TrailerTabBeforeColon", "0\r\na\t"),
      Bad("TrailerEmptyName", "0\r\n:"),
      Bad("TrailerNoColon", "0\r\nab\r"),
      Bad("TrailerBareCr", "0\r\na:b\rc"),
      Bad("TrailerNul", "0\r\na:\0"s),
      Bad("TrailerDel", "0\r\na: \x7f"),
      Bad("TrailerCtl", "0\r\na: \x1f"),
      Bad("TrailerNulInName", "0\r\na\0"s),
      Bad("TooManyTrailers", "0\r\na:1\r\nb:2\r\nc", 431,
          Limits(16, 1024, 16384, 2)),
      Bad("TooManyTrailersAtDefault", ManyTrailers(100) + "x", 431),
      Bad("NoTrailersAllowed", "0\r\na", 431, Limits(16, 1024, 16384, 0)),
      // A bad line is a bad line, even when it would be one too many.
      Bad("TooManyButObsFold", "0\r\na:1\r\n ", 400,
          Limits(16, 1024, 16384, 1)),
      Bad("TrailerTooLongMidValue", "0\r\nab:12345", 431,
          Limits(16, 1024, 7, 100)),
      Bad("TrailerTooLongAtCr", "0\r\nab:1234\r", 431,
          Limits(16, 1024, 7, 100)),
      Bad("TrailerTooLongAtLf", "0\r\nab:1234\r\n", 431,
          Limits(16, 1024, 8, 100)),
      Bad("TrailerTooLongAtDefault", "0\r\nX:" + Repeat('v', 16382) + "\r",
          431),
      Bad("TrailerTooLongSecondLine", "0\r\na:1\r\nbc", 431,
          Limits(16, 1024, 6, 100)),
      // Grammar first: a NUL where the limit runs out is a 400.
      Bad("TrailerNulAtLimit", "0\r\nab:1234\0"s, 400,
          Limits(16, 1024, 7, 100)),
  };
  return *cases;
}

class ChunkedDecoderCaseTest : public ::testing::TestWithParam<Case> {};

// (a) The whole input in one call.
TEST_P(ChunkedDecoderCaseTest, Whole) {
  const Case& c = GetParam();
  const Outcome got = Whole(c.input, c.limits);
  EXPECT_EQ(ForCompare(got, c.status), ForCompare(c.Expected(), c.status));
}

// (b) Split in two at every position: the same result as the whole.
TEST_P(ChunkedDecoderCaseTest, EveryTwoWaySplit) {
  const Case& c = GetParam();
  const Outcome expected = c.Expected();
  for (size_t k : Positions(c.input.size(), expected.consumed)) {
    const Outcome got = Feed(c.input, c.limits, {k});
    ASSERT_EQ(ForCompare(got, c.status), ForCompare(expected, c.status))
        << "split at " << k;
  }
}

// (c) One byte per call.
TEST_P(ChunkedDecoderCaseTest, ByteByByte) {
  const Case& c = GetParam();
  const Outcome got = ByteByByte(c.input, c.limits);
  EXPECT_EQ(ForCompare(got, c.status), ForCompare(c.Expected(), c.status));
}

// Every prefix is "need more" with a prefix of the body, up to the byte that
// ends the body or fails it; from there on it is the whole input's result.
TEST_P(ChunkedDecoderCaseTest, EveryPrefixNeedsMoreOrAgrees) {
  const Case& c = GetParam();
  const Outcome expected = c.Expected();
  const size_t decided = c.status == Status::kError ? expected.consumed + 1
                         : c.status == Status::kDone ? expected.consumed
                                                     : c.input.size() + 1;
  for (size_t k : Positions(c.input.size(), decided)) {
    const Outcome got =
        Whole(std::string_view(c.input).substr(0, k), c.limits);
    if (k < decided) {
      ASSERT_EQ(got.status, Status::kNeedMore) << "prefix " << k << ": " << got;
      ASSERT_EQ(got.consumed, k);
      ASSERT_EQ(expected.body.compare(0, got.body.size(), got.body), 0)
          << "prefix " << k;
    } else {
      ASSERT_EQ(ForCompare(got, c.status), ForCompare(expected, c.status))
          << "prefix " << k;
    }
  }
}

// Bytes after an error or the end change nothing.
TEST_P(ChunkedDecoderCaseTest, MoreBytesChangeNothing) {
  const Case& c = GetParam();
  if (c.status == Status::kNeedMore) GTEST_SKIP() << "not decided yet";
  for (const std::string& tail : {"\r\n"s, "0\r\n\r\n"s, "\0zz"s}) {
    const Outcome got = Whole(c.input + tail, c.limits);
    EXPECT_EQ(ForCompare(got, c.status), ForCompare(c.Expected(), c.status))
        << "with " << Printable(tail);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChunkedDecoderCaseTest, ::testing::ValuesIn(Cases()),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.name);
    });

// ---------------------------------------------------------------------------

TEST(ChunkedDecoderTest, LargeChunkIsOneDataSpan) {
  const std::string data = Repeat('x', 100000);
  const std::string input = "186a0\r\n" + data + "\r\n0\r\n\r\n";
  ChunkedDecoder d;
  ChunkedDecoder::Result r = d.Decode(input);
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.consumed, 7 + data.size());
  EXPECT_EQ(r.data.data(), input.data() + 7);
  EXPECT_EQ(r.data.size(), data.size());
  r = d.Decode(std::string_view(input).substr(r.consumed));
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(r.consumed, 7u);
  EXPECT_EQ(d.body_bytes(), data.size());
}

TEST(ChunkedDecoderTest, DataSpanStopsAtChunkEnd) {
  const std::string input = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  ChunkedDecoder d;
  std::string_view in = input;
  ChunkedDecoder::Result r = d.Decode(in);
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "abc");
  EXPECT_EQ(r.consumed, 6u);
  in.remove_prefix(r.consumed);
  r = d.Decode(in);
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "de");
  EXPECT_EQ(r.consumed, 7u);  // "\r\n2\r\nde"
  in.remove_prefix(r.consumed);
  r = d.Decode(in);
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(r.consumed, in.size());
}

TEST(ChunkedDecoderTest, DataAcrossReceivesComesInPieces) {
  ChunkedDecoder d;
  ChunkedDecoder::Result r = d.Decode("a\r\n0123");
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "0123");
  EXPECT_EQ(r.consumed, 7u);
  r = d.Decode("456789");
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "456789");
  EXPECT_EQ(r.consumed, 6u);
  r = d.Decode("\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(d.body_bytes(), 10u);
}

TEST(ChunkedDecoderTest, EmptyInputNeedsMore) {
  ChunkedDecoder d;
  const ChunkedDecoder::Result r = d.Decode({});
  EXPECT_EQ(r.status, Status::kNeedMore);
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_FALSE(d.done() || d.failed());
}

TEST(ChunkedDecoderTest, ResetAfterDone) {
  ChunkedDecoder d;
  ASSERT_EQ(d.Decode("0\r\nA: b\r\n\r\n").status, Status::kDone);
  EXPECT_TRUE(d.done());
  EXPECT_EQ(d.trailer_count(), 1u);
  d.Reset();
  EXPECT_FALSE(d.done());
  EXPECT_EQ(d.trailer_count(), 0u);
  const ChunkedDecoder::Result r = d.Decode("2\r\nhi\r\n0\r\n\r\n");
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "hi");
  EXPECT_EQ(d.body_bytes(), 2u);
}

TEST(ChunkedDecoderTest, ResetAfterErrorAndMidBody) {
  ChunkedDecoder d(Limits(16, 1024, 16384, 0));
  ChunkedDecoder::Result r = d.Decode("0\r\nA");
  ASSERT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.error_status, 431);
  EXPECT_EQ(r.consumed, 3u);
  EXPECT_TRUE(d.failed());
  d.Reset();
  EXPECT_FALSE(d.failed());
  ASSERT_EQ(d.Decode("ff;x=\"y").status, Status::kNeedMore);
  d.Reset();  // mid-extension: nothing of it survives
  r = d.Decode("1\r\nz\r\n0\r\n\r\n");
  ASSERT_EQ(r.status, Status::kData);
  EXPECT_EQ(r.data, "z");
  r = d.Decode("\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(d.body_bytes(), 1u);
}

// The extension limit is per chunk line, not per body.
TEST(ChunkedDecoderTest, ExtensionLimitIsPerLine) {
  const ChunkedLimits limits = Limits(16, 4, 16384, 100);
  const std::string input = "1;abc\r\nx\r\n1;abc\r\ny\r\n0;abc\r\n\r\n";
  EXPECT_EQ(Whole(input, limits),
            (Outcome{.status = Status::kDone, .body = "xy",
                     .consumed = input.size(), .body_bytes = 2}));
}

// The digit limit is per chunk-size, not per body.
TEST(ChunkedDecoderTest, DigitLimitIsPerSize) {
  const ChunkedLimits limits = Limits(2, 1024, 16384, 100);
  const std::string input = "01\r\nx\r\n01\r\ny\r\n00\r\n\r\n";
  EXPECT_EQ(Whole(input, limits),
            (Outcome{.status = Status::kDone, .body = "xy",
                     .consumed = input.size(), .body_bytes = 2}));
}

}  // namespace
}  // namespace uring_http::http
