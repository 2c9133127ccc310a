// The CORS middleware driven through the chain (no server): preflights,
// simple requests, disallowed origins, credentials.
#include "src/middleware/cors.h"

#include <string>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::middleware {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

// The chain with only `cors`, around a handler answering 200 "data".
http::Response Serve(const router::Middleware& cors, std::string_view head, bool* handled) {
  router::Pipeline pipeline;
  pipeline.Use(cors);
  ParsedRequest parsed{head};
  http::Response response;
  *handled = false;
  router::RunChain(pipeline, {}, parsed.request, response,
                   [&](const http::Request&, http::Response& r) {
                     *handled = true;
                     r.set_body("data");
                   });
  return response;
}

constexpr std::string_view kPreflight =
    "OPTIONS /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example\r\n"
    "Access-Control-Request-Method: PUT\r\nAccess-Control-Request-Headers: x-token\r\n\r\n";

TEST(CorsTest, PreflightFromAllowedOriginIs204WithEveryHeader) {
  CorsOptions options;
  options.allowed_origins = {"https://other.example", "https://app.example"};
  options.allowed_methods = "GET, PUT";
  options.allowed_headers = "X-Token, Content-Type";
  options.max_age_seconds = 3600;
  bool handled = true;
  const http::Response r = Serve(Cors(options), kPreflight, &handled);
  EXPECT_FALSE(handled);
  EXPECT_EQ(r.status(), 204);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Methods"), "GET, PUT");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Headers"), "X-Token, Content-Type");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Max-Age"), "3600");
  EXPECT_EQ(HeaderOf(r, "Vary"), "Origin");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Credentials"), "(none)");
  // The after hook does not add a second set.
  int n = 0;
  HeaderOf(r, "Access-Control-Allow-Origin", &n);
  EXPECT_EQ(n, 1);
}

TEST(CorsTest, PreflightEchoesRequestedHeadersWhenNoneConfiguredAndMaxAgeCanBeOmitted) {
  CorsOptions options;
  options.max_age_seconds = -1;
  bool handled = true;
  const http::Response r = Serve(Cors(options), kPreflight, &handled);
  EXPECT_EQ(r.status(), 204);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Headers"), "x-token");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Max-Age"), "(none)");
}

TEST(CorsTest, SimpleRequestGetsAllowOriginAndVary) {
  CorsOptions options;
  options.allowed_origins = {"https://app.example"};
  options.exposed_headers = "X-Request-Id";
  bool handled = false;
  const http::Response r =
      Serve(Cors(options), "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example\r\n\r\n",
            &handled);
  EXPECT_TRUE(handled);
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body_view(), "data");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(HeaderOf(r, "Vary"), "Origin");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Expose-Headers"), "X-Request-Id");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Methods"), "(none)");
}

TEST(CorsTest, DisallowedOriginGetsNoCorsHeadersAndItsPreflightIsNotAnswered) {
  CorsOptions options;
  options.allowed_origins = {"https://app.example"};
  bool handled = false;
  http::Response r = Serve(
      Cors(options), "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://evil.example\r\n\r\n",
      &handled);
  EXPECT_TRUE(handled);
  EXPECT_EQ(r.header_lines(), "");
  r = Serve(Cors(options),
            "OPTIONS /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example.evil\r\n"
            "Access-Control-Request-Method: PUT\r\n\r\n",
            &handled);
  EXPECT_TRUE(handled);  // left to the routes (no OPTIONS route: a 405)
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.header_lines(), "");
}

TEST(CorsTest, NoOriginNoHeaders) {
  bool handled = false;
  const http::Response r =
      Serve(Cors(CorsOptions{}), "GET /api HTTP/1.1\r\nHost: h\r\n\r\n", &handled);
  EXPECT_TRUE(handled);
  EXPECT_EQ(r.header_lines(), "");
}

TEST(CorsTest, CredentialsEchoTheOriginEvenForAny) {
  CorsOptions options;
  options.allow_credentials = true;
  bool handled = false;
  const http::Response r = Serve(
      Cors(options), "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://x.example\r\n\r\n", &handled);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "https://x.example");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Credentials"), "true");
}

}  // namespace
}  // namespace uring_http::middleware
