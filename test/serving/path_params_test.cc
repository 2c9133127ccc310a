// End to end over real sockets: path parameters reach FAST handlers on the
// ring thread and SLOW handlers on a worker (which re-parses the head and
// recovers them from the route's pattern), with the body in the same
// receive or after it (the head kept and re-parsed); ASYNC handlers keep
// theirs across their awaits while other requests are routed on the same
// ring (their copy is the exchange's, in its task or a block of its own);
// and OPTIONS, 405 and 404 answered from the route table.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/async/exchange.h"
#include "src/async/task.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;
using testing::Get;
using testing::TestClient;

// "name=value;..." of every parameter, then the body if any.
void Describe(const Request& req, Response& resp, std::string_view kind) {
  std::string out(kind);
  for (const http::PathParamEntry& p : req.path_params) {
    out += ' ';
    out += std::string(p.name) + "=" + std::string(p.value);
  }
  if (!req.body.empty()) out += " body=" + std::string(req.body);
  resp.set_body(out);
}

class PathParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router::Router r;
    ASSERT_TRUE(r.Fast("GET", "/users/{id}",
                       [](const Request& q, Response& a) { Describe(q, a, "fast"); })
                    .ok());
    ASSERT_TRUE(r.Fast("GET", "/users/me",
                       [](const Request& q, Response& a) { Describe(q, a, "me"); })
                    .ok());
    ASSERT_TRUE(r.Fast("POST", "/users/{id}",
                       [](const Request& q, Response& a) { Describe(q, a, "fast-post"); })
                    .ok());
    ASSERT_TRUE(r.Slow("GET", "/users/{id}/posts/{post}",
                       [](const Request& q, Response& a) { Describe(q, a, "slow"); })
                    .ok());
    ASSERT_TRUE(r.Slow("PUT", "/files/{path...}",
                       [](const Request& q, Response& a) {
                         char buf[64];
                         auto decoded = http::DecodePathParam(q.PathParam("path"), buf, 64);
                         Describe(q, a, decoded ? std::string("slow-put ") + std::string(*decoded)
                                                : std::string("bad"));
                       })
                    .ok());
    // Sleeps ?ms=N first: the parameters must outlast the await, while
    // other requests are routed on the ring.
    ASSERT_TRUE(r.Async("GET", "/async/{a}/{b}/{rest...}",
                        [](async::Exchange& ex) -> async::Task<> {
                          const auto ms = ex.request().QueryParam("ms");
                          const int n = ms.present() ? std::stoi(std::string(*ms)) : 0;
                          (void)co_await ex.Sleep(std::chrono::milliseconds(n));
                          Describe(ex.request(), ex.response(), "async");
                        })
                    .ok());
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 2;
    server_ = std::make_unique<Server>(config, std::move(r));
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }
  std::unique_ptr<Server> server_;
};

TEST_F(PathParamsTest, FastAndSlowHandlersSeeTheirParams) {
  TestClient c(server_->port());
  struct Case {
    std::string request;
    int status;
    std::string body;
  };
  const Case cases[] = {
      {Get("/users/42"), 200, "fast id=42"},
      {Get("/users/me"), 200, "me"},
      {Get("/users/7/posts/99"), 200, "slow id=7 post=99"},
      {Get("/users/7/posts/99?x=1"), 200, "slow id=7 post=99"},
      {"POST /users/5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 200,
       "fast-post id=5 body=abc"},
      {"PUT /files/a/b%20c.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", 200,
       "slow-put a/b c.txt path=a/b c.txt body=hi"},
      {Get("/users/7/posts"), 404, "404 Not Found\n"},
  };
  for (const Case& k : cases) {
    ASSERT_TRUE(c.Send(k.request));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << k.request;
    EXPECT_EQ(r->status, k.status) << k.request;
    EXPECT_EQ(r->body, k.body) << k.request;
  }
}

TEST_F(PathParamsTest, AsyncHandlersKeepTheirParamsAcrossAwaits) {
  // Decoded values short (in the task, after its Headers) and long (past
  // the task's room: a block of their own), raw ones views of the path.
  const std::string long_raw = [] {
    std::string s;
    for (int i = 0; i < 300; ++i) s += "%41";
    return s;
  }();
  const std::string long_decoded(300, 'A');
  struct Case {
    std::string path;
    std::string body;
  };
  const Case cases[] = {
      {"/async/1/x%20y/z", "async a=1 b=x y rest=z"},
      {"/async/first/" + long_raw + "/r/s%2Ft", "async a=first b=" + long_decoded + " rest=r/s/t"},
      {"/async/p/q/", "async a=p b=q rest="},
  };
  for (const Case& k : cases) {
    // The first waits 200 ms while the second, with other parameters, is
    // routed and answered on the same ring.
    TestClient slow(server_->port());
    TestClient fast(server_->port());
    ASSERT_TRUE(slow.Send(Get(k.path + "?ms=200")));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(fast.Send(Get("/async/other/%6Fther/x?ms=0")));
    auto f = fast.ReadResponse();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->body, "async a=other b=other rest=x");
    auto s = slow.ReadResponse();
    ASSERT_TRUE(s.has_value()) << k.path;
    EXPECT_EQ(s->status, 200) << k.path;
    EXPECT_EQ(s->body, k.body) << k.path;
  }
}

TEST_F(PathParamsTest, ParamsSurviveABodyThatArrivesLater) {
  // The head is kept and parsed again when the body ends: FAST and SLOW.
  for (const char* path : {"/users/11", "/files/x/y"}) {
    TestClient c(server_->port());
    const std::string method = std::string(path).rfind("/users", 0) == 0 ? "POST" : "PUT";
    ASSERT_TRUE(c.Send(method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"));
    ASSERT_TRUE(c.Send("wxyz"));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, method == "POST" ? "fast-post id=11 body=wxyz"
                                        : "slow-put x/y path=x/y body=wxyz");
  }
}

TEST_F(PathParamsTest, OptionsAnd405FromTheRouteTable) {
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send("OPTIONS /users/3 HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->Header("allow"), "GET, POST, HEAD, OPTIONS");
  EXPECT_EQ(r->body, "");
  EXPECT_FALSE(r->Closes());

  ASSERT_TRUE(c.Send("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->Header("allow"), "GET, HEAD, POST, PUT, OPTIONS");

  ASSERT_TRUE(c.Send("DELETE /users/7/posts/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("allow"), "GET, HEAD, OPTIONS");

  ASSERT_TRUE(c.Send("OPTIONS /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);

  // The connection went on through all of them.
  ASSERT_TRUE(c.Send(Get("/users/1")));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "fast id=1");
}

}  // namespace
}  // namespace uring_http::serving
