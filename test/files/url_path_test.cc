// Tests for ResolveUrlPath(): the traversal attempts a client can send
// (plain, percent-encoded, double-encoded, with backslashes), malformed
// escapes, NUL and control bytes, segment normalisation, the directory flag,
// mount prefixes, the length limits, which error wins when a path has two,
// and a comparison with a straightforward model over many generated paths.
#include "src/files/url_path.h"

#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

using namespace std::string_literals;

// Keeps failure messages readable.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '\\') {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

const char* StatusName(PathStatus s) {
  switch (s) {
    case PathStatus::kOk: return "kOk";
    case PathStatus::kBadRequest: return "kBadRequest";
    case PathStatus::kNotFound: return "kNotFound";
  }
  return "?";
}

struct Case {
  const char* name;
  std::string path;
  PathStatus status;
  std::string relative = "";  // kOk only
  bool directory = false;     // kOk only
  std::string_view prefix = "/";

  friend std::ostream& operator<<(std::ostream& os, const Case& c) {
    return os << "\"" << Printable(c.path) << "\" under \"" << c.prefix << "\"";
  }
};

constexpr PathStatus kOk = PathStatus::kOk;
constexpr PathStatus kBad = PathStatus::kBadRequest;
constexpr PathStatus kNotFound = PathStatus::kNotFound;

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // Ordinary paths.
      {"root", "/", kOk, "", true},
      {"file", "/index.html", kOk, "index.html"},
      {"nested_file", "/css/site.css", kOk, "css/site.css"},
      {"directory", "/docs/", kOk, "docs", true},
      {"nested_directory", "/a/b/c/", kOk, "a/b/c", true},

      // Traversal, plain.
      {"dot_dot_slash_not_under_mount", "../", kNotFound},
      {"slash_dot_dot_slash", "/../", kNotFound},
      {"slash_dot_dot", "/..", kNotFound},
      {"up_twice_from_one", "/a/../../b", kNotFound},
      {"up_three_from_two", "/a/b/../../..", kNotFound},
      {"up_to_root_is_fine", "/a/b/../../", kOk, "", true},
      {"etc_passwd", "/../../../../etc/passwd", kNotFound},
      {"dot_then_dot_dot", "/./..", kNotFound},
      {"empty_segments_then_dot_dot", "////..", kNotFound},
      {"pop_then_descend", "/a/../b", kOk, "b"},
      {"pop_middle", "/a/b/../c/./d", kOk, "a/c/d"},

      // Traversal, encoded: decoding comes before segment processing.
      {"encoded_dot_dot", "/%2e%2e/", kNotFound},
      {"encoded_dot_dot_upper", "/%2E%2E", kNotFound},
      {"half_encoded_dot_dot_1", "/.%2e/x", kNotFound},
      {"half_encoded_dot_dot_2", "/%2e./x", kNotFound},
      {"encoded_dot_dot_pops", "/a/%2e%2e/b", kOk, "b"},
      {"encoded_dot", "/a/%2e/b", kOk, "a/b"},
      {"encoded_dot_alone", "/%2e", kOk, "", true},
      {"encoded_three_dots", "/a/%2e%2e%2e", kOk, "a/..."},
      {"encoded_dot_dot_encoded_slash", "/%2E%2E%2F", kBad},
      {"dot_dot_encoded_slash", "/..%2f", kBad},
      {"dot_dot_encoded_slash_upper", "/..%2F..%2Fetc%2Fpasswd", kBad},
      {"encoded_slash", "/%2f", kBad},
      {"encoded_slash_upper", "/%2F", kBad},
      {"encoded_slash_in_name", "/a%2fb", kBad},

      // Decoded exactly once.
      {"double_encoded_dot_dot", "/%252e%252e/", kOk, "%2e%2e", true},
      {"double_encoded_slash", "/a%252fb", kOk, "a%2fb"},
      {"double_encoded_nul", "/a%2500", kOk, "a%00"},
      {"encoded_percent", "/100%25", kOk, "100%"},

      // Backslashes (Windows-style traversal).
      {"literal_backslash", "/\\", kBad},
      {"literal_backslash_traversal", "/..\\..\\etc\\passwd", kBad},
      {"backslash_in_name", "/a\\b", kBad},
      {"encoded_backslash", "/%5c", kBad},
      {"encoded_backslash_upper", "/..%5C..%5Cwindows", kBad},

      // NUL and control bytes.
      {"encoded_nul", "/%00", kBad},
      {"encoded_nul_in_name", "/a%00b", kBad},
      {"encoded_nul_after_extension", "/secret.txt%00.html", kBad},
      {"literal_nul", "/a\0b"s, kBad},
      {"encoded_0x01", "/a%01", kBad},
      {"encoded_tab", "/a%09b", kBad},
      {"encoded_lf", "/a%0a", kBad},
      {"encoded_cr", "/a%0D", kBad},
      {"encoded_0x1f", "/%1f", kBad},
      {"encoded_del", "/%7f", kBad},
      {"encoded_del_upper", "/%7F", kBad},
      {"literal_0x01", "/a\x01", kBad},
      {"literal_tab", "/a\tb", kBad},
      {"literal_del", "/a\x7f", kBad},

      // Malformed escapes.
      {"lone_percent", "/%", kBad},
      {"one_hex_digit", "/%4", kBad},
      {"non_hex", "/%zz", kBad},
      {"second_digit_non_hex", "/%4g", kBad},
      {"first_digit_non_hex", "/%g4", kBad},
      {"percent_at_end", "/a%", kBad},
      {"percent_percent", "/%%41", kBad},
      {"percent_space", "/% 41", kBad},
      {"percent_sign_digit", "/%+1", kBad},

      // Ordinary escapes and bytes.
      {"utf8_encoded", "/caf%C3%A9", kOk, "caf\xc3\xa9"},
      {"utf8_lower_hex", "/caf%c3%a9", kOk, "caf\xc3\xa9"},
      {"utf8_literal", "/caf\xc3\xa9", kOk, "caf\xc3\xa9"},
      {"high_bytes", "/%80%ff", kOk, "\x80\xff"},
      {"space", "/a%20b", kOk, "a b"},
      {"plus_stays_plus", "/a+b", kOk, "a+b"},
      {"encoded_plus", "/a%2bb", kOk, "a+b"},
      {"encoded_question_mark", "/a%3fb", kOk, "a?b"},
      {"encoded_hash", "/a%23b", kOk, "a#b"},
      {"mixed_case_hex", "/%4a%4A", kOk, "JJ"},
      {"encoded_letters", "/%69ndex.html", kOk, "index.html"},
      {"colon_and_semicolon", "/a:b;c=d", kOk, "a:b;c=d"},

      // Dots that are names.
      {"three_dots", "/...", kOk, "..."},
      {"three_dots_in_middle", "/a/.../b", kOk, "a/.../b"},
      {"four_dots", "/....", kOk, "...."},
      {"three_dots_directory", "/.../", kOk, "...", true},
      {"dot_prefix_name", "/.hidden", kOk, ".hidden"},
      {"dot_dot_prefix_name", "/..hidden", kOk, "..hidden"},
      {"dot_dot_suffix_name", "/a..", kOk, "a.."},
      {"dots_around_name", "/.a.", kOk, ".a."},

      // Normalisation and the directory flag.
      {"dot_segments", "/a/./b/", kOk, "a/b", true},
      {"empty_segments", "//a///b", kOk, "a/b"},
      {"empty_segments_directory", "//a///b//", kOk, "a/b", true},
      {"only_slashes", "////", kOk, "", true},
      {"trailing_dot_dot", "/a/b/..", kOk, "a", true},
      {"trailing_dot_dot_slash", "/a/b/../", kOk, "a", true},
      {"trailing_dot", "/a/b/.", kOk, "a/b", true},
      {"trailing_encoded_dot_dot", "/a/b/%2e%2e", kOk, "a", true},
      {"up_to_root_no_slash", "/a/..", kOk, "", true},
      {"dot_alone", "/.", kOk, "", true},
      {"dot_slash", "/./", kOk, "", true},

      // Mount prefixes.
      {"prefix_traversal_pops", "/assets/x/../y", kOk, "y", false, "/assets/"},
      {"prefix_escape", "/assets/../etc/passwd", kNotFound, "", false, "/assets/"},
      {"prefix_escape_encoded", "/assets/%2e%2e/etc/passwd", kNotFound, "", false, "/assets/"},
      {"prefix_escape_after_dot", "/assets/./../x", kNotFound, "", false, "/assets/"},
      {"prefix_without_slash", "/assets", kOk, "", true, "/assets/"},
      {"prefix_itself", "/assets/", kOk, "", true, "/assets/"},
      {"prefix_file", "/assets/css/a.css", kOk, "css/a.css", false, "/assets/"},
      {"prefix_double_slash", "/assets//x", kOk, "x", false, "/assets/"},
      {"prefix_up_to_root", "/assets/x/..", kOk, "", true, "/assets/"},
      {"nested_prefix", "/a/b/c.txt", kOk, "c.txt", false, "/a/b/"},
      {"nested_prefix_root", "/a/b", kOk, "", true, "/a/b/"},
      {"nested_prefix_escape", "/a/b/../c", kNotFound, "", false, "/a/b/"},
      {"not_under_prefix", "/other/x", kNotFound, "", false, "/assets/"},
      {"prefix_as_name_start", "/assetsx", kNotFound, "", false, "/assets/"},
      {"prefix_encoded_differently", "/%61ssets/x", kNotFound, "", false, "/assets/"},
      {"empty_path_under_root_mount", "", kOk, "", true},

      // When a path is both malformed and outside: kBadRequest, decided first.
      {"escape_then_malformed", "/../%zz", kBad},
      {"escape_then_nul", "/../a%00", kBad},
      {"long_segment_then_backslash", "/" + std::string(300, 'a') + "/\\", kBad},
  };
  return *cases;
}

class ResolveTest : public testing::TestWithParam<Case> {};

TEST_P(ResolveTest, Resolves) {
  const Case& c = GetParam();
  const ResolvedPath r = ResolveUrlPath(c.path, c.prefix);
  EXPECT_EQ(r.status, c.status) << StatusName(r.status) << " instead of "
                                << StatusName(c.status);
  if (c.status == kOk) {
    EXPECT_EQ(r.relative, c.relative) << Printable(r.relative);
    EXPECT_EQ(r.directory, c.directory);
  } else {
    EXPECT_EQ(r.relative, "") << "nothing is resolved on failure";
    EXPECT_FALSE(r.directory);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ResolveTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// ---- length limits

TEST(ResolveLimitsTest, SegmentOfMaxLength) {
  const std::string name(kMaxSegmentBytes, 'a');
  const ResolvedPath r = ResolveUrlPath("/d/" + name, "/");
  EXPECT_EQ(r.status, kOk);
  EXPECT_EQ(r.relative, "d/" + name);
}

TEST(ResolveLimitsTest, SegmentTooLong) {
  EXPECT_EQ(ResolveUrlPath("/" + std::string(kMaxSegmentBytes + 1, 'a'), "/").status, kNotFound);
  EXPECT_EQ(ResolveUrlPath("/d/" + std::string(kMaxSegmentBytes + 1, 'a') + "/", "/").status,
            kNotFound);
}

TEST(ResolveLimitsTest, SegmentLengthCountsDecodedBytes) {
  std::string encoded;
  for (size_t i = 0; i < kMaxSegmentBytes; ++i) encoded += "%41";
  ResolvedPath r = ResolveUrlPath("/" + encoded, "/");
  EXPECT_EQ(r.status, kOk);
  EXPECT_EQ(r.relative, std::string(kMaxSegmentBytes, 'A'));
  r = ResolveUrlPath("/" + encoded + "%41", "/");
  EXPECT_EQ(r.status, kNotFound);
}

TEST(ResolveLimitsTest, SegmentRemovedByDotDotStillCounts) {
  EXPECT_EQ(ResolveUrlPath("/" + std::string(kMaxSegmentBytes + 1, 'a') + "/..", "/").status,
            kNotFound);
}

// A decoded path (after the prefix) of exactly `length` bytes: segments of
// 200 'a's separated by '/'.
std::string PathOfDecodedLength(size_t length, bool encode) {
  std::string decoded;
  while (decoded.size() < length) {
    if (!decoded.empty() && decoded.size() % 201 == 200) {
      decoded += '/';
    } else {
      decoded += 'a';
    }
  }
  if (decoded.back() == '/') decoded.back() = 'a';
  std::string path = "/";
  for (char c : decoded) path += encode && c == 'a' ? "%61" : std::string(1, c);
  return path;
}

TEST(ResolveLimitsTest, PathOfMaxLength) {
  for (bool encode : {false, true}) {
    const std::string path = PathOfDecodedLength(kMaxPathBytes, encode);
    const ResolvedPath r = ResolveUrlPath(path, "/");
    EXPECT_EQ(r.status, kOk) << "encode=" << encode;
    EXPECT_EQ(r.relative.size(), kMaxPathBytes);
  }
}

TEST(ResolveLimitsTest, PathTooLong) {
  for (bool encode : {false, true}) {
    EXPECT_EQ(ResolveUrlPath(PathOfDecodedLength(kMaxPathBytes + 1, encode), "/").status,
              kNotFound)
        << "encode=" << encode;
  }
}

TEST(ResolveLimitsTest, PathLengthIsAfterThePrefix) {
  const std::string rest = PathOfDecodedLength(kMaxPathBytes, false).substr(1);
  EXPECT_EQ(ResolveUrlPath("/assets/" + rest, "/assets/").status, kOk);
}

// ---- comparison with a model

// The rules written as plainly as possible: decode into a string while
// checking bytes, then split and keep a stack of segments.
ResolvedPath Model(std::string_view path, std::string_view prefix) {
  ResolvedPath r;
  if (!path.starts_with(prefix)) {
    r.status = kNotFound;
    return r;
  }
  const std::string_view rest = path.substr(prefix.size());
  std::string decoded;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < rest.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(rest[i]);
    bool encoded = false;
    if (c == '%') {
      if (i + 2 >= rest.size()) {  // fewer than two bytes follow
        r.status = kBad;
        return r;
      }
      if (hex(rest[i + 1]) < 0 || hex(rest[i + 2]) < 0) {
        r.status = kBad;
        return r;
      }
      c = static_cast<unsigned char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2]));
      i += 2;
      encoded = true;
    }
    if ((encoded && c == '/') || c == '\\' || c < 0x20 || c == 0x7f) {
      r.status = kBad;
      return r;
    }
    decoded += static_cast<char>(c);
  }
  if (decoded.size() > kMaxPathBytes) {
    r.status = kNotFound;
    return r;
  }
  std::vector<std::string> stack;
  std::string last;
  size_t start = 0;
  while (true) {
    size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    last = decoded.substr(start, end - start);
    if (last.size() > kMaxSegmentBytes) {
      r.status = kNotFound;
      return r;
    }
    if (last == "..") {
      if (stack.empty()) {
        r.status = kNotFound;
        return r;
      }
      stack.pop_back();
    } else if (!last.empty() && last != ".") {
      stack.push_back(last);
    }
    if (end == decoded.size()) break;
    start = end + 1;
  }
  r.status = kOk;
  for (const std::string& s : stack) r.relative += (r.relative.empty() ? "" : "/") + s;
  r.directory = last.empty() || last == "." || last == ".." || stack.empty();
  return r;
}

TEST(ResolveModelTest, AgreesOnGeneratedPaths) {
  // Pieces chosen to collide: dots and slashes in every spelling, escapes
  // good and bad, long names.
  const std::vector<std::string> pieces = {
      "/",    "/",     "/",    "a",     "b",      "..",  ".",    "%2e", "%2E", "%2f",
      "%5c",  "%00",   "%25",  "%",     "%4",     "%41", "%zz",  "...", "\\",  "\xc3\xa9",
      "%c3",  "%1f",   "%7f",  "x.txt", "%2e%2e", "//",  "\x01", " ",   "+",   "/..",
      "/..",  "/%2e%2e", std::string(130, 'n'),
  };
  std::mt19937 rng(12345);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> count(0, 8);
  int ok = 0, bad = 0, not_found = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string_view prefix = i % 3 == 0 ? "/assets/" : "/";
    std::string path(prefix);
    for (int n = count(rng); n > 0; --n) path += pieces[pick(rng)];
    const ResolvedPath got = ResolveUrlPath(path, prefix);
    const ResolvedPath want = Model(path, prefix);
    ASSERT_EQ(got.status, want.status) << Printable(path);
    ASSERT_EQ(got.relative, want.relative) << Printable(path);
    ASSERT_EQ(got.directory, want.directory) << Printable(path);
    if (got.status == kOk) {
      ++ok;
      // The invariants the handler relies on.
      const std::string& rel = got.relative;
      ASSERT_FALSE(rel.starts_with("/")) << Printable(path);
      ASSERT_FALSE(rel.ends_with("/")) << Printable(path);
      ASSERT_EQ(rel.find("//"), std::string::npos) << Printable(path);
      ASSERT_EQ(rel.find('\\'), std::string::npos) << Printable(path);
      for (char c : rel) ASSERT_GE(static_cast<unsigned char>(c), 0x20) << Printable(path);
      ASSERT_NE(rel, ".");
      ASSERT_NE(rel, "..");
      ASSERT_FALSE(rel.starts_with("../") || rel.starts_with("./")) << Printable(path);
      ASSERT_FALSE(rel.ends_with("/..") || rel.ends_with("/.")) << Printable(path);
      ASSERT_EQ(rel.find("/../"), std::string::npos) << Printable(path);
      ASSERT_EQ(rel.find("/./"), std::string::npos) << Printable(path);
    } else if (got.status == kBad) {
      ++bad;
    } else {
      ++not_found;
    }
  }
  // The generator must exercise every outcome.
  EXPECT_GT(ok, 500);
  EXPECT_GT(bad, 500);
  EXPECT_GT(not_found, 500);
}

// Issue 19 item 17: dotfiles are hidden; /.well-known/ is not.
TEST(HiddenPathTest, AnySegmentStartingWithADotExceptWellKnownAtTheRoot) {
  for (std::string_view url : {"/.env", "/.git/config", "/.git", "/.git/", "/dir/.secret",
                               "/a/b/.htpasswd", "/%2eenv", "/dir/../.env", "/.../x",
                               "/.well-known/.hidden", "/.well-known/a/.b", "/.well-knownx/y",
                               "/.hidden/index.html"}) {
    const ResolvedPath r = ResolveUrlPath(url, "/");
    ASSERT_EQ(r.status, PathStatus::kOk) << url;
    EXPECT_TRUE(IsHiddenPath(r.relative, "/")) << url << " -> " << r.relative;
  }
  for (std::string_view url : {"/", "/a.txt", "/dir/file.tar.gz", "/dir/x.", "/dir/..",
                               "/.well-known/acme-challenge/token", "/.well-known",
                               "/.well-known/", "/%252e%252e/x", "/a/./b"}) {
    const ResolvedPath r = ResolveUrlPath(url, "/");
    ASSERT_EQ(r.status, PathStatus::kOk) << url;
    EXPECT_FALSE(IsHiddenPath(r.relative, "/")) << url << " -> " << r.relative;
  }
  // Under another mount, /assets/.well-known/ is no well-known location;
  // the mount's own prefix is never looked at.
  EXPECT_TRUE(IsHiddenPath(ResolveUrlPath("/assets/.well-known/x", "/assets/").relative,
                           "/assets/"));
  EXPECT_FALSE(IsHiddenPath(ResolveUrlPath("/.private/x", "/.private/").relative, "/.private/"));
}

}  // namespace
}  // namespace uring_http::files
