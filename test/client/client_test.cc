// The client's blocking side (what a SLOW handler uses) against a local
// scripted upstream over real sockets: framings, keep-alive reuse, a stale
// kept connection, and a misbehaving upstream (CL with TE, a close
// mid-body, a stall, a refusal, a 2 GiB body). The same call code runs on
// a ring in client_async_test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "src/client/client.h"
#include "test/client/fake_upstream.h"

namespace uring_http::client {
namespace {

using namespace std::chrono_literals;
using testing::FakeUpstream;
using testing::WriteAll;

bool Reply(int fd, std::string_view bytes, bool keep = true) {
  WriteAll(fd, bytes);
  return keep;
}

ClientOptions Quick() {
  ClientOptions o;
  o.connect_timeout = 2s;
  o.read_timeout = 2s;
  o.total_timeout = 5s;
  return o;
}

TEST(ClientTest, GetWithContentLengthAndTheRequestItSends) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello");
  });
  Client client(Quick());
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/x?y=1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->header("x-a"), "b");
  ASSERT_EQ(up.requests().size(), 1u);
  EXPECT_EQ(up.requests()[0],
            "GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(up.port()) + "\r\n\r\n");
}

TEST(ClientTest, KeepAliveUsesOneConnectionForManyRequests) {
  FakeUpstream up([](int fd, const std::string&, int i) {
    const std::string body = "n" + std::to_string(i);
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  Client client(Quick());
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "n" + std::to_string(i));
  }
  EXPECT_EQ(up.connections(), 1);
  EXPECT_EQ(client.idle_connections(*io::SocketAddress::ParseIp("127.0.0.1", up.port())), 1u);
}

TEST(ClientTest, ChunkedWithTrailersAndAnInterim100) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd,
                 "HTTP/1.1 100 Continue\r\n\r\n"
                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-Trailer: t\r\n\r\n");
  });
  Client client(Quick());
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "abcdefg");
  // Kept: the body ended where its framing said.
  absl::StatusOr<Response> again = client.GetBlocking(up.url("/"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(up.connections(), 1);
}

TEST(ClientTest, ABodyUntilCloseIsReadToTheEndAndTheConnectionNotKept) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.0 200 OK\r\n\r\nall of it", /*keep=*/false);
  });
  Client client(Quick());
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "all of it");
  }
  EXPECT_EQ(up.connections(), 2);
}

TEST(ClientTest, HeadAnd204And304HaveNoBodyWhateverTheirFieldsSay) {
  FakeUpstream up([](int fd, const std::string& req, int) {
    if (req.starts_with("HEAD")) return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
    if (req.starts_with("GET /204")) return Reply(fd, "HTTP/1.1 204 No Content\r\n\r\n");
    return Reply(fd, "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n");
  });
  Client client(Quick());
  Request head;
  head.method = "HEAD";
  head.url = up.url("/");
  absl::StatusOr<Response> r = client.FetchBlocking(head);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  r = client.GetBlocking(up.url("/204"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 204);
  r = client.GetBlocking(up.url("/304"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 304);
  EXPECT_EQ(up.connections(), 1);
}

TEST(ClientTest, AStaleKeptConnectionIsRetriedFreshForAGetButNotForAPost) {
  // The upstream closes each connection after its answer without saying
  // so (no Connection: close): the kept one is dead when next taken.
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", /*keep=*/false);
  });
  Client client(Quick());
  ASSERT_TRUE(client.GetBlocking(up.url("/")).ok());
  // Let the upstream's FIN arrive first.
  std::this_thread::sleep_for(50ms);
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(up.connections(), 2);
  std::this_thread::sleep_for(50ms);
  Request post;
  post.method = "POST";
  post.url = up.url("/");
  post.body = "data";
  r = client.FetchBlocking(post);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(up.connections(), 2);  // not sent again
}

TEST(ClientTest, TheClientFramesTheRequestItselfAndRefusesBrokenFields) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  Client client(Quick());
  Request req;
  req.method = "POST";
  req.url = up.url("/in");
  req.body = "12345";
  req.headers = {{"Transfer-Encoding", "chunked"}, {"Content-Length", "99"}, {"Connection", "close"},
                 {"X-Keep", "yes"}};
  ASSERT_TRUE(client.FetchBlocking(req).ok());
  ASSERT_EQ(up.requests().size(), 1u);
  EXPECT_EQ(up.requests()[0], "POST /in HTTP/1.1\r\nX-Keep: yes\r\nHost: 127.0.0.1:" +
                                  std::to_string(up.port()) + "\r\nContent-Length: 5\r\n\r\n12345");
  req.headers = {{"X-Evil", "a\r\nInjected: 1"}};
  EXPECT_TRUE(absl::IsInvalidArgument(client.FetchBlocking(req).status()));
  EXPECT_EQ(up.requests().size(), 1u);
}

TEST(ClientTest, AResponseWithContentLengthAndTransferEncodingIsRefused) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  });
  Client client(Quick());
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("both Content-Length and Transfer-Encoding"), std::string::npos);
}

TEST(ClientTest, AnUpstreamThatClosesMidBodyIsDataLoss) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", /*keep=*/false);
  });
  Client client(Quick());
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
}

TEST(ClientTest, AStalledUpstreamTimesOut) {
  std::atomic<bool> release{false};
  FakeUpstream up([&release](int fd, const std::string&, int) {
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    while (!release) std::this_thread::sleep_for(5ms);
    return false;
  });
  ClientOptions o = Quick();
  o.read_timeout = 200ms;
  Client client(o);
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  release = true;
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
}

TEST(ClientTest, ARefusedConnectionIsUnavailable) {
  // A port nobody listens on: bound, then closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  Client client(Quick());
  absl::StatusOr<Response> r =
      client.GetBlocking("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/");
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("Connection refused"), std::string::npos) << r.status();
}

TEST(ClientTest, ATwoGibibyteBodyStopsAtTheLimitWithoutBeingRead) {
  FakeUpstream up([](int fd, const std::string&, int) {
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n");
    const std::string block(1 << 16, 'z');
    for (int i = 0; i < 32768; ++i) {
      if (!WriteAll(fd, block)) break;  // the client gave up: its close
    }
    return false;
  });
  ClientOptions o = Quick();
  o.max_response_body = 1 << 20;
  Client client(o);
  absl::StatusOr<Response> r = client.GetBlocking(up.url("/"));
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
}

TEST(ClientTest, UrlsTheClientTakesAndRefuses) {
  absl::StatusOr<Url> u = ParseUrl("http://[::1]:8080/a?b");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->authority, "[::1]:8080");
  EXPECT_EQ(u->target, "/a?b");
  u = ParseUrl("http://example.com");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(ParseUrl("http://h?q=1")->target, "/?q=1");
  u = ParseUrl("https://example.com/x");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_FALSE(ParseUrl("http://example.com/")->tls);
  for (const char* bad : {"ftp://x/", "http://", "http://:80/", "http://h:0/", "http://h:99999/",
                          "http://h:8x/", "http://u@h/", "http://h/a b", "http://[::1/"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
}

TEST(ClientTest, LocalhostResolvesWithoutAResolver) {
  FakeUpstream up([](int fd, const std::string&, int) {
    return Reply(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  });
  Client client(Quick());
  // localhost may give ::1 first, where nobody listens: the next address.
  absl::StatusOr<Response> r = client.GetBlocking("http://localhost:" + std::to_string(up.port()) + "/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "hi");
}

}  // namespace
}  // namespace uring_http::client
