// A static file's encoded variants, driven step by step through a
// connection without a kernel (the statx, openat2 and reads are carried
// out for real on a temporary directory): precompressed siblings
// (StaticOptions::precompressed), what the open-file cache remembers of
// them, the on-the-fly gzip of a compressible file, Cache-Control per
// mount, Vary, and directory listings.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/http1/connection.h"
#include "test/http/gzip_testing.h"
#include "test/http1/connection_harness.h"

namespace uring_http::http1 {
namespace {

using testing::Harness;
using testing::Reply;

std::string Get(std::string_view path, std::string_view extra = "",
                std::string_view method = "GET") {
  return std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" +
         std::string(extra) + "\r\n";
}

std::string Script(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += "function f" + std::to_string(i) + "() { return 1; }\n";
  s.resize(n);
  return s;
}

class FileVariantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/file_variants_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    Write("app.js", Script(5000));
    Write("app.js.gz", "GZIP-BYTES");
    Write("app.js.br", "BROTLI-BYTES");
    Write("plain.js", Script(3000));
    Write("logo.png", std::string(5000, 'p'));
    Write("big.txt", Script(100'000));
    Write("small.txt", "tiny");
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf " + root_).c_str()), 0); }

  void Write(const std::string& name, const std::string& content) {
    std::ofstream(root_ + "/" + name, std::ios::binary | std::ios::trunc) << content;
  }
  // Sets a file's modification time `seconds` before now.
  void Age(const std::string& name, int seconds) {
    timespec times[2];
    clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    ASSERT_EQ(utimensat(AT_FDCWD, (root_ + "/" + name).c_str(), times, 0), 0);
  }

  std::unique_ptr<Harness> Make(router::StaticOptions options, bool gzip_on = false,
                                files::OpenFileCacheLimits limits = {}) {
    router::Router r;
    EXPECT_TRUE(r.Static("/", root_, std::move(options)).ok());
    exchange::ConnectionConfig config;
    config.compression.enabled = gzip_on;
    auto h = std::make_unique<Harness>(std::move(r), config);
    h->EnableFiles(limits, 8, 4096);
    h->Open();
    return h;
  }

  // One request, answered to the end.
  static Reply Ask(Harness& h, const std::string& request, bool head = false) {
    const size_t before = h.wire.size();
    h.Recv(request);
    h.Drive();
    std::vector<Reply> r = testing::ParseReplies(h.wire.substr(before), {head});
    EXPECT_EQ(r.size(), 1u) << request;
    return r.empty() ? Reply() : r[0];
  }

  static void Check(Harness& h) {
    for (const std::string& v : h.host.violations) ADD_FAILURE() << v;
    for (const std::string& e : h.closer().errors) ADD_FAILURE() << e;
  }

  std::string root_;
};

router::StaticOptions Precompressed() {
  router::StaticOptions o;
  o.precompressed = true;
  return o;
}

TEST_F(FileVariantsTest, TheSiblingTheClientWeighsHighestIsSent) {
  auto h = Make(Precompressed());
  const Reply gz = Ask(*h, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(gz.status, 200);
  EXPECT_EQ(gz.body, "GZIP-BYTES");
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(gz.Header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(gz.Header("vary"), "Accept-Encoding");
  EXPECT_EQ(gz.Header("content-length"), "10");

  const Reply br = Ask(*h, Get("/app.js", "Accept-Encoding: gzip, deflate, br, zstd\r\n"));
  EXPECT_EQ(br.body, "BROTLI-BYTES");
  EXPECT_EQ(br.Header("content-encoding"), "br");
  // A higher weight beats the tie order.
  const Reply gz2 = Ask(*h, Get("/app.js", "Accept-Encoding: br;q=0.5, gzip\r\n"));
  EXPECT_EQ(gz2.body, "GZIP-BYTES");

  for (const char* extra : {"", "Accept-Encoding: identity\r\n", "Accept-Encoding: gzip;q=0\r\n",
                            "Accept-Encoding: zstd\r\n"}) {
    const Reply plain = Ask(*h, Get("/app.js", extra));
    EXPECT_EQ(plain.body, Script(5000)) << extra;
    EXPECT_EQ(plain.Header("content-encoding"), "") << extra;
    EXPECT_EQ(plain.Header("vary"), "Accept-Encoding") << extra;  // it could have differed
  }
  // Each representation has its own validator.
  const Reply plain = Ask(*h, Get("/app.js"));
  EXPECT_NE(gz.Header("etag"), plain.Header("etag"));
  EXPECT_NE(gz.Header("etag"), br.Header("etag"));
  EXPECT_NE(br.Header("etag"), plain.Header("etag"));
  EXPECT_EQ(gz.Header("etag").substr(gz.Header("etag").size() - 4), "-gz\"");
  EXPECT_EQ(br.Header("etag").substr(br.Header("etag").size() - 4), "-br\"");
  // A file without siblings: no Vary (nothing else could have been sent).
  const Reply other = Ask(*h, Get("/plain.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(other.body, Script(3000));
  EXPECT_EQ(other.Header("content-encoding"), "");
  EXPECT_EQ(other.Header("vary"), "");
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileVariantsTest, OffByDefault) {
  auto h = Make({});
  const Reply r = Ask(*h, Get("/app.js", "Accept-Encoding: gzip, br\r\n"));
  EXPECT_EQ(r.body, Script(5000));
  EXPECT_EQ(r.Header("content-encoding"), "");
  EXPECT_EQ(r.Header("vary"), "");
  EXPECT_EQ(h->host.file_ops, 3);  // statx, openat2, read: no sibling looked for
  Check(*h);
}

TEST_F(FileVariantsTest, WhatSiblingsAFileHasIsCachedForTheValidInterval) {
  auto h = Make(Precompressed(), false, {.max_entries = 10, .valid_ticks = 10});
  Ask(*h, Get("/plain.js", "Accept-Encoding: gzip\r\n"));
  // statx, openat2, three sibling statx, the read into the cache.
  EXPECT_EQ(h->host.file_ops, 6);
  const Reply again = Ask(*h, Get("/plain.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(again.body, Script(3000));
  EXPECT_EQ(h->host.file_ops, 6);  // no statx of a sibling, nor of the file
  // A sibling served from the cache costs nothing either, once opened.
  Ask(*h, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  const int ops = h->host.file_ops;
  const Reply gz = Ask(*h, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(gz.body, "GZIP-BYTES");
  EXPECT_EQ(h->host.file_ops, ops);
  // Past the interval, a sibling that appeared is found.
  Write("plain.js.gz", "NEW-GZ");
  h->Tick(20);
  const Reply found = Ask(*h, Get("/plain.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(found.body, "NEW-GZ");
  EXPECT_EQ(found.Header("content-encoding"), "gzip");
  Check(*h);
}

TEST_F(FileVariantsTest, ASiblingOlderThanTheFileIsNotSent) {
  Age("app.js.gz", 3600);
  auto h = Make(Precompressed());
  const Reply r = Ask(*h, Get("/app.js", "Accept-Encoding: gzip, br\r\n"));
  EXPECT_EQ(r.body, "BROTLI-BYTES");  // the .br is current
  const Reply g = Ask(*h, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(g.body, Script(5000));
  EXPECT_EQ(g.Header("content-encoding"), "");
  EXPECT_EQ(g.Header("vary"), "Accept-Encoding");
  Check(*h);
}

TEST_F(FileVariantsTest, RangesConditionalsAndHeadApplyToTheSibling) {
  auto h = Make(Precompressed());
  const std::string ae = "Accept-Encoding: gzip\r\n";
  const Reply full = Ask(*h, Get("/app.js", ae));
  const std::string etag = full.Header("etag");
  const Reply part = Ask(*h, Get("/app.js", ae + "Range: bytes=0-3\r\n"));
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, "GZIP");
  EXPECT_EQ(part.Header("content-range"), "bytes 0-3/10");
  EXPECT_EQ(part.Header("content-encoding"), "gzip");
  const Reply if_range = Ask(*h, Get("/app.js", ae + "Range: bytes=0-3\r\nIf-Range: " + etag + "\r\n"));
  EXPECT_EQ(if_range.status, 206);
  const Reply not_modified = Ask(*h, Get("/app.js", ae + "If-None-Match: " + etag + "\r\n"));
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_EQ(not_modified.Header("etag"), etag);
  EXPECT_EQ(not_modified.Header("vary"), "Accept-Encoding");
  // The identity's validator is another representation's: not a match.
  const Reply plain = Ask(*h, Get("/app.js"));
  const Reply other = Ask(*h, Get("/app.js", ae + "If-None-Match: " + plain.Header("etag") + "\r\n"));
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body, "GZIP-BYTES");
  const Reply head = Ask(*h, Get("/app.js", ae, "HEAD"), /*head=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("content-length"), "10");
  EXPECT_EQ(head.Header("content-encoding"), "gzip");
  EXPECT_EQ(head.body, "");
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileVariantsTest, ASiblingGoneWhenOpenedFallsBackToTheFile) {
  auto h = Make(Precompressed());
  h->Recv(Get("/app.js", "Accept-Encoding: gzip\r\n"));
  // statx and openat2 of app.js, then the three sibling statx.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(h->CompleteFileOp());
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->path, "app.js.gz");  // the chosen sibling's own statx
  ASSERT_EQ(unlink((root_ + "/app.js.gz").c_str()), 0);
  h->Drive();
  const std::vector<Reply> r = h->Replies();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].body, Script(5000));
  EXPECT_EQ(r[0].Header("content-encoding"), "");
  EXPECT_EQ(r[0].Header("vary"), "Accept-Encoding");
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileVariantsTest, CompressibleFilesAreGzippedOnceAndKept) {
  auto h = Make({}, /*gzip_on=*/true);
  const std::string ae = "Accept-Encoding: gzip\r\n";
  const Reply gz = Ask(*h, Get("/plain.js", ae));
  EXPECT_EQ(gz.status, 200);
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(gz.Header("vary"), "Accept-Encoding");
  ASSERT_LT(gz.body.size(), 3000u);
  EXPECT_EQ(http::testing::Gunzip(gz.body), Script(3000));
  const std::string etag = gz.Header("etag");
  EXPECT_EQ(etag.substr(0, 3), "W/\"");
  const int ops = h->host.file_ops;
  EXPECT_EQ(ops, 3);  // statx, openat2, the read; compressed from memory
  const Reply again = Ask(*h, Get("/plain.js", ae));
  EXPECT_EQ(again.body, gz.body);
  EXPECT_EQ(h->host.file_ops, ops);
  // Not accepted, a Range, HEAD, a 304.
  const Reply plain = Ask(*h, Get("/plain.js"));
  EXPECT_EQ(plain.body, Script(3000));
  EXPECT_EQ(plain.Header("content-encoding"), "");
  EXPECT_EQ(plain.Header("vary"), "Accept-Encoding");
  EXPECT_NE(plain.Header("etag"), etag);
  const Reply part = Ask(*h, Get("/plain.js", ae + "Range: bytes=0-7\r\n"));
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, Script(3000).substr(0, 8));
  EXPECT_EQ(part.Header("content-encoding"), "");
  const Reply head = Ask(*h, Get("/plain.js", ae, "HEAD"), /*head=*/true);
  EXPECT_EQ(head.Header("content-encoding"), "gzip");
  EXPECT_EQ(head.Header("content-length"), std::to_string(gz.body.size()));
  const Reply same = Ask(*h, Get("/plain.js", ae + "If-None-Match: " + etag + "\r\n"));
  EXPECT_EQ(same.status, 304);
  EXPECT_EQ(same.Header("etag"), etag);
  // Never: an image, a file below the minimum, one too large for the
  // cache's memory (read or spliced as it is). Nor a Vary on them.
  for (const char* path : {"/logo.png", "/small.txt", "/big.txt"}) {
    const Reply r = Ask(*h, Get(path, ae));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.Header("content-encoding"), "") << path;
    EXPECT_EQ(r.Header("vary"), "") << path;
  }
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileVariantsTest, AFirstRequestLoadsTheFileToGzipIt) {
  // The content is not in memory yet when the first client asks: it is
  // read whole, then gzipped, before the head goes out.
  auto h = Make({}, /*gzip_on=*/true);
  const Reply gz = Ask(*h, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(http::testing::Gunzip(gz.body), Script(5000));
  // A mount can refuse it.
  router::StaticOptions no_gzip;
  no_gzip.gzip = false;
  auto h2 = Make(no_gzip, /*gzip_on=*/true);
  const Reply plain = Ask(*h2, Get("/app.js", "Accept-Encoding: gzip\r\n"));
  EXPECT_EQ(plain.Header("content-encoding"), "");
  EXPECT_EQ(plain.Header("vary"), "");
  Check(*h);
  Check(*h2);
}

TEST_F(FileVariantsTest, CacheControlPerMount) {
  router::StaticOptions o;
  o.cache_control = "public, max-age=31536000, immutable";
  auto h = Make(o);
  const Reply r = Ask(*h, Get("/app.js"));
  EXPECT_EQ(r.Header("cache-control"), "public, max-age=31536000, immutable");
  const Reply nm = Ask(*h, Get("/app.js", "If-None-Match: " + r.Header("etag") + "\r\n"));
  EXPECT_EQ(nm.status, 304);
  EXPECT_EQ(nm.Header("cache-control"), "public, max-age=31536000, immutable");
  auto plain = Make({});
  EXPECT_EQ(Ask(*plain, Get("/app.js")).Header("cache-control"), "");
  // A value that would split the header is refused when mounted.
  router::Router bad;
  router::StaticOptions evil;
  evil.cache_control = "max-age=1\r\nSet-Cookie: a=b";
  EXPECT_FALSE(bad.Static("/", root_, evil).ok());
  Check(*h);
}

TEST_F(FileVariantsTest, DirectoryListingsWhenAskedFor) {
  mkdir((root_ + "/pub").c_str(), 0755);
  mkdir((root_ + "/pub/sub dir").c_str(), 0755);
  Write("pub/b.txt", "b");
  Write("pub/a b&<x>\".txt", "a");
  Write("pub/.secret", "s");
  Write("pub/javascript:alert(1)", "j");
  mkdir((root_ + "/docs").c_str(), 0755);
  Write("docs/index.html", "<p>docs</p>");
  auto off = Make({});
  EXPECT_EQ(Ask(*off, Get("/pub/")).status, 404);

  router::StaticOptions o;
  o.list_directories = true;
  auto h = Make(o);
  const Reply r = Ask(*h, Get("/pub/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<a href=\"/pub/a%20b%26%3Cx%3E%22.txt\">a b&amp;&lt;x&gt;&quot;.txt</a>"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("<a href=\"/pub/b.txt\">b.txt</a>"), std::string::npos);
  EXPECT_NE(r.body.find("<a href=\"/pub/sub%20dir/\">sub dir/</a>"), std::string::npos);
  EXPECT_NE(r.body.find("href=\"/pub/javascript%3Aalert%281%29\""), std::string::npos);
  EXPECT_EQ(r.body.find("secret"), std::string::npos);
  EXPECT_LT(r.body.find("a b&amp;"), r.body.find("b.txt"));  // sorted
  EXPECT_LT(r.body.find("b.txt"), r.body.find("javascript"));
  // The root, an index that exists, HEAD, a hidden directory.
  EXPECT_EQ(Ask(*h, Get("/")).status, 200);
  EXPECT_EQ(Ask(*h, Get("/docs/")).body, "<p>docs</p>");
  const Reply head = Ask(*h, Get("/pub/", "", "HEAD"), /*head=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  mkdir((root_ + "/.git").c_str(), 0755);
  EXPECT_EQ(Ask(*h, Get("/.git/")).status, 404);
  EXPECT_EQ(Ask(*h, Get("/nope/")).status, 404);
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

}  // namespace
}  // namespace uring_http::http1
