// A connection answering from static files, driven step by step: each statx,
// openat2 and read is carried out for real on a temporary directory when the
// test says so, which lets it change, replace or delete a file between any
// two steps, fail a step, or close the connection while one is in flight.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/http1/connection.h"
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

std::string Pattern(size_t n, unsigned seed = 1) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed + i / 4096) % 26);
  return s;
}

class FileAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/file_answer_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    Write("a.txt", "hello, file\n");
    Write("big.bin", Pattern(100'000));
    Write("empty.txt", "");
    mkdir((root_ + "/docs").c_str(), 0755);
    Write("docs/index.html", "<p>docs</p>");
    mkdir((root_ + "/bare").c_str(), 0755);
    ASSERT_EQ(symlink("/etc/hostname", (root_ + "/escape").c_str()), 0);
    ASSERT_EQ(symlink("a.txt", (root_ + "/inside").c_str()), 0);
    ASSERT_EQ(symlink("/etc", (root_ + "/outdir").c_str()), 0);
    ASSERT_EQ(symlink("/", (root_ + "/slash").c_str()), 0);
    ASSERT_EQ(symlink("docs", (root_ + "/indir").c_str()), 0);
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf " + root_).c_str()), 0); }

  void Write(const std::string& name, const std::string& content) {
    std::ofstream(root_ + "/" + name, std::ios::binary | std::ios::trunc) << content;
  }

  // A harness serving root_ at "/" (and a FAST route beside it).
  std::unique_ptr<Harness> Make(files::OpenFileCacheLimits limits = {}, size_t buffers = 8,
                                size_t buffer_size = 4096, exchange::ConnectionConfig config = {},
                                router::StaticOptions options = {}) {
    router::Router r;
    (void)r.Fast("GET", "/fast", [](const http::Request&, http::Response& resp) {
      resp.set_static_body("ok");
    });
    EXPECT_TRUE(r.Static("/", root_, options).ok());
    auto h = std::make_unique<Harness>(std::move(r), config);
    h->EnableFiles(limits, buffers, buffer_size);
    h->Open();
    return h;
  }

  static void Check(Harness& h) {
    for (const std::string& v : h.host.violations) ADD_FAILURE() << v;
    for (const std::string& e : h.closer().errors) ADD_FAILURE() << e;
  }

  std::string root_;
};

TEST_F(FileAnswerTest, MissThenHitWithoutAnyFileOperation) {
  auto h = Make();
  h->Recv(Get("/a.txt"));
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->kind, testing::FakeHost::FileOp::kStat);
  EXPECT_EQ(h->host.file_op->path, "a.txt");
  h->Drive();
  // statx, openat2, and the read of the whole (small) file into the cache.
  EXPECT_EQ(h->host.file_ops, 3);
  h->Recv(Get("/a.txt"));
  h->Drive();
  EXPECT_EQ(h->host.file_ops, 3);  // answered from the cache's memory
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 2u);
  for (const Reply& r : replies) {
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "hello, file\n");
    EXPECT_EQ(r.Header("content-type"), "text/plain; charset=utf-8");
    EXPECT_EQ(r.Header("accept-ranges"), "bytes");
    EXPECT_FALSE(r.Header("etag").empty());
    EXPECT_FALSE(r.Header("last-modified").empty());
    EXPECT_EQ(r.Header("x-content-type-options"), "nosniff");
  }
  EXPECT_EQ(replies[0].Header("etag"), replies[1].Header("etag"));
  EXPECT_EQ(h->stats.file_opens.Get(), 1u);
  EXPECT_EQ(h->closer().open.size(), 1u);  // the cache holds it
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

// Issue 19 item 17: dotfiles are 404 before any file operation (not even a
// statx that would tell whether they exist), /.well-known/ is served, and a
// mount that allows dotfiles serves them.
// The mount's own middleware runs around its files: a before may answer
// (an authorization check), an after adds its fields to the file's answer.
// (It was dropped at registration once, silently.)
TEST_F(FileAnswerTest, TheMountsMiddlewareRunsAroundItsFiles) {
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
  auto h = Make({}, 8, 4096, {}, std::move(options));
  h->Recv(Get("/a.txt"));
  h->Drive();
  h->Recv("GET /a.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\n\r\n");
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].status, 401);
  EXPECT_EQ(replies[0].body, "who are you?\n");
  EXPECT_EQ(replies[0].Header("x-after"), "1");
  EXPECT_EQ(replies[1].status, 200);
  EXPECT_EQ(replies[1].body, "hello, file\n");
  EXPECT_EQ(replies[1].Header("x-after"), "1");
  Check(*h);
}

TEST_F(FileAnswerTest, DotfilesAre404UnlessTheMountAllowsThem) {
  Write(".env", "SECRET=1\n");
  mkdir((root_ + "/.well-known").c_str(), 0755);
  Write(".well-known/security.txt", "Contact: x\n");
  auto h = Make();
  for (const char* path : {"/.env", "/%2Eenv", "/docs/../.env", "/.git/config"}) {
    h->Recv(Get(path));
    EXPECT_FALSE(h->host.file_op.has_value()) << path;
    h->Drive();
  }
  h->Recv(Get("/.well-known/security.txt"));
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 5u);
  for (int i : {0, 1, 3}) EXPECT_EQ(replies[i].status, 404) << i;
  // A ".." is redirected to the clean path first (src/router/clean_path.h),
  // which then is a 404.
  EXPECT_EQ(replies[2].status, 301);
  EXPECT_EQ(replies[2].Header("location"), "/.env");
  EXPECT_EQ(replies[4].status, 200);
  EXPECT_EQ(replies[4].body, "Contact: x\n");
  EXPECT_EQ(h->stats.file_opens.Get(), 1u);
  Check(*h);

  router::StaticOptions allow;
  allow.serve_dotfiles = true;
  auto allowed = Make({}, 8, 4096, {}, allow);
  allowed->Recv(Get("/.env"));
  allowed->Drive();
  replies = allowed->Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, "SECRET=1\n");
  Check(*allowed);
}

TEST_F(FileAnswerTest, LargeFileStreamsThroughBoundedBuffers) {
  auto h = Make({}, /*buffers=*/4, /*buffer_size=*/4096);
  h->Recv(Get("/big.bin"));
  size_t min_free = 4;
  for (int i = 0; i < 100000 && (h->host.file_op || h->host.send); ++i) {
    h->CompleteFileOp();
    min_free = std::min(min_free, h->file_buffers_available());
    h->CompleteSend(1000);  // a slow reader: short sends
    EXPECT_LE(h->conn.output_pending(), kOutputHighWater + 4096 + 512);
  }
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, Pattern(100'000));
  EXPECT_EQ(h->file_buffers_available(), 4u);  // all back
  Check(*h);
}

// A reader that stops reading must not keep the loop's file buffers: what
// the socket did not take is given back and read again once it has room.
// (Before, each stalled download held its buffers inside a send that never
// completed; enough of them starved every other file body on the loop.)
TEST_F(FileAnswerTest, AStalledReaderHoldsNoFileBuffer) {
  auto h = Make({}, /*buffers=*/4, /*buffer_size=*/4096);
  h->Recv(Get("/big.bin"));
  ASSERT_TRUE(h->CompleteFileOp());  // statx
  ASSERT_TRUE(h->CompleteFileOp());  // open; the head goes
  ASSERT_TRUE(h->host.send.has_value());
  EXPECT_FALSE(h->host.send->dont_wait);  // no file bytes in it: it may wait
  ASSERT_TRUE(h->CompleteFileOp());  // the first read; the next one is in flight
  h->CompleteSend();
  ASSERT_TRUE(h->host.send.has_value());
  EXPECT_TRUE(h->host.send->dont_wait);  // file bytes: -EAGAIN, not a wait, when full
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->kind, testing::FakeHost::FileOp::kRead);
  h->CompleteSend(1000);             // the socket took 1,000 bytes, and is full
  ASSERT_TRUE(h->CompleteFileOp());  // the read in flight lands: its buffer goes back
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->kind, testing::FakeHost::FileOp::kPoll);
  EXPECT_FALSE(h->host.send.has_value());
  EXPECT_EQ(h->file_buffers_available(), 4u);
  EXPECT_NE(h->host.deadline, 0u);  // the send deadline runs while it waits
  // Room for a moment: a read, a send that finds the socket full again.
  ASSERT_TRUE(h->CompleteFileOp());  // writable
  for (int i = 0; i < 4 && !h->host.send.has_value(); ++i) ASSERT_TRUE(h->CompleteFileOp());
  ASSERT_TRUE(h->host.send.has_value());
  h->FailSend(-EAGAIN);
  if (h->host.file_op.has_value() && h->host.file_op->kind != testing::FakeHost::FileOp::kPoll) {
    ASSERT_TRUE(h->CompleteFileOp());
  }
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->kind, testing::FakeHost::FileOp::kPoll);
  EXPECT_EQ(h->file_buffers_available(), 4u);
  EXPECT_TRUE(h->conn.open());
  // The reader comes back: every byte arrives once, in order.
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, Pattern(100'000));
  EXPECT_EQ(h->file_buffers_available(), 4u);
  EXPECT_EQ(h->stats.file_truncated.Get(), 0u);
  // A request that is not a file's body waits in the kernel as before.
  h->Recv(Get("/fast"));
  ASSERT_TRUE(h->host.send.has_value());
  EXPECT_FALSE(h->host.send->dont_wait);
  h->Drive();
  EXPECT_EQ(h->Replies().size(), 2u);
  Check(*h);
}

// A reader that takes nothing while the file waits for the socket's room
// is cut off by the send deadline (the wait holds no buffer, but it is
// still our output not progressing); the close cancels the poll like a
// send, and nothing of the file is left held.
TEST_F(FileAnswerTest, WaitingForRoomTimesOutAndCloses) {
  exchange::ConnectionConfig config;
  config.send_timeout_ms = 1000;  // 10 ticks
  auto h = Make({.max_entries = 10}, 4, 4096, config);
  h->Recv(Get("/big.bin"));
  for (int i = 0; i < 8 && !(h->host.send.has_value() && h->host.send->dont_wait); ++i) {
    if (!h->CompleteFileOp()) h->CompleteSend();
  }
  ASSERT_TRUE(h->host.send.has_value());
  h->FailSend(-EAGAIN);
  if (h->host.file_op.has_value() && h->host.file_op->kind != testing::FakeHost::FileOp::kPoll) {
    ASSERT_TRUE(h->CompleteFileOp());
  }
  ASSERT_TRUE(h->host.file_op.has_value());
  EXPECT_EQ(h->host.file_op->kind, testing::FakeHost::FileOp::kPoll);
  EXPECT_TRUE(h->conn.open());
  h->Tick(5);
  EXPECT_TRUE(h->conn.open());
  h->Tick(6);
  EXPECT_EQ(h->stats.timeouts.Get(), 1u);
  EXPECT_TRUE(h->host.closed);  // with the poll cancelled (Close() checks what is armed)
  h->CloseDone();
  EXPECT_FALSE(h->conn.Freeable());
  ASSERT_TRUE(h->CompleteFileOp(-ECANCELED));
  EXPECT_TRUE(h->conn.Freeable());
  h->conn.Release();
  EXPECT_EQ(h->file_buffers_available(), 4u);
  bool fresh;
  files::OpenFileCache::Entry* e = h->file_cache()->Find(0, "big.bin", h->now(), &fresh);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->refs(), 0u);
  Check(*h);
}

TEST_F(FileAnswerTest, WaitsForAFreeBufferOnTheNextTick) {
  auto h = Make({.max_entries = 0}, /*buffers=*/1, /*buffer_size=*/4096);
  h->Recv(Get("/big.bin"));
  for (int round = 0; round < 1000 && h->Replies().empty(); ++round) {
    h->Drive();
    h->Tick(1);  // the retry of a read that found no buffer
  }
  ASSERT_EQ(h->Replies().size(), 1u);
  EXPECT_EQ(h->Replies()[0].body, Pattern(100'000));
  EXPECT_TRUE(h->closer().open.empty());  // not cached: closed after the answer
  Check(*h);
}

TEST_F(FileAnswerTest, RevalidatedAfterTheIntervalAndReopenedWhenChanged) {
  auto h = Make({.max_entries = 10, .valid_ticks = 10});
  h->Recv(Get("/a.txt"));
  h->Drive();
  const int after_first = h->host.file_ops;
  h->Tick(5);
  h->Recv(Get("/a.txt"));
  h->Drive();
  EXPECT_EQ(h->host.file_ops, after_first);  // fresh: nothing
  h->Tick(20);
  h->Recv(Get("/a.txt"));
  h->Drive();
  EXPECT_EQ(h->host.file_ops, after_first + 1);  // one statx: unchanged
  Write("a.txt", "changed, and longer\n");
  h->Recv(Get("/a.txt"));
  h->Drive();
  EXPECT_EQ(h->host.file_ops, after_first + 1);  // still within the interval: the old one
  h->Tick(20);
  h->Recv(Get("/a.txt"));
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_EQ(replies[3].body, "hello, file\n");
  EXPECT_EQ(replies[4].body, "changed, and longer\n");
  EXPECT_NE(replies[3].Header("etag"), replies[4].Header("etag"));
  EXPECT_EQ(h->closer().open.size(), 1u);  // the old descriptor was closed
  EXPECT_EQ(h->stats.file_opens.Get(), 2u);
  Check(*h);
}

TEST_F(FileAnswerTest, DeletedWhileCachedIsA404AfterTheInterval) {
  auto h = Make({.max_entries = 10, .valid_ticks = 10});
  h->Recv(Get("/a.txt"));
  h->Drive();
  unlink((root_ + "/a.txt").c_str());
  h->Tick(20);
  h->Recv(Get("/a.txt"));
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[1].status, 404);
  EXPECT_TRUE(h->closer().open.empty());
  EXPECT_TRUE(h->conn.open());  // a 404 keeps the connection
  Check(*h);
}

TEST_F(FileAnswerTest, FileShrunkWhileSentClosesTheConnectionAndIsCounted) {
  auto h = Make({.max_entries = 10}, 4, 4096);
  h->Recv(Get("/big.bin"));
  ASSERT_TRUE(h->CompleteFileOp());  // statx: 100,000 bytes
  ASSERT_TRUE(h->CompleteFileOp());  // open
  ASSERT_EQ(truncate((root_ + "/big.bin").c_str(), 10'000), 0);
  h->Drive();
  std::vector<Reply> replies = h->Replies();
  EXPECT_TRUE(h->host.closed || h->host.shutdown_pending || h->host.shutdown_done);
  EXPECT_EQ(h->stats.file_truncated.Get(), 1u);
  // The head promised 100,000 bytes; what went out is a prefix of them.
  EXPECT_NE(h->wire.find("Content-Length: 100000"), std::string::npos);
  EXPECT_LT(h->wire.size(), 100'000u);
  // The cache forgot the file.
  bool fresh;
  EXPECT_EQ(h->file_cache()->Find(0, "big.bin", h->now(), &fresh), nullptr);
  Check(*h);
}

TEST_F(FileAnswerTest, ClosedWhileAReadIsInFlight) {
  auto h = Make({.max_entries = 10}, 4, 4096);
  h->Recv(Get("/big.bin"));
  ASSERT_TRUE(h->CompleteFileOp());
  ASSERT_TRUE(h->CompleteFileOp());
  ASSERT_TRUE(h->host.file_op.has_value());  // the first read
  h->RecvEnd(-ECONNRESET);                    // the peer is gone
  EXPECT_FALSE(h->conn.Freeable());           // the read still writes into our buffer
  h->CloseDone();
  EXPECT_FALSE(h->conn.Freeable());
  ASSERT_TRUE(h->CompleteFileOp());
  EXPECT_TRUE(h->conn.Freeable());
  h->conn.Release();
  EXPECT_EQ(h->file_buffers_available(), 4u);
  EXPECT_EQ(h->file_cache()->stats().open_entries, 1u);  // cached, no longer read
  bool fresh;
  files::OpenFileCache::Entry* e = h->file_cache()->Find(0, "big.bin", h->now(), &fresh);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->refs(), 0u);
  Check(*h);
}

TEST_F(FileAnswerTest, ClosedWhileTheOpenIsInFlightClosesWhatItOpened) {
  auto h = Make({.max_entries = 0});
  h->Recv(Get("/a.txt"));
  ASSERT_TRUE(h->CompleteFileOp());  // statx
  h->RecvEnd(-ECONNRESET);
  h->CloseDone();
  ASSERT_TRUE(h->CompleteFileOp());  // the open lands after the close
  EXPECT_TRUE(h->closer().open.empty());
  EXPECT_TRUE(h->conn.Freeable());
  h->conn.Release();
  Check(*h);
}

TEST_F(FileAnswerTest, RangesConditionalsAndHead) {
  auto h = Make();
  h->Recv(Get("/big.bin"));
  h->Drive();
  const std::string etag = h->Replies()[0].Header("etag");
  const std::string mtime = h->Replies()[0].Header("last-modified");
  const std::string body = Pattern(100'000);
  struct Case {
    std::string request;
    int status;
    std::string body;
    std::string content_range;
    bool head = false;
  };
  const std::vector<Case> cases = {
      {Get("/big.bin", "Range: bytes=0-9\r\n"), 206, body.substr(0, 10), "bytes 0-9/100000"},
      {Get("/big.bin", "Range: bytes=-500\r\n"), 206, body.substr(99'500), "bytes 99500-99999/100000"},
      {Get("/big.bin", "Range: bytes=99990-\r\n"), 206, body.substr(99'990), "bytes 99990-99999/100000"},
      {Get("/big.bin", "Range: bytes=99990-200000\r\n"), 206, body.substr(99'990),
       "bytes 99990-99999/100000"},
      {Get("/big.bin", "Range: bytes=100000-\r\n"), 416, "416 Range Not Satisfiable\n",
       "bytes */100000"},
      {Get("/big.bin", "Range: bytes=0-1,5-6\r\n"), 200, body, ""},
      {Get("/big.bin", "Range: bytes=0-9\r\nIf-Range: " + etag + "\r\n"), 206, body.substr(0, 10),
       "bytes 0-9/100000"},
      {Get("/big.bin", "Range: bytes=0-9\r\nIf-Range: \"other\"\r\n"), 200, body, ""},
      {Get("/big.bin", "If-None-Match: " + etag + "\r\n"), 304, "", ""},
      {Get("/big.bin", "If-None-Match: \"x\", " + etag + "\r\n"), 304, "", ""},
      {Get("/big.bin", "If-None-Match: \"x\"\r\n"), 200, body, ""},
      {Get("/big.bin", "If-Modified-Since: " + mtime + "\r\n"), 304, "", ""},
      // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
      {Get("/big.bin", "If-None-Match: \"x\"\r\nIf-Modified-Since: " + mtime + "\r\n"), 200, body, ""},
      {Get("/big.bin", "If-Match: \"x\"\r\n"), 412, "412 Precondition Failed\n", ""},
      {Get("/big.bin", "", "HEAD"), 200, "", "", true},
      {Get("/big.bin", "Range: bytes=0-9\r\n", "HEAD"), 200, "", "", true},
      {Get("/empty.txt", "Range: bytes=0-\r\n"), 416, "416 Range Not Satisfiable\n", "bytes */0"},
      {Get("/empty.txt"), 200, "", ""},
  };
  for (const Case& c : cases) {
    const size_t before = h->wire.size();
    h->Recv(c.request);
    h->Drive();
    std::vector<Reply> r = testing::ParseReplies(h->wire.substr(before), {c.head});
    ASSERT_EQ(r.size(), 1u) << c.request;
    EXPECT_EQ(r[0].status, c.status) << c.request;
    EXPECT_EQ(r[0].body, c.body) << c.request;
    EXPECT_EQ(r[0].Header("content-range"), c.content_range) << c.request;
    if (c.status == 304) {
      EXPECT_EQ(r[0].Header("etag"), etag);
      EXPECT_EQ(r[0].Header("content-length"), "");
    }
    if (c.head) {
      EXPECT_EQ(r[0].Header("content-length"), "100000") << c.request;
    }
  }
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileAnswerTest, PathsDirectoriesAndLinks) {
  auto h = Make();
  struct Case {
    std::string target;
    int status;
    std::string body;
    std::string location;
  };
  const std::vector<Case> cases = {
      {"/", 404, "404 Not Found\n", ""},                    // no index.html at the root
      {"/docs/", 200, "<p>docs</p>", ""},
      {"/docs/index.html", 200, "<p>docs</p>", ""},
      {"/docs", 301, "301 Moved Permanently\n", "/docs/"},
      {"/docs?x=1", 301, "301 Moved Permanently\n", "/docs/?x=1"},
      {"/bare/", 404, "404 Not Found\n", ""},               // no listings
      {"/nope.txt", 404, "404 Not Found\n", ""},
      {"/a.txt/", 404, "404 Not Found\n", ""},              // a file is no directory
      {"/inside", 200, "hello, file\n", ""},                // a link within the root
      {"/escape", 404, "404 Not Found\n", ""},              // a link out of it (EXDEV)
      // A directory outside, through a link: 404 as if nothing were there
      // (a redirect would tell that it exists).
      {"/outdir", 404, "404 Not Found\n", ""},
      {"/outdir/", 404, "404 Not Found\n", ""},
      {"/slash", 404, "404 Not Found\n", ""},
      {"/slash/etc", 404, "404 Not Found\n", ""},
      {"/slash/nonexistent", 404, "404 Not Found\n", ""},
      {"/indir", 301, "301 Moved Permanently\n", "/indir/"},  // a link to a directory inside
      {"/indir/", 200, "<p>docs</p>", ""},
      // Dot segments are redirected to the clean path before any mount
      // sees them (src/router/clean_path.h).
      {"/../a.txt", 301, "301 Moved Permanently\n", "/a.txt"},
      {"/docs/../a.txt", 301, "301 Moved Permanently\n", "/a.txt"},
      {"/%2e%2e/a.txt", 301, "301 Moved Permanently\n", "/a.txt"},
      {"/a%00.txt", 400, "400 Bad Request\n", ""},
      {"/a%2ftxt", 400, "400 Bad Request\n", ""},
      {"/a\\..\\a.txt", 400, "400 Bad Request\n", ""},
      {"/a%2Etxt", 200, "hello, file\n", ""},               // decoded once: "a.txt"
      {"/%252e%252e/a.txt", 404, "404 Not Found\n", ""},    // "%2e%2e" is a name here
  };
  for (const Case& c : cases) {
    const size_t before = h->wire.size();
    h->Recv(Get(c.target));
    h->Drive();
    std::vector<Reply> r = testing::ParseReplies(h->wire.substr(before));
    ASSERT_EQ(r.size(), 1u) << c.target;
    EXPECT_EQ(r[0].status, c.status) << c.target;
    EXPECT_EQ(r[0].body, c.body) << c.target;
    EXPECT_EQ(r[0].Header("location"), c.location) << c.target;
  }
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileAnswerTest, MethodsOtherThanGetAndHeadAre405) {
  auto h = Make();
  h->Recv("POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
  h->Recv(Get("/a.txt", "", "DELETE"));
  h->Drive();
  std::vector<Reply> r = h->Replies();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, 405);
  EXPECT_EQ(r[0].Header("allow"), "GET, HEAD");
  EXPECT_EQ(r[1].status, 405);
  EXPECT_EQ(h->host.file_ops, 0);
  Check(*h);
}

TEST_F(FileAnswerTest, PipelinedRequestsAreAnsweredInOrder) {
  auto h = Make({}, 4, 4096);
  h->Recv(Get("/big.bin") + Get("/fast") + Get("/a.txt") + Get("/nope") + Get("/a.txt", "", "HEAD"));
  h->Drive();
  std::vector<Reply> r = h->Replies({false, false, false, false, true});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].body, Pattern(100'000));
  EXPECT_EQ(r[1].body, "ok");
  EXPECT_EQ(r[2].body, "hello, file\n");
  EXPECT_EQ(r[3].status, 404);
  EXPECT_EQ(r[4].Header("content-length"), "12");
  Check(*h);
}

TEST_F(FileAnswerTest, FailedStepsAnswerWithTheirStatus) {
  struct Case {
    int step;  // 0: statx, 1: open
    int error;
    int status;
  };
  for (const Case& c : std::vector<Case>{{0, -EACCES, 403},
                                         {0, -ENOENT, 404},
                                         {0, -EIO, 500},
                                         {1, -EACCES, 403},
                                         {1, -ENFILE, 503},
                                         {1, -EXDEV, 404}}) {
    auto h = Make({.max_entries = 0});
    h->Recv(Get("/a.txt"));
    if (c.step == 1) {
      ASSERT_TRUE(h->CompleteFileOp());
    }
    ASSERT_TRUE(h->CompleteFileOp(c.error));
    h->Drive();
    std::vector<Reply> r = h->Replies();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, c.status) << c.step << " " << c.error;
    EXPECT_TRUE(h->conn.open());
    EXPECT_TRUE(h->closer().open.empty());
    Check(*h);
  }
}

// ---- splicing (file -> pipe -> socket)

exchange::ConnectionConfig SpliceConfig(uint64_t min_bytes = 50'000) {
  exchange::ConnectionConfig c;
  c.splice_min_bytes = min_bytes;
  return c;
}

TEST_F(FileAnswerTest, LargeBodiesAreSplicedAfterTheHead) {
  auto h = Make({}, 4, 4096, SpliceConfig());
  h->Recv(Get("/big.bin") + Get("/a.txt") + Get("/big.bin", "Range: bytes=10-60009\r\n"));
  for (int i = 0; i < 100000 && (h->host.file_op || h->host.send); ++i) {
    // The head is sent (and done) before any body byte is spliced after it.
    if (h->host.file_op && h->host.file_op->kind == testing::FakeHost::FileOp::kDrain) {
      EXPECT_FALSE(h->host.send.has_value());
    }
    h->CompleteFileOp();
    h->CompleteSend();
  }
  std::vector<Reply> r = h->Replies();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].body, Pattern(100'000));
  EXPECT_EQ(r[1].body, "hello, file\n");  // small: from memory, not spliced
  EXPECT_EQ(r[2].status, 206);
  EXPECT_EQ(r[2].body, Pattern(100'000).substr(10, 60'000));
  EXPECT_EQ(h->stats.file_splices.Get(), 2u);
  EXPECT_EQ(h->host.pipes_out, 0);  // given back (empty: checked by the host)
  EXPECT_TRUE(h->conn.open());
  Check(*h);
}

TEST_F(FileAnswerTest, SplicingWaitsForRoomAndTimesOutWithoutProgress) {
  exchange::ConnectionConfig config = SpliceConfig();
  config.send_timeout_ms = 1000;  // 10 ticks
  auto h = Make({}, 4, 4096, config);
  h->host.socket_room = 1000;  // a slow reader
  h->Recv(Get("/big.bin"));
  ASSERT_TRUE(h->CompleteFileOp());  // statx
  ASSERT_TRUE(h->CompleteFileOp());  // open
  h->CompleteSend();                 // the head
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(h->CompleteFileOp());
    h->Tick(5);  // progress every half timeout: never cut off
  }
  EXPECT_TRUE(h->conn.open());
  EXPECT_EQ(h->stats.timeouts.Get(), 0u);
  EXPECT_GT(h->wire.size(), 10'000u);
  // Now the peer takes nothing: the socket stays full and the poll pending.
  h->host.socket_room = 0;
  while (h->host.file_op && h->host.file_op->kind != testing::FakeHost::FileOp::kPoll) {
    h->CompleteFileOp();
  }
  ASSERT_TRUE(h->host.file_op.has_value());
  h->Tick(11);
  EXPECT_EQ(h->stats.timeouts.Get(), 1u);
  EXPECT_TRUE(h->host.closed);
  EXPECT_FALSE(h->conn.Freeable());  // the poll is still armed
  h->CloseDone();
  ASSERT_TRUE(h->CompleteFileOp(-ECANCELED));  // cancelled by the close
  EXPECT_TRUE(h->conn.Freeable());
  h->conn.Release();
  EXPECT_EQ(h->host.pipes_out, 0);  // given back with bytes in it: closed
  Check(*h);
}

TEST_F(FileAnswerTest, FileShrunkWhileSplicedClosesTheConnection) {
  auto h = Make({.max_entries = 0}, 4, 4096, SpliceConfig());
  h->host.pipe_bytes = 16384;
  h->Recv(Get("/big.bin"));
  ASSERT_TRUE(h->CompleteFileOp());  // statx
  ASSERT_TRUE(h->CompleteFileOp());  // open
  ASSERT_EQ(truncate((root_ + "/big.bin").c_str(), 20'000), 0);
  h->Drive();
  EXPECT_EQ(h->stats.file_truncated.Get(), 1u);
  EXPECT_TRUE(h->host.closed || h->host.shutdown_pending || h->host.shutdown_done);
  EXPECT_NE(h->wire.find("Content-Length: 100000"), std::string::npos);
  EXPECT_EQ(h->wire.substr(h->wire.find("\r\n\r\n") + 4), Pattern(100'000).substr(0, 20'000));
  h->CloseDone();
  EXPECT_TRUE(h->conn.Freeable());
  h->conn.Release();
  EXPECT_TRUE(h->closer().open.empty());
  EXPECT_EQ(h->host.pipes_out, 0);
  Check(*h);
}

TEST_F(FileAnswerTest, WithoutAPipeTheBodyIsRead) {
  auto h = Make({}, 4, 4096, SpliceConfig());
  h->host.max_pipes = 0;
  h->Recv(Get("/big.bin"));
  h->Drive();
  ASSERT_EQ(h->Replies().size(), 1u);
  EXPECT_EQ(h->Replies()[0].body, Pattern(100'000));
  EXPECT_EQ(h->stats.file_splices.Get(), 0u);
  Check(*h);
}

}  // namespace
}  // namespace uring_http::http1
