// Tests for repeated headers and comma-separated lists
// (src/http/header_values.h): every line with a name, case-insensitively and
// in order; list elements split outside quoted strings, trimmed, empty ones
// skipped; elements across several lines; views into the header values.
#include "src/http/header_values.h"

#include <iterator>
#include <ranges>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

static_assert(std::ranges::forward_range<HeaderValueRange>);
static_assert(std::ranges::forward_range<ListElementRange>);
static_assert(std::ranges::forward_range<HeaderElementRange>);

template <typename Range>
std::vector<std::string> Collect(const Range& range) {
  std::vector<std::string> out;
  for (std::string_view v : range) out.emplace_back(v);
  return out;
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

TEST(HeaderNameEqualsTest, IgnoresAsciiCaseOnly) {
  EXPECT_TRUE(HeaderNameEquals("Accept-Encoding", "accept-encoding"));
  EXPECT_TRUE(HeaderNameEquals("COOKIE", "cookie"));
  EXPECT_TRUE(HeaderNameEquals("", ""));
  EXPECT_FALSE(HeaderNameEquals("Accept", "Accept-Encoding"));
  EXPECT_FALSE(HeaderNameEquals("Accept-Encoding", "Accept"));
  EXPECT_FALSE(HeaderNameEquals("a-b", "a_b"));
  EXPECT_FALSE(HeaderNameEquals("x\xC3\xA9", "x\xC3\x89"));  // not Unicode case
}

const Header kHeaders[] = {
    {"Host", "example.com"},
    {"Accept-Encoding", "gzip"},
    {"Cookie", "a=1"},
    {"X-Forwarded-For", "10.0.0.1, 10.0.0.2"},
    {"accept-encoding", "br, zstd"},
    {"Cache-Control", ""},
    {"ACCEPT-ENCODING", " , deflate ,"},
    {"Cookie", "b=2"},
    {"Cache-Control", "no-cache=\"Set-Cookie, X-Id\", max-age=0"},
};
constexpr size_t kCount = std::size(kHeaders);

TEST(HeaderValueRangeTest, EveryLineWithTheNameInOrder) {
  EXPECT_EQ(Collect(HeaderValueRange(kHeaders, kCount, "accept-encoding")),
            (std::vector<std::string>{"gzip", "br, zstd", " , deflate ,"}));
  EXPECT_EQ(Collect(HeaderValueRange(kHeaders, kCount, "COOKIE")),
            (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(Collect(HeaderValueRange(kHeaders, kCount, "Host")),
            (std::vector<std::string>{"example.com"}));
  EXPECT_EQ(Collect(HeaderValueRange(kHeaders, kCount, "cache-control")),
            (std::vector<std::string>{"", "no-cache=\"Set-Cookie, X-Id\", max-age=0"}))
      << "an empty line is a line";
  EXPECT_TRUE(HeaderValueRange(kHeaders, kCount, "accept").empty()) << "no prefix match";
  EXPECT_TRUE(HeaderValueRange(kHeaders, kCount, "").empty());
  EXPECT_TRUE(HeaderValueRange(nullptr, 0, "host").empty());
  EXPECT_TRUE(HeaderValueRange().empty());
  // Views of the headers' own values.
  for (std::string_view v : HeaderValueRange(kHeaders, kCount, "cookie")) {
    EXPECT_TRUE(v.data() == kHeaders[2].value.data() || v.data() == kHeaders[7].value.data());
  }
  // Collected with the standard algorithms.
  const HeaderValueRange cookies(kHeaders, kCount, "cookie");
  EXPECT_EQ(std::ranges::distance(cookies), 2);
  const std::vector<std::string_view> copied(cookies.begin(), cookies.end());
  EXPECT_EQ(copied.size(), 2u);
}

struct ListCase {
  std::string_view value;
  std::vector<std::string> elements;
  const char* why;
};

const ListCase kListCases[] = {
    {"", {}, "empty value"},
    {"gzip", {"gzip"}, "one element"},
    {"gzip, br", {"gzip", "br"}, "two"},
    {"gzip,br", {"gzip", "br"}, "no space"},
    {" gzip \t,\tbr ", {"gzip", "br"}, "whitespace around elements dropped"},
    {"a, , b", {"a", "b"}, "an empty element is skipped"},
    {",a,,b,", {"a", "b"}, "leading, doubled and trailing commas"},
    {",", {}, "a comma alone"},
    {" , \t, ", {}, "only commas and whitespace"},
    {"gzip;q=1.0, br;q=0.5", {"gzip;q=1.0", "br;q=0.5"}, "parameters stay in the element"},
    {"a b, c", {"a b", "c"}, "inner whitespace kept"},
    {"no-cache=\"Set-Cookie, X-Id\", max-age=0",
     {"no-cache=\"Set-Cookie, X-Id\"", "max-age=0"},
     "a comma inside a quoted string does not split"},
    {"\"a,b\", \"c\"", {"\"a,b\"", "\"c\""}, "quoted elements (ETags)"},
    {"\"a\\\",b\", c", {"\"a\\\",b\"", "c"}, "an escaped quote does not end the string"},
    {"\"a\\\\\", b", {"\"a\\\\\"", "b"}, "an escaped backslash before the closing quote"},
    {"x=\"unterminated, y", {"x=\"unterminated, y"}, "an unterminated quote runs to the end"},
    {"a\\, b", {"a\\", "b"}, "a backslash outside quotes is an ordinary byte"},
    {"\xC3\xA9, x", {"\xC3\xA9", "x"}, "bytes above 0x7f"},
};

TEST(ListElementRangeTest, SplitsAtCommasOutsideQuotes) {
  for (const ListCase& c : kListCases) {
    SCOPED_TRACE(c.why);
    const ListElementRange range(c.value);
    EXPECT_EQ(Collect(range), c.elements) << c.value;
    EXPECT_EQ(range.empty(), c.elements.empty());
    for (std::string_view e : range) {
      EXPECT_TRUE(Inside(e, c.value));
      EXPECT_FALSE(e.empty());
      EXPECT_NE(e.front(), ' ');
      EXPECT_NE(e.back(), '\t');
    }
  }
}

TEST(ListElementRangeTest, IteratorsCompareAndCopy) {
  const ListElementRange range("a, b");
  auto it = range.begin();
  const auto first = it++;
  EXPECT_EQ(*first, "a");
  EXPECT_EQ(*it, "b");
  EXPECT_NE(first, it);
  EXPECT_EQ(++it, range.end());
  EXPECT_EQ(ListElementRange().begin(), ListElementRange().end());
}

TEST(HeaderElementRangeTest, ElementsAcrossEveryLine) {
  EXPECT_EQ(Collect(HeaderElementRange(kHeaders, kCount, "Accept-Encoding")),
            (std::vector<std::string>{"gzip", "br", "zstd", "deflate"}));
  EXPECT_EQ(Collect(HeaderElementRange(kHeaders, kCount, "cache-control")),
            (std::vector<std::string>{"no-cache=\"Set-Cookie, X-Id\"", "max-age=0"}))
      << "an empty first line gives nothing";
  EXPECT_EQ(Collect(HeaderElementRange(kHeaders, kCount, "x-forwarded-for")),
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
  EXPECT_TRUE(HeaderElementRange(kHeaders, kCount, "te").empty());
  EXPECT_TRUE(HeaderElementRange().empty());
  const HeaderElementRange range(kHeaders, kCount, "accept-encoding");
  EXPECT_EQ(std::ranges::distance(range), 4);
  auto it = range.begin();
  const auto first = it++;
  EXPECT_EQ(*first, "gzip");
  EXPECT_EQ(*it, "br");
  EXPECT_NE(first, it);
}

TEST(HeaderElementRangeTest, LinesWithNoElementsAreSkippedAnywhere) {
  const Header headers[] = {
      {"TE", ","}, {"TE", ""}, {"TE", "trailers"}, {"TE", " , "}, {"Other", "x"}, {"TE", ""},
  };
  EXPECT_EQ(Collect(HeaderElementRange(headers, std::size(headers), "te")),
            (std::vector<std::string>{"trailers"}));
  const Header none[] = {{"TE", ","}, {"TE", ""}};
  EXPECT_TRUE(HeaderElementRange(none, std::size(none), "te").empty());
}

}  // namespace
}  // namespace uring_http::http
