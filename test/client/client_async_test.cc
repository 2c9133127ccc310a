// The client on a ring: ASYNC handlers of a real server call a scripted
// upstream with `co_await client.Get(ex, url)`. No worker is used for a
// numeric address (a name is resolved on one, once), kept connections
// are shared by the ring's exchanges, a client leaving cancels the
// upstream wait and closes its connection, a stalled upstream times out,
// and a SLOW handler makes the same call blocking.
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/async/exchange.h"
#include "src/client/client.h"
#include "src/serving/server.h"
#include "test/client/fake_upstream.h"
#include "test/serving/http_client.h"

namespace uring_http::client {
namespace {

using namespace std::chrono_literals;
using client::testing::FakeUpstream;
using client::testing::WriteAll;
using uring_http::testing::Get;
using uring_http::testing::TestClient;

std::atomic<bool> release_stall{false};
std::atomic<bool> stalled_peer_closed{false};
std::atomic<int> stalls{0};

// /a: a Content-Length answer echoing its index on the connection; /stall:
// the head only, then nothing until the test lets go (or the client's
// close is seen).
bool Script(int fd, const std::string& req, int index) {
  if (req.starts_with("GET /stall")) {
    ++stalls;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
    while (!release_stall) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 5) > 0) {
        char c;
        if (recv(fd, &c, 1, MSG_DONTWAIT) == 0) {
          stalled_peer_closed = true;
          return false;
        }
      }
    }
    return false;
  }
  const std::string body = "up" + std::to_string(index);
  WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  return true;
}

class ClientAsyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    release_stall = false;
    stalled_peer_closed = false;
    stalls = 0;
    upstream_ = std::make_unique<FakeUpstream>(Script);
    ClientOptions options;
    options.read_timeout = 300ms;
    client_ = std::make_unique<Client>(options);
    router::Router r;
    Client* client = client_.get();
    const std::string base = "127.0.0.1:" + std::to_string(upstream_->port());
    EXPECT_TRUE(r.Async("GET", "/fetch", [client, base](async::Exchange& ex) -> async::Task<> {
                   const http::ParamValue host_param = ex.request().QueryParam("host");
                   const std::string host = host_param ? std::string(*host_param) : "127.0.0.1";
                   const std::string port = base.substr(base.find(':') + 1);
                   const http::ParamValue path_param = ex.request().QueryParam("path");
                   const std::string path = path_param ? std::string(*path_param) : "/a";
                   absl::StatusOr<Response> got = co_await client->Get(ex, "http://" + host + ":" + port + path);
                   if (!got.ok()) {
                     ex.response().set_status(absl::IsDeadlineExceeded(got.status()) ? 504 : 502);
                     ex.response().set_body(std::string(got.status().message()));
                     co_return;
                   }
                   ex.response().set_body(got->body);
                 }).ok());
    EXPECT_TRUE(r.Slow("GET", "/fetch-blocking", [client, base](const http::Request&, http::Response& res) {
                   absl::StatusOr<Response> got = client->GetBlocking("http://" + base + "/a");
                   res.set_body(got.ok() ? got->body : std::string(got.status().message()));
                 }).ok());
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 1;
    server_ = std::make_unique<serving::Server>(config, std::move(r));
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    release_stall = true;
    server_->Stop();
    server_->Wait();
    upstream_.reset();
  }
  template <typename Pred>
  bool WaitFor(Pred pred) {
    for (int i = 0; i < 2000; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  std::unique_ptr<FakeUpstream> upstream_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<serving::Server> server_;
};

TEST_F(ClientAsyncTest, ExchangesOnTheRingShareOneKeptConnectionAndNoWorker) {
  TestClient c(server_->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(Get("/fetch")));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "up" + std::to_string(i));
  }
  EXPECT_EQ(upstream_->connections(), 1);
  const serving::ServerStats s = server_->Stats();
  EXPECT_EQ(s.async_started, 3u);
  EXPECT_EQ(s.async_worker_calls, 0u);  // a numeric address needs no resolver
  EXPECT_EQ(s.slow_dispatched, 0u);
}

TEST_F(ClientAsyncTest, AHostNameIsResolvedOnAWorkerOnceThenCached) {
  TestClient c(server_->port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.Send(Get("/fetch?host=localhost")));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_EQ(server_->Stats().async_worker_calls, 1u);
}

TEST_F(ClientAsyncTest, AStalledUpstreamIs504AfterTheReadTimeout) {
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send(Get("/fetch?path=/stall")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 504);
  EXPECT_NE(r->body.find("timed out"), std::string::npos) << r->body;
  // The connection with half a body was closed, not kept.
  EXPECT_TRUE(WaitFor([] { return stalled_peer_closed.load(); }));
}

TEST_F(ClientAsyncTest, TheClientLeavingCancelsTheUpstreamWaitAndClosesItsConnection) {
  {
    TestClient c(server_->port());
    ASSERT_TRUE(c.Send(Get("/fetch?path=/stall")));
    ASSERT_TRUE(WaitFor([] { return stalls.load() == 1; }));
  }
  // Cancelled by the close (seen at once), not ended by the read timeout.
  EXPECT_TRUE(WaitFor([&] { return server_->Stats().async_cancelled == 1; }));
  EXPECT_TRUE(WaitFor([] { return stalled_peer_closed.load(); }));
  EXPECT_TRUE(WaitFor([&] { return server_->Stats().async_active == 0; }));
}

TEST_F(ClientAsyncTest, ASlowHandlerMakesTheSameCallBlocking) {
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send(Get("/fetch-blocking")));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "up0");
}

}  // namespace
}  // namespace uring_http::client
