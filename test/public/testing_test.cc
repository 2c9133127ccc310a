// The test helpers (uring_http/testing.h) as a user's test uses them,
// through the public headers only: a TestServer with the user's routes and
// its Client, for every verb, keep-alive, HEAD, chunked bodies and
// trailers, streamed downloads and uploads, 100-continue, early answers,
// timeouts, and a server that did not start.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "uring_http/testing.h"
#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;
using uring_http::testing::Client;
using uring_http::testing::ClientRequest;
using uring_http::testing::TestServer;
namespace router = uring_http::router;
namespace serving = uring_http::serving;

// A SLOW handler waits on it until the test opens it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class CountingSink : public router::BodySink {
 public:
  void OnData(std::string_view piece) override {
    bytes_ += piece.size();
    ++pieces_;
  }
  void OnEnd(const Request&, Response& response) override {
    response.set_body("got " + std::to_string(bytes_) + " bytes");
  }

 private:
  size_t bytes_ = 0;
  size_t pieces_ = 0;
};

class TestingTest : public ::testing::Test {
 protected:
  static serving::ServerConfig Config() {
    serving::ServerConfig config;
    config.workers = 2;
    return config;
  }

  // The routes the tests below use.
  static router::Router Routes(Gate* gate) {
    router::Router r;
    auto ok = [](absl::Status s) { EXPECT_TRUE(s.ok()) << s; };
    ok(r.Fast("GET", "/users/{id}", [](const Request& req, Response& resp) {
      resp.set_content_type("application/json");
      resp.set_body("{\"id\":\"" + std::string(req.PathParam("id")) + "\",\"accept\":\"" +
                    std::string(req.FindHeader("accept")) + "\"}");
    }));
    // METHOD content-type body
    auto echo = [](const Request& req, Response& resp) {
      resp.set_body(std::string(req.method) + " " + std::string(req.FindHeader("content-type")) +
                    " " + std::string(req.body));
    };
    for (const char* method : {"POST", "PUT", "PATCH", "DELETE", "REPORT"}) {
      ok(r.Fast(method, "/echo", echo));
    }
    // Three chunks and a trailer.
    ok(r.Fast("GET", "/chunked", [](const Request&, Response& resp) {
      auto left = std::make_shared<int>(3);
      resp.Stream([left](uring_http::http::BodyOutput& out) {
        out.Write("part" + std::to_string(*left) + ";");
        return --*left == 0;
      });
      EXPECT_TRUE(resp.AddTrailer("X-Checksum", "abc123"));
    }));
    // ?n pieces of 1000 bytes, streamed by a SLOW handler.
    ok(r.Slow("GET", "/pieces", [](const Request& req, Response& resp) {
      const int n = std::stoi("0" + std::string(req.QueryParam("n").value()));
      for (int i = 0; i < n; ++i) {
        if (!resp.Write(std::string(1000, static_cast<char>('a' + i % 26)))) return;
      }
    }));
    ok(r.FastStream("POST", "/upload", [](const Request&) {
      return std::make_unique<CountingSink>();
    }));
    router::RouteOptions small;
    small.max_body_bytes = 1000;
    ok(r.Fast("POST", "/small", echo, small));
    router::RouteOptions streamed;
    streamed.body = router::BodyMode::kStreamed;
    ok(r.Slow("POST", "/slow-upload", [](const Request& req, Response& resp) {
      size_t total = 0;
      char buf[4096];
      long n;
      while ((n = req.ReadBody(buf, sizeof(buf))) > 0) total += static_cast<size_t>(n);
      resp.set_body("read " + std::to_string(total));
    }, streamed));
    ok(r.Slow("GET", "/wait", [gate](const Request&, Response& resp) {
      gate->Wait();
      resp.set_body("opened");
    }));
    return r;
  }

  void SetUp() override {
    server_ = std::make_unique<TestServer>(Config(), Routes(&gate_));
    ASSERT_TRUE(server_->ok()) << server_->status();
  }
  void TearDown() override {
    gate_.Open();
    server_.reset();
  }

  Gate gate_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(TestingTest, GetReadsStatusHeadersAndBodyOverOneConnection) {
  Client client = server_->client();
  for (int i = 0; i < 3; ++i) {
    auto r = client.Get("/users/42", {{"Accept", "application/json"}});
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.reason, "OK");
    EXPECT_EQ(r.version, "HTTP/1.1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.header("Content-Type"), "application/json");  // any case
    EXPECT_TRUE(r.has_header("date"));
    EXPECT_FALSE(r.has_header("x-nothing"));
    EXPECT_EQ(r.header("x-nothing"), "");
    EXPECT_EQ(r.body, "{\"id\":\"42\",\"accept\":\"application/json\"}");
    EXPECT_FALSE(r.connection_closed);
  }
  EXPECT_EQ(client.connections_opened(), 1);  // kept alive
  EXPECT_EQ(server_->server().Stats().accepted, 1u);
  EXPECT_EQ(client.Get("/nowhere").status, 404);
  EXPECT_EQ(server_->url(), "http://127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(TestingTest, VerbsSendTheirBodiesAndContentTypes) {
  Client client = server_->client();
  EXPECT_EQ(client.Post("/echo", "a=1", "application/x-www-form-urlencoded").body,
            "POST application/x-www-form-urlencoded a=1");
  EXPECT_EQ(client.Put("/echo", "{}", "application/json").body, "PUT application/json {}");
  EXPECT_EQ(client.Patch("/echo", "p").body, "PATCH  p");
  EXPECT_EQ(client.Delete("/echo").body, "DELETE  ");
  EXPECT_EQ(client.Request("REPORT", "/echo", "r", {{"Content-Type", "text/plain"}}).body,
            "REPORT text/plain r");
  // An empty POST is sent with Content-Length: 0.
  EXPECT_EQ(client.Post("/echo", "").body, "POST  ");
  // A Content-Type among the headers wins over the argument.
  EXPECT_EQ(client.Post("/echo", "x", "text/plain", {{"content-type", "text/csv"}}).body,
            "POST text/csv x");
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(TestingTest, HeadGetsTheHeadOnlyAndTheConnectionGoesOn) {
  Client client = server_->client();
  auto r = client.Head("/users/7");
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-length"), "22");  // GET's length, no body
  EXPECT_EQ(r.body, "");
  r = client.Get("/users/7");
  EXPECT_EQ(r.body.size(), 22u) << r;
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(TestingTest, FreshConnectionsOnDemand) {
  Client client = server_->client();
  EXPECT_EQ(client.Get("/users/1").status, 200);
  ClientRequest fresh;
  fresh.target = "/users/2";
  fresh.new_connection = true;
  EXPECT_EQ(client.Do(fresh).status, 200);
  EXPECT_EQ(client.connections_opened(), 2);
  client.CloseConnection();
  EXPECT_EQ(client.Get("/users/3").status, 200);
  EXPECT_EQ(client.connections_opened(), 3);

  // Without keep-alive: "Connection: close" on each, the server closes.
  uring_http::testing::ClientOptions once;
  once.keep_alive = false;
  Client closing = server_->client(once);
  for (int i = 0; i < 2; ++i) {
    auto r = closing.Get("/users/4");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(r.connection_closed);
  }
  EXPECT_EQ(closing.connections_opened(), 2);
}

TEST_F(TestingTest, ChunkedBodyIsDecodedAndItsTrailersKept) {
  Client client = server_->client();
  auto r = client.Get("/chunked");
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  EXPECT_EQ(r.body, "part3;part2;part1;");
  EXPECT_EQ(r.trailer("x-checksum"), "abc123");
  EXPECT_EQ(r.header("x-checksum"), "");  // apart from the headers
  EXPECT_EQ(client.Get("/chunked").body, "part3;part2;part1;");
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(TestingTest, StreamedDownloadComesPieceByPieceAndMayStopEarly) {
  Client client = server_->client();
  ClientRequest get;
  get.target = "/pieces?n=50";
  size_t bytes = 0;
  int pieces = 0;
  get.on_body = [&](std::string_view piece) {
    EXPECT_FALSE(piece.empty());
    bytes += piece.size();
    ++pieces;
    return true;
  };
  auto r = client.Do(get);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(bytes, 50'000u);
  EXPECT_GE(pieces, 1);
  EXPECT_EQ(r.body, "");  // on_body took it
  EXPECT_FALSE(r.connection_closed);

  // Stopping after the first piece: the rest is not read, the connection
  // goes, and the next request gets a new one.
  std::string first;
  get.target = "/pieces?n=1000";
  get.on_body = [&](std::string_view piece) {
    first = std::string(piece);
    return false;
  };
  r = client.Do(get);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first[0], 'a');
  EXPECT_TRUE(r.connection_closed);
  EXPECT_EQ(client.Get("/users/1").status, 200);
  EXPECT_EQ(client.connections_opened(), 2);
}

TEST_F(TestingTest, StreamedUploadIsSentInChunks) {
  Client client = server_->client();
  ClientRequest post;
  post.method = "POST";
  post.target = "/upload";
  int left = 100;
  post.body_source = [&]() -> std::optional<std::string> {
    if (left == 0) return std::nullopt;
    --left;
    return std::string(1000, 'u');
  };
  post.trailers = {{"X-Sum", "100"}};
  auto r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "got 100000 bytes");
  EXPECT_EQ(left, 0);

  // To a SLOW handler reading it with ReadBody, with a Content-Length: the
  // pieces go as they are.
  post.target = "/slow-upload";
  post.headers = {{"Content-Length", "30000"}};
  post.trailers.clear();
  left = 30;
  r = client.Do(post);
  EXPECT_EQ(r.body, "read 30000") << r;
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(TestingTest, ExpectContinueWaitsForTheHundred) {
  Client client = server_->client();
  ClientRequest post;
  post.method = "POST";
  post.target = "/echo";
  post.headers = {{"Expect", "100-continue"}};
  post.body = "after the 100";
  auto r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.informational, std::vector<int>{100});
  EXPECT_EQ(r.body, "POST  after the 100");

  // Too large for the route: answered before the body, which is not sent.
  post.target = "/small";
  post.body = std::string(5000, 'x');
  r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.informational.empty());
  EXPECT_TRUE(r.connection_closed);
  EXPECT_EQ(client.Get("/users/1").status, 200);
}

TEST_F(TestingTest, AnAnswerBeforeTheUploadEndsStopsTheUpload) {
  Client client = server_->client();
  ClientRequest post;
  post.method = "POST";
  post.target = "/small";  // 413 past 1000 bytes
  // The upload never ends by itself: only the server's answer stops it.
  int sent = 0;
  post.body_source = [&]() -> std::optional<std::string> {
    ++sent;
    return std::string(1000, 'b');
  };
  auto r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.connection_closed);
  EXPECT_GE(sent, 2);
  EXPECT_EQ(client.Get("/users/1").status, 200);
}

TEST_F(TestingTest, TimeoutIsAnErrorNotAHang) {
  Client client = server_->client();
  ClientRequest wait;
  wait.target = "/wait";
  wait.timeout = std::chrono::milliseconds(200);
  auto r = client.Do(wait);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.error)) << r.error;
  EXPECT_EQ(r.error.message(),
            "GET /wait: timed out before any byte of the response came (timeout 200 ms)");
  std::ostringstream printed;
  printed << r;
  EXPECT_EQ(printed.str(), "no response: " + r.error.ToString());
  gate_.Open();
  // The late answer is not taken for the next request's.
  auto next = client.Get("/users/5");
  EXPECT_EQ(next.body, "{\"id\":\"5\",\"accept\":\"\"}") << next;
  EXPECT_EQ(client.connections_opened(), 2);
}

TEST_F(TestingTest, ResponsePrintsItsHeadAndBody) {
  auto r = server_->client().Get("/users/9");
  std::ostringstream printed;
  printed << r;
  EXPECT_EQ(printed.str().rfind("HTTP/1.1 200 OK | ", 0), 0u) << printed.str();
  EXPECT_NE(printed.str().find(" | Content-Type: application/json | "), std::string::npos)
      << printed.str();
  EXPECT_NE(printed.str().find("body (22 bytes): \"{\\\"id\\\":\\\"9\\\""), std::string::npos)
      << printed.str();
}

TEST_F(TestingTest, RawBytesForRequestsTheVerbsCannotWrite) {
  Client client = server_->client();
  // Two pipelined in one write, then a malformed one.
  ASSERT_TRUE(client
                  .SendRaw("GET /users/1 HTTP/1.1\r\nHost: t\r\n\r\n"
                           "HEAD /users/2 HTTP/1.1\r\nHost: t\r\n\r\n")
                  .ok());
  EXPECT_EQ(client.ReadResponse().body, "{\"id\":\"1\",\"accept\":\"\"}");
  auto head = client.ReadResponse(/*head=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  ASSERT_TRUE(client.SendRaw("GET /users/1 HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n").ok());
  auto bad = client.ReadResponse();
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(bad.connection_closed);
  // A header the verbs cannot send is refused, not sent.
  auto refused = client.Get("/users/1", {{"X-Split", "a\r\nInjected: 1"}});
  EXPECT_EQ(refused.status, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.error)) << refused.error;
}

TEST_F(TestingTest, OneClientFromSeveralThreads) {
  Client shared = server_->client();
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Client own = server_->client();
      for (int i = 0; i < 20; ++i) {
        const std::string id = std::to_string(t * 100 + i);
        const std::string want = "{\"id\":\"" + id + "\",\"accept\":\"\"}";
        if (shared.Get("/users/" + id).body == want) ++good;
        if (own.Get("/users/" + id).body == want) ++good;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(good.load(), 160);
  EXPECT_EQ(shared.connections_opened(), 1);  // the calls took turns
}

TEST_F(TestingTest, StoppedServerLeavesItsClientsAClearError) {
  Client client = server_->client();
  EXPECT_EQ(client.Get("/users/1").status, 200);
  // Its idle keep-alive connection does not hold the stop up.
  server_->Stop();
  auto r = client.Get("/users/1");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r.error;
  EXPECT_NE(r.error.message().find("GET /users/1: cannot connect to 127.0.0.1:"),
            std::string::npos)
      << r.error;
}

TEST(TestServerTest, ThatDidNotStartSaysWhyAndSoDoItsClients) {
  serving::ServerConfig config;
  config.tls.certificates = {{"/nonexistent/cert.pem", "/nonexistent/key.pem"}};
  TestServer server(config, router::Router());
  EXPECT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("the test server did not start: "), std::string::npos)
      << server.status();
  auto r = server.client().Get("/");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error.code(), server.status().code());
  EXPECT_NE(r.error.message().find("GET /: the test server did not start: "), std::string::npos)
      << r.error;
}

TEST(TestServerTest, DefaultConfigurationAndBuiltInEndpoints) {
  router::Router r;
  ASSERT_TRUE(r.Fast("GET", "/", [](const Request&, Response& resp) {
                 resp.set_body("root");
               }).ok());
  TestServer server(std::move(r));
  ASSERT_TRUE(server.ok()) << server.status();
  Client client = server.client();
  EXPECT_EQ(client.Get("/").body, "root");
  EXPECT_EQ(client.Get("/healthz").body, "ok\n");
  EXPECT_NE(client.Get("/metrics").body.find("uring_http_"), std::string::npos);
  auto plain = server.plain_client().Get("/");
  EXPECT_TRUE(absl::IsFailedPrecondition(plain.error)) << plain.error;
}

}  // namespace
