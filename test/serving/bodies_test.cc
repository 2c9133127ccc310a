// Request and response bodies end to end, over real sockets: chunked uploads
// and pipelining after them, gigabyte bodies both ways with flat memory,
// clients that leave mid-stream, slow and stalled readers, and the defects
// that were found in the old event loop and could be shown from outside
// (the worker's header room, a MSG_RING the kernel refuses).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/io/msg_ring_sender.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"
#include "test/serving/test_routes.h"

namespace uring_http::serving {
namespace {

using testing::Get;
using testing::TestClient;

#ifdef URING_HTTP_SANITIZED
// The sanitizers run an order of magnitude slower: the same paths, smaller.
constexpr uint64_t kBigBody = uint64_t{96} << 20;
#else
constexpr uint64_t kBigBody = uint64_t{1} << 30;
#endif

// Resident memory of this process (server and client), in KiB.
long RssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::string ChunkedRequest(std::string_view path, const std::vector<std::string>& pieces) {
  std::string r = "POST " + std::string(path) +
                  " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string& p : pieces) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx;ext=\"v\"", p.size());
    r += std::string(size) + "\r\n" + p + "\r\n";
  }
  return r + "0\r\nX-Trailer: done\r\n\r\n";
}

class BodiesTest : public ::testing::Test {
 protected:
  static ServerConfig BaseConfig() {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 4;
    return config;
  }
  void Start(ServerConfig config = BaseConfig()) {
    server_ = std::make_unique<Server>(config, testing::MakeTestRouter());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    io::MsgRingSender::InjectFailuresForTest(0, 0);
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }
  bool WaitFor(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  uint16_t port() const { return server_->port(); }
  std::unique_ptr<Server> server_;
};

TEST_F(BodiesTest, ChunkedUploadsAndPipeliningAfterThem) {
  Start();
  TestClient c(port());
  // FAST buffered echo, SLOW buffered echo, a plain GET, in one write.
  const std::string big(70000, 'c');
  ASSERT_TRUE(c.Send(ChunkedRequest("/echo", {"hello ", "chunked ", "world"}) +
                     ChunkedRequest("/slow-echo", {big.substr(0, 30000), big.substr(30000)}) +
                     Get("/echo?after")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello chunked world");
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, big);
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "after");
  EXPECT_EQ(server_->Stats().chunked_bodies, 2u);
}

TEST_F(BodiesTest, ChunkedUploadSplitIntoSingleBytes) {
  Start();
  TestClient c(port());
  const std::string request = ChunkedRequest("/echo", {"abc", "defgh"}) + Get("/echo?x");
  for (char ch : request) {
    ASSERT_TRUE(c.Send(std::string_view(&ch, 1)));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "abcdefgh");
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "x");
}

// A streamed upload of a gigabyte through a SLOW handler: the ring holds at
// most its pipe and what is staged, so memory stays flat.
TEST_F(BodiesTest, GigabyteUploadHoldsFlatMemory) {
  Start();
  TestClient c(port(), 60000);
  const long rss_before = RssKb();
  ASSERT_TRUE(c.Send("POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                     std::to_string(kBigBody) + "\r\n\r\n"));
  const std::string block(256 * 1024, 'u');
  long rss_peak = rss_before;
  for (uint64_t sent = 0; sent < kBigBody; sent += block.size()) {
    ASSERT_TRUE(c.Send(std::string_view(block).substr(
        0, std::min<uint64_t>(block.size(), kBigBody - sent))));
    if ((sent / block.size()) % 256 == 0) rss_peak = std::max(rss_peak, RssKb());
  }
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::to_string(kBigBody));
  EXPECT_LT(rss_peak - rss_before, 32 * 1024) << "resident memory grew by "
                                             << (rss_peak - rss_before) << " KiB";
  // The same body chunked.
  ASSERT_TRUE(c.Send("POST /sink HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const uint64_t chunked_total = kBigBody / 8;
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", block.size());
  for (uint64_t sent = 0; sent < chunked_total; sent += block.size()) {
    ASSERT_TRUE(c.Send(size_line));
    ASSERT_TRUE(c.Send(block));
    ASSERT_TRUE(c.Send("\r\n"));
  }
  ASSERT_TRUE(c.Send("0\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, std::to_string(chunked_total));
  EXPECT_EQ(server_->Stats().streamed_requests, 2u);
}

// A gigabyte streamed from a worker to a reader that pauses now and then:
// the worker waits for the reader (backpressure), memory stays flat, every
// byte arrives.
TEST_F(BodiesTest, GigabyteDownloadWithAPausingReader) {
  Start();
  TestClient c(port(), 60000);
  const long rss_before = RssKb();
  ASSERT_TRUE(c.Send(Get("/stream?" + std::to_string(kBigBody))));
  // Read the head, then the chunked body, counting and checking bytes.
  std::string head;
  char buf[65536];
  uint64_t body = 0, pieces = 0;
  long rss_peak = rss_before;
  std::string pending;
  bool done = false;
  while (!done) {
    const ssize_t n = recv(c.fd(), buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << "connection ended after " << body << " bytes";
    pending.append(buf, static_cast<size_t>(n));
    if (head.empty()) {
      const size_t end = pending.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      head = pending.substr(0, end + 4);
      pending.erase(0, end + 4);
      ASSERT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
    }
    // Parse whole chunks out of `pending`.
    for (;;) {
      const size_t eol = pending.find("\r\n");
      if (eol == std::string::npos) break;
      const uint64_t size = std::strtoull(pending.c_str(), nullptr, 16);
      if (size == 0) {
        done = pending.find("\r\n\r\n") != std::string::npos;
        break;
      }
      if (pending.size() < eol + 2 + size + 2) break;
      ASSERT_EQ(pending.substr(eol + 2 + size, 2), "\r\n");
      body += size;
      pending.erase(0, eol + 2 + size + 2);
    }
    if (++pieces % 2048 == 0) {
      rss_peak = std::max(rss_peak, RssKb());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the reader pauses
    }
  }
  EXPECT_EQ(body, kBigBody);
  EXPECT_LT(rss_peak - rss_before, 32 * 1024) << "resident memory grew by "
                                             << (rss_peak - rss_before) << " KiB";
  // The connection is still good.
  ASSERT_TRUE(c.Send(Get("/echo?next")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "next");
}

// Clients that leave in the middle of a streamed upload or download: the
// handler's read or write fails, the worker is released, the slot reused.
TEST_F(BodiesTest, ClientsLeavingMidStreamReleaseWorkersAndSlots) {
  ServerConfig config = BaseConfig();
  config.workers = 2;
  config.accept_capacity = 4;
  Start(config);
  for (int round = 0; round < 6; ++round) {
    {
      TestClient up(port());
      ASSERT_TRUE(up.Send("POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n" +
                          std::string(300000, 'a')));
      TestClient down(port());
      ASSERT_TRUE(down.Send(Get("/stream?100000000")));
      char buf[1000];
      ASSERT_GT(recv(down.fd(), buf, sizeof buf, 0), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (round % 2 == 0) {
        up.Reset();
        down.Reset();
      }
    }
    ASSERT_TRUE(WaitFor([&] { return server_->Stats().active == 0; })) << "round " << round;
    ASSERT_TRUE(WaitFor([&] { return server_->Stats().workers.running == 0; }))
        << "a worker is still blocked on a stream, round " << round;
  }
  EXPECT_EQ(server_->Stats().slow_completed, 12u);
  // Both workers and every slot serve again.
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/slow?1-ok")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:ok");
}

// Defect 1, from outside: a peer that never reads but keeps sending a byte
// now and then is cut off after --send-timeout; one that reads slowly but
// steadily is not, however long the body takes.
TEST_F(BodiesTest, SendTimeoutMeasuresOutputProgress) {
  ServerConfig config = BaseConfig();
  config.send_timeout_ms = 1000;
  Start(config);
  {
    TestClient stalled(port(), 10000, /*receive_buffer=*/8192);
    ASSERT_TRUE(stalled.Send(Get("/stream?200000000")));
    const auto start = std::chrono::steady_clock::now();
    bool closed = false;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(6)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (send(stalled.fd(), "G", 1, MSG_NOSIGNAL) < 0) {
        closed = true;
        break;
      }
      if (server_->Stats().timeouts > 0) {
        closed = true;
        break;
      }
    }
    EXPECT_TRUE(closed) << "a peer that never reads was never cut off";
  }
  {
    TestClient slow(port(), 10000, /*receive_buffer=*/16384);
    const uint64_t total = 4 << 20;
    ASSERT_TRUE(slow.Send(Get("/stream?" + std::to_string(total))));
    const uint64_t timeouts_before = server_->Stats().timeouts;
    uint64_t received = 0;
    char buf[32768];
    const auto start = std::chrono::steady_clock::now();
    // About 2.5 s in all, far longer than the send timeout, in small steps.
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500)) {
      const ssize_t n = recv(slow.fd(), buf, sizeof buf, 0);
      ASSERT_GT(n, 0);
      received += static_cast<uint64_t>(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
    EXPECT_EQ(server_->Stats().timeouts, timeouts_before) << "a steady reader was cut off";
    EXPECT_GT(received, 0u);
  }
}

// Defect 5, from outside: a SLOW request with more headers than the
// worker used to make room for (256), under a --max-headers that allows them.
TEST_F(BodiesTest, SlowRequestWithManyHeadersWithinTheLimit) {
  ServerConfig config = BaseConfig();
  config.limits.max_headers = 500;
  config.limits.max_header_bytes = 64 * 1024;
  Start(config);
  std::string headers;
  for (int i = 0; i < 300; ++i) headers += "X-H" + std::to_string(i) + ": v\r\n";
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/slow?1-many", headers)));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "slow:many");
  ASSERT_TRUE(c.Send(Get("/echo?fast", headers)));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

// Defect 6, from outside: MSG_RING refused with ENOMEM (retried), and with
// an error retrying cannot cure (delivered through the ring's mailbox): the
// answer arrives and the drain finishes.
TEST_F(BodiesTest, RefusedMsgRingStillDeliversTheResult) {
  Start();
  TestClient c(port());
  io::MsgRingSender::InjectFailuresForTest(ENOMEM, 3);
  ASSERT_TRUE(c.Send(Get("/slow?1-a")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:a");
  io::MsgRingSender::InjectFailuresForTest(EINVAL, 1);
  ASSERT_TRUE(c.Send(Get("/slow?1-b")));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:b");
  EXPECT_EQ(server_->Stats().workers.mailbox_posts, 1u);
  EXPECT_EQ(server_->Stats().mailbox_messages, 1u);
  // A task in flight when the drain begins, whose result takes the mailbox:
  // it is answered (with close) and the drain finishes.
  ASSERT_TRUE(c.Send(Get("/slow?200-c")));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server_->Stop();
  io::MsgRingSender::InjectFailuresForTest(EINVAL, 1);
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:c");
  EXPECT_TRUE(r->Closes());
  server_->Wait();  // returns: the drain finished
  EXPECT_EQ(server_->Stats().workers.mailbox_posts, 2u);
}

// The stop itself, refused by the kernel, still reaches the rings.
TEST_F(BodiesTest, RefusedStopMessageStillStopsTheServer) {
  Start();
  {
    // Once a request is answered, the loop runs: Run() has passed its own
    // check for a stop that came before it was ready, which would send a
    // second stop message and make this one's path unobservable.
    TestClient c(port());
    ASSERT_TRUE(c.Send(Get("/fast")));
    ASSERT_TRUE(c.ReadResponse().has_value());
  }
  io::MsgRingSender::InjectFailuresForTest(EINVAL, 1);
  server_->Stop();
  server_->Wait();
  EXPECT_EQ(server_->Stats().mailbox_messages, 1u);
}

}  // namespace
}  // namespace uring_http::serving
