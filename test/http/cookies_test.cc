// Tests for the Cookie request header (src/http/cookies.h): pairs split at
// ';' with the whitespace around them dropped, values as sent (not
// percent-decoded) without surrounding DQUOTEs, empty values, malformed
// pairs skipped with the pairs around them kept, the first of a repeated
// name, and views into the header value.
#include "src/http/cookies.h"

#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

using namespace std::string_view_literals;

static_assert(std::ranges::forward_range<CookieRange>);

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs Collect(std::string_view header_value) {
  Pairs out;
  for (const CookiePair& c : CookieRange(header_value)) out.emplace_back(c.name, c.value);
  return out;
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

struct CookieCase {
  std::string_view header;
  Pairs pairs;
  const char* why;
};

const CookieCase kCookieCases[] = {
    {"", {}, "empty header"},
    {"sid=abc", {{"sid", "abc"}}, "one pair"},
    {"a=1; b=2", {{"a", "1"}, {"b", "2"}}, "two pairs, as RFC 6265 sends them"},
    {"a=1;b=2", {{"a", "1"}, {"b", "2"}}, "no space after ';'"},
    {"  a=1  ;\tb=2\t ", {{"a", "1"}, {"b", "2"}}, "whitespace around pairs"},
    {"a = 1; b= 2 ;c =3", {{"a", "1"}, {"b", "2"}, {"c", "3"}}, "whitespace around '='"},
    {"a=1;; b=2;", {{"a", "1"}, {"b", "2"}}, "empty pieces, a trailing ';'"},
    {";", {}, "';' alone"},
    {"a=", {{"a", ""}}, "empty value"},
    {"a=; b=2", {{"a", ""}, {"b", "2"}}, "empty value, then a pair"},
    {"a=\"\"", {{"a", ""}}, "empty quoted value"},
    {"a=\"x\"", {{"a", "x"}}, "DQUOTEs removed"},
    {"a=\"x y\"; b=2", {{"a", "x y"}, {"b", "2"}}, "a quoted value with a space"},
    {"a= \"x\" ", {{"a", "x"}}, "whitespace outside the quotes dropped"},
    {"a=\" x \"", {{"a", " x "}}, "whitespace inside the quotes kept"},
    {"a=b=c", {{"a", "b=c"}}, "split at the first '='"},
    {"t=YWJj==", {{"t", "YWJj=="}}, "a base64 value ending in '='"},
    {"a=%41+b", {{"a", "%41+b"}}, "not percent-decoded, '+' kept"},
    {"a=x y", {{"a", "x y"}}, "an inner space kept (tolerated)"},
    {"a=x,y", {{"a", "x,y"}}, "a comma kept (tolerated)"},
    {"a=caf\xC3\xA9", {{"a", "caf\xC3\xA9"}}, "UTF-8 bytes"},
    {"a=1; flag; b=2", {{"a", "1"}, {"b", "2"}}, "a piece without '=' is skipped"},
    {"a=1; =x; b=2", {{"a", "1"}, {"b", "2"}}, "an empty name is skipped"},
    {"a=1; a b=2; c=3", {{"a", "1"}, {"c", "3"}}, "a name with a space is skipped"},
    {"a=1; a\"b=2; c=3", {{"a", "1"}, {"c", "3"}}, "a name with a DQUOTE is skipped"},
    {"a=1; a,b=2; c=3", {{"a", "1"}, {"c", "3"}}, "a name with a comma is skipped"},
    {"a=1; (b)=2; c=3", {{"a", "1"}, {"c", "3"}}, "a name with separators is skipped"},
    {"a=1; b=\"x; c=3", {{"a", "1"}, {"c", "3"}}, "an unterminated quote is skipped"},
    {"a=1; b=\"; c=3", {{"a", "1"}, {"c", "3"}}, "a lone DQUOTE is skipped"},
    {"a=1; b=x\"y; c=3", {{"a", "1"}, {"c", "3"}}, "a DQUOTE inside is skipped"},
    {"a=1; b=\"x\"y\"; c=3", {{"a", "1"}, {"c", "3"}}, "a DQUOTE inside quotes is skipped"},
    {"a=1; b=x\"; c=3", {{"a", "1"}, {"c", "3"}}, "a closing DQUOTE alone is skipped"},
    {"$Version=1; a=1", {{"$Version", "1"}, {"a", "1"}}, "RFC 2965 attributes are names"},
    {"a=1; a=2", {{"a", "1"}, {"a", "2"}}, "a repeated name, in order"},
    {"A=1; a=2", {{"A", "1"}, {"a", "2"}}, "names differ by case"},
};

TEST(CookieRangeTest, SplitsPairsAndSkipsMalformedOnes) {
  for (const CookieCase& c : kCookieCases) {
    SCOPED_TRACE(c.why);
    EXPECT_EQ(Collect(c.header), c.pairs) << c.header;
    for (const CookiePair& pair : CookieRange(c.header)) {
      EXPECT_TRUE(Inside(pair.name, c.header));
      EXPECT_TRUE(Inside(pair.value, c.header) || pair.value.empty());
    }
  }
}

struct FindCase {
  std::string_view header;
  std::string_view name;
  std::optional<std::string_view> value;
  const char* why;
};

const FindCase kFindCases[] = {
    {"sid=abc; theme=dark", "sid", "abc"sv, "first"},
    {"sid=abc; theme=dark", "theme", "dark"sv, "second"},
    {"sid=abc; theme=dark", "lang", std::nullopt, "absent"},
    {"", "sid", std::nullopt, "empty header"},
    {"sid=", "sid", ""sv, "an empty value is present"},
    {"sid=\"\"", "sid", ""sv, "an empty quoted value is present"},
    {"sid=1; sid=2", "sid", "1"sv, "repeated: the first"},
    {"sid=\"x; sid=2", "sid", "2"sv, "a malformed first one is skipped"},
    {"Sid=1", "sid", std::nullopt, "case-sensitive"},
    {"sid", "sid", std::nullopt, "no '=': not a cookie"},
    {"sids=1; sid=2", "sid", "2"sv, "no prefix match"},
    {"a=1; x y=2; sid=3", "sid", "3"sv, "after a malformed pair"},
    {"sid=%41", "sid", "%41"sv, "not percent-decoded"},
    {"sid=\"quoted value\"", "sid", "quoted value"sv, "quotes removed"},
};

TEST(FindCookieTest, FindsTheFirstWellFormedCookieByName) {
  for (const FindCase& c : kFindCases) {
    SCOPED_TRACE(c.why);
    const std::optional<std::string_view> got = FindCookie(c.header, c.name);
    ASSERT_EQ(got.has_value(), c.value.has_value()) << c.header;
    if (got) {
      EXPECT_EQ(*got, *c.value);
      if (!got->empty()) {
        EXPECT_TRUE(Inside(*got, c.header)) << "a view";
      }
    }
  }
}

TEST(CookieRangeTest, IteratorsCompareAndCopy) {
  const CookieRange range("a=1; bad; b=2");
  auto it = range.begin();
  const auto first = it++;
  EXPECT_EQ(first->name, "a");
  EXPECT_EQ(it->name, "b");
  EXPECT_NE(first, it);
  EXPECT_EQ(++it, range.end());
  EXPECT_EQ(CookieRange().begin(), CookieRange().end());
  EXPECT_EQ(CookieRange("bad; ; =").begin(), CookieRange().end());
  EXPECT_EQ(std::ranges::distance(CookieRange("a=1; b=2; c=3")), 3);
}

}  // namespace
}  // namespace uring_http::http
