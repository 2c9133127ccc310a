// The JSON helpers over real sockets, through the public header
// uring_http/json.h only, with curl as the client: a FAST route that
// parses and answers JSON, a SLOW one that converts the body to a struct,
// and the refusals a client sees: malformed JSON (400 with where), a wrong
// or missing Content-Type (415), a value of the wrong shape (400), nesting
// past the bound (400), a body past the route's limit (413, the server's),
// each answered as JSON but the last.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "uring_http/json.h"

namespace uring_http {
namespace {

struct Point {
  int x = 0;
  int y = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Point, x, y)

// What curl saw: the status, the Content-Type and the body.
struct Answer {
  int status = 0;
  std::string content_type;
  std::string body;
};

class JsonServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router::Router router;
    ASSERT_TRUE(router
                    .Fast("POST", "/api/sum",
                          [](const http::Request& req, http::Response& resp) {
                            json::Result<> in = json::Parse(req);
                            if (!in.ok()) return in.ReplyError(resp);
                            if (!in->contains("a") || !in->contains("b")) {
                              return json::ReplyError(resp, 422, "a and b are needed");
                            }
                            json::Reply(resp, {{"sum", (*in)["a"].get<double>() +
                                                           (*in)["b"].get<double>()}});
                          })
                    .ok());
    ASSERT_TRUE(router
                    .Slow("POST", "/api/points",
                          [](const http::Request& req, http::Response& resp) {
                            json::Result<Point> p = json::ParseAs<Point>(req);
                            if (!p.ok()) return p.ReplyError(resp);
                            json::Reply(resp, {{"x", p->x}, {"y", p->y}, {"norm2", p->x * p->x + p->y * p->y}},
                                        201);
                          })
                    .ok());
    router::RouteOptions small;
    small.max_body_bytes = 64;
    ASSERT_TRUE(router
                    .Fast(
                        "POST", "/api/small",
                        [](const http::Request& req, http::Response& resp) {
                          json::Result<> in = json::Parse(req);
                          if (!in.ok()) return in.ReplyError(resp);
                          json::Reply(resp, *in);
                        },
                        small)
                    .ok());
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 1;
    server_ = std::make_unique<serving::Server>(config, std::move(router));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }

  // POSTs `body` to `path` with curl and the extra `args` (headers); args
  // "--json" sends it with curl --json instead.
  Answer Post(const std::string& path, const std::string& body, const std::string& args) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string file = std::string(tmp != nullptr ? tmp : "/tmp") + "/json_server_body";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << body;
    const std::string data = (args == "--json" ? " --json @" : " --data-binary @") + file;
    const std::string cmd = "curl -sS --max-time 30 -w '\\n%{http_code} %{content_type}' " +
                            (args == "--json" ? "" : args) + data + " http://127.0.0.1:" +
                            std::to_string(server_->port()) + path;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return {};
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
    Answer a;
    const size_t last = out.rfind('\n');
    if (last == std::string::npos) return a;
    a.body = out.substr(0, last);
    const std::string tail = out.substr(last + 1);
    a.status = std::atoi(tail.c_str());
    const size_t space = tail.find(' ');
    if (space != std::string::npos) a.content_type = tail.substr(space + 1);
    return a;
  }
  static constexpr const char* kJson = "-H 'Content-Type: application/json'";

  std::unique_ptr<serving::Server> server_;
};

TEST_F(JsonServerTest, GoodBodies) {
  // curl --json: Content-Type and Accept application/json.
  Answer a = Post("/api/sum", R"({"a": 1.5, "b": 2})", "--json");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"sum\":3.5}\n");

  a = Post("/api/sum", R"({"a": 1, "b": 2})", "-H 'Content-Type: application/json; charset=utf-8'");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, "{\"sum\":3.0}\n");

  a = Post("/api/points", R"({"x": 3, "y": -4})", kJson);
  EXPECT_EQ(a.status, 201) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"norm2\":25,\"x\":3,\"y\":-4}\n");

  a = Post("/api/sum", R"({"a": 1})", kJson);
  EXPECT_EQ(a.status, 422);
  EXPECT_EQ(a.body, "{\"error\":\"a and b are needed\"}\n");
}

TEST_F(JsonServerTest, MalformedBodyIs400SayingWhere) {
  Answer a = Post("/api/sum", "{\"a\": 1,\n \"b\": }", kJson);
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body,
            "{\"error\":\"malformed JSON: parse error at line 2, column 7: syntax error while "
            "parsing value - unexpected '}'; expected '[', '{', or a literal (byte 16)\"}\n");
  // Empty, trailing bytes, too deep: 400 from the SLOW route too.
  for (const std::string& bad :
       {std::string(), std::string(R"({"x": 1, "y": 2} {})"), std::string(600, '[')}) {
    a = Post("/api/points", bad, kJson);
    EXPECT_EQ(a.status, 400) << bad;
    EXPECT_EQ(a.body.rfind("{\"error\":\"malformed JSON: ", 0), 0u) << a.body;
  }
  a = Post("/api/points", std::string(600, '['), kJson);
  EXPECT_EQ(a.body, "{\"error\":\"malformed JSON: nested deeper than 512 levels\"}\n");
}

TEST_F(JsonServerTest, WrongShapeIs400) {
  const Answer a = Post("/api/points", R"({"x": "3", "y": 1})", kJson);
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body,
            "{\"error\":\"request body: [json.exception.type_error.302] type must be number, but "
            "is string\"}\n");
}

TEST_F(JsonServerTest, WrongOrMissingContentTypeIs415) {
  // curl -d alone sends a form's type.
  Answer a = Post("/api/sum", R"({"a": 1, "b": 2})", "");
  EXPECT_EQ(a.status, 415);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body,
            "{\"error\":\"Content-Type must be application/json (got "
            "application/x-www-form-urlencoded)\"}\n");
  a = Post("/api/points", R"({"x": 1, "y": 2})", "-H 'Content-Type: text/plain'");
  EXPECT_EQ(a.status, 415);
  // "Content-Type:" with nothing after it: curl sends none.
  a = Post("/api/sum", R"({"a": 1, "b": 2})", "-H 'Content-Type:'");
  EXPECT_EQ(a.status, 415);
  EXPECT_EQ(a.body, "{\"error\":\"Content-Type must be application/json (none was sent)\"}\n");
}

TEST_F(JsonServerTest, BodyPastTheRoutesLimitIs413) {
  Answer a = Post("/api/small", R"({"a": [1, 2, 3]})", kJson);
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, "{\"a\":[1,2,3]}\n");
  a = Post("/api/small", R"({"a": ")" + std::string(100, 'x') + "\"}", kJson);
  EXPECT_EQ(a.status, 413);
}

}  // namespace
}  // namespace uring_http
