// The HTTPS redirect middleware, hook by hook: who is redirected where, and
// which Host values are refused rather than echoed.
#include "src/middleware/https_redirect.h"

#include <string>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::middleware {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

http::Response Serve(const HttpsRedirectOptions& options, std::string_view head, bool secure,
                     bool* handled) {
  router::Pipeline pipeline;
  pipeline.Use(HttpsRedirect(options));
  ParsedRequest parsed{head};
  parsed.request.secure = secure;
  http::Response response;
  *handled = false;
  router::RunChain(pipeline, {}, parsed.request, response,
                   [&](const http::Request&, http::Response& r) {
                     *handled = true;
                     r.set_body("data");
                   });
  return response;
}

TEST(HttpsRedirectTest, PlainRequestsGoToHttpsWithPathAndQuery) {
  bool handled = false;
  http::Response r = Serve({}, "GET /a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
                           false, &handled);
  EXPECT_FALSE(handled);
  EXPECT_EQ(r.status(), 308);
  EXPECT_EQ(HeaderOf(r, "Location"), "https://example.com/a/b?x=1");
  HttpsRedirectOptions o;
  o.https_port = 8443;
  o.status = 301;
  r = Serve(o, "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", false, &handled);
  EXPECT_EQ(r.status(), 301);
  EXPECT_EQ(HeaderOf(r, "Location"), "https://[::1]:8443/");
  o.host = "www.example.com";
  r = Serve(o, "GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n", false, &handled);
  EXPECT_EQ(HeaderOf(r, "Location"), "https://www.example.com:8443/x");
}

TEST(HttpsRedirectTest, SecureRequestsPass) {
  bool handled = false;
  http::Response r = Serve({}, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", true, &handled);
  EXPECT_TRUE(handled);
  EXPECT_EQ(r.status(), 200);
  // X-Forwarded-Proto only when trusted.
  constexpr std::string_view kProxied = "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-Proto: https\r\n\r\n";
  r = Serve({}, kProxied, false, &handled);
  EXPECT_FALSE(handled);
  HttpsRedirectOptions trusting;
  trusting.trust_forwarded_proto = true;
  r = Serve(trusting, kProxied, false, &handled);
  EXPECT_TRUE(handled);
}

TEST(HttpsRedirectTest, UnusableHostIs400NotEchoed) {
  for (std::string_view host : {"", "a b", "evil.example/x", "user@evil", "h:", "h:80x", "[::1",
                                "[zz]", "h:123456"}) {
    bool handled = false;
    const std::string head = "GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n";
    http::Response r = Serve({}, head, false, &handled);
    EXPECT_FALSE(handled) << host;
    EXPECT_EQ(r.status(), 400) << host;
    EXPECT_EQ(HeaderOf(r, "Location"), "(none)") << host;
  }
  EXPECT_EQ(HostWithoutPort("example.com"), "example.com");
  EXPECT_EQ(HostWithoutPort("10.0.0.1:80"), "10.0.0.1");
  EXPECT_EQ(HostWithoutPort("[2001:db8::1]"), "[2001:db8::1]");
}

}  // namespace
}  // namespace uring_http::middleware
