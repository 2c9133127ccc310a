// Tests for PathPattern and RouteTree, without a Router or a server: what
// a pattern may be, how one path matches one pattern, the precedence table
// (static > parameter > catch-all, with backtracking), conflicts refused at
// insert time, the Allow of a node, and the percent-decoding helper.
#include "src/router/route_tree.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/router/path_pattern.h"
#include "src/router/router.h"

namespace uring_http::router {
namespace {

std::string Params(const http::PathParams& params) {
  std::string out;
  for (const http::PathParamEntry& p : params) {
    if (!out.empty()) out += ' ';
    out += std::string(p.name) + "=" + std::string(p.value);
  }
  return out;
}

TEST(PathPatternTest, RefusesMalformedPatterns) {
  const char* bad[] = {
      "",           "users",          "/users/{}",     "/users/{id",     "/users/id}",
      "/u/x{id}",   "/u/{id}x",       "/u/{i-d}",      "/u/{...}",       "/f/{p...}/x",
      "/u/{id}/{id}", "/u/{id}/{id...}", "/u/{a}{b}",  "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}",
  };
  for (const char* pattern : bad) {
    absl::StatusOr<PathPattern> p = PathPattern::Parse(pattern);
    EXPECT_FALSE(p.ok()) << pattern;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("route pattern"), absl::string_view::npos)
          << p.status();
    }
  }
  EXPECT_NE(PathPattern::Parse("/u/{id}/{id}").status().message().find("{id} appears twice"),
            absl::string_view::npos);
  EXPECT_NE(PathPattern::Parse("/f/{p...}/x").status().message().find("must be the last"),
            absl::string_view::npos);
  // Eight parameters are fine.
  EXPECT_TRUE(PathPattern::Parse("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}").ok());
  EXPECT_TRUE(PathPattern::Parse("/").ok());
  EXPECT_TRUE(PathPattern::Parse("/{rest...}").ok());
}

// Paths are cleaned before they are matched (clean_path.h): a pattern that
// only an unclean path could match is refused, and so is a broken escape.
TEST(PathPatternTest, RefusesPatternsNoCleanPathMatches) {
  for (const char* pattern : {"//", "/a//b", "//a", "/a/./b", "/a/..", "/./a", "/a/%2e",
                              "/%2E%2e/x", "/a%zz", "/100%", "/a%4"}) {
    absl::StatusOr<PathPattern> p = PathPattern::Parse(pattern);
    EXPECT_FALSE(p.ok()) << pattern;
  }
  EXPECT_NE(PathPattern::Parse("/a//b").status().message().find("empty segment"),
            absl::string_view::npos);
  EXPECT_NE(PathPattern::Parse("/a/../b").status().message().find("\"..\" segment"),
            absl::string_view::npos);
  // A trailing slash is a segment of its own; "..." is an ordinary name.
  EXPECT_TRUE(PathPattern::Parse("/a/").ok());
  EXPECT_TRUE(PathPattern::Parse("/a/.../b").ok());
  EXPECT_TRUE(PathPattern::Parse("/.well-known/x").ok());
}

// Static segments compare decoded, parameters arrive decoded with their raw
// form beside them, and a "%2F" never splits a segment.
TEST(PathPatternTest, MatchesDecodedSegments) {
  struct Case {
    const char* pattern;
    const char* path;
    bool match;
    const char* params;  // decoded
    const char* raw;     // raw
  };
  const Case cases[] = {
      {"/api/items/{id}", "/api/items/%31", true, "id=1", "id=%31"},
      {"/api/items/{id}", "/%61pi/items/7", true, "id=7", "id=7"},  // an unreserved escape
      {"/api/items/{id}", "/api/items/caf%C3%A9", true, "id=caf\xc3\xa9", "id=caf%C3%A9"},
      {"/api/items/{id}", "/api/items/a%2Fb", true, "id=a/b", "id=a%2Fb"},
      {"/api/items/{id}", "/api/items/a%2fb/c", false, "", ""},  // two segments, not three
      {"/api/items/{id}", "/api/items/100%25", true, "id=100%", "id=100%25"},
      {"/api/items/{id}", "/api/items/%2541", true, "id=%41", "id=%2541"},  // decoded once
      {"/api/items/{id}", "/api/items/a+b", true, "id=a+b", "id=a+b"},  // '+' is no space
      {"/a/b", "/a%2Fb", false, "", ""},     // "a/b" is one segment: not "a", "b"
      {"/a%2Fb", "/a%2fb", true, "", ""},    // a pattern's escapes are decoded too
      {"/a%2Fb", "/a/b", false, "", ""},
      {"/caf%C3%A9", "/caf%c3%a9", true, "", ""},
      {"/files/{p...}", "/files/a%2Fb/c%20d", true, "p=a/b/c d", "p=a%2Fb/c%20d"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PathPattern> p = PathPattern::Parse(c.pattern);
    ASSERT_TRUE(p.ok()) << c.pattern << p.status();
    http::PathParams params;
    EXPECT_EQ(p->Match(c.path, &params), c.match) << c.pattern << " " << c.path;
    EXPECT_EQ(Params(params), c.params) << c.pattern << " " << c.path;
    std::string raw;
    for (const http::PathParamEntry& e : params) {
      raw += std::string(e.name) + "=" + std::string(e.raw);
      EXPECT_EQ(params.RawGet(e.name), e.raw);
      EXPECT_EQ(params.Get(e.name), e.value);
    }
    EXPECT_EQ(raw, c.raw) << c.pattern << " " << c.path;
  }
}

TEST(PathPatternTest, MatchesOnePathOneWay) {
  struct Case {
    const char* pattern;
    const char* path;
    bool match;
    const char* params;
  };
  const Case cases[] = {
      {"/users/{id}", "/users/42", true, "id=42"},
      {"/users/{id}", "/users/", false, ""},  // a parameter is never empty
      {"/users/{id}", "/users", false, ""},
      {"/users/{id}", "/users/42/", false, ""},
      {"/users/{id}", "/users/a%2Fb", true, "id=a/b"},  // decoded; one segment still
      {"/users/{id}/edit", "/users/7/edit", true, "id=7"},
      {"/files/{path...}", "/files/a/b/c.txt", true, "path=a/b/c.txt"},
      {"/files/{path...}", "/files/", true, "path="},  // may be empty
      {"/files/{path...}", "/files", false, ""},
      {"/files/{path...}", "/filesx/a", false, ""},
      {"/{rest...}", "/", true, "rest="},
      {"/a/{x}/b/{y}", "/a/1/b/2", true, "x=1 y=2"},
      {"/exact", "/exact", true, ""},
      {"/exact", "/exact/", false, ""},
      {"/", "/", true, ""},
      {"/", "*", false, ""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PathPattern> p = PathPattern::Parse(c.pattern);
    ASSERT_TRUE(p.ok()) << c.pattern;
    http::PathParams params;
    EXPECT_EQ(p->Match(c.path, &params), c.match) << c.pattern << " " << c.path;
    EXPECT_EQ(Params(params), c.params) << c.pattern << " " << c.path;
  }
}

// A tree over fake routes: each route is told apart by its path field.
class TreeTest : public ::testing::Test {
 protected:
  absl::Status Add(const char* method, const char* pattern) {
    absl::StatusOr<PathPattern> p = PathPattern::Parse(pattern);
    if (!p.ok()) return p.status();
    auto route = std::make_unique<Route>();
    route->method = method;
    route->path = pattern;
    route->pattern = *std::move(p);
    absl::Status s = tree_.Insert(route->pattern, method, route.get());
    if (s.ok()) routes_.push_back(std::move(route));
    return s;
  }
  // "pattern params" of the route found, or "405 allow", or "404".
  std::string Find(const char* method, const char* path) {
    http::PathParams params;
    RouteTree::Result r = tree_.Find(method, path, &params);
    if (r.route == nullptr) {
      EXPECT_TRUE(params.empty());
      return r.path_known ? "405 " + std::string(r.allow) : "404";
    }
    std::string out = r.route->path;
    if (!params.empty()) out += " " + Params(params);
    return out;
  }

  RouteTree tree_;
  std::vector<std::unique_ptr<Route>> routes_;
};

TEST_F(TreeTest, PrecedenceTable) {
  for (const char* pattern : {"/users/new", "/users/{id}", "/users/new/edit", "/users/{id}/edit",
                              "/users/{rest...}", "/{page}", "/", "/static/{file...}",
                              "/static/app.js", "/a/{x}/c", "/a/b/{y}"}) {
    ASSERT_TRUE(Add("GET", pattern).ok()) << pattern;
  }
  struct Case {
    const char* path;
    const char* want;
  };
  const Case table[] = {
      {"/users/new", "/users/new"},                      // static beats parameter
      {"/users/42", "/users/{id} id=42"},
      {"/users/new/edit", "/users/new/edit"},
      {"/users/42/edit", "/users/{id}/edit id=42"},
      {"/users/new/delete", "/users/{rest...} rest=new/delete"},  // both deeper fail
      {"/users/42/x/y", "/users/{rest...} rest=42/x/y"},
      {"/users/", "/users/{rest...} rest="},              // {id} is never empty
      {"/users", "/{page} page=users"},
      {"/", "/"},
      {"/about", "/{page} page=about"},
      {"/static/app.js", "/static/app.js"},
      {"/static/css/x.css", "/static/{file...} file=css/x.css"},
      {"/a/b/c", "/a/b/{y} y=c"},                         // static b beats {x}
      {"/a/z/c", "/a/{x}/c x=z"},
      {"/a/b/d", "/a/b/{y} y=d"},
      {"/a/q/d", "404"},
      {"/nope/deeper", "404"},
      {"*", "404"},
  };
  for (const Case& c : table) EXPECT_EQ(Find("GET", c.path), c.want) << c.path;
}

TEST_F(TreeTest, BacktracksWhenTheMoreSpecificBranchLacksTheMethod) {
  ASSERT_TRUE(Add("GET", "/users/new/edit").ok());
  ASSERT_TRUE(Add("POST", "/users/{id}/edit").ok());
  EXPECT_EQ(Find("GET", "/users/new/edit"), "/users/new/edit");
  EXPECT_EQ(Find("POST", "/users/new/edit"), "/users/{id}/edit id=new");
  EXPECT_EQ(Find("POST", "/users/7/edit"), "/users/{id}/edit id=7");
  // Neither has PUT: 405, and the Allow of /users/new/edit lists POST too,
  // since POST is served there (by the less specific pattern).
  EXPECT_EQ(Find("PUT", "/users/new/edit"), "405 GET, POST, HEAD, OPTIONS");
  EXPECT_EQ(Find("PUT", "/users/7/edit"), "405 POST, OPTIONS");
  // HEAD is served by GET at the same node.
  EXPECT_EQ(Find("HEAD", "/users/new/edit"), "/users/new/edit");
  EXPECT_EQ(Find("HEAD", "/users/7/edit"), "405 POST, OPTIONS");
}

TEST_F(TreeTest, AllowIsTheUnionOfEveryPatternMatchingThePath) {
  ASSERT_TRUE(Add("GET", "/files/readme").ok());
  ASSERT_TRUE(Add("DELETE", "/files/{name}").ok());
  ASSERT_TRUE(Add("PUT", "/files/{rest...}").ok());
  ASSERT_TRUE(Add("OPTIONS", "/files/{rest...}").ok());
  ASSERT_TRUE(Add("POST", "/other").ok());
  // All three match /files/readme: each method they have is allowed there,
  // and OPTIONS (a route of the catch-all) is listed once.
  EXPECT_EQ(Find("PATCH", "/files/readme"), "405 GET, DELETE, PUT, OPTIONS, HEAD");
  EXPECT_EQ(Find("DELETE", "/files/readme"), "/files/{name} name=readme");
  // Two match /files/x, one matches /files/x/y.
  EXPECT_EQ(Find("PATCH", "/files/x"), "405 DELETE, PUT, OPTIONS");
  EXPECT_EQ(Find("PATCH", "/files/x/y"), "405 PUT, OPTIONS");
  // Only the most specific matches: its own text.
  EXPECT_EQ(Find("GET", "/other"), "405 POST, OPTIONS");
}

TEST_F(TreeTest, RefusesConflicts) {
  ASSERT_TRUE(Add("GET", "/u/{id}").ok());
  absl::Status dup = Add("GET", "/u/{id}");
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(dup.message().find("GET /u/{id}: registered twice"), absl::string_view::npos) << dup;
  // Another name at the same place, for any method.
  for (const char* method : {"GET", "POST"}) {
    absl::Status renamed = Add(method, "/u/{name}");
    EXPECT_EQ(renamed.code(), absl::StatusCode::kAlreadyExists) << method;
    EXPECT_NE(renamed.message().find("{name} is already named {id}"), absl::string_view::npos)
        << renamed;
    EXPECT_FALSE(Add(method, "/u/{name}/x").ok()) << method;
  }
  ASSERT_TRUE(Add("GET", "/f/{p...}").ok());
  EXPECT_FALSE(Add("POST", "/f/{q...}").ok());
  // Same name, other method or deeper: fine.
  EXPECT_TRUE(Add("POST", "/u/{id}").ok());
  EXPECT_TRUE(Add("GET", "/u/{id}/x").ok());
  EXPECT_TRUE(Add("POST", "/f/{p...}").ok());
  // The refused ones left nothing behind.
  EXPECT_EQ(Find("GET", "/u/7"), "/u/{id} id=7");
  EXPECT_EQ(Find("DELETE", "/u/7"), "405 GET, POST, HEAD, OPTIONS");
}

TEST_F(TreeTest, AllowPerNodeAndServerWide) {
  ASSERT_TRUE(Add("GET", "/items/{id}").ok());
  ASSERT_TRUE(Add("DELETE", "/items/{id}").ok());
  ASSERT_TRUE(Add("OPTIONS", "/cors").ok());
  ASSERT_TRUE(Add("POST", "/cors").ok());
  EXPECT_EQ(Find("PUT", "/items/1"), "405 GET, DELETE, HEAD, OPTIONS");
  EXPECT_EQ(Find("PUT", "/cors"), "405 OPTIONS, POST");  // OPTIONS listed once
  http::PathParams params;
  EXPECT_FALSE(tree_.Find("PUT", "/items/1", &params).has_options);
  EXPECT_TRUE(tree_.Find("PUT", "/cors", &params).has_options);
  EXPECT_EQ(tree_.all_methods(), "GET, HEAD, DELETE, POST, OPTIONS");
}

TEST_F(TreeTest, ManyRoutesEachFoundWithItsParams) {
  std::vector<std::string> patterns;
  for (int i = 0; i < 300; ++i) {
    patterns.push_back("/r" + std::to_string(i) + "/{id}/s/{sub}");
    ASSERT_TRUE(Add("GET", patterns.back().c_str()).ok());
  }
  for (int i = 0; i < 300; ++i) {
    const std::string path = "/r" + std::to_string(i) + "/x" + std::to_string(i) + "/s/y";
    EXPECT_EQ(Find("GET", path.c_str()),
              patterns[i] + " id=x" + std::to_string(i) + " sub=y");
  }
}

TEST_F(TreeTest, StaticSegmentsCompareDecoded) {
  ASSERT_TRUE(Add("GET", "/api/items").ok());
  ASSERT_TRUE(Add("GET", "/api/items/{id}").ok());
  ASSERT_TRUE(Add("GET", "/a/b").ok());
  ASSERT_TRUE(Add("GET", "/x%2Fy").ok());
  ASSERT_TRUE(Add("GET", "/caf%C3%A9").ok());
  EXPECT_EQ(Find("GET", "/api/items"), "/api/items");
  EXPECT_EQ(Find("GET", "/%61pi/%69tems"), "/api/items");  // the exact path, walked
  EXPECT_EQ(Find("GET", "/api/items/%31"), "/api/items/{id} id=1");
  EXPECT_EQ(Find("GET", "/%61pi/items/%34%32"), "/api/items/{id} id=42");
  EXPECT_EQ(Find("GET", "/a%2Fb"), "404");    // one segment "a/b"
  EXPECT_EQ(Find("GET", "/x/y"), "404");      // two segments
  EXPECT_EQ(Find("GET", "/x%2fy"), "/x%2Fy");
  EXPECT_EQ(Find("GET", "/caf%c3%a9"), "/caf%C3%A9");
  // A segment longer than the stack's buffer is decoded all the same.
  ASSERT_TRUE(Add("GET", ("/" + std::string(300, 'z') + "/{id}").c_str()).ok());
  std::string encoded = "/";
  for (int i = 0; i < 300; ++i) encoded += "%7a";
  EXPECT_EQ(Find("GET", (encoded + "/%31").c_str()),
            "/" + std::string(300, 'z') + "/{id} id=1");
}

TEST(PathParamsTest, DecodedValuesTravelWithCopies) {
  http::PathParams params;
  params.Push("a", "x%2Fy");
  params.Push("b", "plain");
  params.Decode();
  params.Decode();  // from the raw form again: "%2F" is not decoded twice
  http::PathParams copy = params;
  params.Clear();
  params.Push("a", "%41%41");
  params.Decode();
  EXPECT_EQ(copy.Get("a"), "x/y");
  EXPECT_EQ(copy.RawGet("a"), "x%2Fy");
  EXPECT_EQ(copy.Get("b"), "plain");
  EXPECT_EQ(params.Get("a"), "AA");
  // Past the inline area: the heap, and copies still work.
  const std::string long_raw = std::string(200, 'q') + "%20" + std::string(200, 'r');
  http::PathParams big;
  big.Push("a", long_raw);
  big.Push("b", "%31");
  big.Decode();
  const std::string want = std::string(200, 'q') + " " + std::string(200, 'r');
  EXPECT_EQ(big.Get("a"), want);
  http::PathParams big_copy;
  big_copy = big;
  big = http::PathParams();
  EXPECT_EQ(big_copy.Get("a"), want);
  EXPECT_EQ(big_copy.Get("b"), "1");
}

TEST(PathParamsTest, ACompactCopyHoldsTheEntriesAndDecodedBytesOnly) {
  const std::string path = "/x%2Fy/plain/" + std::string(100, 'q') + "%20";
  http::PathParams params;
  params.Push("a", std::string_view(path).substr(1, 5));   // x%2Fy
  params.Push("b", std::string_view(path).substr(7, 5));   // plain
  params.Push("c", std::string_view(path).substr(13));     // q...q%20
  params.Decode();
  // Three entries, and the decoded bytes of the two values with a '%'.
  ASSERT_EQ(params.CompactBytes(), 3 * sizeof(http::PathParamEntry) + 3 + 101);
  std::vector<http::PathParamEntry> room(params.CompactBytes() / sizeof(http::PathParamEntry) + 1);
  const http::PathParamsView view = params.CompactInto(room.data());
  params = http::PathParams();  // the copy stands alone
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(view.Get("a"), "x/y");
  EXPECT_EQ(view.RawGet("a"), "x%2Fy");
  EXPECT_EQ(view.Get("b"), "plain");
  EXPECT_EQ(view.Get("b").data(), path.data() + 7);  // undecoded: a view of the path
  EXPECT_EQ(view.Get("c"), std::string(100, 'q') + " ");
  EXPECT_TRUE(view.Has("c"));
  EXPECT_FALSE(view.Has("d"));
  EXPECT_EQ(view.Get("d"), "");
  const char* const room_begin = reinterpret_cast<const char*>(room.data());
  EXPECT_GE(view.Get("c").data(), room_begin);
  EXPECT_LE(view.Get("c").data() + view.Get("c").size(), room_begin + 3 * sizeof(http::PathParamEntry) + 104);
  // Nothing: no bytes, an empty view.
  EXPECT_EQ(http::PathParams().CompactBytes(), 0u);
  EXPECT_TRUE(http::PathParams().CompactInto(room.data()).empty());
}

TEST(DecodePathParamTest, DecodesPercentButNotPlus) {
  char buf[16];
  EXPECT_EQ(http::DecodePathParam("plain", buf, sizeof(buf)), "plain");
  EXPECT_EQ(http::DecodePathParam("a%2Fb", buf, sizeof(buf)), "a/b");
  EXPECT_EQ(http::DecodePathParam("a+b%20c", buf, sizeof(buf)), "a+b c");
  EXPECT_EQ(http::DecodePathParam("%e2%82%AC", buf, sizeof(buf)), "\xe2\x82\xac");
  EXPECT_EQ(http::DecodePathParam("bad%2", buf, sizeof(buf)), std::nullopt);
  EXPECT_EQ(http::DecodePathParam("bad%zz", buf, sizeof(buf)), std::nullopt);
  EXPECT_EQ(http::DecodePathParam("%41%41%41", buf, 2), std::nullopt);  // does not fit
}

}  // namespace
}  // namespace uring_http::router
