// Routing, middleware and error pages from a user's side (issue 23): only
// the public header, a server on port 0, requests over a real socket.
//   - middleware runs around static files and the server's own early
//     answers (400, 408, 413, 431), so a logging middleware sees every
//     response; an error page can be set for any status, and one for all;
//   - path parameters arrive percent-decoded (the raw form beside them),
//     and routes match a clean path ("//" redirected, "%2F" inside a
//     segment);
//   - a CORS preflight is answered with the methods the route table has.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;

struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Sends `request` bytes as they are, reads until the server closes (or
// `wait_ms` pass), and parses the first response.
Answer Exchange(uint16_t port, const std::string& request, int wait_ms = 10000) {
  Answer a;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return a;
  }
  timeval tv{wait_ms / 1000, (wait_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    // One response is enough (a keep-alive connection stays open).
    const size_t cl = in.find("Content-Length: ");
    if (cl != std::string::npos && cl < end &&
        in.size() >= end + 4 + std::strtoul(in.c_str() + cl + 16, nullptr, 10)) {
      break;
    }
  }
  close(fd);
  const size_t end = in.find("\r\n\r\n");
  if (in.size() < 12 || end == std::string::npos) return a;
  a.status = std::atoi(in.c_str() + 9);
  size_t line = in.find("\r\n") + 2;
  while (line < end) {
    const size_t next = in.find("\r\n", line);
    const std::string h = in.substr(line, next - line);
    const size_t colon = h.find(':');
    std::string name = h.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    a.headers[name] += a.headers.count(name) ? ", " + value : value;
    line = next + 2;
  }
  a.body = in.substr(end + 4);
  return a;
}

std::string Get(const std::string& target, const std::string& extra = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + extra + "Connection: close\r\n\r\n";
}

class Served : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.address = "127.0.0.1";
    config_.port = 0;
  }
  void Start() {
    server_ = std::make_unique<uring_http::serving::Server>(config_, std::move(router_));
    ASSERT_TRUE(server_->Start().ok());
    port_ = server_->port();
  }
  void TearDown() override {
    if (server_) {
      server_->Stop();
      server_->Wait();
    }
  }

  uring_http::serving::ServerConfig config_;
  uring_http::router::Router router_;
  std::unique_ptr<uring_http::serving::Server> server_;
  uint16_t port_ = 0;
};

// A logging middleware: every status it sees, in order.
struct Log {
  std::mutex mu;
  std::vector<int> statuses;
  void Add(int s) {
    std::lock_guard<std::mutex> lock(mu);
    statuses.push_back(s);
  }
  std::vector<int> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(statuses);
  }
};

uring_http::router::Middleware Logging(Log* log) {
  uring_http::router::Middleware m;
  m.after = [log](const Request&, Response& r) {
    log->Add(r.status());
    (void)r.AddHeader("X-Logged", "yes");
  };
  return m;
}

// Item 5: the logging middleware sees static files and every early answer.
TEST_F(Served, MiddlewareSeesStaticFilesAndEarlyAnswers) {
  const std::filesystem::path root =
      std::filesystem::path(std::getenv("TEST_TMPDIR")) / "static_mw";
  std::filesystem::create_directories(root);
  std::ofstream(root / "a.txt") << "hello\n";
  Log log;
  router_.Use(Logging(&log));
  ASSERT_TRUE(router_.Static("/files/", root.string()).ok());
  config_.limits.max_body_bytes = 16;
  config_.limits.max_header_bytes = 1024;
  config_.header_timeout_ms = 300;
  Start();

  for (int i = 0; i < 5; ++i) {
    const Answer a = Exchange(port_, Get("/files/a.txt"));
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, "hello\n");
    EXPECT_EQ(a.Header("x-logged"), "yes");
  }
  EXPECT_EQ(Exchange(port_, Get("/files/missing.txt")).status, 404);
  const Answer bad = Exchange(port_, "GARBAGE\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Header("x-logged"), "yes");
  const Answer large =
      Exchange(port_, "POST /files/a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
  EXPECT_EQ(large.status, 413);
  EXPECT_EQ(large.Header("x-logged"), "yes");
  const Answer fields = Exchange(port_, Get("/", "X-Big: " + std::string(2000, 'b') + "\r\n"));
  EXPECT_EQ(fields.status, 431);
  EXPECT_EQ(fields.Header("x-logged"), "yes");
  // A head that never ends: 408 once the header timeout passes.
  const Answer slow = Exchange(port_, "GET / HTTP/1.1\r\nHost: x\r\n", 30000);
  EXPECT_EQ(slow.status, 408);
  EXPECT_EQ(slow.Header("x-logged"), "yes");

  EXPECT_EQ(log.Take(), (std::vector<int>{200, 200, 200, 200, 200, 404, 400, 413, 431, 408}));
}

// Item 5: a JSON API answers every error in JSON: a default page, and one
// of its own for 413.
TEST_F(Served, ErrorPagesForAnyStatusAndADefault) {
  ASSERT_TRUE(router_
                  .SetDefaultErrorHandler([](const Request&, Response& r) {
                    r.set_content_type("application/json");
                    r.set_body("{\"status\":" + std::to_string(r.status()) + "}");
                  })
                  .ok());
  ASSERT_TRUE(router_
                  .SetErrorHandler(413, [](const Request&, Response& r) {
                    r.set_content_type("application/json");
                    r.set_body("{\"error\":\"too large\"}");
                  })
                  .ok());
  ASSERT_TRUE(router_
                  .Fast("POST", "/api/items",
                        [](const Request&, Response& r) { r.set_body("stored"); })
                  .ok());
  config_.limits.max_body_bytes = 16;
  Start();
  const Answer large =
      Exchange(port_, "POST /api/items HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
  EXPECT_EQ(large.status, 413);
  EXPECT_EQ(large.Header("content-type"), "application/json");
  EXPECT_EQ(large.body, "{\"error\":\"too large\"}");
  const Answer bad = Exchange(port_, "GARBAGE\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "{\"status\":400}");
  const Answer missing = Exchange(port_, Get("/nothing"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "{\"status\":404}");
  const Answer method = Exchange(port_, Get("/api/items"));
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(method.body, "{\"status\":405}");
  EXPECT_NE(method.Header("allow").find("POST"), std::string::npos);
}

// Item 6: parameters decoded as Go's PathValue, the raw form beside them,
// and a clean path matched.
TEST_F(Served, PathParametersArriveDecoded) {
  ASSERT_TRUE(router_
                  .Fast("GET", "/api/items/{id}",
                        [](const Request& req, Response& r) {
                          r.set_body(std::string(req.PathParam("id")) + "|" +
                                     std::string(req.RawPathParam("id")));
                        })
                  .ok());
  Start();
  EXPECT_EQ(Exchange(port_, Get("/api/items/%31")).body, "1|%31");
  EXPECT_EQ(Exchange(port_, Get("/api/items/a%2Fb")).body, "a/b|a%2Fb");
  EXPECT_EQ(Exchange(port_, Get("/api/items/caf%C3%A9")).body, "caf\xc3\xa9|caf%C3%A9");
  EXPECT_EQ(Exchange(port_, Get("/%61pi/items/7")).body, "7|7");
  EXPECT_EQ(Exchange(port_, Get("/api/items/a+b")).body, "a+b|a+b");
  // "%2F" never splits a segment: two segments after /api, not three.
  EXPECT_EQ(Exchange(port_, Get("/api%2Fitems/7")).status, 404);
  // Unclean paths are redirected to the clean one, the query kept.
  const Answer slashes = Exchange(port_, Get("//api//items/7?x=1"));
  EXPECT_EQ(slashes.status, 301);
  EXPECT_EQ(slashes.Header("location"), "/api/items/7?x=1");
  const Answer dots = Exchange(
      port_, "DELETE /api/x/../items/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(dots.status, 308);
  EXPECT_EQ(dots.Header("location"), "/api/items/7");
  EXPECT_EQ(Exchange(port_, Get("/api/items/100%")).status, 400);
}

// Item 7: a preflight for DELETE is allowed because the table has DELETE.
TEST_F(Served, CorsPreflightNamesTheRoutesMethods) {
  auto cors = uring_http::middleware::Cors({});
  ASSERT_TRUE(cors.ok());
  router_.Use(*cors);
  auto ok = [](const Request&, Response& r) { r.set_body("ok"); };
  ASSERT_TRUE(router_.Fast("GET", "/api/items/{id}", ok).ok());
  ASSERT_TRUE(router_.Fast("DELETE", "/api/items/{id}", ok).ok());
  ASSERT_TRUE(router_.Slow("PUT", "/api/items/{id}", ok).ok());
  ASSERT_TRUE(router_.Fast("POST", "/api/items", ok).ok());
  Start();
  const std::string preflight =
      "OPTIONS /api/items/7 HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
      "Access-Control-Request-Method: DELETE\r\nConnection: close\r\n\r\n";
  const Answer a = Exchange(port_, preflight);
  EXPECT_EQ(a.status, 204);
  EXPECT_EQ(a.Header("access-control-allow-origin"), "*");
  const std::string methods = a.Header("access-control-allow-methods");
  EXPECT_NE(methods.find("DELETE"), std::string::npos) << methods;
  EXPECT_NE(methods.find("PUT"), std::string::npos) << methods;
  EXPECT_NE(methods.find("GET"), std::string::npos) << methods;
  EXPECT_EQ(methods.find("POST"), std::string::npos) << methods;  // another path's
  const Answer other = Exchange(
      port_,
      "OPTIONS /api/items HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
      "Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(other.status, 204);
  EXPECT_NE(other.Header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(other.Header("access-control-allow-methods").find("DELETE"), std::string::npos);
}

}  // namespace
