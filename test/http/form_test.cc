// Tests for application/x-www-form-urlencoded text (src/http/form.h):
// percent-decoding exactly once, '+' as a space, malformed escapes refused
// and told apart from absent, views where no decoding is needed, how text
// splits into pairs (empty pieces, "flag", "a=", "=x", "a=b=c"), lookups by
// decoded name with repeated names, and the Content-Type check.
#include "src/http/form.h"

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

static_assert(std::ranges::forward_range<UrlEncodedParams>);

// What a lookup should find: absent, malformed or these bytes.
struct Expected {
  enum Kind { kAbsent, kMalformed, kPresent } kind;
  std::string value;
};
Expected Absent() { return {Expected::kAbsent, ""}; }
Expected Malformed() { return {Expected::kMalformed, ""}; }
Expected Value(std::string_view v) { return {Expected::kPresent, std::string(v)}; }

std::string Describe(const ParamValue& v) {
  if (v.absent()) return "<absent>";
  if (v.malformed()) return "<malformed>";
  return "\"" + std::string(v.value()) + "\"";
}

std::string Describe(const Expected& e) {
  if (e.kind == Expected::kAbsent) return "<absent>";
  if (e.kind == Expected::kMalformed) return "<malformed>";
  return "\"" + e.value + "\"";
}

bool Matches(const ParamValue& v, const Expected& e) {
  switch (e.kind) {
    case Expected::kAbsent:
      return v.absent() && !v.present() && !v.malformed() && !v && v.value().empty();
    case Expected::kMalformed:
      return v.malformed() && !v.present() && !v.absent() && !v && v.value().empty();
    case Expected::kPresent:
      return v.present() && !v.absent() && !v.malformed() && static_cast<bool>(v) &&
             v.value() == e.value && *v == e.value && v == e.value;
  }
  return false;
}

// True when `part` lies inside `whole` (a view, not a copy).
bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// ---------------------------------------------------------------------------
// Decoding one component.

struct DecodeCase {
  std::string_view raw;
  std::optional<std::string_view> decoded;  // nullopt: malformed
  const char* why;
};

const DecodeCase kDecodeCases[] = {
    {"", ""sv, "empty"},
    {"abc", "abc"sv, "nothing to decode"},
    {"a-b_c.d~e*f", "a-b_c.d~e*f"sv, "unreserved and other bytes stand for themselves"},
    {"a;b,c/d?e@f", "a;b,c/d?e@f"sv, "delimiters other than & = are ordinary bytes"},
    {"a+b", "a b"sv, "'+' is a space"},
    {"+", " "sv, "a lone '+'"},
    {"++", "  "sv, "two '+'"},
    {"a%20b", "a b"sv, "%20 is a space too"},
    {"%2B", "+"sv, "an encoded '+' is a '+', not a space"},
    {"%2b+", "+ "sv, "lower-case hex, then a space"},
    {"%4a%4A", "JJ"sv, "hex digits in either case"},
    {"%2541", "%41"sv, "decoded once: %25 is '%', and the 41 after it stays"},
    {"%252B", "%2B"sv, "decoded once, not into '+'"},
    {"%25", "%"sv, "an encoded '%'"},
    {"%26%3D", "&="sv, "encoded separators are data"},
    {"caf%C3%A9", "caf\xC3\xA9"sv, "percent-encoded UTF-8"},
    {"%E2%82%AC", "\xE2\x82\xAC"sv, "a three-byte UTF-8 sequence (euro sign)"},
    {"caf\xC3\xA9", "caf\xC3\xA9"sv, "raw UTF-8 bytes stand for themselves"},
    {"%FF%80", "\xFF\x80"sv, "any byte, valid UTF-8 or not"},
    {"%00", "\0"sv, "a NUL byte"},
    {"a%00b", "a\0b"sv, "a NUL byte inside"},
    {"%", std::nullopt, "a lone '%'"},
    {"a%", std::nullopt, "'%' at the end"},
    {"%4", std::nullopt, "one hex digit at the end"},
    {"a%4", std::nullopt, "one hex digit at the end, after a byte"},
    {"%G1", std::nullopt, "not a hex digit"},
    {"%4G", std::nullopt, "second digit not hex"},
    {"%%41", std::nullopt, "'%' then '%4'"},
    {"%+1", std::nullopt, "'+' is not a hex digit"},
    {"%-1", std::nullopt, "no sign"},
    {"% 1", std::nullopt, "no space"},
    {"ok+%zz", std::nullopt, "a bad escape after good bytes"},
    {"%41%", std::nullopt, "a good escape, then a bad one"},
};

TEST(FormDecodeTest, DecodesOnceOrRefuses) {
  for (const DecodeCase& c : kDecodeCases) {
    SCOPED_TRACE(c.why);
    std::string storage = "left over";
    const std::optional<std::string_view> got = DecodeFormComponent(c.raw, &storage);
    ASSERT_EQ(got.has_value(), c.decoded.has_value()) << c.raw;
    if (!got) continue;
    EXPECT_EQ(*got, *c.decoded) << c.raw;
    EXPECT_LE(got->size(), c.raw.size());
    const bool needs_decoding = c.raw.find_first_of("%+") != std::string_view::npos;
    if (needs_decoding) {
      EXPECT_EQ(got->data(), storage.data()) << "decoded into the storage";
    } else {
      EXPECT_EQ(got->data(), c.raw.data()) << "a view of the input itself";
      EXPECT_EQ(storage, "left over") << "storage untouched";
    }
  }
}

TEST(FormDecodeTest, ParamValueDecodeAgreesAndViewsWhenItCan) {
  for (const DecodeCase& c : kDecodeCases) {
    SCOPED_TRACE(c.why);
    const ParamValue v = ParamValue::Decode(c.raw);
    if (!c.decoded) {
      EXPECT_TRUE(Matches(v, Malformed())) << Describe(v);
      continue;
    }
    EXPECT_TRUE(Matches(v, Value(*c.decoded))) << Describe(v);
    const bool needs_decoding = c.raw.find_first_of("%+") != std::string_view::npos;
    EXPECT_EQ(v.is_view(), !needs_decoding);
    if (v.is_view()) {
      EXPECT_EQ(v.value().data(), c.raw.data());
    }
  }
}

TEST(FormDecodeTest, ComponentEqualsComparesDecodedBytes) {
  for (const DecodeCase& c : kDecodeCases) {
    SCOPED_TRACE(c.why);
    if (!c.decoded) {
      // A malformed component equals nothing, not even its own bytes.
      EXPECT_FALSE(FormComponentEquals(c.raw, c.raw));
      EXPECT_FALSE(FormComponentEquals(c.raw, ""));
      continue;
    }
    EXPECT_TRUE(FormComponentEquals(c.raw, *c.decoded));
    const std::string longer = std::string(*c.decoded) + "x";
    EXPECT_FALSE(FormComponentEquals(c.raw, longer));
    if (!c.decoded->empty()) {
      EXPECT_FALSE(FormComponentEquals(c.raw, c.decoded->substr(1)));
      std::string changed(*c.decoded);
      changed.back() = static_cast<char>(changed.back() ^ 1);
      EXPECT_FALSE(FormComponentEquals(c.raw, changed));
    }
  }
}

TEST(FormDecodeTest, StorageIsReused) {
  std::string storage;
  ASSERT_EQ(DecodeFormComponent("a+long+enough+value+to+need+the+heap", &storage),
            "a long enough value to need the heap"sv);
  const size_t capacity = storage.capacity();
  ASSERT_EQ(DecodeFormComponent("x+y", &storage), "x y"sv);
  EXPECT_EQ(storage, "x y");
  EXPECT_EQ(storage.capacity(), capacity);
}

// ---------------------------------------------------------------------------
// ParamValue as a value.

TEST(ParamValueTest, DefaultIsAbsentAndMalformedIsNotAbsent) {
  EXPECT_TRUE(Matches(ParamValue(), Absent()));
  EXPECT_TRUE(Matches(ParamValue::Malformed(), Malformed()));
  EXPECT_FALSE(ParamValue() == "");
  EXPECT_FALSE(ParamValue::Malformed() == "");
  EXPECT_TRUE(ParamValue::Decode("") == "");
}

TEST(ParamValueTest, CopiesAndMovesKeepTheValue) {
  // Short (in-place) and long (heap) decoded strings, and a view.
  for (std::string_view raw : {"a+b"sv, "a+value+long+enough+for+the+heap+surely"sv, "plain"sv}) {
    SCOPED_TRACE(raw);
    std::string storage;
    const std::string expected(*DecodeFormComponent(raw, &storage));
    ParamValue original = ParamValue::Decode(raw);
    const ParamValue copy = original;
    EXPECT_EQ(copy.value(), expected);
    const ParamValue moved = std::move(original);
    EXPECT_EQ(moved.value(), expected);
    ParamValue assigned;
    assigned = copy;
    EXPECT_EQ(assigned.value(), expected);
    std::vector<ParamValue> many(3, copy);
    many.reserve(64);  // reallocation moves them
    for (const ParamValue& v : many) EXPECT_EQ(v.value(), expected);
  }
}

// ---------------------------------------------------------------------------
// Splitting text into pairs.

struct Pair {
  std::string name;
  std::string value;
  bool has_equals;
  bool operator==(const Pair&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Pair& p) {
  return os << "(" << p.name << (p.has_equals ? "=" : "") << p.value << ")";
}

struct SplitCase {
  std::string_view text;
  std::vector<Pair> pairs;
  const char* why;
};

const SplitCase kSplitCases[] = {
    {"", {}, "empty text: no pairs"},
    {"a=1", {{"a", "1", true}}, "one pair"},
    {"a=1&b=2", {{"a", "1", true}, {"b", "2", true}}, "two pairs"},
    {"a=1&&b=2", {{"a", "1", true}, {"b", "2", true}}, "an empty piece is no pair"},
    {"&a=1&", {{"a", "1", true}}, "leading and trailing '&'"},
    {"&&&", {}, "only separators"},
    {"a=", {{"a", "", true}}, "empty value"},
    {"a=&b", {{"a", "", true}, {"b", "", false}}, "empty value, then a name alone"},
    {"flag", {{"flag", "", false}}, "a name without '='"},
    {"=x", {{"", "x", true}}, "an empty name"},
    {"=", {{"", "", true}}, "'=' alone"},
    {"a=b=c", {{"a", "b=c", true}}, "split at the first '='"},
    {"a==", {{"a", "=", true}}, "a value that is '='"},
    {"a%3D1=2", {{"a%3D1", "2", true}}, "an encoded '=' does not split"},
    {"a=1%262", {{"a", "1%262", true}}, "an encoded '&' does not split"},
    {"a=1;b=2", {{"a", "1;b=2", true}}, "';' does not separate"},
    {"a+b=c+d", {{"a+b", "c+d", true}}, "pairs are raw: still encoded"},
    {"%G1=%zz", {{"%G1", "%zz", true}}, "malformed pairs still split"},
    {"a=1&a=2", {{"a", "1", true}, {"a", "2", true}}, "repeated names, in order"},
    {"k=caf\xC3\xA9", {{"k", "caf\xC3\xA9", true}}, "raw UTF-8 in a body"},
};

TEST(FormSplitTest, SplitsIntoRawPairs) {
  for (const SplitCase& c : kSplitCases) {
    SCOPED_TRACE(c.why);
    const UrlEncodedParams params(c.text);
    std::vector<Pair> got;
    for (const RawParam& p : params) {
      EXPECT_TRUE(Inside(p.name, c.text) || p.name.empty());
      EXPECT_TRUE(Inside(p.value, c.text) || p.value.empty());
      got.push_back({std::string(p.name), std::string(p.value), p.has_equals});
    }
    EXPECT_EQ(got, c.pairs) << c.text;
    EXPECT_EQ(static_cast<size_t>(std::ranges::distance(params)), c.pairs.size());
  }
}

TEST(FormSplitTest, IteratorsCompareAndCopy) {
  const UrlEncodedParams params("a=1&b=2");
  auto it = params.begin();
  const auto first = it++;
  EXPECT_EQ(first->name, "a");
  EXPECT_EQ(it->name, "b");
  EXPECT_NE(first, it);
  EXPECT_EQ(++it, params.end());
  EXPECT_EQ(UrlEncodedParams().begin(), UrlEncodedParams().end());
  EXPECT_EQ(UrlEncodedParams("&").begin(), UrlEncodedParams("&").end());
}

// ---------------------------------------------------------------------------
// Lookups by name.

struct GetCase {
  std::string_view text;
  std::string_view name;
  Expected expected;
  const char* why;
};

const GetCase kGetCases[] = {
    {"a=1&b=2", "a", Value("1"), "first pair"},
    {"a=1&b=2", "b", Value("2"), "second pair"},
    {"a=1&b=2", "c", Absent(), "no such name"},
    {"", "a", Absent(), "empty text"},
    {"a=1&a=2", "a", Value("1"), "repeated: the first"},
    {"a=%G1&a=2", "a", Malformed(), "repeated: the first, even malformed"},
    {"a=2&a=%G1", "a", Value("2"), "repeated: a later malformed one does not matter"},
    {"a=&b", "a", Value(""), "empty value is present"},
    {"a=&b", "b", Value(""), "a name without '=' is present, empty"},
    {"flag", "flag", Value(""), "a flag"},
    {"flag", "fla", Absent(), "no prefix match"},
    {"flag", "flags", Absent(), "no longer match"},
    {"a%62=1", "ab", Value("1"), "names are decoded: %62"},
    {"a+b=1", "a b", Value("1"), "names are decoded: '+'"},
    {"a%20b=1", "a b", Value("1"), "names are decoded: %20"},
    {"a%2Bb=1", "a+b", Value("1"), "an encoded '+' in a name"},
    {"a+b=1", "a+b", Absent(), "a raw '+' in a name is a space"},
    {"%61=1", "a", Value("1"), "a wholly encoded name"},
    {"a%3D1=2", "a=1", Value("2"), "an encoded '=' in a name"},
    {"%C3%A9t%C3%A9=summer", "\xC3\xA9t\xC3\xA9", Value("summer"), "a UTF-8 name"},
    {"A=1", "a", Absent(), "names are case-sensitive"},
    {"%G1=1", "%G1", Absent(), "a malformed name matches nothing"},
    {"x=1&a%=2&a=3", "a", Value("3"), "a pair with a malformed name is passed over"},
    {"a=%2541", "a", Value("%41"), "decoded once"},
    {"q=caf%C3%A9", "q", Value("caf\xC3\xA9"), "a UTF-8 value"},
    {"q=1+2", "q", Value("1 2"), "'+' in a value"},
    {"q=1%2B2", "q", Value("1+2"), "an encoded '+' in a value"},
    {"a=b=c", "a", Value("b=c"), "a value with '='"},
    {"=x", "", Value("x"), "the empty name"},
    {"a=1", "", Absent(), "no empty name"},
    {"a=%4", "a", Malformed(), "trailing '%4'"},
    {"a=%", "a", Malformed(), "trailing '%'"},
    {"a=1;b=2", "b", Absent(), "';' does not separate"},
    {"a=1;b=2", "a", Value("1;b=2"), "';' is part of the value"},
    {"a=x%00y", "a", Value("x\0y"sv), "a NUL byte in a value"},
};

TEST(FormGetTest, FindsTheFirstValueByDecodedName) {
  for (const GetCase& c : kGetCases) {
    SCOPED_TRACE(c.why);
    const ParamValue got = UrlEncodedParams(c.text).Get(c.name);
    EXPECT_TRUE(Matches(got, c.expected))
        << c.text << " [" << c.name << "]: " << Describe(got) << ", want " << Describe(c.expected);
    if (got.present() && got.is_view() && !got.value().empty()) {
      EXPECT_TRUE(Inside(got.value(), c.text));
    }
    // GetAll agrees on the first.
    const std::vector<ParamValue> all = UrlEncodedParams(c.text).GetAll(c.name);
    if (c.expected.kind == Expected::kAbsent) {
      EXPECT_TRUE(all.empty());
    } else {
      ASSERT_FALSE(all.empty());
      EXPECT_TRUE(Matches(all.front(), c.expected));
    }
  }
}

struct GetAllCase {
  std::string_view text;
  std::string_view name;
  std::vector<Expected> expected;
  const char* why;
};

const GetAllCase kGetAllCases[] = {
    {"b=1", "a", {}, "none"},
    {"", "a", {}, "empty text"},
    {"a=1", "a", {Value("1")}, "one"},
    {"a=1&b=2&a=3&a=", "a", {Value("1"), Value("3"), Value("")}, "in order, empty included"},
    {"a=1&a=%G1&a=x+y", "a", {Value("1"), Malformed(), Value("x y")}, "malformed kept in place"},
    {"a&a=&a=1", "a", {Value(""), Value(""), Value("1")}, "flag, empty and set"},
    {"a=1&%61=2&a+=3", "a", {Value("1"), Value("2")}, "by decoded name; 'a ' is another name"},
    {"t=x&t=y&t=x", "t", {Value("x"), Value("y"), Value("x")}, "duplicates kept"},
};

TEST(FormGetTest, GetAllFindsEveryValueInOrder) {
  for (const GetAllCase& c : kGetAllCases) {
    SCOPED_TRACE(c.why);
    const std::vector<ParamValue> all = UrlEncodedParams(c.text).GetAll(c.name);
    ASSERT_EQ(all.size(), c.expected.size()) << c.text;
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_TRUE(Matches(all[i], c.expected[i]))
          << i << ": " << Describe(all[i]) << ", want " << Describe(c.expected[i]);
    }
  }
}

TEST(FormGetTest, ValuesViewTheTextUnlessDecoded) {
  const std::string text = "plain=abc&spaced=a+b&escaped=%41";
  const UrlEncodedParams params(text);
  const ParamValue plain = params.Get("plain");
  EXPECT_TRUE(plain.is_view());
  EXPECT_EQ(plain.value().data(), text.data() + text.find("abc"));
  EXPECT_FALSE(params.Get("spaced").is_view());
  EXPECT_EQ(params.Get("spaced"), "a b");
  EXPECT_FALSE(params.Get("escaped").is_view());
  EXPECT_EQ(params.Get("escaped"), "A");
}

// ---------------------------------------------------------------------------
// The Content-Type of a form body.

struct MediaTypeCase {
  std::string_view content_type;
  bool form;
};

const MediaTypeCase kMediaTypeCases[] = {
    {"application/x-www-form-urlencoded", true},
    {"Application/X-WWW-Form-URLEncoded", true},
    {"APPLICATION/X-WWW-FORM-URLENCODED", true},
    {"application/x-www-form-urlencoded; charset=utf-8", true},
    {"application/x-www-form-urlencoded;charset=UTF-8", true},
    {"application/x-www-form-urlencoded ; charset=utf-8", true},
    {"application/x-www-form-urlencoded\t;charset=utf-8", true},
    {"application/x-www-form-urlencoded;", true},
    {"  application/x-www-form-urlencoded", true},
    {"application/x-www-form-urlencoded  ", true},
    {"", false},
    {"application/x-www-form-urlencodedx", false},
    {"application/x-www-form-urlencode", false},
    {"application/x-www-form-urlencoded, text/plain", false},
    {"application/x-www-form-urlencoded x", false},
    {"application /x-www-form-urlencoded", false},
    {"multipart/form-data; boundary=x", false},
    {"text/plain", false},
    {"application/json", false},
    {"text/plain; note=application/x-www-form-urlencoded", false},
};

TEST(FormMediaTypeTest, RecognizesTheMediaTypeWithParameters) {
  for (const MediaTypeCase& c : kMediaTypeCases) {
    EXPECT_EQ(IsFormUrlEncoded(c.content_type), c.form) << "\"" << c.content_type << "\"";
  }
}

}  // namespace
}  // namespace uring_http::http
