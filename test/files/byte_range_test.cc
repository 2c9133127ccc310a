// Tests for ParseRange() and FormatContentRange(): each kind of range-spec,
// clamping, satisfiability (zero-length files included), several ranges,
// whitespace and empty list elements, syntax that makes the field be
// ignored, number limits, and the Content-Range text.
#include "src/files/byte_range.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

using namespace std::string_literals;

const char* ResultName(RangeResult r) {
  switch (r) {
    case RangeResult::kNone: return "kNone";
    case RangeResult::kSingle: return "kSingle";
    case RangeResult::kUnsatisfiable: return "kUnsatisfiable";
  }
  return "?";
}

constexpr RangeResult kNone = RangeResult::kNone;
constexpr RangeResult kSingle = RangeResult::kSingle;
constexpr RangeResult kUnsatisfiable = RangeResult::kUnsatisfiable;

struct Case {
  const char* name;
  std::string header;
  uint64_t size;
  RangeResult result;
  uint64_t first = 0;  // kSingle only
  uint64_t last = 0;

  friend std::ostream& operator<<(std::ostream& os, const Case& c) {
    return os << "\"" << c.header << "\" of " << c.size << " bytes";
  }
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // int-range.
      {"first_bytes", "bytes=0-499", 10000, kSingle, 0, 499},
      {"middle", "bytes=500-999", 10000, kSingle, 500, 999},
      {"one_byte", "bytes=0-0", 10000, kSingle, 0, 0},
      {"one_byte_of_one", "bytes=0-0", 1, kSingle, 0, 0},
      {"last_byte_exactly", "bytes=9999-9999", 10000, kSingle, 9999, 9999},
      {"whole_exactly", "bytes=0-9999", 10000, kSingle, 0, 9999},
      {"last_clamped", "bytes=9000-20000", 10000, kSingle, 9000, 9999},
      {"last_clamped_far", "bytes=0-18446744073709551", 10, kSingle, 0, 9},
      {"first_equals_last", "bytes=5-5", 10, kSingle, 5, 5},
      {"first_after_last", "bytes=5-1", 10, kNone},
      {"first_after_last_past_end", "bytes=20-15", 10, kNone},
      {"leading_zeros", "bytes=0005-0009", 10, kSingle, 5, 9},

      // Open-ended.
      {"open_ended", "bytes=9500-", 10000, kSingle, 9500, 9999},
      {"open_ended_from_zero", "bytes=0-", 10000, kSingle, 0, 9999},
      {"open_ended_last_byte", "bytes=9-", 10, kSingle, 9, 9},

      // suffix-range.
      {"suffix", "bytes=-500", 10000, kSingle, 9500, 9999},
      {"suffix_one", "bytes=-1", 10, kSingle, 9, 9},
      {"suffix_equal_to_size", "bytes=-10", 10, kSingle, 0, 9},
      {"suffix_larger_than_file", "bytes=-500", 10, kSingle, 0, 9},
      {"suffix_huge", "bytes=-9999999999999999999", 10, kSingle, 0, 9},
      {"suffix_zero", "bytes=-0", 10, kUnsatisfiable},
      {"suffix_zeros", "bytes=-000", 10, kUnsatisfiable},

      // Unsatisfiable.
      {"first_at_size", "bytes=10-", 10, kUnsatisfiable},
      {"first_past_end", "bytes=10-20", 10, kUnsatisfiable},
      {"first_far_past_end", "bytes=1000-2000", 10, kUnsatisfiable},
      {"zero_length_file", "bytes=0-", 0, kUnsatisfiable},
      {"zero_length_file_0_0", "bytes=0-0", 0, kUnsatisfiable},
      {"zero_length_file_suffix", "bytes=-1", 0, kUnsatisfiable},
      {"zero_length_file_suffix_zero", "bytes=-0", 0, kUnsatisfiable},
      {"zero_length_file_several", "bytes=0-1,-5", 0, kUnsatisfiable},
      {"zero_length_file_malformed", "bytes=x", 0, kNone},

      // Several ranges: whole file when any is satisfiable.
      {"two_ranges", "bytes=1-2,3-4", 10, kNone},
      {"two_ranges_spaced", "bytes=1-2, 3-4", 10, kNone},
      {"overlapping", "bytes=0-5,3-8", 10, kNone},
      {"same_twice", "bytes=0-0,0-0", 10, kNone},
      {"first_and_suffix", "bytes=0-0,-1", 10, kNone},
      {"one_satisfiable_of_two", "bytes=0-1,50-60", 10, kNone},
      {"satisfiable_after_unsatisfiable", "bytes=50-60,0-1", 10, kNone},
      {"none_satisfiable", "bytes=50-60,70-", 10, kUnsatisfiable},
      {"none_satisfiable_suffix_zero", "bytes=50-60,-0", 10, kUnsatisfiable},
      {"several_with_one_invalid", "bytes=0-1,5-1", 10, kNone},
      {"unsatisfiable_with_one_invalid", "bytes=50-60,x", 10, kNone},

      // Whitespace and empty elements.
      {"space_after_equals", "bytes= 1-2", 10, kSingle, 1, 2},
      {"tab_after_equals", "bytes=\t1-2", 10, kSingle, 1, 2},
      {"trailing_space", "bytes=1-2 ", 10, kSingle, 1, 2},
      {"space_before_comma", "bytes=1-2 ,3-4", 10, kNone},
      {"empty_elements", "bytes=,1-2,,", 10, kSingle, 1, 2},
      {"empty_elements_spaced", "bytes= , 1-2 , ", 10, kSingle, 1, 2},
      {"space_inside_spec", "bytes=1 -2", 10, kNone},
      {"space_inside_spec_2", "bytes=1- 2", 10, kNone},
      {"space_in_suffix", "bytes=- 2", 10, kNone},
      {"space_before_equals", "bytes =1-2", 10, kNone},
      {"space_before_unit", " bytes=1-2", 10, kNone},

      // The unit.
      {"unit_upper", "BYTES=0-1", 10, kSingle, 0, 1},
      {"unit_mixed", "Bytes=0-1", 10, kSingle, 0, 1},
      {"other_unit", "items=0-1", 10, kNone},
      {"unit_prefix", "byte=0-1", 10, kNone},
      {"unit_longer", "bytess=0-1", 10, kNone},
      {"no_unit", "=0-1", 10, kNone},
      {"no_equals", "bytes 0-1", 10, kNone},
      {"just_unit", "bytes", 10, kNone},
      {"empty_header", "", 10, kNone},

      // Syntax.
      {"empty_set", "bytes=", 10, kNone},
      {"only_commas", "bytes=,,", 10, kNone},
      {"only_spaces", "bytes=  ", 10, kNone},
      {"dash_only", "bytes=-", 10, kNone},
      {"no_dash", "bytes=5", 10, kNone},
      {"two_dashes", "bytes=1-2-3", 10, kNone},
      {"double_dash", "bytes=1--2", 10, kNone},
      {"negative_suffix", "bytes=--1", 10, kNone},
      {"plus_sign", "bytes=+1-2", 10, kNone},
      {"plus_sign_last", "bytes=1-+2", 10, kNone},
      {"hex", "bytes=0x1-0x2", 10, kNone},
      {"letters", "bytes=a-b", 10, kNone},
      {"trailing_garbage", "bytes=1-2x", 10, kNone},
      {"semicolon", "bytes=1-2;3-4", 10, kNone},
      {"second_equals", "bytes=1-2=3", 10, kNone},
      {"decimal_point", "bytes=1.5-2", 10, kNone},
      {"nul", "bytes=1-2\0"s, 10, kNone},
      {"other_unit_with_equals_later", "items=bytes=0-1", 10, kNone},

      // Number limits: at most 19 digits.
      {"nineteen_digits", "bytes=9999999999999999999-", 10, kUnsatisfiable},
      {"nineteen_digits_satisfiable", "bytes=0-9999999999999999999", 10, kSingle, 0, 9},
      {"twenty_digits_first", "bytes=18446744073709551615-", 10, kNone},
      {"twenty_digits_last", "bytes=0-18446744073709551615", 10, kNone},
      {"twenty_digits_suffix", "bytes=-18446744073709551615", 10, kNone},
      {"overflow", "bytes=0-18446744073709551616", 10, kNone},
      {"far_overflow", "bytes=0-99999999999999999999999999", 10, kNone},
      {"twenty_digits_leading_zeros", "bytes=00000000000000000001-2", 10, kNone},
      {"huge_file", "bytes=9223372036854775800-", 9223372036854775807ull, kSingle,
       9223372036854775800ull, 9223372036854775806ull},
      {"huge_file_suffix", "bytes=-7", 9223372036854775807ull, kSingle, 9223372036854775800ull,
       9223372036854775806ull},
      {"max_size_file", "bytes=0-", UINT64_MAX, kSingle, 0, UINT64_MAX - 1},
  };
  return *cases;
}

class ParseRangeTest : public testing::TestWithParam<Case> {};

TEST_P(ParseRangeTest, Parses) {
  const Case& c = GetParam();
  // A private heap copy of exactly the header's bytes: ASan catches a read
  // past its end.
  std::unique_ptr<char[]> copy(new char[c.header.size() + 1]);
  std::memcpy(copy.get(), c.header.data(), c.header.size());
  const std::string_view header(copy.get(), c.header.size());

  ByteRange range{12345, 67890};
  const RangeResult result = ParseRange(header, c.size, &range);
  ASSERT_EQ(result, c.result) << ResultName(result) << " instead of " << ResultName(c.result);
  if (c.result == kSingle) {
    EXPECT_EQ(range.first, c.first);
    EXPECT_EQ(range.last, c.last);
    EXPECT_LE(range.first, range.last);
    EXPECT_LT(range.last, c.size);
  } else {
    EXPECT_EQ(range.first, 12345u) << "*out is untouched";
    EXPECT_EQ(range.last, 67890u) << "*out is untouched";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ParseRangeTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(ByteRangeTest, Length) {
  EXPECT_EQ((ByteRange{0, 0}.length()), 1u);
  EXPECT_EQ((ByteRange{500, 999}.length()), 500u);
  EXPECT_EQ((ByteRange{0, UINT64_MAX - 1}.length()), UINT64_MAX);
}

// Every (first, last) over small files agrees with the rules written plainly.
TEST(ByteRangeTest, ExhaustiveSmallFiles) {
  for (uint64_t size = 0; size <= 6; ++size) {
    for (uint64_t first = 0; first <= 8; ++first) {
      for (uint64_t last = 0; last <= 8; ++last) {
        const std::string header = "bytes=" + std::to_string(first) + "-" + std::to_string(last);
        ByteRange r{};
        const RangeResult result = ParseRange(header, size, &r);
        if (last < first) {
          EXPECT_EQ(result, kNone) << header << " of " << size;
        } else if (first >= size) {
          EXPECT_EQ(result, kUnsatisfiable) << header << " of " << size;
        } else {
          ASSERT_EQ(result, kSingle) << header << " of " << size;
          EXPECT_EQ(r.first, first);
          EXPECT_EQ(r.last, std::min(last, size - 1));
        }
      }
      const std::string suffix = "bytes=-" + std::to_string(first);
      ByteRange r{};
      const RangeResult result = ParseRange(suffix, size, &r);
      if (first == 0 || size == 0) {
        EXPECT_EQ(result, kUnsatisfiable) << suffix << " of " << size;
      } else {
        ASSERT_EQ(result, kSingle) << suffix << " of " << size;
        EXPECT_EQ(r.first, size - std::min(first, size));
        EXPECT_EQ(r.last, size - 1);
      }
    }
  }
}

// ---- FormatContentRange

std::string Format(const ByteRange* range, uint64_t size) {
  char buffer[kMaxContentRangeSize + 8];
  std::memset(buffer, '#', sizeof buffer);
  const size_t n = FormatContentRange(range, size, buffer);
  EXPECT_LE(n, kMaxContentRangeSize);
  for (size_t i = n; i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], '#') << "wrote past the end";
  return std::string(buffer, n);
}

TEST(FormatContentRangeTest, Satisfied) {
  const ByteRange a{0, 499};
  EXPECT_EQ(Format(&a, 10000), "bytes 0-499/10000");
  const ByteRange b{9500, 9999};
  EXPECT_EQ(Format(&b, 10000), "bytes 9500-9999/10000");
  const ByteRange c{0, 0};
  EXPECT_EQ(Format(&c, 1), "bytes 0-0/1");
}

TEST(FormatContentRangeTest, Unsatisfiable) {
  EXPECT_EQ(Format(nullptr, 10000), "bytes */10000");
  EXPECT_EQ(Format(nullptr, 0), "bytes */0");
  EXPECT_EQ(Format(nullptr, UINT64_MAX), "bytes */18446744073709551615");
}

TEST(FormatContentRangeTest, LongestFits) {
  const ByteRange r{UINT64_MAX - 1, UINT64_MAX - 1};
  const std::string text = Format(&r, UINT64_MAX);
  EXPECT_EQ(text, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
  EXPECT_EQ(text.size(), kMaxContentRangeSize);
}

TEST(FormatContentRangeTest, WhatParseRangeReturns) {
  ByteRange r;
  ASSERT_EQ(ParseRange("bytes=-500", 10000, &r), kSingle);
  EXPECT_EQ(Format(&r, 10000), "bytes 9500-9999/10000");
  EXPECT_EQ(r.length(), 500u);
}

}  // namespace
}  // namespace uring_http::files
