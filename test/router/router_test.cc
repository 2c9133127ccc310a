// Tests for Router: exact (method, path) matching, HEAD served by GET unless
// HEAD has its own route, what a 405 needs (path_known and the Allow list,
// implicit HEAD included), rejected registrations, and handler kinds.
#include "src/router/router.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::router {
namespace {

// A handler that marks the response with `tag`, so a test can tell which
// route Find() returned by running it.
Handler Tagged(std::string tag) {
  return [tag](const http::Request&, http::Response& response) { response.set_body(tag); };
}

std::string RunHandler(const Match& match) {
  if (match.route == nullptr) return "<none>";
  http::Request request;
  http::Response response;
  match.route->handler(request, response);
  return std::string(response.body_view());
}

TEST(RouterTest, ExactMatchOnly) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/test/fast", Tagged("fast")).ok());
  ASSERT_TRUE(router.Fast("GET", "/test", Tagged("test")).ok());

  Match m = router.Find("GET", "/test/fast");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->method, "GET");
  EXPECT_EQ(m.route->path, "/test/fast");
  EXPECT_EQ(RunHandler(m), "fast");
  EXPECT_EQ(RunHandler(router.Find("GET", "/test")), "test");

  // No prefix, suffix or case-insensitive matching.
  for (const char* path : {"/test/fast/", "/test/fas", "/test/fastx", "/TEST/FAST", "/",
                           "/test/fast?x=1", ""}) {
    Match miss = router.Find("GET", path);
    EXPECT_EQ(miss.route, nullptr) << path;
    EXPECT_FALSE(miss.path_known) << path;
    EXPECT_TRUE(miss.allow.empty()) << path;
  }
  // Methods are case-sensitive (RFC 9110 9.1).
  EXPECT_EQ(router.Find("get", "/test/fast").route, nullptr);
}

TEST(RouterTest, HeadIsServedByGet) {
  Router router;
  ASSERT_TRUE(router.Slow("GET", "/page", Tagged("get")).ok());
  Match m = router.Find("HEAD", "/page");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->method, "GET");
  EXPECT_EQ(m.route->kind, HandlerKind::kSlow);  // the GET route's kind
  EXPECT_EQ(RunHandler(m), "get");
}

TEST(RouterTest, ExplicitHeadRouteWinsOverGet) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/page", Tagged("get")).ok());
  ASSERT_TRUE(router.Fast("HEAD", "/page", Tagged("head")).ok());
  EXPECT_EQ(RunHandler(router.Find("HEAD", "/page")), "head");
  EXPECT_EQ(RunHandler(router.Find("GET", "/page")), "get");
  EXPECT_EQ(router.Find("GET", "/page").allow, "GET, HEAD, OPTIONS");  // listed once

  // Registered in the other order, the same.
  Router reversed;
  ASSERT_TRUE(reversed.Fast("HEAD", "/page", Tagged("head")).ok());
  ASSERT_TRUE(reversed.Fast("GET", "/page", Tagged("get")).ok());
  EXPECT_EQ(RunHandler(reversed.Find("HEAD", "/page")), "head");
  EXPECT_EQ(reversed.Find("GET", "/page").allow, "HEAD, GET, OPTIONS");
}

TEST(RouterTest, HeadWithoutGetIsNotAllowed) {
  Router router;
  ASSERT_TRUE(router.Fast("POST", "/form", Tagged("post")).ok());
  Match m = router.Find("HEAD", "/form");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.path_known);
  EXPECT_EQ(m.allow, "POST, OPTIONS");  // no implicit HEAD without a GET
}

TEST(RouterTest, WrongMethodOnAKnownPathGivesWhat405Needs) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/items", Tagged("get")).ok());
  ASSERT_TRUE(router.Slow("POST", "/items", Tagged("post")).ok());
  ASSERT_TRUE(router.Slow("DELETE", "/items", Tagged("delete")).ok());

  Match m = router.Find("PUT", "/items");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.path_known);
  EXPECT_EQ(m.allow, "GET, POST, DELETE, HEAD, OPTIONS");

  // A matched route carries the same Allow list.
  Match ok = router.Find("POST", "/items");
  ASSERT_NE(ok.route, nullptr);
  EXPECT_EQ(RunHandler(ok), "post");
  EXPECT_EQ(ok.allow, "GET, POST, DELETE, HEAD, OPTIONS");

  // Allow belongs to the path.
  ASSERT_TRUE(router.Fast("PUT", "/other", Tagged("put")).ok());
  EXPECT_EQ(router.Find("GET", "/other").allow, "PUT, OPTIONS");
  EXPECT_EQ(router.Find("GET", "/items").allow, "GET, POST, DELETE, HEAD, OPTIONS");
}

TEST(RouterTest, DuplicatesAreRejectedAndTheFirstRouteKept) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/a", Tagged("first")).ok());
  absl::Status status = router.Slow("GET", "/a", Tagged("second"));
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(status.message().find("GET /a"), absl::string_view::npos) << status;
  Match m = router.Find("GET", "/a");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(RunHandler(m), "first");
  EXPECT_EQ(m.route->kind, HandlerKind::kFast);
  EXPECT_EQ(m.allow, "GET, HEAD, OPTIONS");  // unchanged by the failed add

  // Same path, other method; same method, other path: both fine.
  EXPECT_TRUE(router.Fast("POST", "/a", Tagged("post")).ok());
  EXPECT_TRUE(router.Fast("GET", "/b", Tagged("b")).ok());
}

TEST(RouterTest, InvalidRegistrationsAreRejectedWithoutTrace) {
  Router router;
  for (const char* path : {"", "a", "test/fast", "*", "http://x/"}) {
    absl::Status status = router.Fast("GET", path, Tagged("x"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << path;
  }
  EXPECT_EQ(router.Fast("", "/empty-method", Tagged("x")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Fast("GET", "/no-handler", Handler()).code(),
            absl::StatusCode::kInvalidArgument);
  // A rejected route must not leave its path behind: that would turn a 404
  // into a 405 with an empty Allow header.
  for (const char* path : {"/empty-method", "/no-handler", "a", ""}) {
    Match m = router.Find("GET", path);
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_FALSE(m.path_known) << path;
  }
}

TEST(RouterTest, KindsAreKept) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/fast", Tagged("f")).ok());
  ASSERT_TRUE(router.Slow("GET", "/slow", Tagged("s")).ok());
  ASSERT_TRUE(router.Add(HandlerKind::kSlow, "POST", "/fast", Tagged("p")).ok());
  EXPECT_EQ(router.Find("GET", "/fast").route->kind, HandlerKind::kFast);
  EXPECT_EQ(router.Find("GET", "/slow").route->kind, HandlerKind::kSlow);
  EXPECT_EQ(router.Find("POST", "/fast").route->kind, HandlerKind::kSlow);
  EXPECT_EQ(router.Find("HEAD", "/slow").route->kind, HandlerKind::kSlow);
}

TEST(RouterTest, EmptyRouterFindsNothing) {
  const Router router;
  Match m = router.Find("GET", "/");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_FALSE(m.path_known);
  EXPECT_TRUE(m.allow.empty());
}

TEST(RouterTest, RoutesSurviveManyLaterRegistrations) {
  // Find() results are looked up after all registrations; many paths (and
  // the table growth they cause) must not disturb earlier routes.
  Router router;
  for (int i = 0; i < 500; ++i) {
    const std::string path = "/p" + std::to_string(i);
    ASSERT_TRUE(router.Fast("GET", path, Tagged(path)).ok());
  }
  for (int i = 0; i < 500; ++i) {
    const std::string path = "/p" + std::to_string(i);
    Match m = router.Find("GET", path);
    ASSERT_NE(m.route, nullptr) << path;
    EXPECT_EQ(RunHandler(m), path);
    EXPECT_EQ(m.allow, "GET, HEAD, OPTIONS");
  }
}

TEST(RouterTest, RoutesAreNumberedInRegistrationOrder) {
  Router router;
  EXPECT_EQ(router.size(), 0u);
  EXPECT_TRUE(router.Routes().empty());
  ASSERT_TRUE(router.Fast("GET", "/b", Tagged("0")).ok());
  ASSERT_TRUE(router.Slow("POST", "/a", Tagged("1")).ok());
  EXPECT_FALSE(router.Fast("GET", "/b", Tagged("dup")).ok());  // takes no number
  EXPECT_FALSE(router.Fast("GET", "bad", Tagged("bad")).ok());
  ASSERT_TRUE(router.Fast("GET", "/a", Tagged("2")).ok());
  EXPECT_EQ(router.size(), 3u);

  std::vector<const Route*> routes = router.Routes();
  ASSERT_EQ(routes.size(), 3u);
  for (uint32_t id = 0; id < 3; ++id) {
    ASSERT_NE(routes[id], nullptr) << id;
    EXPECT_EQ(routes[id]->id, id);
    http::Request request;
    http::Response response;
    routes[id]->handler(request, response);
    EXPECT_EQ(response.body_view(), std::to_string(id));
  }
  // Find() returns the same Route objects.
  EXPECT_EQ(router.Find("POST", "/a").route, routes[1]);
  EXPECT_EQ(router.Find("HEAD", "/a").route, routes[2]);
}

// ---- Static mounts

class StaticRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/router_static_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { rmdir(dir_.c_str()); }
  std::string dir_;
};

TEST_F(StaticRouterTest, LongestPrefixAfterExactRoutesBeforeFallback) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/assets/special", Tagged("exact")).ok());
  ASSERT_TRUE(router.Static("/", dir_).ok());
  ASSERT_TRUE(router.Static("/assets/", dir_).ok());
  ASSERT_TRUE(router.SetFallback(HandlerKind::kFast, Tagged("fallback")).ok());

  EXPECT_EQ(RunHandler(router.Find("GET", "/assets/special")), "exact");
  Match m = router.Find("GET", "/assets/app.js");
  ASSERT_NE(m.route, nullptr);
  ASSERT_NE(m.route->mount, nullptr);
  EXPECT_EQ(m.route->mount->prefix, "/assets/");
  EXPECT_EQ(m.route->mount->root, dir_);
  EXPECT_GE(m.route->mount->dir_fd, 0);
  // "/assets" without its slash names the mount's root directory.
  ASSERT_NE(router.Find("GET", "/assets").route, nullptr);
  EXPECT_EQ(router.Find("GET", "/assets").route->mount->prefix, "/assets/");
  // A path merely sharing the prefix's letters belongs to "/".
  EXPECT_EQ(router.Find("GET", "/assetsx/a").route->mount->prefix, "/");
  EXPECT_EQ(router.Find("HEAD", "/index.html").route->mount->prefix, "/");
  // The mount claims every path: the fallback is not reached for GET.
  EXPECT_EQ(router.Find("GET", "/nothing").route->mount->prefix, "/");

  // Other methods: 405 with GET, HEAD.
  Match post = router.Find("POST", "/assets/app.js");
  EXPECT_EQ(post.route, nullptr);
  EXPECT_TRUE(post.path_known);
  EXPECT_EQ(post.allow, "GET, HEAD");

  // Mount routes are listed for metrics, with distinct ids.
  std::vector<const Route*> routes = router.Routes();
  ASSERT_EQ(routes.size(), router.size());
  int mounts = 0;
  for (size_t i = 0; i < routes.size(); ++i) {
    ASSERT_NE(routes[i], nullptr);
    EXPECT_EQ(routes[i]->id, i);
    if (routes[i]->mount != nullptr) ++mounts;
  }
  EXPECT_EQ(mounts, 2);
  EXPECT_EQ(router.mount_count(), 2u);
}

TEST_F(StaticRouterTest, RejectsBadPrefixesAndRoots) {
  Router router;
  EXPECT_FALSE(router.Static("assets/", dir_).ok());
  EXPECT_FALSE(router.Static("/assets", dir_).ok());
  EXPECT_FALSE(router.Static("", dir_).ok());
  EXPECT_FALSE(router.Static("/a/", dir_ + "/missing").ok());
  EXPECT_FALSE(router.Static("/a/", "/etc/hostname").ok());  // not a directory
  ASSERT_TRUE(router.Static("/a/", dir_).ok());
  EXPECT_EQ(router.Static("/a/", dir_).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(router.mount_count(), 1u);
}

TEST(RouterTest, ParameterizedRoutesGiveTheirParams) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/users/{id}", Tagged("user")).ok());
  ASSERT_TRUE(router.Slow("PUT", "/users/{id}", Tagged("put")).ok());
  ASSERT_TRUE(router.Fast("GET", "/users/me", Tagged("me")).ok());
  http::PathParams params;
  Match m = router.Find("GET", "/users/42", &params);
  EXPECT_EQ(RunHandler(m), "user");
  EXPECT_EQ(params.Get("id"), "42");
  EXPECT_EQ(m.allow, "GET, PUT, HEAD, OPTIONS");
  EXPECT_EQ(RunHandler(router.Find("GET", "/users/me", &params)), "me");
  EXPECT_TRUE(params.empty());
  // The route's own pattern gives the same params back (the worker's way).
  m = router.Find("PUT", "/users/7", &params);
  ASSERT_NE(m.route, nullptr);
  http::PathParams again;
  ASSERT_TRUE(m.route->pattern.Match("/users/7", &again));
  EXPECT_EQ(again.Get("id"), "7");
  // Unknown method on a parameterized path: 405 with its Allow.
  m = router.Find("DELETE", "/users/7", &params);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.path_known);
  EXPECT_FALSE(m.options);
  EXPECT_EQ(m.allow, "GET, PUT, HEAD, OPTIONS");
  EXPECT_FALSE(router.Find("GET", "/users/7/x").path_known);  // 404
  // Conflicts come back from Add as errors.
  EXPECT_EQ(router.Fast("GET", "/users/{name}", Tagged("x")).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(router.Fast("GET", "/f/{a...}/b", Tagged("x")).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RouterTest, OptionsIsAnsweredFromTheTable) {
  Router router;
  ASSERT_TRUE(router.Fast("GET", "/items/{id}", Tagged("get")).ok());
  ASSERT_TRUE(router.Fast("POST", "/items", Tagged("post")).ok());
  ASSERT_TRUE(router.Fast("OPTIONS", "/cors", Tagged("own options")).ok());
  Match m = router.Find("OPTIONS", "/items/3");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.options);
  EXPECT_EQ(m.allow, "GET, HEAD, OPTIONS");
  // An OPTIONS route of its own answers for itself.
  EXPECT_EQ(RunHandler(router.Find("OPTIONS", "/cors")), "own options");
  // "OPTIONS *": every method of the server.
  m = router.Find("OPTIONS", "*");
  EXPECT_TRUE(m.options);
  EXPECT_EQ(m.allow, "GET, HEAD, POST, OPTIONS");
  EXPECT_FALSE(router.Find("GET", "*").path_known);
  // Unknown path: 404, even for OPTIONS.
  m = router.Find("OPTIONS", "/nothing");
  EXPECT_FALSE(m.path_known);
  EXPECT_FALSE(m.options);
  // A fallback takes the other methods of a known path, not its OPTIONS.
  ASSERT_TRUE(router.SetFallback(HandlerKind::kFast, Tagged("fallback")).ok());
  EXPECT_EQ(RunHandler(router.Find("DELETE", "/items/3")), "fallback");
  EXPECT_TRUE(router.Find("OPTIONS", "/items/3").options);
}

}  // namespace
}  // namespace uring_http::router
