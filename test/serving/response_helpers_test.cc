// The response helpers and trailing-slash redirects over real sockets,
// through the public header only: what a client (and curl -L) sees of a
// redirect, a download's Content-Disposition, cookies and Cache-Control.
#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

using testing::TestClient;

class ResponseHelpersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router::Router r;
    ASSERT_TRUE(r.Fast("GET", "/old", [](const http::Request& req, http::Response& resp) {
      // What a client sent, passed on: the helper refuses what would split the head.
      const http::ParamValue to = req.QueryParam("to");
      if (!http::Redirect(resp, to ? to.value() : "/new", 301)) {
        resp.set_status(400);
        resp.set_body("bad redirect\n");
      }
    }).ok());
    ASSERT_TRUE(r.Fast("GET", "/new", [](const http::Request&, http::Response& resp) {
      resp.set_body("new\n");
    }).ok());
    ASSERT_TRUE(r.Fast("GET", "/docs", [](const http::Request&, http::Response& resp) {
      resp.set_body("docs\n");
    }).ok());
    ASSERT_TRUE(r.Fast("POST", "/api/items/", [](const http::Request&, http::Response& resp) {
      resp.set_body("created\n");
    }).ok());
    ASSERT_TRUE(r.Fast("GET", "/download", [](const http::Request&, http::Response& resp) {
      (void)http::SetContentDisposition(resp, "r\xc3\xa9sum\xc3\xa9.csv");
      http::CacheControl cc;
      cc.no_store = true;
      (void)http::SetCacheControl(resp, cc);
      http::SetCookieOptions session;
      session.path = "/";
      session.http_only = true;
      session.secure = true;
      session.same_site = http::SameSite::kLax;
      EXPECT_TRUE(http::SetCookie(resp, "sid", "abc", session).ok());
      EXPECT_FALSE(http::SetCookie(resp, "bad", "a;b").ok());
      resp.set_content_type("text/csv");
      resp.set_body("a,b\n");
    }).ok());
    r.RedirectTrailingSlash();
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 1;
    server_ = std::make_unique<serving::Server>(config, std::move(r));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }
  std::optional<testing::HttpResponse> Send(const std::string& request) {
    TestClient client(server_->port());
    if (!client.Send(request)) return std::nullopt;
    return client.ReadResponse();
  }
  std::string Curl(const std::string& args) {
    const std::string cmd = "curl -sS " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    if (p == nullptr) return out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    pclose(p);
    return out;
  }
  std::string Url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
  }

  std::unique_ptr<serving::Server> server_;
};

TEST_F(ResponseHelpersTest, RedirectsAreSafe) {
  const auto r = Send(testing::Get("/old"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 301);
  EXPECT_EQ(r->Header("location"), "/new");
  // %0d%0a decoded by QueryParam: refused, no header injected.
  const auto evil = Send(testing::Get("/old?to=/x%0d%0aSet-Cookie:%20pwned=1"));
  ASSERT_TRUE(evil.has_value());
  EXPECT_EQ(evil->status, 400);
  EXPECT_EQ(evil->Header("set-cookie"), "");
  EXPECT_EQ(evil->Header("location"), "");
  if (Curl("--version").find("curl") == std::string::npos) GTEST_SKIP() << "no curl";
  EXPECT_EQ(Curl("-L " + Url("/old")), "new\n");
}

TEST_F(ResponseHelpersTest, TrailingSlashRedirects) {
  const auto get = Send(testing::Get("/docs/?page=2"));
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->status, 301);
  EXPECT_EQ(get->Header("location"), "/docs?page=2");
  // Another method keeps its method and body: 308.
  const auto post = Send("POST /api/items HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(post->status, 308);
  EXPECT_EQ(post->Header("location"), "/api/items/");
  // "//host/" never becomes a Location to another host.
  const auto twice = Send(testing::Get("//docs/"));
  ASSERT_TRUE(twice.has_value());
  // (The clean-path rule answers it first: 301 to "/docs/", then the twin
  // rule to "/docs"; either way a path on this host, never "//...".)
  ASSERT_EQ(twice->status, 301);
  const std::string location(twice->Header("location"));
  EXPECT_TRUE(location == "/docs/" || location == "/docs") << location;
  // No twin: still 404; the twin for another method only: 404 too.
  EXPECT_EQ(Send(testing::Get("/nothing/"))->status, 404);
  EXPECT_EQ(Send(testing::Get("/api/items"))->status, 404);
  if (Curl("--version").find("curl") == std::string::npos) GTEST_SKIP() << "no curl";
  EXPECT_EQ(Curl("-L " + Url("/docs/")), "docs\n");
}

TEST_F(ResponseHelpersTest, DownloadCookiesAndCacheControl) {
  const auto r = Send(testing::Get("/download"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-disposition"),
            "attachment; filename=\"r_sum_.csv\"; filename*=UTF-8''r%C3%A9sum%C3%A9.csv");
  EXPECT_EQ(r->Header("cache-control"), "no-store");
  EXPECT_EQ(r->Header("set-cookie"), "sid=abc; Path=/; Secure; HttpOnly; SameSite=Lax");
  if (Curl("--version").find("curl") == std::string::npos) GTEST_SKIP() << "no curl";
  // curl -J takes the file name from the header.
  const std::string dir = "/tmp/response_helpers_" + std::to_string(server_->port());
  Curl("--create-dirs --output-dir " + dir + " -O -J " + Url("/download"));
  FILE* f = fopen((dir + "/r\xc3\xa9sum\xc3\xa9.csv").c_str(), "r");
  FILE* g = f != nullptr ? nullptr : fopen((dir + "/r_sum_.csv").c_str(), "r");
  EXPECT_TRUE(f != nullptr || g != nullptr) << "curl -J saved no file under " << dir;
  if (f != nullptr) fclose(f);
  if (g != nullptr) fclose(g);
  (void)std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace uring_http
