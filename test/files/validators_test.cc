// Tests for the validators: the ETag's format and what changes it, every
// step of RFC 9110 13.2.2's precondition order and their precedence,
// entity-tag list parsing, and If-Range. (HTTP-dates: test/http/http_date_test.)
#include "src/files/validators.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

constexpr int64_t kNov1994 = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

// ---- ETag

TEST(EtagTest, Format) {
  EXPECT_EQ(
      StrongEtag({.size = 0x1234, .mtime_sec = 0x5f5e100, .mtime_nsec = 0xabc, .inode = 0x42}),
      "\"1234-5f5e100.abc\"");
  EXPECT_EQ(StrongEtag({}), "\"0-0.0\"");
}

TEST(EtagTest, LongestFitsTheBuffer) {
  const FileVersion v{.size = UINT64_MAX, .mtime_sec = -1, .mtime_nsec = UINT32_MAX,
                      .inode = UINT64_MAX};
  char buffer[kMaxEtagSize + 8];
  std::memset(buffer, '#', sizeof buffer);
  const size_t n = FormatStrongEtag(v, buffer);
  EXPECT_EQ(n, 44u);
  EXPECT_LE(n, kMaxEtagSize);
  EXPECT_EQ(std::string(buffer, n), "\"ffffffffffffffff-ffffffffffffffff.ffffffff\"");
  for (size_t i = n; i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], '#') << "wrote past the tag";
}

TEST(EtagTest, BufferAndStringAgree) {
  const FileVersion v{.size = 99, .mtime_sec = 1700000000, .mtime_nsec = 123456789, .inode = 7};
  char buffer[kMaxEtagSize];
  EXPECT_EQ(std::string(buffer, FormatStrongEtag(v, buffer)), StrongEtag(v));
}

TEST(EtagTest, DeterministicAndSensitiveToSizeAndMtime) {
  const FileVersion base{.size = 1000, .mtime_sec = 1700000000, .mtime_nsec = 500, .inode = 77};
  EXPECT_EQ(StrongEtag(base), StrongEtag(base));
  FileVersion v = base;
  v.size = 1001;
  EXPECT_NE(StrongEtag(v), StrongEtag(base));
  v = base;
  v.mtime_sec += 1;
  EXPECT_NE(StrongEtag(v), StrongEtag(base));
  v = base;
  v.mtime_nsec += 1;
  EXPECT_NE(StrongEtag(v), StrongEtag(base));
}

// Issue 19 item 17: the inode number is a detail of the server's disk
// that the tag used to give away (and it differs between two servers
// holding the same file). Neither it nor the change time is in the tag.
TEST(EtagTest, TheInodeIsNotInTheTag) {
  const FileVersion base{.size = 1000, .mtime_sec = 1700000000, .mtime_nsec = 500, .inode = 77,
                         .ctime_sec = 1700000001, .ctime_nsec = 3};
  FileVersion v = base;
  v.inode = 0x1234567;
  v.ctime_sec += 100;
  EXPECT_EQ(StrongEtag(v), StrongEtag(base));
  EXPECT_EQ(StrongEtag(base).find("4d-"), std::string::npos);  // 77 in hex
}

TEST(EtagTest, FieldsDoNotRunTogether) {
  // Separators keep (size 0x1, mtime 0x23) apart from (size 0x12, mtime 0x3).
  EXPECT_NE(StrongEtag({.size = 0x1, .mtime_sec = 0x23}),
            StrongEtag({.size = 0x12, .mtime_sec = 0x3}));
}

TEST(EtagTest, IsAValidStrongEntityTagThatMatchesItself) {
  const std::string etag = StrongEtag({.size = 5, .mtime_sec = 6, .mtime_nsec = 7, .inode = 8});
  EXPECT_EQ(Evaluate({.if_match = etag}, etag, 6), Precondition::kNone);
  EXPECT_EQ(Evaluate({.if_none_match = etag}, etag, 6), Precondition::kNotModified);
  EXPECT_TRUE(IfRangeAllows(etag, etag, 6));
}

// ---- Evaluate (RFC 9110 13.2.2)

constexpr std::string_view kEtag = "\"abc-1\"";
constexpr int64_t kMtime = kNov1994;
const std::string kAtMtime = "Sun, 06 Nov 1994 08:49:37 GMT";
const std::string kBefore = "Sun, 06 Nov 1994 08:49:36 GMT";
const std::string kAfter = "Sun, 06 Nov 1994 08:49:38 GMT";

Precondition Eval(ConditionalHeaders h) { return Evaluate(h, kEtag, kMtime); }

TEST(EvaluateTest, NoConditions) {
  EXPECT_EQ(Eval({}), Precondition::kNone);
  EXPECT_EQ(Eval({.get_or_head = false}), Precondition::kNone);
}

TEST(EvaluateTest, IfMatch) {
  EXPECT_EQ(Eval({.if_match = "\"abc-1\""}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = "\"other\""}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_match = "*"}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = " * "}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = "\"x\", \"abc-1\""}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = "\"x\",\"y\""}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_match = "\"abc-1\"", .get_or_head = false}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = "\"x\"", .get_or_head = false}), Precondition::kFailed);
}

TEST(EvaluateTest, IfMatchIsStrong) {
  EXPECT_EQ(Eval({.if_match = "W/\"abc-1\""}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_match = "W/\"abc-1\", \"abc-1\""}), Precondition::kNone);
  // Our own tag weak: nothing matches it strongly.
  EXPECT_EQ(Evaluate({.if_match = "W/\"abc-1\""}, "W/\"abc-1\"", kMtime), Precondition::kFailed);
  EXPECT_EQ(Evaluate({.if_match = "\"abc-1\""}, "W/\"abc-1\"", kMtime), Precondition::kFailed);
}

TEST(EvaluateTest, IfMatchMalformedFails) {
  for (const char* value : {"abc-1", "\"abc-1", "abc-1\"", "\"abc-1\" \"x\"", "\"abc-1\";",
                            "w/\"abc-1\"", "W/abc-1", "*, \"abc-1\"", "\"abc-1\", *", ",",
                            ", ,", "\"abc-1\", x", "\"a b\"", "\"abc-1\"x", "**"}) {
    EXPECT_EQ(Eval({.if_match = value}), Precondition::kFailed) << value;
  }
}

TEST(EvaluateTest, IfUnmodifiedSince) {
  EXPECT_EQ(Eval({.if_unmodified_since = kAtMtime}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_unmodified_since = kAfter}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_unmodified_since = kBefore}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_unmodified_since = kBefore, .get_or_head = false}), Precondition::kFailed);
  // The obsolete forms count too.
  EXPECT_EQ(Eval({.if_unmodified_since = "Sun Nov  6 08:49:36 1994"}), Precondition::kFailed);
}

TEST(EvaluateTest, IfUnmodifiedSinceInvalidIsIgnored) {
  EXPECT_EQ(Eval({.if_unmodified_since = "yesterday"}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_unmodified_since = kBefore + ", " + kBefore}), Precondition::kNone);
}

TEST(EvaluateTest, IfMatchTakesPrecedenceOverIfUnmodifiedSince) {
  // Step 2 runs only without If-Match.
  EXPECT_EQ(Eval({.if_match = "\"abc-1\"", .if_unmodified_since = kBefore}),
            Precondition::kNone);
  EXPECT_EQ(Eval({.if_match = "\"x\"", .if_unmodified_since = kAfter}), Precondition::kFailed);
}

TEST(EvaluateTest, IfNoneMatch) {
  EXPECT_EQ(Eval({.if_none_match = "\"abc-1\""}), Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_none_match = "\"other\""}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_none_match = "*"}), Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_none_match = "\"a\", \"b\", \"abc-1\""}), Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_none_match = "\"a\", \"b\""}), Precondition::kNone);
}

TEST(EvaluateTest, IfNoneMatchIsWeak) {
  EXPECT_EQ(Eval({.if_none_match = "W/\"abc-1\""}), Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_none_match = "\"abc-1\""}, "W/\"abc-1\"", kMtime),
            Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_none_match = "W/\"abc-1\""}, "W/\"abc-1\"", kMtime),
            Precondition::kNotModified);
  // The quotes are part of the comparison: W/"abc-1" is not "W/abc-1".
  EXPECT_EQ(Eval({.if_none_match = "\"W/abc-1\""}), Precondition::kNone);
}

TEST(EvaluateTest, IfNoneMatchForOtherMethodsFails) {
  EXPECT_EQ(Eval({.if_none_match = "\"abc-1\"", .get_or_head = false}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_none_match = "*", .get_or_head = false}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_none_match = "\"x\"", .get_or_head = false}), Precondition::kNone);
}

TEST(EvaluateTest, IfNoneMatchMalformedMatchesNothing) {
  for (const char* value : {"abc-1", "\"abc-1", "\"abc-1\" \"x\"", "W/ \"abc-1\"",
                            "\"abc-1\", junk", "*, \"abc-1\"", ",", "\"abc-1\"\"x\""}) {
    EXPECT_EQ(Eval({.if_none_match = value}), Precondition::kNone) << value;
  }
}

TEST(EvaluateTest, ListSyntax) {
  // Spaces and tabs around commas, empty elements, a trailing comma.
  for (const char* value : {"\"abc-1\"", " \"abc-1\" ", "\t\"abc-1\"\t", "\"x\",\"abc-1\"",
                            "\"x\" , \"abc-1\"", "\"x\"\t,\t\"abc-1\"", ", \"abc-1\"",
                            "\"abc-1\",", "\"x\",,\"abc-1\"", " , ,\"abc-1\", , ",
                            "W/\"x\", W/\"abc-1\"", "\"\", \"abc-1\""}) {
    EXPECT_EQ(Eval({.if_none_match = value}), Precondition::kNotModified) << value;
  }
  // Opaque tags may hold commas, slashes and bytes above 0x7f.
  EXPECT_EQ(Evaluate({.if_none_match = "\"x\", \"a,b\""}, "\"a,b\"", kMtime),
            Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_none_match = "\"caf\xc3\xa9\""}, "\"caf\xc3\xa9\"", kMtime),
            Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_none_match = "\"\""}, "\"\"", kMtime), Precondition::kNotModified);
}

TEST(EvaluateTest, UnusableOwnEtagMatchesOnlyStar) {
  EXPECT_EQ(Evaluate({.if_none_match = "\"abc\""}, "abc", kMtime), Precondition::kNone);
  EXPECT_EQ(Evaluate({.if_none_match = "*"}, "", kMtime), Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_match = "\"abc\""}, "", kMtime), Precondition::kFailed);
  EXPECT_EQ(Evaluate({.if_match = "*"}, "", kMtime), Precondition::kNone);
}

TEST(EvaluateTest, IfModifiedSince) {
  EXPECT_EQ(Eval({.if_modified_since = kAtMtime}), Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_modified_since = kAfter}), Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_modified_since = kBefore}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_modified_since = "Sunday, 06-Nov-94 08:49:37 GMT"}),
            Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_modified_since = "Sun Nov  6 08:49:37 1994"}), Precondition::kNotModified);
}

TEST(EvaluateTest, IfModifiedSinceOnlyForGetAndHead) {
  EXPECT_EQ(Eval({.if_modified_since = kAtMtime, .get_or_head = false}), Precondition::kNone);
}

TEST(EvaluateTest, IfModifiedSinceInvalidIsIgnored) {
  EXPECT_EQ(Eval({.if_modified_since = "tomorrow"}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_modified_since = kAtMtime + ", " + kAtMtime}), Precondition::kNone);
  EXPECT_EQ(Eval({.if_modified_since = "Sun, 06 Nov 1994 08:49:37 UTC"}), Precondition::kNone);
}

TEST(EvaluateTest, IfModifiedSinceAtSecondGranularity) {
  // mtime 08:49:37.999 is reported as 08:49:37 in Last-Modified; a client
  // echoing that date has the current version.
  EXPECT_EQ(Evaluate({.if_modified_since = kAtMtime}, kEtag, kMtime), Precondition::kNotModified);
  EXPECT_EQ(Evaluate({.if_modified_since = kAtMtime}, kEtag, kMtime + 1), Precondition::kNone);
}

TEST(EvaluateTest, IfNoneMatchTakesPrecedenceOverIfModifiedSince) {
  // A present If-None-Match makes If-Modified-Since be ignored, both ways.
  EXPECT_EQ(Eval({.if_none_match = "\"other\"", .if_modified_since = kAfter}),
            Precondition::kNone);
  EXPECT_EQ(Eval({.if_none_match = "\"abc-1\"", .if_modified_since = kBefore}),
            Precondition::kNotModified);
  // Even a malformed one.
  EXPECT_EQ(Eval({.if_none_match = "garbage", .if_modified_since = kAfter}),
            Precondition::kNone);
}

TEST(EvaluateTest, FailedPreconditionBeatsNotModified) {
  // Steps 1-2 come before 3-4.
  EXPECT_EQ(Eval({.if_match = "\"x\"", .if_none_match = "\"abc-1\""}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_match = "\"x\"", .if_modified_since = kAfter}), Precondition::kFailed);
  EXPECT_EQ(Eval({.if_none_match = "\"abc-1\"", .if_unmodified_since = kBefore}),
            Precondition::kFailed);
  EXPECT_EQ(Eval({.if_modified_since = kAfter, .if_unmodified_since = kBefore}),
            Precondition::kFailed);
}

TEST(EvaluateTest, AllFourPassing) {
  EXPECT_EQ(Eval({.if_match = "\"abc-1\"",
                  .if_none_match = "\"abc-1\"",
                  .if_modified_since = kBefore,
                  .if_unmodified_since = kAfter}),
            Precondition::kNotModified);
  EXPECT_EQ(Eval({.if_match = "*",
                  .if_none_match = "\"zzz\"",
                  .if_modified_since = kAfter,
                  .if_unmodified_since = kBefore}),
            Precondition::kNone);
}

// ---- IfRangeAllows (RFC 9110 13.1.5)

TEST(IfRangeTest, Empty) {
  EXPECT_TRUE(IfRangeAllows("", kEtag, kMtime));
  EXPECT_TRUE(IfRangeAllows("  ", kEtag, kMtime));
}

TEST(IfRangeTest, EntityTag) {
  EXPECT_TRUE(IfRangeAllows("\"abc-1\"", kEtag, kMtime));
  EXPECT_TRUE(IfRangeAllows(" \"abc-1\" ", kEtag, kMtime));
  EXPECT_FALSE(IfRangeAllows("\"abc-2\"", kEtag, kMtime));
  EXPECT_FALSE(IfRangeAllows("W/\"abc-1\"", kEtag, kMtime));  // weak never matches
  EXPECT_FALSE(IfRangeAllows("\"abc-1\"", "W/\"abc-1\"", kMtime));
  EXPECT_FALSE(IfRangeAllows("\"abc-1\"", "", kMtime));
}

TEST(IfRangeTest, MalformedOrListIsFalse) {
  for (const char* value : {"\"abc-1", "\"abc-1\", \"abc-1\"", "*", "abc-1", "W/abc-1",
                            "w/\"abc-1\"", "\"abc-1\"x", "garbage"}) {
    EXPECT_FALSE(IfRangeAllows(value, kEtag, kMtime)) << value;
  }
}

TEST(IfRangeTest, Date) {
  EXPECT_TRUE(IfRangeAllows(kAtMtime, kEtag, kMtime));
  EXPECT_TRUE(IfRangeAllows("Sun Nov  6 08:49:37 1994", kEtag, kMtime));
  EXPECT_TRUE(IfRangeAllows("Sunday, 06-Nov-94 08:49:37 GMT", kEtag, kMtime));
  // Exactly equal, not merely not-modified-since.
  EXPECT_FALSE(IfRangeAllows(kAfter, kEtag, kMtime));
  EXPECT_FALSE(IfRangeAllows(kBefore, kEtag, kMtime));
  EXPECT_FALSE(IfRangeAllows("Sun, 06 Nov 1994 08:49:37 UTC", kEtag, kMtime));
}

}  // namespace
}  // namespace uring_http::files
