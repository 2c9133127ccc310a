// --proxy-protocol end to end, over real sockets on an ephemeral port: a
// client that sends a PROXY header (v1 or v2, whole or a byte at a time)
// before its request is answered, its handler (FAST or SLOW) and the access
// log see the header's client; one without a header, or with a malformed
// one, is closed without a byte of answer. Without the flag, handlers see
// the socket's peer.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"

namespace uring_http::serving {
namespace {

using std::string_literals::operator""s;
using testing::Get;
using testing::TestClient;

std::string Describe(const http::Request& req) {
  char text[http::ClientAddress::kMaxText];
  return std::string(req.client_address.Format(text)) + " " +
         std::to_string(req.client_address.port());
}

router::Router ClientRouter() {
  router::Router r;
  (void)r.Fast("GET", "/client", [](const http::Request& req, http::Response& resp) {
    resp.set_body(Describe(req));
  });
  (void)r.Slow("GET", "/slow-client", [](const http::Request& req, http::Response& resp) {
    resp.set_body("slow " + Describe(req));
  });
  return r;
}

// 203.0.113.7:51000 -> 192.0.2.1:443, as HAProxy's send-proxy-v2 writes it.
const std::string kV2 = "\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c"s + "\xcb\x00\x71\x07"s +
                        "\xc0\x00\x02\x01"s + "\xc7\x38\x01\xbb"s;
// 2001:db8::7:12345 -> 2001:db8::1:80.
const std::string kV2Inet6 = "\r\n\r\n\0\r\nQUIT\n\x21\x21\x00\x24"s +
                             "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x07"s +
                             "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01"s + "\x30\x39\x00\x50"s;
const std::string kV2Local = "\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00"s;
const std::string kV1 = "PROXY TCP4 198.51.100.20 192.0.2.1 40001 80\r\n";

class ProxyProtocolTest : public ::testing::Test {
 protected:
  void Start(bool proxy_protocol) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    log_path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/proxy_access_" +
                std::to_string(getpid()) + ".log";
    std::remove(log_path_.c_str());
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 2;
    config.accept_capacity = 64;
    config.workers = 2;
    config.access_log_path = log_path_;
    config.proxy_protocol = proxy_protocol;
    server_ = std::make_unique<Server>(config, ClientRouter());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  // Stops the server (which writes out the access log) and reads the log.
  std::string StopAndReadLog() {
    server_->Stop();
    server_->Wait();
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
    std::remove(log_path_.c_str());
  }
  // Sends `bytes` and reads one response's body ("" and a failure if none).
  std::string Exchange(const std::string& bytes) {
    TestClient c(server_->port());
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.Send(bytes));
    auto r = c.ReadResponse();
    if (!r.has_value()) {
      ADD_FAILURE() << "no response";
      return "";
    }
    EXPECT_EQ(r->status, 200);
    return r->body;
  }
  // Sends `bytes`; true if the server closes without answering.
  bool ClosedUnanswered(const std::string& bytes) {
    TestClient c(server_->port());
    EXPECT_TRUE(c.connected());
    c.Send(bytes);  // may fail: the server may have closed already
    return c.ReadEof();
  }

  std::unique_ptr<Server> server_;
  std::string log_path_;
};

TEST_F(ProxyProtocolTest, V2HeaderNamesTheClientForHandlersAndTheAccessLog) {
  Start(/*proxy_protocol=*/true);
  EXPECT_EQ(Exchange(kV2 + Get("/client")), "203.0.113.7 51000");
  EXPECT_EQ(Exchange(kV2Inet6 + Get("/client")), "2001:db8::7 12345");
  EXPECT_EQ(Exchange(kV2 + Get("/slow-client")), "slow 203.0.113.7 51000");
  const std::string log = StopAndReadLog();
  EXPECT_NE(log.find("203.0.113.7 - - ["), std::string::npos) << log;
  EXPECT_NE(log.find("2001:db8::7 - - ["), std::string::npos) << log;
  EXPECT_NE(log.find("\"GET /slow-client HTTP/1.1\" 200"), std::string::npos) << log;
  EXPECT_EQ(log.find("127.0.0.1"), std::string::npos) << log;
}

TEST_F(ProxyProtocolTest, V1HeaderNamesTheClient) {
  Start(true);
  EXPECT_EQ(Exchange(kV1 + Get("/client")), "198.51.100.20 40001");
  const std::string log = StopAndReadLog();
  EXPECT_NE(log.find("198.51.100.20 - - ["), std::string::npos) << log;
}

TEST_F(ProxyProtocolTest, HeaderAndRequestOneByteAtATime) {
  Start(true);
  for (const std::string& header : {kV2, kV1}) {
    TestClient c(server_->port());
    ASSERT_TRUE(c.connected());
    const std::string bytes = header + Get("/client");
    for (char byte : bytes) ASSERT_TRUE(c.Send(std::string(1, byte)));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, header == kV2 ? "203.0.113.7 51000" : "198.51.100.20 40001");
  }
  EXPECT_EQ(server_->Stats().proxy_header_errors, 0u);
}

TEST_F(ProxyProtocolTest, KeepAliveRequestsKeepTheClient) {
  Start(true);
  TestClient c(server_->port());
  ASSERT_TRUE(c.Send(kV2 + Get("/client")));
  auto first = c.ReadResponse();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(c.Send(Get("/slow-client")));
  auto second = c.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->body, "slow 203.0.113.7 51000");
}

TEST_F(ProxyProtocolTest, LocalCommandLeavesTheSocketsPeer) {
  Start(true);
  // The proxy's own health check: the client is the connection's peer.
  const std::string body = Exchange(kV2Local + Get("/client"));
  EXPECT_EQ(body.substr(0, 10), "127.0.0.1 ") << body;
}

TEST_F(ProxyProtocolTest, MissingOrMalformedHeaderIsClosedUnanswered) {
  Start(true);
  EXPECT_TRUE(ClosedUnanswered(Get("/client")));
  EXPECT_TRUE(ClosedUnanswered("PROXY TCP4 198.51.100.20 192.0.2.1 40001 99999\r\n" +
                               Get("/client")));
  std::string bad_version = kV2;
  bad_version[12] = '\x11';
  EXPECT_TRUE(ClosedUnanswered(bad_version + Get("/client")));
  EXPECT_EQ(server_->Stats().proxy_header_errors, 3u);
  // The listener still serves proxied clients.
  EXPECT_EQ(Exchange(kV2 + Get("/client")), "203.0.113.7 51000");
  const std::string log = StopAndReadLog();
  // Nothing was answered to the three, so nothing of them is logged.
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST_F(ProxyProtocolTest, WithoutTheFlagHandlersSeeTheSocketsPeer) {
  Start(/*proxy_protocol=*/false);
  const std::string body = Exchange(Get("/client"));
  EXPECT_EQ(body.substr(0, 10), "127.0.0.1 ") << body;
  EXPECT_NE(body, "127.0.0.1 0");
  const std::string log = StopAndReadLog();
  EXPECT_EQ(log.substr(0, 14), "127.0.0.1 - - ") << log;
}

}  // namespace
}  // namespace uring_http::serving
