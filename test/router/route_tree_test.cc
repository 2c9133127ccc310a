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
      {"/users/{id}", "/users/a%2Fb", true, "id=a%2Fb"},  // raw, not decoded
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
