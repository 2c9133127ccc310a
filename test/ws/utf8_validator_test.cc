// The UTF-8 validator against RFC 3629's edges, whole and fed a byte at a
// time (a text message's fragments split a character anywhere).
#include "src/ws/utf8_validator.h"

#include <string>

#include "gtest/gtest.h"

namespace uring_http::ws {
namespace {

// Valid whole, and split at every byte.
bool Valid(const std::string& s) {
  Utf8Validator whole;
  const bool ok = whole.Feed(s) && whole.complete();
  Utf8Validator split;
  bool split_ok = true;
  for (char c : s) split_ok = split_ok && split.Feed(std::string_view(&c, 1));
  split_ok = split_ok && split.complete();
  EXPECT_EQ(ok, split_ok) << s;
  return ok;
}

TEST(Utf8ValidatorTest, ValidText) {
  EXPECT_TRUE(Valid(""));
  EXPECT_TRUE(Valid("plain ascii, long enough for the eight-byte path"));
  EXPECT_TRUE(Valid("\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5"));  // κόσμε
  EXPECT_TRUE(Valid("\xC2\x80"));               // U+0080
  EXPECT_TRUE(Valid("\xDF\xBF"));               // U+07FF
  EXPECT_TRUE(Valid("\xE0\xA0\x80"));           // U+0800
  EXPECT_TRUE(Valid("\xED\x9F\xBF"));           // U+D7FF
  EXPECT_TRUE(Valid("\xEE\x80\x80"));           // U+E000
  EXPECT_TRUE(Valid("\xEF\xBF\xBF"));           // U+FFFF (a non-character, still UTF-8)
  EXPECT_TRUE(Valid("\xF0\x90\x80\x80"));       // U+10000
  EXPECT_TRUE(Valid("\xF4\x8F\xBF\xBF"));       // U+10FFFF
}

TEST(Utf8ValidatorTest, InvalidText) {
  for (const std::string& bad : {
           std::string("\x80"),                  // a continuation first
           std::string("\xBF"),
           std::string("\xC0\xAF"),              // overlong '/'
           std::string("\xC1\xBF"),
           std::string("\xE0\x80\xAF"),          // overlong
           std::string("\xE0\x9F\xBF"),
           std::string("\xED\xA0\x80"),          // U+D800, a surrogate
           std::string("\xED\xBF\xBF"),          // U+DFFF
           std::string("\xF0\x80\x80\xAF"),      // overlong
           std::string("\xF0\x8F\xBF\xBF"),
           std::string("\xF4\x90\x80\x80"),      // U+110000
           std::string("\xF5\x80\x80\x80"),
           std::string("\xFE"), std::string("\xFF"),
           std::string("\xC2\x41"),              // a lead without its continuation
           std::string("\xE1\x80\x41"),
           std::string("abc\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5\xED\xA0\x80" "edited"),
       }) {
    EXPECT_FALSE(Valid(bad)) << ::testing::PrintToString(bad);
  }
}

TEST(Utf8ValidatorTest, ACharacterCutAtTheEndIsIncompleteNotFailed) {
  Utf8Validator v;
  EXPECT_TRUE(v.Feed("ok \xE2\x82"));
  EXPECT_FALSE(v.complete());
  EXPECT_FALSE(v.failed());
  EXPECT_TRUE(v.Feed("\xAC"));  // €
  EXPECT_TRUE(v.complete());
  // A failure stays.
  EXPECT_FALSE(v.Feed("\xFF"));
  EXPECT_FALSE(v.Feed("a"));
  EXPECT_TRUE(v.failed());
  v.Reset();
  EXPECT_TRUE(v.Feed("a"));
}

}  // namespace
}  // namespace uring_http::ws
