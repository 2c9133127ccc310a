// The test Client against a scripted server (a plain socket in this test)
// that misbehaves on purpose: the bytes the client writes, a server that
// never answers or closes instead, one that cuts a body short (a close, a
// reset), a kept-alive connection closed while idle, a body read until the
// close, a 100-continue that never comes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "uring_http/testing.h"

namespace {

using uring_http::testing::Client;
using uring_http::testing::ClientOptions;
using uring_http::testing::ClientRequest;

// Accepts connections on 127.0.0.1 and runs `script` on each, one after
// the other, on a thread of its own.
class ScriptedServer {
 public:
  using Script = std::function<void(int fd, int index)>;
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(listener_, 16), 0);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (int index = 0;; ++index) {
        const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;  // shut down
        script_(fd, index);
        close(fd);
      }
    });
  }
  ~ScriptedServer() {
    shutdown(listener_, SHUT_RDWR);  // wakes the accept
    thread_.join();
    close(listener_);
  }

  ClientOptions options() const {
    ClientOptions o;
    o.port = port_;
    return o;
  }
  uint16_t port() const { return port_; }

 private:
  Script script_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Reads until `end` has come (or the peer closes); returns all of it.
std::string ReadUntil(int fd, std::string_view end) {
  std::string got;
  char buf[4096];
  while (got.find(end) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

void Send(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

TEST(TestingClientTest, WritesRequestsAsHttp11Says) {
  std::mutex mu;
  std::vector<std::string> seen;
  ScriptedServer server([&](int fd, int) {
    for (int i = 0; i < 3; ++i) {
      const char* end[] = {"\r\n\r\n", "\r\n\r\nbody", "0\r\nX-Sum: 6\r\n\r\n"};
      const std::string request = ReadUntil(fd, end[i]);
      {
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(request);
      }
      Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
  });
  Client client(server.options());
  const std::string host = "Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n";
  EXPECT_EQ(client.Get("/a?b=c", {{"Accept", "*/*"}}).status, 200);
  EXPECT_EQ(client.Post("/p", "body", "text/plain").status, 200);
  ClientRequest upload;
  upload.method = "PUT";
  upload.target = "/u";
  std::vector<std::string> pieces = {"abc", "", "def"};
  size_t next = 0;
  upload.body_source = [&]() -> std::optional<std::string> {
    if (next == pieces.size()) return std::nullopt;
    return pieces[next++];
  };
  upload.trailers = {{"X-Sum", "6"}};
  EXPECT_EQ(client.Do(upload).status, 200);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], "GET /a?b=c HTTP/1.1\r\n" + host + "Accept: */*\r\n\r\n");
  EXPECT_EQ(seen[1], "POST /p HTTP/1.1\r\n" + host +
                         "Content-Type: text/plain\r\nContent-Length: 4\r\n\r\nbody");
  // The empty piece is skipped: it would end the body.
  EXPECT_EQ(seen[2], "PUT /u HTTP/1.1\r\n" + host +
                         "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n"
                         "X-Sum: 6\r\n\r\n");
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(TestingClientTest, ServerThatNeverAnswersIsATimeout) {
  ScriptedServer server([](int fd, int) { ReadUntil(fd, "never"); });
  ClientOptions options = server.options();
  options.timeout = std::chrono::milliseconds(100);
  Client client(options);
  auto r = client.Get("/silent");
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.error)) << r;
  EXPECT_EQ(r.error.message(),
            "GET /silent: timed out before any byte of the response came (timeout 100 ms)");
  client.CloseConnection();  // lets the script's read end
}

TEST(TestingClientTest, ServerThatClosesInsteadOfAnswering) {
  ScriptedServer server([](int fd, int) { ReadUntil(fd, "\r\n\r\n"); });
  Client client(server.options());
  auto r = client.Get("/x");
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r;
  EXPECT_EQ(r.error.message(), "GET /x: the server closed the connection without answering");
}

TEST(TestingClientTest, IdleConnectionClosedByTheServerIsReopened) {
  // Each connection answers one request without saying it closes, then
  // closes its side.
  std::atomic<int> closed{0};
  ScriptedServer server([&closed](int fd, int index) {
    ReadUntil(fd, "\r\n\r\n");
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(index));
    shutdown(fd, SHUT_WR);
    closed.fetch_add(1);
  });
  Client client(server.options());
  EXPECT_EQ(client.Get("/").body, "0");
  for (int i = 0; i < 10'000 && closed.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(closed.load(), 1);
  // The client sees the close before it sends, and takes a new connection
  // instead of failing on the old one.
  auto r = client.Get("/");
  EXPECT_EQ(r.body, "1") << r;
  EXPECT_EQ(client.connections_opened(), 2);
}

TEST(TestingClientTest, ServerThatCutsTheConnectionMidBody) {
  // Connection 0: 3 of 10 Content-Length bytes, then a close; 1: a chunk cut
  // short; 2: a reset (RST) after part of the body; 3 answers in full.
  ScriptedServer server([](int fd, int index) {
    ReadUntil(fd, "\r\n\r\n");
    switch (index) {
      case 0:
        Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        break;
      case 1:
        Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
        break;
      case 2: {
        Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        const linger reset{1, 0};  // close() sends RST instead of FIN
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        break;
      }
      default:
        Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        ReadUntil(fd, "never");
    }
  });
  Client client(server.options());

  auto r = client.Get("/length");
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r;
  EXPECT_EQ(r.error.message(),
            "GET /length: the server closed the connection in the body (3 of 10 bytes came)");
  EXPECT_EQ(r.status, 200);  // the head had come, and says so
  EXPECT_TRUE(r.connection_closed);

  r = client.Get("/chunked");
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r;
  EXPECT_EQ(r.error.message(),
            "GET /chunked: the server closed the connection in the chunked body (2 bytes came)");

  // A reset may arrive before or after the 3 bytes are read: either way an
  // error that names the request, never a response taken for complete.
  r = client.Get("/reset");
  EXPECT_FALSE(r.ok()) << r;
  EXPECT_EQ(r.error.message().rfind("GET /reset: ", 0), 0u) << r.error;

  // The client is not left on a dead connection.
  r = client.Get("/whole");
  EXPECT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(client.connections_opened(), 4);
  client.CloseConnection();  // lets the script's read end
}

TEST(TestingClientTest, BodyUntilTheServerCloses) {
  ScriptedServer server([](int fd, int) {
    ReadUntil(fd, "\r\n\r\n");
    Send(fd, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nevery byte until the end");
  });
  Client client(server.options());
  auto r = client.Get("/");
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.body, "every byte until the end");
  EXPECT_TRUE(r.connection_closed);
}

TEST(TestingClientTest, ExpectContinueThatNeverComesSendsTheBodyAfterASecond) {
  ScriptedServer server([](int fd, int) {
    std::string got = ReadUntil(fd, "\r\n\r\n");
    got += ReadUntil(fd, "payload");
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(got.size()) + "\r\n\r\n" +
                 got);
  });
  Client client(server.options());
  ClientRequest post;
  post.method = "POST";
  post.target = "/";
  post.headers = {{"Expect", "100-continue"}};
  post.body = "payload";
  auto r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_TRUE(r.informational.empty());
  EXPECT_NE(r.body.find("\r\n\r\npayload"), std::string::npos) << r.body;
}

TEST(TestingClientTest, AnAnswerBeforeTheUploadEndsStopsIt) {
  // Answers once the first chunk has arrived (answering on the head alone
  // would race the first piece: the client may see the answer before it
  // pulls anything), then reads on as long as the client sends.
  std::atomic<bool> answered{false};
  ScriptedServer server([&answered](int fd, int) {
    ReadUntil(fd, "\r\n\r\n64\r\n" + std::string(100, 'x'));
    Send(fd, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n");
    answered.store(true);
    ReadUntil(fd, "never");
  });
  ClientOptions options = server.options();
  options.timeout = std::chrono::seconds(5);
  Client client(options);
  ClientRequest post;
  post.method = "POST";
  post.target = "/";
  // Never ends by itself; the second piece waits for the answer.
  int pieces = 0;
  post.body_source = [&]() -> std::optional<std::string> {
    if (++pieces == 2) {
      for (int i = 0; i < 10'000 && !answered.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    return std::string(100, 'x');
  };
  auto r = client.Do(post);
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.connection_closed);  // the body was cut short
  EXPECT_EQ(pieces, 2);  // the second was not sent

  // A server that reads on for ever without answering: the timeout ends it.
  answered.store(false);
  ScriptedServer reader([](int fd, int) { ReadUntil(fd, "never"); });
  options = reader.options();
  options.timeout = std::chrono::milliseconds(200);
  pieces = 0;
  post.body_source = [&]() -> std::optional<std::string> {
    ++pieces;
    return std::string(100, 'x');
  };
  r = Client(options).Do(post);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.error)) << r;
  // "timed out sending the body (...)", or "timed out sending (the server
  // does not read)" when the reader's thread is slow to start reading on a
  // loaded machine: the send timed out either way.
  EXPECT_NE(r.error.message().find("POST /: timed out sending"), std::string::npos) << r.error;
}

TEST(TestingClientTest, NothingListening) {
  int port = 0;
  {
    ScriptedServer gone([](int, int) {});
    port = gone.port();
  }
  ClientOptions options;
  options.port = static_cast<uint16_t>(port);
  auto r = Client(options).Get("/");
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r;
  EXPECT_EQ(r.error.message(), "GET /: cannot connect to 127.0.0.1:" + std::to_string(port) +
                                   ": Connection refused");
  options.host = "not-an-address";
  r = Client(options).Get("/");
  EXPECT_TRUE(absl::IsInvalidArgument(r.error)) << r;
}

}  // namespace
