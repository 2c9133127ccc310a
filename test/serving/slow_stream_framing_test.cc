// A SLOW handler's streamed response crosses from the worker as body bytes
// only; the ring frames it for HTTP/1 (src/http1/answers.cc, PumpPipe):
// chunked with its trailers for HTTP/1.1, Content-Length when the handler
// promised one, close-delimited for HTTP/1.0, and no body at all for HEAD,
// 204 and 304, each leaving the connection usable where HTTP/1 allows it.
// Checked on the bytes the client receives.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "uring_http/testing.h"
#include "uring_http/uring_http.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;

router::Router Routes() {
  router::Router r;
  r.Slow("GET", "/chunked", [](const Request&, Response& resp) {
    resp.set_content_type("text/plain");
    if (!resp.AddHeader("X-Request-Id", "rid-1")) return;
    EXPECT_TRUE(resp.Write("ab"));
    EXPECT_TRUE(resp.Write("cd"));
    EXPECT_TRUE(resp.AddTrailer("X-Sum", "4"));
  });
  r.Slow("GET", "/sized", [](const Request&, Response& resp) {
    resp.set_content_length(4);
    EXPECT_TRUE(resp.Write("ab"));
    EXPECT_TRUE(resp.Write("cd"));
  });
  r.Slow("GET", "/no-content", [](const Request&, Response& resp) {
    resp.set_status(204);
    EXPECT_TRUE(resp.Write("ignored"));  // a 204 has no body: dropped
  });
  r.Slow("GET", "/after-head", [](const Request&, Response& resp) {
    EXPECT_TRUE(resp.Write("x"));
    // Too late for the head, which went with the first Write.
    EXPECT_TRUE(resp.AddHeader("X-Late", "1"));
  });
  return r;
}

// Sends `request` on a new connection and reads until the server closes
// it or `expect` bytes have arrived.
std::string Exchange(uint16_t port, std::string_view request, size_t expect = SIZE_MAX) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string got;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    while (got.size() < expect) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return got;
}

std::string_view BodyOf(std::string_view response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string_view::npos ? std::string_view() : response.substr(end + 4);
}

class SlowStreamFramingTest : public ::testing::Test {
 protected:
  SlowStreamFramingTest() : server_(Config(), Routes()) {}
  static ServerConfig Config() {
    ServerConfig c;
    c.accept_threads = 1;
    c.workers = 2;
    return c;
  }
  testing::TestServer server_;
};

TEST_F(SlowStreamFramingTest, ChunkedWithTrailersAndTheConnectionKept) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  testing::Client client = server_.client();
  for (int i = 0; i < 3; ++i) {
    const testing::Response r = client.Get("/chunked");
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "abcd");
    EXPECT_EQ(r.header("transfer-encoding"), "chunked");
    EXPECT_EQ(r.header("x-request-id"), "rid-1");
    EXPECT_EQ(r.trailer("x-sum"), "4");
    EXPECT_FALSE(r.connection_closed);
  }
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(SlowStreamFramingTest, ChunkedOnTheWire) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  const std::string all =
      Exchange(server_.port(), "GET /chunked HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(all.find("\r\nTransfer-Encoding: chunked\r\n"), std::string::npos) << all;
  EXPECT_EQ(all.find("Content-Length"), std::string::npos) << all;
  // The worker's two writes arrive as one chunk or two, then the last
  // chunk with the trailer section.
  const std::string_view body = BodyOf(all);
  EXPECT_TRUE(body == "2\r\nab\r\n2\r\ncd\r\n0\r\nX-Sum: 4\r\n\r\n" ||
              body == "4\r\nabcd\r\n0\r\nX-Sum: 4\r\n\r\n")
      << all;
}

TEST_F(SlowStreamFramingTest, PromisedLengthIsContentLength) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  testing::Client client = server_.client();
  for (int i = 0; i < 2; ++i) {
    const testing::Response r = client.Get("/sized");
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.body, "abcd");
    EXPECT_EQ(r.header("content-length"), "4");
    EXPECT_FALSE(r.has_header("transfer-encoding"));
    EXPECT_FALSE(r.connection_closed);
  }
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(SlowStreamFramingTest, Http10IsCloseDelimited) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  const std::string all = Exchange(server_.port(), "GET /chunked HTTP/1.0\r\n\r\n");
  EXPECT_EQ(all.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << all;
  EXPECT_EQ(all.find("Transfer-Encoding"), std::string::npos) << all;
  EXPECT_NE(all.find("\r\nConnection: close\r\n"), std::string::npos) << all;
  EXPECT_EQ(BodyOf(all), "abcd") << all;  // no chunk framing, no trailers; then the close
}

TEST_F(SlowStreamFramingTest, HeadAnd204SendNoBodyAndKeepTheConnection) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  // Pipelined: HEAD of a streamed GET, a streamed 204, then a plain GET;
  // any stray body byte (a chunk, a last chunk) would show before the
  // second and third heads.
  const std::string all = Exchange(
      server_.port(),
      "HEAD /chunked HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /no-content HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /sized HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  const size_t first_end = all.find("\r\n\r\n");
  ASSERT_NE(first_end, std::string::npos) << all;
  EXPECT_NE(all.substr(0, first_end).find("Transfer-Encoding: chunked"), std::string::npos)
      << all;
  const std::string_view rest = std::string_view(all).substr(first_end + 4);
  EXPECT_EQ(rest.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u) << all;
  const size_t second_end = rest.find("\r\n\r\n");
  ASSERT_NE(second_end, std::string::npos) << all;
  EXPECT_EQ(rest.substr(0, second_end).find("Transfer-Encoding"), std::string::npos) << all;
  EXPECT_EQ(rest.substr(0, second_end).find("Content-Length"), std::string::npos) << all;
  const std::string_view third = rest.substr(second_end + 4);
  EXPECT_EQ(third.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << all;
  EXPECT_EQ(BodyOf(third), "abcd") << all;
}

TEST_F(SlowStreamFramingTest, AHeaderAddedAfterTheFirstWriteIsNotSent) {
  ASSERT_TRUE(server_.ok()) << server_.status();
  testing::Client client = server_.client();
  const testing::Response r = client.Get("/after-head");
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.body, "x");
  EXPECT_FALSE(r.has_header("x-late"));
}

}  // namespace
}  // namespace uring_http::serving
