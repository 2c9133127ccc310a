// Where a request goes, as every protocol asks it (exchange/route_request):
// the router's own answers and how a route takes its body.
#include "src/exchange/route_request.h"

#include <string>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::exchange {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

void Nothing(const http::Request&, http::Response&) {}

class RouteRequestTest : public ::testing::Test {
 protected:
  RouteRequestTest() {
    EXPECT_TRUE(router_.Fast("GET", "/items/{id}", Nothing).ok());
    EXPECT_TRUE(router_.Fast("DELETE", "/items/{id}", Nothing).ok());
    router::RouteOptions big;
    big.max_body_bytes = 1 << 30;
    EXPECT_TRUE(router_.Slow("POST", "/upload", Nothing, big).ok());
    router::RouteOptions streamed;
    streamed.body = router::BodyMode::kStreamed;
    EXPECT_TRUE(router_.Slow("PUT", "/stream", Nothing, streamed).ok());
  }

  Routing Route(const std::string& head, bool has_workers = true) {
    requests_.push_back(std::make_unique<ParsedRequest>(head));
    return RouteRequest(router_, requests_.back()->request, requests_.back()->params, kServerLimit,
                        has_workers);
  }
  const http::Request& last() const { return requests_.back()->request; }

  static constexpr uint64_t kServerLimit = 1 << 20;
  router::Router router_;
  std::vector<std::unique_ptr<ParsedRequest>> requests_;
};

TEST_F(RouteRequestTest, ARouteWithItsParametersAndTheServersLimit) {
  const Routing r = Route("GET /items/42 HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.kind, Routing::Kind::kRoute);
  EXPECT_EQ(r.route->path, "/items/{id}");
  EXPECT_EQ(last().PathParam("id"), "42");
  EXPECT_EQ(r.body_limit, kServerLimit);
  EXPECT_FALSE(r.slow);
  EXPECT_FALSE(r.streamed);
}

TEST_F(RouteRequestTest, ASlowRouteKeepsItsOwnLimitAndStreamsWhenAsked) {
  const Routing upload = Route("POST /upload HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(upload.kind, Routing::Kind::kRoute);
  EXPECT_TRUE(upload.slow);
  EXPECT_FALSE(upload.streamed);
  EXPECT_EQ(upload.body_limit, uint64_t{1} << 30);
  const Routing stream = Route("PUT /stream HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(stream.slow);
  EXPECT_TRUE(stream.streamed);
}

TEST_F(RouteRequestTest, WithoutWorkersASlowRouteRunsInlineWithItsBodyBuffered) {
  const Routing r = Route("PUT /stream HTTP/1.1\r\nHost: h\r\n\r\n", /*has_workers=*/false);
  EXPECT_FALSE(r.slow);
  EXPECT_FALSE(r.streamed) << "the ring cannot block on a streamed body";
  EXPECT_EQ(r.body_limit, kServerLimit);
}

TEST_F(RouteRequestTest, UnknownPathsAndMethodsAreTheRoutersToAnswer) {
  Routing r = Route("GET /nothing HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.kind, Routing::Kind::kUnmatched);
  EXPECT_EQ(r.status, 404);
  r = Route("POST /items/1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.allow, "GET, DELETE, HEAD, OPTIONS");
  http::Response response;
  AnswerUnrouted(router_.pipeline(), r, last(), response);
  EXPECT_EQ(response.status(), 405);
  EXPECT_EQ(HeaderOf(response, "Allow"), "GET, DELETE, HEAD, OPTIONS");
  r = Route("OPTIONS /items/1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.status, 204);
}

TEST_F(RouteRequestTest, AnUncleanPathIsRedirectedAndAMalformedOneRefused) {
  Routing r = Route("GET /a/../items/7?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.kind, Routing::Kind::kUnclean);
  http::Response response;
  AnswerUnrouted(router_.pipeline(), r, last(), response);
  EXPECT_EQ(response.status(), 301);
  EXPECT_EQ(HeaderOf(response, "Location"), "/items/7?x=1");
  r = Route("POST /a//b HTTP/1.1\r\nHost: h\r\n\r\n");
  http::Response post;
  AnswerUnrouted(router_.pipeline(), r, last(), post);
  EXPECT_EQ(post.status(), 308) << "a 301 would let the client turn the POST into a GET";
  r = Route("GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.kind, Routing::Kind::kUnclean);
  http::Response bad;
  AnswerUnrouted(router_.pipeline(), r, last(), bad);
  EXPECT_EQ(bad.status(), 400);
}

}  // namespace
}  // namespace uring_http::exchange
