// Middleware and error pages end to end, over real sockets: FAST and SLOW
// routes run their middlewares in order (SLOW ones on a worker), early
// answers (also before a streamed body is read), CORS preflights and simple
// requests, the request id echoed, generated and logged, custom 404, 405 and
// 500 pages.
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"
#include "src/middleware/cors.h"
#include "src/middleware/request_id.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;
using testing::Get;
using testing::TestClient;

// With "X-Trace: 1", writes "name>" into the body before the handler and
// "<name" after it, so that the client sees the order.
router::Middleware Trace(std::string name) {
  router::Middleware m;
  m.before = [name](const Request& req, Response& resp) {
    if (!req.FindHeader("x-trace").empty()) resp.body() += name + ">";
    return router::Flow::kNext;
  };
  m.after = [name](const Request& req, Response& resp) {
    if (!req.FindHeader("x-trace").empty()) resp.body() += "<" + name;
  };
  return m;
}

// "X-Deny: 1" is answered 401 before the handler.
router::Middleware Deny() {
  router::Middleware m;
  m.before = [](const Request& req, Response& resp) {
    if (req.FindHeader("x-deny").empty()) return router::Flow::kNext;
    resp.set_status(401);
    resp.body() += "denied";
    return router::Flow::kAnswered;
  };
  return m;
}

// The thread the before ran on, into the body.
router::Middleware ThreadName() {
  router::Middleware m;
  m.before = [](const Request& req, Response& resp) {
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    if (!req.FindHeader("x-trace").empty()) resp.body() += std::string("[") + name + "]";
    return router::Flow::kNext;
  };
  return m;
}

class CountingSink : public router::BodySink {
 public:
  explicit CountingSink(std::atomic<int>* made) { made->fetch_add(1); }
  void OnData(std::string_view piece) override { bytes_ += piece.size(); }
  void OnEnd(const Request&, Response& response) override {
    response.set_body("got " + std::to_string(bytes_));
  }

 private:
  size_t bytes_ = 0;
};

class MiddlewareServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_path_ = ::testing::TempDir() + "/middleware_access.log";
    std::remove(log_path_.c_str());
    router::Router r;
    r.Use(middleware::RequestId());
    middleware::CorsOptions cors;
    cors.allowed_origins = {"https://app.example"};
    cors.allowed_methods = "GET, POST";
    absl::StatusOr<router::Middleware> cors_middleware = middleware::Cors(cors);
    ASSERT_TRUE(cors_middleware.ok()) << cors_middleware.status();
    r.Use(*cors_middleware);
    r.Use(Trace("g1"));
    r.Use(Trace("g2"));
    r.Use(Deny());
    router::RouteOptions traced;
    traced.middleware = {Trace("r1"), ThreadName()};
    auto handler = [](const Request& req, Response& resp) {
      if (!req.FindHeader("x-trace").empty()) resp.body() += "H";
      if (req.body == "throw") throw std::runtime_error("handler");
    };
    ASSERT_TRUE(r.Fast("GET", "/f", handler, traced).ok());
    ASSERT_TRUE(r.Slow("GET", "/s", handler, traced).ok());
    ASSERT_TRUE(r.Fast("POST", "/f", handler, traced).ok());
    ASSERT_TRUE(r.Slow("POST", "/s", handler, traced).ok());
    ASSERT_TRUE(r.Fast("POST", "/only-post", handler).ok());
    ASSERT_TRUE(r.Slow("GET", "/bare500", [](const Request&, Response& resp) {
                   resp.set_status(500);
                 }).ok());
    ASSERT_TRUE(r.FastStream("POST", "/upload", [this](const Request&) {
                   return std::make_unique<CountingSink>(&sinks_);
                 }).ok());
    ASSERT_TRUE(r.FastStream("POST", "/bad-upload",
                             [](const Request&) -> std::unique_ptr<router::BodySink> {
                               throw std::runtime_error("no sink");
                             })
                    .ok());
    ASSERT_TRUE(r.Fast("GET", "/produced", [](const Request&, Response& resp) {
                   auto left = std::make_shared<int>(3);
                   resp.Stream([left](http::BodyOutput& out) {
                     out.Write("part;");
                     return --*left == 0;
                   });
                 }).ok());
    router::RouteOptions streamed;
    streamed.body = router::BodyMode::kStreamed;
    ASSERT_TRUE(r.Slow("POST", "/slow-upload", [](const Request& req, Response& resp) {
                   std::string body;
                   char buf[4096];
                   for (;;) {
                     const int64_t n = req.ReadBody(buf, sizeof(buf));
                     if (n <= 0) break;
                     body.append(buf, static_cast<size_t>(n));
                   }
                   resp.set_body("read " + std::to_string(body.size()));
                 }, streamed).ok());
    ASSERT_TRUE(r.SetErrorHandler(404, [](const Request& req, Response& resp) {
                   resp.set_content_type("application/json");
                   resp.set_body("{\"missing\":\"" + std::string(req.path) + "\"}");
                 }).ok());
    ASSERT_TRUE(r.SetErrorHandler(405, [](const Request&, Response& resp) {
                   resp.set_body("{\"error\":\"method\"}");
                 }).ok());
    ASSERT_TRUE(r.SetErrorHandler(500, [](const Request&, Response& resp) {
                   resp.set_body("{\"error\":\"internal\"}");
                 }).ok());
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 2;
    config.access_log_path = log_path_;
    server_ = std::make_unique<Server>(config, std::move(r));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  void TearDown() override { StopServer(); }

  void StopServer() {
    if (server_ == nullptr) return;
    server_->Stop();
    server_->Wait();
    server_.reset();
  }

  testing::HttpResponse Exchange(TestClient& c, const std::string& request) {
    EXPECT_TRUE(c.Send(request));
    auto r = c.ReadResponse();
    EXPECT_TRUE(r.has_value()) << request;
    return r.value_or(testing::HttpResponse{});
  }

  std::string log_path_;
  std::atomic<int> sinks_{0};
  std::unique_ptr<Server> server_;
};

TEST_F(MiddlewareServerTest, FastAndSlowRunGlobalsThenRouteOnesInOnionOrder) {
  TestClient c(server_->port());
  auto r = Exchange(c, Get("/f", "X-Trace: 1\r\n"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.substr(0, 9), "g1>g2>r1>");
  EXPECT_EQ(r.body.substr(r.body.size() - 10), "H<r1<g2<g1");
  EXPECT_EQ(r.body.find("[uring-worker]"), std::string::npos) << r.body;

  r = Exchange(c, Get("/s", "X-Trace: 1\r\n"));
  EXPECT_EQ(r.status, 200);
  // The SLOW route's middlewares ran on the worker, around its handler.
  EXPECT_EQ(r.body, "g1>g2>r1>[uring-worker]H<r1<g2<g1");
}

TEST_F(MiddlewareServerTest, EarlyAnswerSkipsTheHandlerAndTheConnectionGoesOn) {
  TestClient c(server_->port());
  for (const char* path : {"/f", "/s"}) {
    auto r = Exchange(c, Get(path, "X-Deny: 1\r\nX-Trace: 1\r\n"));
    EXPECT_EQ(r.status, 401) << path;
    // The route's befores and the handler did not run; the globals' afters did.
    EXPECT_EQ(r.body, "g1>g2>denied<g2<g1") << path;
    EXPECT_FALSE(r.Header("x-request-id").empty());
  }
  // A buffered body: the befores run once it is read.
  auto r = Exchange(c,
                    "POST /f HTTP/1.1\r\nHost: t\r\nX-Deny: 1\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 401);
  // A streamed body: the befores run before it is read, and it is
  // discarded; no sink is made.
  r = Exchange(c,
               "POST /upload HTTP/1.1\r\nHost: t\r\nX-Deny: 1\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(sinks_.load(), 0);
  r = Exchange(c, "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "got 5");
  EXPECT_EQ(sinks_.load(), 1);
  EXPECT_FALSE(r.Header("x-request-id").empty());  // the afters ran after OnEnd
}

TEST_F(MiddlewareServerTest, EarlyAnswerWithExpectContinueClosesWithoutReadingTheBody) {
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send("POST /upload HTTP/1.1\r\nHost: t\r\nX-Deny: 1\r\nContent-Length: 100\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);  // no "100 Continue" before it
  EXPECT_TRUE(r->Closes());
  EXPECT_EQ(sinks_.load(), 0);
}

TEST_F(MiddlewareServerTest, EarlyAnswerOnSlowStreamedBodyClosesAfterIt) {
  TestClient c(server_->port());
  auto r = Exchange(c, "POST /slow-upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "read 5");
  // The worker's befores answer before the handler reads anything: what
  // is left of the body is not read, and the connection ends after the answer.
  ASSERT_TRUE(c.Send("POST /slow-upload HTTP/1.1\r\nHost: t\r\nX-Deny: 1\r\n"
                     "Content-Length: 1000000\r\n\r\nfirst bytes"));
  auto denied = c.ReadResponse();
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->status, 401);
  EXPECT_TRUE(denied->Closes());
  EXPECT_TRUE(c.ReadEof());
}

TEST_F(MiddlewareServerTest, AftersReachTheHeadOfAFastProducersStream) {
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send(Get("/produced", "X-Request-Id: streamed-1\r\n")));
  auto r = c.ReadResponse();  // chunked: the head alone is read
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("transfer-encoding"), "chunked");
  EXPECT_EQ(r->Header("x-request-id"), "streamed-1");
}

TEST_F(MiddlewareServerTest, CorsPreflightAndSimpleRequests) {
  TestClient c(server_->port());
  // No OPTIONS route for /only-post: the preflight is answered all the same.
  auto r = Exchange(c,
                    "OPTIONS /only-post HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
                    "Access-Control-Request-Method: POST\r\n"
                    "Access-Control-Request-Headers: content-type\r\n\r\n");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("access-control-allow-origin"), "https://app.example");
  EXPECT_EQ(r.Header("access-control-allow-methods"), "GET, POST");
  EXPECT_EQ(r.Header("access-control-allow-headers"), "content-type");
  EXPECT_EQ(r.Header("access-control-max-age"), "600");
  // The allowed headers echo the request's: the answer varies on them too.
  EXPECT_EQ(r.Header("vary"), "Origin, Access-Control-Request-Headers");
  EXPECT_EQ(r.Header("allow"), "");

  for (const char* path : {"/f", "/s"}) {
    r = Exchange(c, Get(path, "Origin: https://app.example\r\n"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.Header("access-control-allow-origin"), "https://app.example") << path;
    EXPECT_EQ(r.Header("vary"), "Origin");
    r = Exchange(c, Get(path, "Origin: https://evil.example\r\n"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u) << path;
    EXPECT_EQ(r.Header("vary"), "Origin");  // the answer still depends on it
  }
  // A disallowed origin's preflight goes on to routing: the route table
  // answers OPTIONS (204 with Allow), without any CORS header.
  r = Exchange(c,
               "OPTIONS /only-post HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n"
               "Access-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("allow"), "POST, OPTIONS");
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);
}

TEST_F(MiddlewareServerTest, CustomErrorPages) {
  TestClient c(server_->port());
  auto r = Exchange(c, Get("/nowhere"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "{\"missing\":\"/nowhere\"}");
  EXPECT_EQ(r.Header("content-type"), "application/json");
  EXPECT_FALSE(r.Header("x-request-id").empty());  // the globals ran around it

  r = Exchange(c, Get("/only-post"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.body, "{\"error\":\"method\"}");
  EXPECT_EQ(r.Header("allow"), "POST, OPTIONS");

  // A 404 with a body to drop: the connection goes on.
  r = Exchange(c, "POST /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 404);
  EXPECT_FALSE(r.Closes());

  for (const char* path : {"/f", "/s"}) {
    r = Exchange(c, std::string("POST ") + path +
                        " HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nthrow");
    EXPECT_EQ(r.status, 500) << path;
    EXPECT_EQ(r.body, "{\"error\":\"internal\"}") << path;
    EXPECT_FALSE(r.Header("x-request-id").empty());
  }
  // A FastStream route whose sink cannot be made: the page, the afters, and
  // the connection closes (the body was not read).
  TestClient c2(server_->port());
  r = Exchange(c2, "POST /bad-upload HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "{\"error\":\"internal\"}");
  EXPECT_FALSE(r.Header("x-request-id").empty());
  EXPECT_TRUE(r.Closes());
  r = Exchange(c, Get("/bare500"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "{\"error\":\"internal\"}");
  r = Exchange(c, Get("/f"));
  EXPECT_EQ(r.status, 200);  // still open and serving
}

TEST_F(MiddlewareServerTest, RequestIdEchoedOrGeneratedAndLogged) {
  TestClient c(server_->port());
  auto r = Exchange(c, Get("/f", "X-Request-Id: client-id-42\r\n"));
  EXPECT_EQ(r.Header("x-request-id"), "client-id-42");
  r = Exchange(c, Get("/s", "X-Request-Id: slow-id-7\r\n"));
  EXPECT_EQ(r.Header("x-request-id"), "slow-id-7");
  // Visible ASCII, so echoed; its quote is escaped in the log line.
  r = Exchange(c, Get("/f", "X-Request-Id: q\"uote\r\n"));
  EXPECT_EQ(r.Header("x-request-id"), "q\"uote");
  r = Exchange(c, Get("/f", "X-Request-Id: has space\r\n"));
  const std::string generated = r.Header("x-request-id");
  EXPECT_TRUE(std::regex_match(generated, std::regex("[0-9a-f]{32}"))) << generated;
  r = Exchange(c, Get("/s"));
  const std::string generated_slow = r.Header("x-request-id");
  EXPECT_TRUE(std::regex_match(generated_slow, std::regex("[0-9a-f]{32}"))) << generated_slow;
  EXPECT_NE(generated, generated_slow);
  c.Close();
  StopServer();  // writes the log out

  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  const std::string log = text.str();
  EXPECT_NE(log.find("\"GET /f HTTP/1.1\" 200 - \"client-id-42\"\n"), std::string::npos) << log;
  EXPECT_NE(log.find("\"GET /s HTTP/1.1\" 200 - \"slow-id-7\"\n"), std::string::npos) << log;
  EXPECT_NE(log.find("\"GET /f HTTP/1.1\" 200 - \"q\\x22uote\"\n"), std::string::npos) << log;
  // No line carries an empty id.
  EXPECT_EQ(log.find("200 - \"\"\n"), std::string::npos) << log;
  EXPECT_NE(log.find("\"GET /f HTTP/1.1\" 200 - \"" + generated + "\"\n"), std::string::npos)
      << log;
  EXPECT_NE(log.find("\"GET /s HTTP/1.1\" 200 - \"" + generated_slow + "\"\n"), std::string::npos)
      << log;
}

}  // namespace
}  // namespace uring_http::serving
