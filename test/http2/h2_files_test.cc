// Static files over HTTP/2 (h2c), end to end: the same answers as over
// HTTP/1 (src/http1/file_answer.cc) framed as HTTP/2 streams. Small files
// from the cache's memory, large ones read a buffer at a time, many at once
// on one connection and within small client windows (every byte checked);
// HEAD, Range, the conditional fields, a directory's redirect and index,
// dotfiles and paths outside the root as absent; the mount's middleware
// around it; precompressed siblings and the cache's gzip, chosen by
// Accept-Encoding as over HTTP/1 (src/http1/file_variants.cc); a stream
// reset mid-file and a client that leaves, after which the connection (or
// the server) goes on.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/time.h>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/http/gzip_testing.h"
#include "test/http2/h2_client.h"

namespace uring_http::serving {
namespace {

using testing::H2Client;

std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
  return s;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class H2FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/h2files.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    small_ = Pattern(1024, 1);
    medium_ = Pattern(60 * 1024, 2);       // kept in the cache's memory
    large_ = Pattern(3 * 1024 * 1024 + 77, 3);  // read a buffer at a time
    WriteFile(root_ + "/small.txt", small_);
    WriteFile(root_ + "/medium.bin", medium_);
    WriteFile(root_ + "/large.bin", large_);
    WriteFile(root_ + "/empty.txt", "");
    WriteFile(root_ + "/.env", "SECRET=1");
    ASSERT_EQ(mkdir((root_ + "/docs").c_str(), 0755), 0);
    WriteFile(root_ + "/docs/index.html", "<p>docs</p>");
    ASSERT_EQ(symlink("/etc/hostname", (root_ + "/outside").c_str()), 0);
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
    std::system(("rm -rf " + root_).c_str());
  }

  void Start(router::StaticOptions options = {}, uint32_t file_buffers = 0, bool gzip = false) {
    router::Router r;
    (void)r.Fast("GET", "/hello", [](const http::Request&, http::Response& resp) {
      resp.set_body("hello");
    });
    ASSERT_TRUE(r.Static("/", root_, std::move(options)).ok());
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 1;
    config.http2 = true;
    config.file_buffer_count = file_buffers;
    config.compression.enabled = gzip;
    server_ = std::make_unique<Server>(config, std::move(r));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  uint16_t port() const { return server_->port(); }

  std::string root_;
  std::string small_, medium_, large_;
  std::unique_ptr<Server> server_;
};

TEST_F(H2FilesTest, FilesOfEverySizeWholeAndTheirFields) {
  Start();
  H2Client c(port());
  ASSERT_TRUE(c.connected());
  const int32_t small = c.Submit("GET", "/small.txt");
  const int32_t medium = c.Submit("GET", "/medium.bin");
  const int32_t large = c.Submit("GET", "/large.bin");
  const int32_t empty = c.Submit("GET", "/empty.txt");
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(small).status, 200);
  EXPECT_TRUE(c.answer(small).body == small_);
  EXPECT_EQ(c.answer(small).fields.at("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(c.answer(small).fields.at("content-length"), "1024");
  EXPECT_EQ(c.answer(small).fields.at("accept-ranges"), "bytes");
  EXPECT_FALSE(c.answer(small).fields.at("etag").empty());
  EXPECT_FALSE(c.answer(small).fields.at("last-modified").empty());
  EXPECT_EQ(c.answer(medium).body.size(), medium_.size());
  EXPECT_TRUE(c.answer(medium).body == medium_);
  EXPECT_EQ(c.answer(large).body.size(), large_.size());
  EXPECT_TRUE(c.answer(large).body == large_);
  EXPECT_EQ(c.answer(empty).status, 200);
  EXPECT_EQ(c.answer(empty).fields.at("content-length"), "0");
  EXPECT_EQ(c.answer(empty).body, "");
  // Again: now from the cache (its memory for the small ones).
  const int32_t again = c.Submit("GET", "/medium.bin");
  ASSERT_TRUE(c.Run());
  EXPECT_TRUE(c.answer(again).body == medium_);
}

TEST_F(H2FilesTest, ManyFilesAtOnceWithinSmallWindows) {
  // Two file buffers for the loop: streams wait for them, and take turns
  // at the kernel; 16 KiB windows hold every stream back.
  Start({}, /*file_buffers=*/2);
  H2Client c(port(), 20000, /*initial_window=*/16 * 1024);
  std::vector<std::pair<int32_t, const std::string*>> ids;
  for (int i = 0; i < 30; ++i) {
    const char* path = i % 3 == 0 ? "/large.bin" : i % 3 == 1 ? "/medium.bin" : "/small.txt";
    const std::string* want = i % 3 == 0 ? &large_ : i % 3 == 1 ? &medium_ : &small_;
    ids.push_back({c.Submit("GET", path), want});
  }
  const int32_t hello = c.Submit("GET", "/hello");
  ASSERT_TRUE(c.Run());
  for (const auto& [id, want] : ids) {
    EXPECT_EQ(c.answer(id).status, 200);
    EXPECT_EQ(c.answer(id).body.size(), want->size());
    EXPECT_TRUE(c.answer(id).body == *want) << "stream " << id;
  }
  EXPECT_EQ(c.answer(hello).body, "hello");
}

TEST_F(H2FilesTest, HeadRangesAndConditions) {
  Start();
  H2Client c(port());
  const int32_t first = c.Submit("GET", "/large.bin");
  ASSERT_TRUE(c.Run());
  const std::string etag = c.answer(first).fields.at("etag");
  const int32_t head = c.Submit("HEAD", "/large.bin");
  const int32_t range = c.Submit("GET", "/large.bin", {{"range", "bytes=100000-100099"}});
  const int32_t tail = c.Submit("GET", "/small.txt", {{"range", "bytes=-10"}});
  const int32_t unsatisfiable = c.Submit("GET", "/small.txt", {{"range", "bytes=5000-"}});
  const int32_t not_modified = c.Submit("GET", "/large.bin", {{"if-none-match", etag}});
  const int32_t failed = c.Submit("GET", "/large.bin", {{"if-match", "\"other\""}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(head).status, 200);
  EXPECT_EQ(c.answer(head).fields.at("content-length"), std::to_string(large_.size()));
  EXPECT_EQ(c.answer(head).body, "");
  EXPECT_EQ(c.answer(range).status, 206);
  EXPECT_EQ(c.answer(range).fields.at("content-range"),
            "bytes 100000-100099/" + std::to_string(large_.size()));
  EXPECT_TRUE(c.answer(range).body == large_.substr(100000, 100));
  EXPECT_EQ(c.answer(tail).status, 206);
  EXPECT_TRUE(c.answer(tail).body == small_.substr(1014));
  EXPECT_EQ(c.answer(unsatisfiable).status, 416);
  EXPECT_EQ(c.answer(unsatisfiable).fields.at("content-range"), "bytes */1024");
  EXPECT_EQ(c.answer(not_modified).status, 304);
  EXPECT_EQ(c.answer(not_modified).body, "");
  EXPECT_EQ(c.answer(failed).status, 412);
}

TEST_F(H2FilesTest, DirectoriesDotfilesAndPathsOutsideTheRoot) {
  Start();
  H2Client c(port());
  const int32_t dir = c.Submit("GET", "/docs?x=1");
  const int32_t index = c.Submit("GET", "/docs/");
  const int32_t root = c.Submit("GET", "/docs/index.html");
  const int32_t missing = c.Submit("GET", "/nothing.txt");
  const int32_t dotfile = c.Submit("GET", "/.env");
  const int32_t outside = c.Submit("GET", "/outside");
  const int32_t post = c.Submit("POST", "/small.txt", {}, "x");
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(dir).status, 301);
  EXPECT_EQ(c.answer(dir).fields.at("location"), "/docs/?x=1");
  EXPECT_EQ(c.answer(index).status, 200);
  EXPECT_EQ(c.answer(index).body, "<p>docs</p>");
  EXPECT_EQ(c.answer(index).fields.at("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(c.answer(root).body, "<p>docs</p>");
  EXPECT_EQ(c.answer(missing).status, 404);
  EXPECT_EQ(c.answer(dotfile).status, 404);
  EXPECT_EQ(c.answer(outside).status, 404) << "a link out of the root is as absent";
  EXPECT_EQ(c.answer(post).status, 405);
}

TEST_F(H2FilesTest, TheMountsMiddlewareRunsAroundItsFiles) {
  router::StaticOptions options;
  options.middleware.push_back(router::Middleware{
      [](const http::Request& req, http::Response& resp) {
        if (req.FindHeader("authorization") != "Bearer ok") {
          resp.set_status(401);
          resp.set_body("who are you?\n");
          return router::Flow::kAnswered;
        }
        return router::Flow::kNext;
      },
      [](const http::Request&, http::Response& resp) { (void)resp.AddHeader("X-After", "1"); }});
  Start(std::move(options));
  H2Client c(port());
  const int32_t refused = c.Submit("GET", "/small.txt");
  const int32_t allowed = c.Submit("GET", "/small.txt", {{"authorization", "Bearer ok"}});
  const int32_t missing = c.Submit("GET", "/nothing", {{"authorization", "Bearer ok"}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(refused).status, 401);
  EXPECT_EQ(c.answer(refused).body, "who are you?\n");
  EXPECT_EQ(c.answer(allowed).status, 200);
  EXPECT_TRUE(c.answer(allowed).body == small_);
  EXPECT_EQ(c.answer(allowed).fields.at("x-after"), "1");
  EXPECT_EQ(c.answer(missing).status, 404);
  EXPECT_EQ(c.answer(missing).fields.at("x-after"), "1");
}

TEST_F(H2FilesTest, AResetMidFileAndAClientThatLeaves) {
  Start({}, /*file_buffers=*/2);
  {
    H2Client c(port());
    const int32_t large = c.Submit("GET", "/large.bin");
    while (c.answer(large).body.size() < 100 * 1024) ASSERT_TRUE(c.RunOnce());
    nghttp2_submit_rst_stream(c.session(), NGHTTP2_FLAG_NONE, large, NGHTTP2_CANCEL);
    const int32_t after = c.Submit("GET", "/medium.bin");
    ASSERT_TRUE(c.Run());
    EXPECT_EQ(c.answer(large).reset, NGHTTP2_CANCEL);
    EXPECT_TRUE(c.answer(after).body == medium_);
  }
  for (int round = 0; round < 3; ++round) {
    H2Client c(port());
    std::vector<int32_t> ids;
    for (int i = 0; i < 4; ++i) ids.push_back(c.Submit("GET", "/large.bin"));
    while (c.answer(ids[0]).body.size() < 64 * 1024) ASSERT_TRUE(c.RunOnce());
    c.socket().Reset();
  }
  // The buffers and descriptors those held are back: a new connection gets
  // every byte.
  H2Client c(port());
  const int32_t a = c.Submit("GET", "/large.bin");
  const int32_t b = c.Submit("GET", "/large.bin");
  ASSERT_TRUE(c.Run());
  EXPECT_TRUE(c.answer(a).body == large_);
  EXPECT_TRUE(c.answer(b).body == large_);
}

// Text that gzip shrinks, and that a test can tell apart by its length.
std::string Script(size_t n) {
  std::string s;
  while (s.size() < n) s += "function f" + std::to_string(s.size()) + "() { return 1; }\n";
  s.resize(n);
  return s;
}

// Sets a file's modification time `seconds` before now.
void Age(const std::string& path, int seconds) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST_F(H2FilesTest, ThePrecompressedSiblingTheClientWeighsHighestIsSent) {
  WriteFile(root_ + "/app.js", Script(5000));
  Age(root_ + "/app.js", 100);
  WriteFile(root_ + "/app.js.gz", "GZIP-BYTES");
  WriteFile(root_ + "/app.js.br", "BROTLI-BYTES");
  WriteFile(root_ + "/plain.js", Script(3000));
  // A sibling older than its file is a leftover: not sent.
  WriteFile(root_ + "/old.js", Script(2000));
  WriteFile(root_ + "/old.js.gz", "STALE");
  Age(root_ + "/old.js.gz", 200);
  router::StaticOptions options;
  options.precompressed = true;
  Start(std::move(options));
  H2Client c(port());
  // All at once: their probes and opens take turns on the connection.
  const int32_t gz = c.Submit("GET", "/app.js", {{"accept-encoding", "gzip"}});
  const int32_t br = c.Submit("GET", "/app.js", {{"accept-encoding", "gzip, deflate, br, zstd"}});
  const int32_t gz2 = c.Submit("GET", "/app.js", {{"accept-encoding", "br;q=0.5, gzip"}});
  const int32_t plain = c.Submit("GET", "/app.js");
  const int32_t refused = c.Submit("GET", "/app.js", {{"accept-encoding", "gzip;q=0"}});
  const int32_t other = c.Submit("GET", "/plain.js", {{"accept-encoding", "gzip"}});
  const int32_t stale = c.Submit("GET", "/old.js", {{"accept-encoding", "gzip"}});
  const int32_t head = c.Submit("HEAD", "/app.js", {{"accept-encoding", "br"}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(gz).status, 200);
  EXPECT_EQ(c.answer(gz).body, "GZIP-BYTES");
  EXPECT_EQ(c.answer(gz).fields.at("content-encoding"), "gzip");
  EXPECT_EQ(c.answer(gz).fields.at("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(c.answer(gz).fields.at("vary"), "Accept-Encoding");
  EXPECT_EQ(c.answer(gz).fields.at("content-length"), "10");
  EXPECT_EQ(c.answer(br).body, "BROTLI-BYTES");
  EXPECT_EQ(c.answer(br).fields.at("content-encoding"), "br");
  EXPECT_EQ(c.answer(gz2).body, "GZIP-BYTES");  // a higher weight beats the tie order
  for (int32_t id : {plain, refused}) {
    EXPECT_TRUE(c.answer(id).body == Script(5000)) << id;
    EXPECT_EQ(c.answer(id).fields.count("content-encoding"), 0u) << id;
    EXPECT_EQ(c.answer(id).fields.at("vary"), "Accept-Encoding") << id;  // it could have differed
  }
  // Each representation has its own validator.
  const std::string& gz_etag = c.answer(gz).fields.at("etag");
  const std::string& br_etag = c.answer(br).fields.at("etag");
  EXPECT_NE(gz_etag, c.answer(plain).fields.at("etag"));
  EXPECT_NE(gz_etag, br_etag);
  EXPECT_EQ(gz_etag.substr(gz_etag.size() - 4), "-gz\"");
  EXPECT_EQ(br_etag.substr(br_etag.size() - 4), "-br\"");
  // No siblings: nothing else could have been sent, no Vary.
  EXPECT_TRUE(c.answer(other).body == Script(3000));
  EXPECT_EQ(c.answer(other).fields.count("vary"), 0u);
  EXPECT_TRUE(c.answer(stale).body == Script(2000));
  EXPECT_EQ(c.answer(stale).fields.count("content-encoding"), 0u);
  EXPECT_EQ(c.answer(head).status, 200);
  EXPECT_EQ(c.answer(head).fields.at("content-encoding"), "br");
  EXPECT_EQ(c.answer(head).fields.at("content-length"), "12");
  EXPECT_EQ(c.answer(head).body, "");
  // A conditional request on the sibling's validator.
  const int32_t again = c.Submit("GET", "/app.js",
                                 {{"accept-encoding", "gzip"}, {"if-none-match", gz_etag}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(again).status, 304);
}

TEST_F(H2FilesTest, ASiblingGoneSinceItWasProbedFallsBackToTheFile) {
  WriteFile(root_ + "/app.js", Script(4000));
  Age(root_ + "/app.js", 100);
  WriteFile(root_ + "/app.js.gz", "GZIP-BYTES");
  router::StaticOptions options;
  options.precompressed = true;
  Start(std::move(options));
  H2Client c(port());
  // The probe finds the sibling (the file's cache entry remembers it) ...
  const int32_t first = c.Submit("GET", "/app.js");
  ASSERT_TRUE(c.Run());
  EXPECT_TRUE(c.answer(first).body == Script(4000));
  // ... which goes before anyone asked for it.
  ASSERT_EQ(unlink((root_ + "/app.js.gz").c_str()), 0);
  const int32_t second = c.Submit("GET", "/app.js", {{"accept-encoding", "gzip"}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(second).status, 200);
  EXPECT_TRUE(c.answer(second).body == Script(4000));
  EXPECT_EQ(c.answer(second).fields.count("content-encoding"), 0u);
  EXPECT_EQ(c.answer(second).fields.at("vary"), "Accept-Encoding");
}

TEST_F(H2FilesTest, TheCachesGzipOfACompressibleFile) {
  WriteFile(root_ + "/page.html", Script(6000));
  Start({}, 0, /*gzip=*/true);
  H2Client c(port());
  const int32_t gz = c.Submit("GET", "/page.html", {{"accept-encoding", "gzip"}});
  const int32_t plain = c.Submit("GET", "/page.html");
  // A range is of the file's own bytes: no gzip.
  const int32_t range =
      c.Submit("GET", "/page.html", {{"accept-encoding", "gzip"}, {"range", "bytes=0-9"}});
  // Not compressible: as it is.
  const int32_t binary = c.Submit("GET", "/medium.bin", {{"accept-encoding", "gzip"}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(gz).status, 200);
  EXPECT_EQ(c.answer(gz).fields.at("content-encoding"), "gzip");
  EXPECT_EQ(c.answer(gz).fields.at("vary"), "Accept-Encoding");
  EXPECT_EQ(c.answer(gz).fields.at("etag").substr(0, 2), "W/");
  const std::optional<std::string> decoded = http::testing::Gunzip(c.answer(gz).body);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_TRUE(*decoded == Script(6000));
  EXPECT_LT(c.answer(gz).body.size(), 6000u);
  EXPECT_EQ(c.answer(gz).fields.at("content-length"), std::to_string(c.answer(gz).body.size()));
  EXPECT_TRUE(c.answer(plain).body == Script(6000));
  EXPECT_EQ(c.answer(plain).fields.count("content-encoding"), 0u);
  EXPECT_EQ(c.answer(range).status, 206);
  EXPECT_EQ(c.answer(range).body, Script(10));
  EXPECT_TRUE(c.answer(binary).body == medium_);
  EXPECT_EQ(c.answer(binary).fields.count("content-encoding"), 0u);
  // Again, from the gzip the cache keeps.
  const int32_t again = c.Submit("GET", "/page.html", {{"accept-encoding", "gzip"}});
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(again).body, c.answer(gz).body);
}

}  // namespace
}  // namespace uring_http::serving
