// RouteOptions::timeout on SLOW routes, over real sockets: a handler that
// waits in Request::WaitForStop is woken by the deadline and its answer is
// a 503; one that ignores it is answered 503 all the same when it returns;
// a stream whose head has gone is cut, not ended as if whole; a FAST route
// refuses a timeout. The deadline is the ring's: checked at its 100 ms
// tick, so the handlers below wait far longer than the routes allow.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"

namespace uring_http::serving {
namespace {

using namespace std::chrono_literals;
using testing::Get;
using testing::TestClient;

std::atomic<int> woken_by_deadline{0};
std::atomic<bool> release{false};

router::Router MakeRouter() {
  router::Router r;
  router::RouteOptions short_deadline;
  short_deadline.timeout = 200ms;
  EXPECT_TRUE(r.Slow("GET", "/waits", [](const http::Request& req, http::Response& res) {
                 const http::StopReason why = req.WaitForStop(30s);
                 if (why == http::StopReason::kDeadline) ++woken_by_deadline;
                 res.set_body("made anyway");
               }, short_deadline).ok());
  EXPECT_TRUE(r.Slow("GET", "/ignores", [](const http::Request&, http::Response& res) {
                 while (!release) std::this_thread::sleep_for(5ms);
                 res.set_body("late");
               }, short_deadline).ok());
  EXPECT_TRUE(r.Slow("GET", "/streams", [](const http::Request& req, http::Response& res) {
                 res.Write("first piece\n");
                 req.WaitForStop(30s);
                 res.Write("after the deadline\n");
               }, short_deadline).ok());
  EXPECT_TRUE(r.Slow("GET", "/starts-late", [](const http::Request& req, http::Response& res) {
                 req.WaitForStop(30s);
                 if (res.Write("too late\n")) res.Write("and more\n");
               }, short_deadline).ok());
  EXPECT_TRUE(r.Slow("GET", "/quick", [](const http::Request&, http::Response& res) {
                 res.set_body("in time");
               }, short_deadline).ok());
  return r;
}

// What the server sends on a new connection for `request`, until it closes.
std::string ReadUntilClose(uint16_t port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

class SlowDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    woken_by_deadline = 0;
    release = false;
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 2;
    server_ = std::make_unique<Server>(config, MakeRouter());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    release = true;
    server_->Stop();
    server_->Wait();
  }
  std::unique_ptr<Server> server_;
};

TEST_F(SlowDeadlineTest, AWaitingHandlerIsWokenAndTheAnswerIs503) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/waits")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(woken_by_deadline.load(), 1);
  // The connection goes on: the next request on it is answered.
  ASSERT_TRUE(client.Send(Get("/quick")));
  r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "in time");
}

TEST_F(SlowDeadlineTest, AHandlerThatIgnoresItIsAnswered503WhenItReturns) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/ignores")));
  // Let it go well after the deadline (checked at a 100 ms tick).
  std::thread letgo([] {
    std::this_thread::sleep_for(600ms);
    release = true;
  });
  auto r = client.ReadResponse();
  letgo.join();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body.find("late"), std::string::npos);
}

TEST_F(SlowDeadlineTest, AStreamPastItsDeadlineIsCut) {
  const std::string raw = ReadUntilClose(server_->port(), Get("/streams"));
  EXPECT_NE(raw.find("200 OK"), std::string::npos) << raw;
  EXPECT_NE(raw.find("first piece"), std::string::npos) << raw;
  // Cut: no last chunk, and nothing written after the deadline.
  EXPECT_EQ(raw.find("0\r\n\r\n"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("after the deadline"), std::string::npos) << raw;
}

TEST_F(SlowDeadlineTest, AStreamNotBegunByItsDeadlineNeverBeginsAndIs503) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(Get("/starts-late")));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body.find("too late"), std::string::npos);
}

TEST(SlowDeadlineRegistrationTest, AFastRouteRefusesATimeout) {
  router::Router r;
  router::RouteOptions options;
  options.timeout = 1s;
  const router::Registration reg = r.Fast("GET", "/f", [](const http::Request&, http::Response&) {}, options);
  EXPECT_FALSE(reg.ok());
  EXPECT_NE(reg.status().message().find("FAST"), std::string::npos);
  options.timeout = -1ms;
  EXPECT_FALSE(r.Slow("GET", "/s", [](const http::Request&, http::Response&) {}, options).ok());
}

}  // namespace
}  // namespace uring_http::serving
