// The CORS middleware driven through the chain (no server): preflights,
// simple requests, disallowed origins, credentials (never with "*"), Vary.
#include "src/middleware/cors.h"

#include <string>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::middleware {
namespace {

// The header fields as HTTP/1 lines, for comparing with text.
std::string HeaderLines(const http::Response& r) {
  std::string lines;
  for (const auto [name, value] : r.headers()) {
    lines.append(name).append(": ").append(value).append("\r\n");
  }
  return lines;
}

using testing::HeaderOf;
using testing::ParsedRequest;

// The chain with only `cors`, around a handler answering 200 "data".
// `allowed`: the methods the route table has for the path, as the server
// sets them (Request::allowed_methods).
http::Response Serve(const absl::StatusOr<router::Middleware>& cors, std::string_view head,
                     bool* handled, std::string_view allowed = "GET, PUT, HEAD, OPTIONS") {
  EXPECT_TRUE(cors.ok()) << cors.status();
  router::Pipeline pipeline;
  if (cors.ok()) pipeline.Use(*cors);
  ParsedRequest parsed{head};
  parsed.request.allowed_methods = allowed;
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

// Issue 23: the methods default to the route table's for the path, so that
// a DELETE preflight succeeds where a DELETE route exists (and only there).
TEST(CorsTest, PreflightMethodsDefaultToTheRouteTables) {
  bool handled = true;
  const http::Response r =
      Serve(Cors({}), kPreflight, &handled, "GET, DELETE, HEAD, OPTIONS");
  EXPECT_FALSE(handled);
  EXPECT_EQ(r.status(), 204);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Methods"), "GET, DELETE, HEAD, OPTIONS");
  // A path no route matches: the preflight goes on (to its 404, or the
  // fallback), with no CORS answer of its own.
  const http::Response none = Serve(Cors({}), kPreflight, &handled, "");
  EXPECT_TRUE(handled);
  EXPECT_EQ(HeaderOf(none, "Access-Control-Allow-Methods"), "(none)");
  EXPECT_EQ(HeaderOf(none, "Vary"), "Origin");
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
  EXPECT_EQ(HeaderLines(r), "Vary: Origin\r\n");  // no CORS headers, but it varies
  r = Serve(Cors(options),
            "OPTIONS /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example.evil\r\n"
            "Access-Control-Request-Method: PUT\r\n\r\n",
            &handled);
  EXPECT_TRUE(handled);  // left to the routes (no OPTIONS route: a 405)
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(HeaderLines(r), "Vary: Origin\r\n");  // no CORS headers, but it varies
}

TEST(CorsTest, NoOriginNoHeaders) {
  bool handled = false;
  const http::Response r =
      Serve(Cors(CorsOptions{}), "GET /api HTTP/1.1\r\nHost: h\r\n\r\n", &handled);
  EXPECT_TRUE(handled);
  EXPECT_EQ(HeaderLines(r), "Vary: Origin\r\n");  // no CORS headers, but it varies
}

// Issue 19 item 14: whenever the answer depends on Origin, a cache must
// know it: a response stored for a request without Origin (or from an
// origin not allowed) must not be served to an allowed origin, nor the
// other way round. With a list of origins every answer depends on it; with
// "*" the Origin header's presence still decides whether CORS headers come.
TEST(CorsTest, VaryOriginOnEveryAnswerThatDependsOnTheOrigin) {
  CorsOptions listed;
  listed.allowed_origins = {"https://app.example"};
  bool handled = false;
  for (const char* head :
       {"GET /api HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://evil.example\r\n\r\n",
        "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example\r\n\r\n",
        "OPTIONS /api HTTP/1.1\r\nHost: h\r\nOrigin: https://evil.example\r\n"
        "Access-Control-Request-Method: PUT\r\n\r\n"}) {
    const http::Response r = Serve(Cors(listed), head, &handled);
    int n = 0;
    EXPECT_EQ(HeaderOf(r, "Vary", &n), "Origin") << head;
    EXPECT_EQ(n, 1) << head;
  }
  const http::Response any =
      Serve(Cors(CorsOptions{}), "GET /api HTTP/1.1\r\nHost: h\r\n\r\n", &handled);
  EXPECT_EQ(HeaderOf(any, "Vary"), "Origin");
  EXPECT_EQ(HeaderOf(any, "Access-Control-Allow-Origin"), "(none)");
}

// A preflight whose allowed headers echo the request's depends on them too.
TEST(CorsTest, PreflightEchoingRequestedHeadersVariesOnThem) {
  bool handled = false;
  const http::Response r = Serve(Cors(CorsOptions{}), kPreflight, &handled);
  EXPECT_EQ(HeaderOf(r, "Vary"), "Origin, Access-Control-Request-Headers");
  CorsOptions fixed;
  fixed.allowed_headers = "X-Token";
  const http::Response f = Serve(Cors(fixed), kPreflight, &handled);
  EXPECT_EQ(HeaderOf(f, "Vary"), "Origin");
}

// Issue 19 item 14: "*" with credentials echoed any origin with
// Access-Control-Allow-Credentials: any site could read a signed-in user's
// answers. Cors() refuses the combination, naming it.
TEST(CorsTest, AnyOriginWithCredentialsIsRefused) {
  CorsOptions options;
  options.allow_credentials = true;
  absl::StatusOr<router::Middleware> m = Cors(options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("\"*\" with allow_credentials"), std::string::npos)
      << m.status();
  options.allowed_origins = {"https://app.example", "*"};
  EXPECT_FALSE(Cors(options).ok());
  options.allow_credentials = false;
  EXPECT_TRUE(Cors(options).ok());
}

TEST(CorsTest, CredentialsEchoAListedOriginOnly) {
  CorsOptions options;
  options.allowed_origins = {"https://x.example"};
  options.allow_credentials = true;
  bool handled = false;
  http::Response r = Serve(
      Cors(options), "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://x.example\r\n\r\n", &handled);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "https://x.example");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Credentials"), "true");
  r = Serve(Cors(options), "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://y.example\r\n\r\n",
            &handled);
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Origin"), "(none)");
  EXPECT_EQ(HeaderOf(r, "Access-Control-Allow-Credentials"), "(none)");
}

}  // namespace
}  // namespace uring_http::middleware
