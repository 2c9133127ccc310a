// What streams over HTTP/2 rather than whole (src/http2/streamed_bodies.cc),
// end to end over h2c: request bodies read as they come by a SLOW handler
// (Request::ReadBody, through the pipe whose bound holds the uploader back)
// and by a FAST route's BodySink, and FAST producers' answers (with their
// trailers, a promised length, gzip), many at once on one connection and
// beside buffered ones, every byte checked; a body past its route's limit,
// an empty one, a client that resets an upload mid-way.
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/http2/h2_client.h"

namespace uring_http::serving {
namespace {

using testing::H2Client;

// An FNV-1a hash: a body's bytes checked without keeping them.
uint64_t Hash(std::string_view data, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed + (i >> 11)) & 0xff);
  return s;
}

std::atomic<int> g_aborted_sinks{0};

struct HashingSink : router::BodySink {
  uint64_t total = 0;
  uint64_t hash = Hash("");
  void OnData(std::string_view piece) override {
    total += piece.size();
    hash = Hash(piece, hash);
  }
  void OnEnd(const http::Request& req, http::Response& resp) override {
    resp.set_body(std::to_string(total) + " " + std::to_string(hash) + " " +
                  std::string(req.PathParam("tag")));
  }
  void OnAbort() override { g_aborted_sinks.fetch_add(1); }
};

router::Router Routes() {
  router::Router r;
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = 8 << 20;
  (void)r.Slow(
      "POST", "/upload",
      [](const http::Request& req, http::Response& resp) {
        char buf[7000];  // an odd size: reads end anywhere in the DATA frames
        uint64_t total = 0;
        uint64_t hash = Hash("");
        long n;
        while ((n = req.ReadBody(buf, sizeof(buf))) > 0) {
          total += static_cast<uint64_t>(n);
          hash = Hash(std::string_view(buf, static_cast<size_t>(n)), hash);
        }
        if (n < 0) return;
        resp.set_body(std::to_string(total) + " " + std::to_string(hash));
      },
      streamed);
  (void)r.Slow(
      "POST", "/upload-and-stream",
      [](const http::Request& req, http::Response& resp) {
        char buf[16384];
        long n;
        while ((n = req.ReadBody(buf, sizeof(buf))) > 0) {
          if (!resp.Write(std::string_view(buf, static_cast<size_t>(n)))) return;
        }
      },
      streamed);
  router::RouteOptions small;
  small.max_body_bytes = 100'000;
  (void)r.FastStream(
      "POST", "/sink/{tag}", [](const http::Request&) { return std::make_unique<HashingSink>(); },
      small);
  (void)r.Fast("GET", "/produce", [](const http::Request& req, http::Response& resp) {
    const size_t total = std::stoul(std::string(req.QueryParam("n").value()));
    auto sent = std::make_shared<size_t>(0);
    (void)resp.AddTrailer("x-produced", std::to_string(total));
    resp.Stream([sent, total](http::BodyOutput& out) {
      while (*sent < total && out.room() > 0) {
        const std::string piece = Pattern(std::min<size_t>(5000, total - *sent), 9)
                                      .substr(0, std::min<size_t>(5000, total - *sent));
        if (!out.Write(piece)) return true;
        *sent += piece.size();
      }
      return *sent == total;
    });
  });
  (void)r.Fast("GET", "/produce-short", [](const http::Request&, http::Response& resp) {
    resp.set_content_length(100);
    resp.Stream([](http::BodyOutput& out) {
      (void)out.Write("only ten!!");
      return true;  // 90 bytes short of its promise
    });
  });
  (void)r.Fast("GET", "/hello", [](const http::Request&, http::Response& resp) {
    resp.set_body("hello");
  });
  return r;
}

class H2StreamsTest : public ::testing::Test {
 protected:
  void Start() {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 3;
    config.http2 = true;
    config.limits.max_body_bytes = 64 * 1024;  // the buffered routes' limit
    server_ = std::make_unique<Server>(config, Routes());
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }
  uint16_t port() const { return server_->port(); }
  std::unique_ptr<Server> server_;
};

std::string Expect(const std::string& body) {
  return std::to_string(body.size()) + " " + std::to_string(Hash(body));
}

TEST_F(H2StreamsTest, UploadsReadAsTheyComeBySlowHandlersAndSinks) {
  Start();
  H2Client c(port(), 20000);
  // Past the server's buffered limit (64 KiB), the pipe (256 KiB) and the
  // stream's window (64 KiB): only streaming takes them.
  const std::string big = Pattern(3 * 1024 * 1024 + 5, 1);
  const std::string medium = Pattern(90'000, 2);
  const int32_t slow = c.Submit("POST", "/upload", {}, big);
  const int32_t slow2 = c.Submit("POST", "/upload", {{"content-length", std::to_string(medium.size())}},
                                 medium);
  const int32_t sink = c.Submit("POST", "/sink/a", {}, medium);
  const int32_t echo = c.Submit("POST", "/upload-and-stream", {}, big);
  const int32_t hello = c.Submit("GET", "/hello");
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(slow).status, 200);
  EXPECT_EQ(c.answer(slow).body, Expect(big));
  EXPECT_EQ(c.answer(slow2).body, Expect(medium));
  EXPECT_EQ(c.answer(sink).status, 200);
  EXPECT_EQ(c.answer(sink).body, Expect(medium) + " a");
  EXPECT_EQ(c.answer(echo).body.size(), big.size());
  EXPECT_TRUE(c.answer(echo).body == big);
  EXPECT_EQ(c.answer(hello).body, "hello");
}

TEST_F(H2StreamsTest, EmptyBodiesAndBodiesPastTheRoutesLimit) {
  Start();
  H2Client c(port());
  const int32_t empty_slow = c.Submit("POST", "/upload");
  const int32_t empty_sink = c.Submit("POST", "/sink/e");
  const int32_t announced = c.Submit(
      "POST", "/sink/x", {{"content-length", "100001"}}, Pattern(100'001, 3));
  const int32_t unannounced = c.Submit("POST", "/sink/y", {}, Pattern(150'000, 4));
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(empty_slow).body, Expect(""));
  EXPECT_EQ(c.answer(empty_sink).body, Expect("") + " e");
  EXPECT_EQ(c.answer(announced).status, 413);
  EXPECT_EQ(c.answer(unannounced).status, 413);
  EXPECT_GE(g_aborted_sinks.load(), 1) << "the sink past its limit hears OnAbort";
  // The connection goes on.
  const int32_t after = c.Submit("POST", "/sink/z", {}, "abc");
  ASSERT_TRUE(c.Run());
  EXPECT_EQ(c.answer(after).body, Expect("abc") + " z");
}

TEST_F(H2StreamsTest, ProducersAnswerWithTheirTrailers) {
  Start();
  H2Client c(port(), 20000, /*initial_window=*/8 * 1024);
  std::vector<std::pair<int32_t, size_t>> ids;
  for (size_t n : {0ul, 1ul, 4999ul, 5000ul, 200'000ul, 1'000'000ul}) {
    ids.push_back({c.Submit("GET", "/produce?n=" + std::to_string(n)), n});
  }
  const int32_t short_one = c.Submit("GET", "/produce-short");
  const int32_t head = c.Submit("HEAD", "/produce?n=100");
  ASSERT_TRUE(c.Run());
  for (const auto& [id, n] : ids) {
    SCOPED_TRACE(n);
    EXPECT_EQ(c.answer(id).status, 200);
    ASSERT_EQ(c.answer(id).body.size(), n);
    std::string want;
    while (want.size() < n) want += Pattern(std::min<size_t>(5000, n - want.size()), 9);
    EXPECT_TRUE(c.answer(id).body == want);
    EXPECT_EQ(c.answer(id).trailers.at("x-produced"), std::to_string(n));
  }
  EXPECT_NE(c.answer(short_one).reset, 0u) << "a body short of its length must not look whole";
  EXPECT_EQ(c.answer(head).status, 200);
  EXPECT_EQ(c.answer(head).body, "");
}

TEST_F(H2StreamsTest, AnUploadResetMidWayFreesItsWorker) {
  Start();
  H2Client c(port(), 20000);
  // More than the window: the upload stalls until the worker reads; reset
  // it while the handler is in ReadBody.
  const int32_t up = c.Submit("POST", "/upload", {}, Pattern(2 * 1024 * 1024, 5));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.RunOnce());
  nghttp2_submit_rst_stream(c.session(), NGHTTP2_FLAG_NONE, up, NGHTTP2_CANCEL);
  // Every worker answers again (3 of them).
  std::vector<int32_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(c.Submit("POST", "/upload", {}, "xyz"));
  ASSERT_TRUE(c.Run());
  for (int32_t id : ids) EXPECT_EQ(c.answer(id).body, Expect("xyz"));
}

}  // namespace
}  // namespace uring_http::serving
