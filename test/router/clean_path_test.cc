// The path rules applied before routing (src/router/clean_path.h): which
// paths are malformed (400), unclean (redirected) or clean, and the clean
// form a redirect names.
#include "src/router/clean_path.h"

#include <string>

#include "gtest/gtest.h"

namespace uring_http::router {
namespace {

std::string Clean(std::string_view path) {
  std::string out = "prefix";  // appended to, not replaced
  AppendCleanPath(path, &out);
  return out.substr(6);
}

TEST(CleanPathTest, MalformedEscapes) {
  for (const char* path : {"/100%", "/%", "/%2", "/a%zz", "/a/%g0/b", "/%%32e", "/ok/../%"}) {
    EXPECT_EQ(CheckPath(path), PathShape::kMalformed) << path;
  }
}

TEST(CleanPathTest, CleanPathsGoStraightToTheTable) {
  for (const char* path : {"/", "/a", "/a/", "/a/b/c", "/a%2Fb", "/%61pi", "/...", "/a/.../b",
                           "/.well-known/x", "/.env", "/a..", "/..a", "/%2e%2e%2e",
                           "/%252e%252e", "/a.b/c", "*", ""}) {
    EXPECT_EQ(CheckPath(path), PathShape::kClean) << path;
  }
}

TEST(CleanPathTest, UncleanPathsAndTheirCleanForm) {
  struct Case {
    const char* path;
    const char* clean;
  };
  const Case cases[] = {
      {"//", "/"},
      {"//etc/passwd", "/etc/passwd"},
      {"/a//b", "/a/b"},
      {"/a//", "/a/"},        // the trailing slash stays
      {"/a///b//c", "/a/b/c"},
      {"/a/./b", "/a/b"},
      {"/a/.", "/a/"},        // RFC 3986 5.2.4: a directory
      {"/.", "/"},
      {"/a/b/..", "/a/"},
      {"/a/b/../c", "/a/c"},
      {"/..", "/"},
      {"/../secret", "/secret"},  // nothing above the root
      {"/../../a/../../b", "/b"},
      {"/a/%2e/b", "/a/b"},       // encoded dots are dots
      {"/a/%2E%2e/b", "/b"},
      {"/a/.%2e/b", "/b"},
      {"/a/%2e./b", "/b"},
      {"/x/%2F/../y", "/x/y"},    // "%2F" is a segment of its own, kept encoded
      {"/a%2Fb/../c", "/c"},
      {"/caf%C3%A9//x", "/caf%C3%A9/x"},  // other escapes are kept as sent
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckPath(c.path), PathShape::kUnclean) << c.path;
    EXPECT_EQ(Clean(c.path), c.clean) << c.path;
    EXPECT_EQ(CheckPath(Clean(c.path)), PathShape::kClean) << c.path;
  }
}

}  // namespace
}  // namespace uring_http::router
