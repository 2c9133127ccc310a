// Static files' encodings, Cache-Control and listings over real sockets,
// through the public header only: a precompressed sibling, the on-the-fly
// gzip (decoded by zlib, and by curl --compressed where curl is
// installed), a mount's Cache-Control, and a directory listing.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/http/gzip_testing.h"
#include "test/serving/http_client.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

using testing::TestClient;

std::string Css(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += ".c" + std::to_string(i) + " { color: #123456; }\n";
  s.resize(n);
  return s;
}

class StaticEncodingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/static_encodings_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    Write("site.css", Css(8000));
    Write("app.js", "console.log('identity');\n");
    Write("app.js.gz", "precompressed gzip bytes");
    mkdir((root_ + "/pub").c_str(), 0755);
    Write("pub/read me.txt", "x");
    Write("pub/.env", "SECRET");

    router::Router r;
    router::StaticOptions assets;
    assets.precompressed = true;
    assets.cache_control = "public, max-age=31536000, immutable";
    ASSERT_TRUE(r.Static("/assets/", root_, assets).ok());
    router::StaticOptions listed;
    listed.list_directories = true;
    ASSERT_TRUE(r.Static("/", root_, listed).ok());
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 1;
    config.compression.enabled = true;
    server_ = std::make_unique<serving::Server>(config, std::move(r));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
    ASSERT_EQ(std::system(("rm -rf " + root_).c_str()), 0);
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(root_ + "/" + name, std::ios::binary | std::ios::trunc) << content;
  }
  std::optional<testing::HttpResponse> Fetch(std::string_view path, std::string_view headers) {
    TestClient client(server_->port());
    if (!client.Send(testing::Get(path, headers))) return std::nullopt;
    return client.ReadResponse();
  }

  std::string root_;
  std::unique_ptr<serving::Server> server_;
};

TEST_F(StaticEncodingsTest, PrecompressedSiblingWithCacheControl) {
  const auto gz = Fetch("/assets/app.js", "Accept-Encoding: gzip, br\r\n");
  ASSERT_TRUE(gz.has_value());
  EXPECT_EQ(gz->status, 200);
  EXPECT_EQ(gz->body, "precompressed gzip bytes");
  EXPECT_EQ(gz->Header("content-encoding"), "gzip");
  EXPECT_EQ(gz->Header("vary"), "Accept-Encoding");
  EXPECT_EQ(gz->Header("cache-control"), "public, max-age=31536000, immutable");
  const auto plain = Fetch("/assets/app.js", "");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->body, "console.log('identity');\n");
  EXPECT_EQ(plain->Header("content-encoding"), "");
  EXPECT_EQ(plain->Header("vary"), "Accept-Encoding");
  EXPECT_NE(plain->Header("etag"), gz->Header("etag"));
  // The other mount has no Cache-Control and ignores siblings.
  const auto other = Fetch("/app.js", "Accept-Encoding: gzip\r\n");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->body, "console.log('identity');\n");
  EXPECT_EQ(other->Header("cache-control"), "");
}

TEST_F(StaticEncodingsTest, CompressibleFileGzippedOnTheFly) {
  for (int i = 0; i < 2; ++i) {  // made, then from the cache
    const auto r = Fetch("/site.css", "Accept-Encoding: gzip\r\n");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->Header("content-encoding"), "gzip");
    EXPECT_EQ(r->Header("vary"), "Accept-Encoding");
    EXPECT_LT(r->body.size(), 4000u);
    EXPECT_EQ(http::testing::Gunzip(r->body), Css(8000));
  }
  // curl, as a browser-like client would.
  const std::string cmd = "curl -sS --compressed -o - -w '\\n%{http_code}' http://127.0.0.1:" +
                          std::to_string(server_->port()) + "/site.css 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  if (pclose(p) != 0 && out.find("not found") != std::string::npos) GTEST_SKIP() << "no curl";
  EXPECT_EQ(out, Css(8000) + "\n200");
}

TEST_F(StaticEncodingsTest, DirectoryListing) {
  const auto r = Fetch("/pub/", "");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("<a href=\"/pub/read%20me.txt\">read me.txt</a>"), std::string::npos)
      << r->body;
  EXPECT_EQ(r->body.find(".env"), std::string::npos);
  // The mount that does not list: 404.
  const auto off = Fetch("/assets/pub/", "");
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->status, 404);
}

}  // namespace
}  // namespace uring_http
