// End-to-end tests of the server over real TCP sockets on an ephemeral port.
#include "src/serving/server.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "test/serving/test_routes.h"
#include "uring_http/testing.h"

namespace uring_http::serving {
namespace {

using testing::Get;
using testing::HttpResponse;
using testing::TestClient;

class ServerTest : public ::testing::Test {
 protected:
  static ServerConfig BaseConfig() {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 2;
    config.accept_capacity = 256;
    config.workers = 4;
    return config;
  }

  void Start(ServerConfig config = BaseConfig()) {
    log_ = std::make_shared<testing::RouteLog>();
    server_ = std::make_unique<Server>(config, testing::MakeTestRouter(log_));
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }

  // Waits (generously) until the server has no connection open.
  bool WaitForNoActive() {
    for (int i = 0; i < 500; ++i) {
      if (server_->Stats().active == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  uint16_t port() const { return server_->port(); }

  // A client of the server (uring_http/testing.h), for tests that send
  // well-formed requests; TestClient writes the bytes by hand.
  testing::Client NewClient() const {
    testing::ClientOptions options;
    options.port = port();
    return testing::Client(options);
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<testing::RouteLog> log_;
};

TEST_F(ServerTest, FastKeepAliveManyRequests) {
  Start();
  testing::Client c = NewClient();
  for (int i = 0; i < 200; ++i) {
    auto r = c.Get("/echo?" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << i << ": " << r;
    EXPECT_EQ(r.version, "HTTP/1.1");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.reason, "OK");
    EXPECT_EQ(r.body, std::to_string(i));
    EXPECT_FALSE(r.connection_closed);
    EXPECT_TRUE(r.has_header("date"));
  }
  EXPECT_EQ(c.connections_opened(), 1);
  EXPECT_EQ(server_->Stats().requests, 200u);
}

// The scheduling policy of every worker thread ("uring-worker") of this
// process, read back from the kernel.
std::vector<int> WorkerPolicies() {
  std::vector<int> policies;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "uring-worker") continue;
    policies.push_back(sched_getscheduler(std::stoi(entry.path().filename().string())));
  }
  return policies;
}

// The workers' policies once all 4 have named themselves (they start after
// Start() returns).
std::vector<int> AllWorkerPolicies() {
  std::vector<int> policies;
  for (int i = 0; i < 1000 && (policies = WorkerPolicies()).size() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return policies;
}

TEST_F(ServerTest, WorkersRunAsSchedBatchUnlessAskedNot) {
  Start();
  std::vector<int> policies = AllWorkerPolicies();
  ASSERT_EQ(policies.size(), 4u);
  for (int p : policies) EXPECT_EQ(p, SCHED_BATCH);
  server_->Stop();
  server_->Wait();
  ServerConfig config = BaseConfig();
  config.workers_batch_sched = false;
  Start(config);
  policies = AllWorkerPolicies();
  ASSERT_EQ(policies.size(), 4u);
  for (int p : policies) EXPECT_EQ(p, SCHED_OTHER);
}

TEST_F(ServerTest, SlowRequestAnsweredByWorker) {
  Start();
  testing::Client c = NewClient();
  auto r = c.Get("/slow?20-a");
  EXPECT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.body, "slow:a");
  // The connection stays usable after a SLOW answer.
  EXPECT_EQ(c.Get("/fast").status, 200);
  EXPECT_EQ(c.connections_opened(), 1);
  const ServerStats stats = server_->Stats();
  EXPECT_EQ(stats.slow_dispatched, 1u);
  EXPECT_EQ(stats.slow_completed, 1u);
  EXPECT_EQ(stats.workers.completed, 1u);
}

TEST_F(ServerTest, PipelinedRequestsAnsweredInOrderAroundSlowOne) {
  Start();
  TestClient c(port());
  // All five in one write: FAST, SLOW, FAST, SLOW, FAST.
  ASSERT_TRUE(c.Send(Get("/echo?1") + Get("/slow?30-2") + Get("/echo?3") + Get("/slow?5-4") +
                     Get("/echo?5")));
  const char* expected[] = {"1", "slow:2", "3", "slow:4", "5"};
  for (const char* want : expected) {
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << want;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, want);
  }
}

TEST_F(ServerTest, PipelinedBurstLargerThanOneReceive) {
  Start();
  TestClient c(port());
  std::string burst;
  for (int i = 0; i < 500; ++i) burst += Get("/echo?" + std::to_string(i));
  ASSERT_TRUE(c.Send(burst));
  for (int i = 0; i < 500; ++i) {
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    ASSERT_EQ(r->body, std::to_string(i));
  }
}

TEST_F(ServerTest, RequestSplitIntoSingleBytes) {
  Start();
  TestClient c(port());
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world";
  for (char ch : request) {
    ASSERT_TRUE(c.Send(std::string_view(&ch, 1)));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello world");
}

TEST_F(ServerTest, LargeBodiesBothWays) {
  Start();
  testing::Client c = NewClient();
  const std::string body(300000, 'x');
  auto r = c.Post("/echo", body);
  EXPECT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(c.Get("/big?500000").body.size(), 500000u);
  EXPECT_EQ(c.Post("/slow", body).body, std::to_string(body.size()));
  EXPECT_EQ(c.Get("/slowbig").body, std::string(100000, 's'));
  EXPECT_EQ(c.connections_opened(), 1);
}

// --send-zc: large responses go out with IORING_OP_SEND_ZC, whose buffer the
// kernel holds until a second (notification) completion. Bodies must arrive
// intact while later output is queued behind them, and a connection closed
// under a zero-copy send is freed only after that notification.
TEST_F(ServerTest, ZeroCopySendsLargeResponsesIntact) {
  ServerConfig config = BaseConfig();
  config.send_zc_min_bytes = 2048;
  Start(config);
  if (server_->ReadyLine().find("send-zc(") == std::string::npos) {
    GTEST_SKIP() << "kernel without IORING_OP_SEND_ZC usage reports: " << server_->ReadyLine();
  }
  TestClient c(port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(Get("/big?500000")));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->body, std::string(500000, 'b')) << i;
  }
  // Pipelined: small answers queue up behind large ones while the kernel may
  // still hold the large ones' bytes; a SLOW large body from a worker too.
  ASSERT_TRUE(c.Send(Get("/big?300000") + Get("/echo?one") + Get("/slowbig") + Get("/big?20000") +
                     Get("/echo?two")));
  const std::string expected[] = {std::string(300000, 'b'), "one", std::string(100000, 's'),
                                  std::string(20000, 'b'), "two"};
  for (const std::string& want : expected) {
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << want.size();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, want);
  }
  // A client with a tiny receive window that sends one request at a time and
  // reads nothing until the end: bodies wait in the server's send queue,
  // still the kernel's, while the next ones are built (with plain sends: one
  // zero-copy send per connection at a time). They fit one arena chunk, which
  // the pool hands out again at once: a chunk freed before its notification
  // would show up as another request's letter.
  {
    TestClient narrow(port(), 10000, /*receive_buffer=*/4096);
    for (char letter = 'a'; letter < 'a' + 12; ++letter) {
      ASSERT_TRUE(narrow.Send(Get(std::string("/fill?3000-") + letter)));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (char letter = 'a'; letter < 'a' + 12; ++letter) {
      auto r = narrow.ReadResponse();
      ASSERT_TRUE(r.has_value()) << letter;
      EXPECT_EQ(r->body, std::string(3000, letter));
    }
  }
  // Small responses stay on the plain send.
  const uint64_t zc_before = server_->Stats().sends_zc;
  ASSERT_TRUE(c.Send(Get("/echo?small")));
  ASSERT_TRUE(c.ReadResponse().has_value());
  const ServerStats stats = server_->Stats();
  EXPECT_EQ(stats.sends_zc, zc_before);
  EXPECT_GE(stats.sends_zc, 5u);  // 3, the pipelined batch, the narrow client's first
  EXPECT_LE(stats.sends_zc_copied, stats.sends_zc);

  // Clients that ask for a large body and leave without reading it: each slot
  // is freed (after its notification) and the server keeps serving.
  for (int i = 0; i < 8; ++i) {
    TestClient gone(port());
    ASSERT_TRUE(gone.Send(Get("/big?4000000")));
  }
  c.Close();
  EXPECT_TRUE(WaitForNoActive());
  TestClient after(port());
  ASSERT_TRUE(after.Send(Get("/big?100000")));
  auto r = after.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body.size(), 100000u);
}

// Without CAP_IPC_LOCK the pages a zero-copy send pins count against
// RLIMIT_MEMLOCK; at the limit the kernel refuses with ENOMEM, and the
// response must go out by copying instead of failing.
TEST_F(ServerTest, ZeroCopyAtTheLockedMemoryLimitFallsBackToCopying) {
  // Capabilities are per thread and inherited by the threads Start() makes:
  // drop CAP_IPC_LOCK on a helper thread that starts the server.
  rlimit old_limit{};
  getrlimit(RLIMIT_MEMLOCK, &old_limit);
  bool ready = false;
  std::thread starter([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) return;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &header, data) != 0) return;
    rlimit low{8u << 20, old_limit.rlim_max};  // the distributions' default
    if (setrlimit(RLIMIT_MEMLOCK, &low) != 0) return;
    ServerConfig config = BaseConfig();
    config.accept_threads = 1;
    config.send_zc_min_bytes = 16384;
    Start(config);
    ready = true;
  });
  starter.join();
  setrlimit(RLIMIT_MEMLOCK, &old_limit);
  ASSERT_TRUE(ready) << "could not drop CAP_IPC_LOCK or lower RLIMIT_MEMLOCK";
  if (server_->ReadyLine().find("send-zc(") == std::string::npos) {
    GTEST_SKIP() << "kernel without IORING_OP_SEND_ZC usage reports";
  }
  // Clients that read nothing at first keep their 1 MiB bodies pinned, so
  // together they exceed 8 MiB of locked memory.
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 24; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->Send(Get(std::string("/fill?1048576-") + char('a' + i))));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (int i = 0; i < 24; ++i) {
    auto r = clients[i]->ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::string(1048576, char('a' + i))) << i;
  }
  const ServerStats stats = server_->Stats();
  EXPECT_GT(stats.sends_zc_refused, 0u) << "the limit was never reached";
  EXPECT_EQ(stats.responses_2xx, 24u);
}

// A CQ far too small for the load: the kernel holds what does not fit
// (IORING_FEAT_NODROP) and ends multishot receives and accepts, which must be
// re-armed; MSG_RING results meet a full CQ and are retried. Every request
// must still be answered, in order.
TEST_F(ServerTest, CompletionQueueOverflowLosesNothing) {
  ServerConfig config = BaseConfig();
  config.accept_threads = 1;
  config.ring_sq_entries = 8;
  config.ring_cq_entries = 16;
  Start(config);
  constexpr int kClients = 48;
  for (int round = 0; round < 4; ++round) {
    std::vector<std::unique_ptr<TestClient>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<TestClient>(port()));
      ASSERT_TRUE(clients.back()->connected()) << round << "/" << i;
    }
    // Everyone at once: pipelined FAST and SLOW requests in one write each.
    for (int i = 0; i < kClients; ++i) {
      const std::string tag = std::to_string(round) + "-" + std::to_string(i);
      ASSERT_TRUE(clients[i]->Send(Get("/echo?a" + tag) + Get("/slow?1-" + tag) +
                                   Get("/echo?b" + tag)));
    }
    for (int i = 0; i < kClients; ++i) {
      const std::string tag = std::to_string(round) + "-" + std::to_string(i);
      for (const std::string& want : {"a" + tag, "slow:" + tag, "b" + tag}) {
        auto r = clients[i]->ReadResponse();
        ASSERT_TRUE(r.has_value()) << want;
        EXPECT_EQ(r->status, 200) << want;
        EXPECT_EQ(r->body, want);
      }
    }
  }
  const ServerStats stats = server_->Stats();
  EXPECT_GT(stats.cq_overflows, 0u) << "the CQ never overflowed: the test proves nothing";
  EXPECT_EQ(stats.slow_completed, 4u * kClients);
  EXPECT_EQ(stats.results_dropped, 0u);
}

TEST_F(ServerTest, Http10ClosesUnlessKeepAlive) {
  Start();
  {
    TestClient c(port());
    ASSERT_TRUE(c.Send("GET /fast HTTP/1.0\r\n\r\n"));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->Closes());
    EXPECT_TRUE(c.ReadEof());
  }
  {
    TestClient c(port());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(c.Send("GET /fast HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
      auto r = c.ReadResponse();
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->Header("connection"), "keep-alive");
    }
  }
}

TEST_F(ServerTest, ConnectionCloseHonoured) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/fast", "Connection: close\r\n") + Get("/fast")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->Closes());
  EXPECT_TRUE(c.ReadEof());  // the second request is not answered
}

TEST_F(ServerTest, SlowRequestWithConnectionClose) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/slow?10-z", "Connection: close\r\n")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:z");
  EXPECT_TRUE(r->Closes());
  EXPECT_TRUE(c.ReadEof());
}

TEST_F(ServerTest, BareReferenceRequestLine) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send("GET /fast\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status_line, "HTTP/1.1 200 OK");
  EXPECT_TRUE(r->Closes());
  EXPECT_EQ(r->Header("content-length"), "0");
  EXPECT_TRUE(c.ReadEof());
}

TEST_F(ServerTest, HeadHasLengthButNoBody) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send("HEAD /echo?abc HTTP/1.1\r\nHost: x\r\n\r\n" + Get("/echo?after")));
  auto r = c.ReadResponse(/*head=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-length"), "3");
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "after");  // no stray body bytes in between
}

TEST_F(ServerTest, NotFoundKeepsConnectionAndMethodNotAllowedSaysAllow) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/nope")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_FALSE(r->Closes());
  ASSERT_TRUE(c.Send("DELETE /fast HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("allow"), "GET, HEAD, OPTIONS");
  ASSERT_TRUE(c.Send(Get("/fast")));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

struct BadCase {
  const char* name;
  std::string request;
  int status;
};

TEST_F(ServerTest, BadRequestsGetStatusAndClose) {
  ServerConfig config = BaseConfig();
  config.limits.max_request_line = 256;
  config.limits.max_header_bytes = 512;
  config.limits.max_headers = 10;
  config.limits.max_body_bytes = 1000;
  Start(config);
  std::string many_headers = "GET /fast HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20; ++i) many_headers += "X-H" + std::to_string(i) + ": v\r\n";
  many_headers += "\r\n";
  const BadCase cases[] = {
      {"malformed line", "GARBAGE\r\n\r\n", 400},
      {"space before colon", "GET /fast HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"no host", "GET /fast HTTP/1.1\r\n\r\n", 400},
      {"bad content-length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400},
      {"cl and te", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n", 400},
      {"uri too long", "GET /" + std::string(400, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", 414},
      {"header too large", "GET /fast HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(600, 'v') +
                               "\r\n\r\n", 431},
      {"too many headers", many_headers, 431},
      {"body too large", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413},
      {"coding before chunked",
       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"final coding not chunked",
       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
      {"chunked twice",
       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
      {"chunked in http/1.0",
       "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"bad chunk size", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "zz\r\n", 400},
      {"chunked body too large",
       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "3e9\r\n" + std::string(1001, 'b') + "\r\n0\r\n\r\n", 413},
      {"version", "GET /fast HTTP/2.0\r\nHost: x\r\n\r\n", 505},
  };
  for (const BadCase& bad : cases) {
    TestClient c(port());
    ASSERT_TRUE(c.Send(bad.request)) << bad.name;
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << bad.name;
    EXPECT_EQ(r->status, bad.status) << bad.name;
    EXPECT_TRUE(r->Closes()) << bad.name;
    EXPECT_TRUE(c.ReadEof()) << bad.name;
  }
  // Nothing else broke, and every refused connection gave its slot back.
  TestClient ok(port());
  ASSERT_TRUE(ok.Send(Get("/fast")));
  auto r = ok.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  ok.Close();
  EXPECT_TRUE(WaitForNoActive());
  EXPECT_EQ(server_->Stats().bad_requests, std::size(cases));
}

TEST_F(ServerTest, HandlerExceptionBecomes500) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/throw") + Get("/fast")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, ExpectContinue) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 100);
  ASSERT_TRUE(c.Send("data"));
  r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "data");
}

TEST_F(ServerTest, HalfClosedClientStillGetsAnswers) {
  Start();
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/echo?1") + Get("/slow?20-2") + Get("/echo?3")));
  c.ShutdownWrite();
  for (const char* want : {"1", "slow:2", "3"}) {
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value()) << want;
    EXPECT_EQ(r->body, want);
  }
  EXPECT_TRUE(c.ReadEof());
  EXPECT_TRUE(WaitForNoActive());
}

TEST_F(ServerTest, ClientVanishesDuringSlowTaskAndSlotIsReused) {
  ServerConfig config = BaseConfig();
  config.accept_threads = 1;
  config.accept_capacity = 2;
  Start(config);
  for (int round = 0; round < 5; ++round) {
    {
      TestClient c(port());
      ASSERT_TRUE(c.Send(Get("/slow?50-gone")));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (round % 2 == 0) {
        c.Reset();
      } else {
        c.Close();
      }
    }
    ASSERT_TRUE(WaitForNoActive()) << "round " << round;
  }
  const ServerStats stats = server_->Stats();
  EXPECT_EQ(stats.slow_dispatched, 5u);
  EXPECT_EQ(stats.slow_completed, 5u);
  EXPECT_EQ(stats.results_dropped, 0u);
  // Both slots are free again and serve.
  TestClient a(port()), b(port());
  for (TestClient* c : {&a, &b}) {
    ASSERT_TRUE(c->Send(Get("/slow?1-ok")));
    auto r = c->ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "slow:ok");
  }
}

TEST_F(ServerTest, OneWorkerSerializesSlowTasksFifo) {
  ServerConfig config = BaseConfig();
  config.workers = 1;
  Start(config);
  constexpr int kTasks = 6;
  constexpr int kMs = 40;
  std::vector<std::unique_ptr<TestClient>> clients;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kTasks; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->Send(Get("/slow?" + std::to_string(kMs) + "-" +
                                         std::to_string(i))));
    // Spaced so that the queue order is the order sent.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < kTasks; ++i) {
    auto r = clients[i]->ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "slow:" + std::to_string(i));
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // One worker runs them one after another: at least N x duration in all.
  EXPECT_GE(elapsed, std::chrono::milliseconds(kTasks * kMs));
  std::lock_guard<std::mutex> lock(log_->mu);
  ASSERT_EQ(log_->slow_started.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_EQ(log_->slow_started[i], std::to_string(kMs) + "-" + std::to_string(i));
  }
}

TEST_F(ServerTest, ZeroWorkersRunsSlowInline) {
  ServerConfig config = BaseConfig();
  config.workers = 0;
  Start(config);
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/slow?1-inline")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "slow:inline");
  EXPECT_EQ(server_->Stats().slow_dispatched, 0u);
}

TEST_F(ServerTest, FullPoolRefusesCleanlyAndRecovers) {
  ServerConfig config = BaseConfig();
  config.accept_threads = 1;
  config.accept_capacity = 3;
  Start(config);
  std::vector<std::unique_ptr<TestClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(held.back()->Send(Get("/fast")));
    ASSERT_TRUE(held.back()->ReadResponse().has_value());
  }
  {
    TestClient extra(port());
    auto r = extra.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 503);
    EXPECT_TRUE(r->Closes());
    EXPECT_TRUE(extra.ReadEof());
  }
  EXPECT_EQ(server_->Stats().refused, 1u);
  // The held connections still work.
  ASSERT_TRUE(held[0]->Send(Get("/fast")));
  ASSERT_TRUE(held[0]->ReadResponse().has_value());
  // Freeing a slot lets a new connection in.
  held.pop_back();
  for (int i = 0; i < 200 && server_->Stats().active > 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  TestClient again(port());
  ASSERT_TRUE(again.Send(Get("/fast")));
  auto r = again.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, HeaderTimeoutAnswers408) {
  ServerConfig config = BaseConfig();
  config.header_timeout_ms = 300;
  Start(config);
  TestClient c(port());
  ASSERT_TRUE(c.Send("GET /fast HTTP/1.1\r\nHost: x\r\n"));  // never finished
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(c.ReadEof());
  EXPECT_GE(server_->Stats().timeouts, 1u);
}

TEST_F(ServerTest, IdleTimeoutCloses) {
  ServerConfig config = BaseConfig();
  config.idle_timeout_ms = 300;
  Start(config);
  TestClient c(port());
  ASSERT_TRUE(c.Send(Get("/fast")));
  ASSERT_TRUE(c.ReadResponse().has_value());
  EXPECT_TRUE(c.ReadEof());
  EXPECT_TRUE(WaitForNoActive());
}

TEST_F(ServerTest, StopDrainsInFlightSlowRequests) {
  Start();
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->Send(Get("/slow?150-" + std::to_string(i))));
  }
  TestClient idle(port());
  ASSERT_TRUE(idle.Send(Get("/fast")));
  ASSERT_TRUE(idle.ReadResponse().has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  server_->Stop();
  for (int i = 0; i < 4; ++i) {
    auto r = clients[i]->ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "slow:" + std::to_string(i));
    EXPECT_TRUE(r->Closes());
    EXPECT_TRUE(clients[i]->ReadEof());
  }
  EXPECT_TRUE(idle.ReadEof());  // idle keep-alive connections are closed
  clients.clear();
  idle.Close();
  server_->Wait();
}

TEST_F(ServerTest, ReceiveBufferExhaustionLosesNothing) {
  // Four provided buffers for 64 connections that all send at once: the ring
  // runs dry (ENOBUFS), receives are re-armed as buffers return, and every
  // request is still answered.
  ServerConfig config = BaseConfig();
  config.accept_threads = 1;
  config.recv_buffer_count = 4;
  config.recv_buffer_size = 256;
  Start(config);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 64; ++i) clients.push_back(std::make_unique<TestClient>(port()));
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 64; ++i) {
      // Larger than one buffer, so each request spans several receives.
      ASSERT_TRUE(clients[i]->Send(Get("/echo?" + std::to_string(i),
                                       "X-Pad: " + std::string(600, 'p') + "\r\n")));
    }
    for (int i = 0; i < 64; ++i) {
      auto r = clients[i]->ReadResponse();
      ASSERT_TRUE(r.has_value()) << i;
      EXPECT_EQ(r->body, std::to_string(i));
    }
  }
  EXPECT_GT(server_->Stats().recv_nobufs, 0u);
}

TEST_F(ServerTest, ManyConcurrentConnections) {
  ServerConfig config = BaseConfig();
  config.accept_capacity = 2000;
  Start(config);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 600; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  for (int i = 0; i < 600; ++i) {
    ASSERT_TRUE(clients[i]->Send(Get(i % 10 == 0 ? "/slow?1-" + std::to_string(i)
                                                 : "/echo?" + std::to_string(i))));
  }
  for (int i = 0; i < 600; ++i) {
    auto r = clients[i]->ReadResponse();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->body, (i % 10 == 0 ? "slow:" : "") + std::to_string(i));
  }
  clients.clear();
  EXPECT_TRUE(WaitForNoActive());
}

}  // namespace
}  // namespace uring_http::serving
