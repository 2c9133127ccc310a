// Handler failures over real sockets (issue 19 item 10): a FAST or SLOW
// handler, a middleware's before or after, or a producer that throws (a
// std::exception or anything else) is answered 500, or its stream cut once
// the head has gone, and the server's stderr gets exactly one error line
// for it, with the route, the request, the request id and what(). Past
// base::kErrorLinesPerSecond lines a second the rest are counted, and the
// count is written once the second is over.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"
#include "src/base/error_log.h"
#include "src/middleware/request_id.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"
#include "test/serving/stderr_capture.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;
using testing::Get;
using testing::StderrCapture;
using testing::TestClient;

// X-Throw: before | after makes the middleware throw there.
router::Middleware Thrower() {
  router::Middleware m;
  m.before = [](const Request& request, Response&) {
    if (request.FindHeader("x-throw") == "before") throw std::runtime_error("before boom");
    return router::Flow::kNext;
  };
  m.after = [](const Request& request, Response&) {
    if (request.FindHeader("x-throw") == "after") throw std::logic_error("after boom");
  };
  return m;
}

router::Router MakeRouter() {
  router::Router r;
  EXPECT_TRUE(r.Fast("GET", "/fast-throw", [](const Request&, Response&) {
                 throw std::runtime_error("fast boom");
               }).ok());
  EXPECT_TRUE(r.Slow("GET", "/slow-throw", [](const Request&, Response&) {
                 throw std::runtime_error("slow boom");
               }).ok());
  EXPECT_TRUE(r.Fast("GET", "/fast-throw-int", [](const Request&, Response&) { throw 42; }).ok());
  EXPECT_TRUE(r.Slow("GET", "/slow-throw-int", [](const Request&, Response&) { throw 42; }).ok());
  // After its head has gone: the stream is cut (no 500 is possible).
  EXPECT_TRUE(r.Slow("GET", "/slow-stream-throw", [](const Request&, Response& response) {
                 response.set_content_length(100);
                 response.Write("part");
                 throw std::runtime_error("stream boom");
               }).ok());
  EXPECT_TRUE(r.Fast("GET", "/produce-throw", [](const Request&, Response& response) {
                 response.Stream([](http::BodyOutput&) -> bool {
                   throw std::runtime_error("produce boom");
                 });
               }).ok());
  // A FAST streamed-body route whose sink throws in OnData or OnEnd, or
  // whose factory throws, as X-Throw says.
  class ThrowingSink : public router::BodySink {
   public:
    explicit ThrowingSink(std::string where) : where_(std::move(where)) {}
    void OnData(std::string_view) override {
      if (where_ == "data") throw std::runtime_error("sink data boom");
    }
    void OnEnd(const Request&, Response&) override {
      if (where_ == "end") throw std::runtime_error("sink end boom");
    }

   private:
    std::string where_;
  };
  EXPECT_TRUE(r.FastStream("POST", "/sink-throw", [](const Request& request) {
                 const std::string where(request.FindHeader("x-throw"));
                 if (where == "factory") throw std::runtime_error("sink factory boom");
                 return std::unique_ptr<router::BodySink>(new ThrowingSink(where));
               }).ok());
  router::RouteOptions with_middleware;
  with_middleware.middleware = {middleware::RequestId(), Thrower()};
  EXPECT_TRUE(r.Fast("GET", "/fast-mw", [](const Request&, Response& response) {
                 response.set_body("fine");
               }, with_middleware).ok());
  EXPECT_TRUE(r.Slow("GET", "/slow-mw", [](const Request& request, Response& response) {
                 if (request.FindHeader("x-throw") == "handler") throw std::runtime_error("mw boom");
                 response.set_body("fine");
               }, with_middleware).ok());
  return r;
}

class HandlerErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 2;
    server_ = std::make_unique<Server>(config, MakeRouter());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    server_->Wait();
  }

  std::unique_ptr<Server> server_;
};

struct Case {
  const char* path;
  const char* extra;  // request headers
  const char* route;
  const char* what;   // the end of the line
};

TEST_F(HandlerErrorsTest, EachThrowIsA500AndOneLineWithRouteIdAndWhat) {
  const Case cases[] = {
      {"/fast-throw", "", "GET /fast-throw", "the handler threw: fast boom"},
      {"/slow-throw", "", "GET /slow-throw", "the handler threw: slow boom"},
      {"/fast-throw-int", "", "GET /fast-throw-int",
       "the handler threw: an unknown exception (not a std::exception)"},
      {"/slow-throw-int", "", "GET /slow-throw-int",
       "the handler threw: an unknown exception (not a std::exception)"},
      {"/fast-mw", "X-Throw: before\r\n", "GET /fast-mw",
       "a middleware's before threw: before boom"},
      {"/slow-mw", "X-Throw: after\r\n", "GET /slow-mw", "a middleware's after threw: after boom"},
      {"/slow-mw", "X-Throw: handler\r\n", "GET /slow-mw", "the handler threw: mw boom"},
  };
  StderrCapture err;
  testing::WaitForFreshSecond();
  TestClient client(server_->port());
  int n = 0;
  for (const Case& c : cases) {
    const std::string id = "rid-" + std::to_string(++n);
    ASSERT_TRUE(client.Send(Get(c.path, std::string(c.extra) + "X-Request-Id: " + id + "\r\n")));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value()) << c.path;
    EXPECT_EQ(r->status, 500) << c.path << " " << c.extra;
  }
  n = 0;
  for (const Case& c : cases) {
    const std::string line = std::string("uring-http: error: route \"") + c.route +
                             "\", request \"" + c.route + "\", request id \"rid-" +
                             std::to_string(++n) + "\": " + c.what;
    const auto found = err.WaitForLines(1, {line});
    ASSERT_EQ(found.size(), 1u) << line << "\n" << err.Text();
    EXPECT_EQ(found[0], line);  // and nothing after what()
  }
  // Once each, nothing else.
  EXPECT_EQ(err.Lines({"uring-http: error: "}).size(), std::size(cases)) << err.Text();
}

// A BodySink's throw (its factory, OnData, OnEnd) is a handler's throw too.
TEST_F(HandlerErrorsTest, ABodySinksThrowIsLogged) {
  StderrCapture err;
  testing::WaitForFreshSecond();
  for (const char* where : {"factory", "data", "end"}) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(std::string("POST /sink-throw HTTP/1.1\r\nHost: t\r\nX-Throw: ") +
                            where + "\r\nContent-Length: 5\r\n\r\nhello"));
    auto r = client.ReadResponse();
    if (r.has_value()) {
      EXPECT_EQ(r->status, 500) << where;
    }
  }
  for (const char* what : {"sink factory boom", "sink data boom", "sink end boom"}) {
    EXPECT_EQ(err.WaitForLines(1, {"uring-http: error: route \"POST /sink-throw\"", what}).size(),
              1u)
        << what << "\n"
        << err.Text();
  }
}

TEST_F(HandlerErrorsTest, AfterTheHeadOrInAProducerTheStreamIsCutAndLogged) {
  StderrCapture err;
  testing::WaitForFreshSecond();
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(Get("/slow-stream-throw", "X-Request-Id: rid-s\r\n")));
    auto r = client.ReadResponse();
    EXPECT_FALSE(r.has_value());  // 100 bytes promised, 4 sent, then the close
    EXPECT_EQ(client.pending(), "part");  // the body so far (the head was parsed)
  }
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send("GET /produce-throw HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::string all;
    char buf[4096];
    ssize_t got;
    while ((got = recv(client.fd(), buf, sizeof(buf), 0)) > 0) all.append(buf, got);
    // A chunked head, then the close without a last chunk.
    EXPECT_NE(all.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << all;
    EXPECT_EQ(all.find("\r\n0\r\n"), std::string::npos) << all;
  }
  EXPECT_EQ(err.WaitForLines(1, {"uring-http: error: route \"GET /slow-stream-throw\", request "
                                 "\"GET /slow-stream-throw\", request id \"rid-s\": the handler "
                                 "threw: stream boom"})
                .size(),
            1u)
      << err.Text();
  EXPECT_EQ(err.WaitForLines(1, {"uring-http: error: route \"GET /produce-throw\"",
                                 "the response's producer threw: produce boom"})
                .size(),
            1u)
      << err.Text();
  EXPECT_EQ(err.Lines({"uring-http: error: "}).size(), 2u) << err.Text();
}

TEST_F(HandlerErrorsTest, TheIdTheClientGotIsTheOneLogged) {
  // No X-Request-Id: the RequestId middleware's after makes one for the
  // 500; the line, written once the afters ran, names the same.
  StderrCapture err;
  testing::WaitForFreshSecond();
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/slow-mw", "X-Throw: handler\r\n")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  const std::string id = r->Header("x-request-id");
  ASSERT_EQ(id.size(), 32u);
  EXPECT_EQ(err.WaitForLines(1, {"request id \"" + id + "\": the handler threw: mw boom"}).size(),
            1u)
      << err.Text();
}

TEST_F(HandlerErrorsTest, TheRateLimitHoldsAndTheRestAreCounted) {
  StderrCapture err;
  testing::WaitForFreshSecond();
  constexpr int kRequests = 200;
  const auto start = std::chrono::steady_clock::now();
  TestClient client(server_->port());
  std::string burst;
  for (int i = 0; i < kRequests; ++i) burst += Get(i % 2 ? "/fast-throw" : "/slow-throw");
  ASSERT_TRUE(client.Send(burst));
  for (int i = 0; i < kRequests; ++i) {
    auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->status, 500);
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The count of the refused lines comes once their second is over (the
  // loop's timer tick), without another error to carry it.
  uint64_t suppressed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t written = 0;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    written = err.Lines({"the handler threw: "}).size();
    suppressed = 0;
    for (const std::string& line : err.Lines({"more error lines suppressed"})) {
      suppressed += std::stoull(line.substr(line.find("error: ") + 7));
    }
  } while (written + suppressed < kRequests && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(written + suppressed, static_cast<uint64_t>(kRequests)) << err.Text();
  // At most the limit in each second the burst touched.
  EXPECT_LE(written, base::kErrorLinesPerSecond * (static_cast<size_t>(elapsed) + 2));
  if (elapsed < 5) {
    EXPECT_GT(suppressed, 0u);
  }
}

}  // namespace
}  // namespace uring_http::serving
