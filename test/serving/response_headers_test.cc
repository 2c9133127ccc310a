// Response headers over real sockets (issue 19 item 9): a FAST and a SLOW
// handler (buffered and streamed) adding an 800-byte cookie, a 300-byte
// Content-Security-Policy and, through the CORS and request id middlewares,
// five more headers get every one of them to the client; past
// ServerConfig::max_response_header_bytes the answer is a 500 (never the
// response without the header), the connection goes on, and the server's
// stderr says which header was refused on which route.
#include <string>

#include "gtest/gtest.h"
#include "src/middleware/cors.h"
#include "src/middleware/request_id.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"
#include "test/serving/stderr_capture.h"
#include "uring_http/testing.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;
using testing::Get;
using testing::TestClient;

const std::string kCookie = "session=" + std::string(792, 'j');                // 800 bytes
const std::string kCsp = "default-src 'self'; img-src " + std::string(272, 'c');  // 300 bytes

// The cookie and the CSP; ?more=N: one more header of N bytes.
void AddHeaders(const Request& request, Response& response) {
  ASSERT_TRUE(response.AddHeader("Set-Cookie", kCookie));
  ASSERT_TRUE(response.AddHeader("Content-Security-Policy", kCsp));
  if (request.query.starts_with("more=")) {
    const size_t n = std::stoul(std::string(request.query.substr(5)));
    if (!response.AddHeader("X-More", std::string(n, 'm'))) return;  // failed: stop here
  }
  response.set_body("body");
}

router::Router MakeRouter() {
  router::Router r;
  middleware::CorsOptions cors;
  cors.allowed_origins = {"https://app.example"};
  cors.allow_credentials = true;
  cors.exposed_headers = "X-Request-Id";
  absl::StatusOr<router::Middleware> cors_middleware = middleware::Cors(cors);
  EXPECT_TRUE(cors_middleware.ok()) << cors_middleware.status();
  if (cors_middleware.ok()) r.Use(*cors_middleware);
  r.Use(middleware::RequestId());
  EXPECT_TRUE(r.Fast("GET", "/fast", AddHeaders).ok());
  EXPECT_TRUE(r.Slow("GET", "/slow", AddHeaders).ok());
  EXPECT_TRUE(r.Slow("GET", "/slow-stream", [](const Request& request, Response& response) {
                 AddHeaders(request, response);
                 response.body().clear();
                 if (response.Write("streamed ")) response.Write("body");  // chunked
               }).ok());
  return r;
}

class ResponseHeadersTest : public ::testing::Test {
 protected:
  void Start(size_t limit) {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 2;
    config.max_response_header_bytes = limit;
    server_ = std::make_unique<Server>(config, MakeRouter());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) {
      server_->Stop();
      server_->Wait();
    }
  }
  std::unique_ptr<Server> server_;
};

TEST_F(ResponseHeadersTest, ACookieACspAndCorsHeadersAllArrive) {
  Start(64 * 1024);
  testing::ClientOptions options;
  options.port = server_->port();
  testing::Client client(options);
  for (const char* path : {"/fast", "/slow", "/slow-stream", "/fast?more=20000",
                           "/slow?more=20000"}) {
    auto r = client.Get(path, {{"Origin", "https://app.example"}});
    EXPECT_EQ(r.status, 200) << path << ": " << r;
    EXPECT_EQ(r.header("set-cookie"), kCookie) << path;
    EXPECT_EQ(r.header("content-security-policy"), kCsp) << path;
    EXPECT_EQ(r.body, std::string_view(path) == "/slow-stream" ? "streamed body" : "body");
    if (std::string_view(path).find("more=") != std::string_view::npos) {
      EXPECT_EQ(r.header("x-more"), std::string(20000, 'm')) << path;
    }
    // A streamed SLOW response's head leaves at its first Write, before the
    // afters run (middleware.h): the middlewares' headers are on the others.
    if (std::string_view(path) == "/slow-stream") continue;
    EXPECT_EQ(r.header("access-control-allow-origin"), "https://app.example") << path;
    EXPECT_EQ(r.header("access-control-allow-credentials"), "true") << path;
    EXPECT_EQ(r.header("access-control-expose-headers"), "X-Request-Id") << path;
    EXPECT_EQ(r.header("vary"), "Origin") << path;
    EXPECT_EQ(r.header("x-request-id").size(), 32u) << path;
  }
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(ResponseHeadersTest, PastTheLimitIsA500AndTheReasonIsLogged) {
  Start(4096);
  testing::StderrCapture err;
  testing::WaitForFreshSecond();
  TestClient client(server_->port());
  // 800 + 300 + 3000 bytes of values: past 4096 at X-More.
  for (const char* path : {"/fast?more=3000", "/slow?more=3000", "/slow-stream?more=3000"}) {
    ASSERT_TRUE(client.Send(Get(path, "Origin: https://app.example\r\nX-Request-Id: id-42\r\n")));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 500) << path;
    EXPECT_EQ(r->body, "500 Internal Server Error\n") << path;
    EXPECT_EQ(r->Header("set-cookie"), "") << path;
    EXPECT_FALSE(r->Closes()) << path;
  }
  // Below the limit on the same connection: served whole.
  ASSERT_TRUE(client.Send(Get("/fast?more=100")));
  auto ok = client.ReadResponse();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->Header("x-more"), std::string(100, 'm'));

  for (const char* route : {"GET /fast", "GET /slow", "GET /slow-stream"}) {
    const std::string named = std::string("uring-http: error: route \"") + route + "\", request \"" +
                              route + "\", request id \"id-42\": ";
    const auto lines = err.WaitForLines(
        1, {named,
            "header \"X-More\" refused: its line (3010 bytes) would take the header lines past "
            "4096 bytes (the response header limit): answered 500"});
    EXPECT_EQ(lines.size(), 1u) << route << "\n" << err.Text();
  }
}

}  // namespace
}  // namespace uring_http::serving
