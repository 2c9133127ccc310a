// gzip response compression end to end, over real sockets: what a client
// that accepts gzip gets (decoded, it is the handler's body), what one that
// does not gets, Vary on both, the responses never compressed (small,
// incompressible types, already encoded, 206, 204, HEAD's body), SLOW
// buffered answers, a SLOW stream whose every write decodes before the
// next one is made, and a FAST producer's stream. The decoding is zlib's (test/http/gzip_testing.h), and
// curl --compressed's where curl is installed.
#include <sys/socket.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <semaphore>
#include <string>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/http/gzip_testing.h"
#include "test/serving/http_client.h"

namespace uring_http::serving {
namespace {

using http::Request;
using http::Response;
using http::testing::Gunzip;
using http::testing::GunzipStream;
using testing::Get;
using testing::TestClient;

std::string Html(size_t size) {
  std::string s = "<!doctype html><table>\n";
  for (int i = 0; s.size() < size; ++i) {
    s += "<tr><td>" + std::to_string(i * 7919 % 10007) + "</td><td>row</td></tr>\n";
  }
  s.resize(size);
  return s;
}

const std::string& Page() {
  static const std::string page = Html(5000);
  return page;
}
const std::string& BigPage() {
  static const std::string page = Html(100'000);
  return page;
}

constexpr int kEvents = 4;
std::string Event(int i) { return "id: " + std::to_string(i) + "\ndata: tick " + std::to_string(i) + "\n\n"; }

// The streamed handler writes event i+1 only once the test has decoded
// event i from what arrived: each write must reach the client decodable.
std::counting_semaphore<kEvents>& EventGate() {
  static std::counting_semaphore<kEvents> gate(0);
  return gate;
}

router::Router GzipRouter() {
  router::Router r;
  (void)r.Fast("GET", "/html", [](const Request&, Response& resp) {
    resp.set_content_type("text/html; charset=utf-8");
    resp.set_body(Page());
  });
  (void)r.Fast("GET", "/big", [](const Request&, Response& resp) {
    resp.set_content_type("application/json");
    resp.set_static_body(BigPage());
  });
  (void)r.Fast("GET", "/small", [](const Request&, Response& resp) {
    resp.set_content_type("text/plain");
    resp.set_body("short body");
  });
  (void)r.Fast("GET", "/png", [](const Request&, Response& resp) {
    resp.set_content_type("image/png");
    resp.set_body(Page());
  });
  (void)r.Fast("GET", "/encoded", [](const Request&, Response& resp) {
    resp.set_content_type("text/html");
    EXPECT_TRUE(resp.AddHeader("Content-Encoding", "br"));
    resp.set_body(Page());
  });
  (void)r.Fast("GET", "/partial", [](const Request&, Response& resp) {
    resp.set_status(206);
    resp.set_content_type("text/html");
    EXPECT_TRUE(resp.AddHeader("Content-Range", "bytes 0-4999/10000"));
    resp.set_body(Page());
  });
  (void)r.Fast("GET", "/empty", [](const Request&, Response& resp) {
    resp.set_status(204);
    resp.set_content_type("text/html");
  });
  (void)r.Slow("GET", "/slow", [](const Request&, Response& resp) {
    resp.set_content_type("text/html");
    resp.set_body(Page());
  });
  (void)r.Slow("GET", "/events", [](const Request&, Response& resp) {
    resp.set_content_type("text/event-stream");
    for (int i = 0; i < kEvents; ++i) {
      if (i > 0) EventGate().acquire();
      if (!resp.Write(Event(i))) return;
    }
  });
  (void)r.Slow("GET", "/sized", [](const Request&, Response& resp) {
    resp.set_content_type("text/plain");
    resp.set_content_length(BigPage().size());
    for (size_t at = 0; at < BigPage().size(); at += 30'000) {
      if (!resp.Write(std::string_view(BigPage()).substr(at, 30'000))) return;
    }
  });
  // A FAST producer: five pieces of the big page, then done; optionally with
  // its length promised.
  for (const char* path : {"/produced", "/produced-sized"}) {
    const bool sized = std::string_view(path) == "/produced-sized";
    (void)r.Fast("GET", path, [sized](const Request&, Response& resp) {
      resp.set_content_type("text/plain");
      if (sized) resp.set_content_length(BigPage().size());
      auto at = std::make_shared<size_t>(0);
      resp.Stream([at](http::BodyOutput& out) {
        const size_t piece = BigPage().size() / 5 + 1;
        out.Write(std::string_view(BigPage()).substr(*at, piece));
        *at += piece;
        return *at >= BigPage().size();
      });
    });
  }
  return r;
}

// The rest of a chunked body, chunk by chunk: each chunk's data to
// `on_chunk`; false on a framing error or EOF.
class ChunkReader {
 public:
  explicit ChunkReader(int fd) : fd_(fd) {}
  // Reads the head; returns it (up to and including the blank line).
  std::optional<std::string> Head() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    std::string head = buf_.substr(0, end + 4);
    buf_.erase(0, end + 4);
    return head;
  }
  // One chunk's data; nullopt on error; "" for the last chunk (its trailer
  // section consumed).
  std::optional<std::string> Chunk() {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    const size_t size = std::stoul(buf_.substr(0, eol), nullptr, 16);
    buf_.erase(0, eol + 2);
    if (size == 0) {
      while (buf_.find("\r\n") != 0) {
        if (!Fill()) return std::nullopt;
      }
      buf_.erase(0, 2);
      return std::string();
    }
    while (buf_.size() < size + 2) {
      if (!Fill()) return std::nullopt;
    }
    if (buf_.compare(size, 2, "\r\n") != 0) return std::nullopt;
    std::string data = buf_.substr(0, size);
    buf_.erase(0, size + 2);
    return data;
  }

 private:
  bool Fill() {
    char tmp[65536];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  std::string buf_;
};

class GzipTest : public ::testing::Test {
 protected:
  void Start(bool enabled = true) {
    ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 2;
    config.compression.enabled = enabled;
    server_ = std::make_unique<Server>(config, GzipRouter());
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
    client_ = std::make_unique<TestClient>(server_->port());
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }
  std::optional<testing::HttpResponse> Fetch(std::string_view path, std::string_view headers,
                                             bool head = false) {
    std::string request = Get(path, headers);
    if (head) request.replace(0, 3, "HEAD");
    if (!client_->Send(request)) return std::nullopt;
    return client_->ReadResponse(head);
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<TestClient> client_;
};

constexpr std::string_view kAcceptGzip = "Accept-Encoding: gzip, deflate, br\r\n";

TEST_F(GzipTest, CompressedWhenAcceptedAndDecodesToTheBody) {
  Start();
  for (const auto& [path, body] : {std::pair{"/html", &Page()}, std::pair{"/big", &BigPage()},
                                   std::pair{"/slow", &Page()}}) {
    const auto r = Fetch(path, kAcceptGzip);
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->Header("content-encoding"), "gzip") << path;
    EXPECT_EQ(r->Header("vary"), "Accept-Encoding") << path;
    // Content-Length is the compressed body's (ReadResponse read that many).
    EXPECT_EQ(r->Header("content-length"), std::to_string(r->body.size()));
    EXPECT_LT(r->body.size(), body->size() / 2) << path;
    EXPECT_EQ(Gunzip(r->body), *body) << path;
  }
}

TEST_F(GzipTest, IdentityWhenNotAcceptedButVaryStill) {
  Start();
  for (std::string_view headers :
       {std::string_view(""), std::string_view("Accept-Encoding: gzip;q=0, br\r\n"),
        std::string_view("Accept-Encoding: identity\r\nAccept-Encoding: gzip;q=0.5\r\n"),
        std::string_view("Accept-Encoding: *;q=0\r\n")}) {
    const auto r = Fetch("/html", headers);
    ASSERT_TRUE(r.has_value()) << headers;
    EXPECT_FALSE(r->headers.contains("content-encoding")) << headers;
    EXPECT_EQ(r->Header("vary"), "Accept-Encoding") << headers;
    EXPECT_EQ(r->body, Page()) << headers;
  }
  // Several lines form one list; gzip on the second is enough.
  const auto r = Fetch("/html", "Accept-Encoding: br\r\naccept-encoding: GZIP;q=0.8\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("content-encoding"), "gzip");
  EXPECT_EQ(Gunzip(r->body), Page());
}

TEST_F(GzipTest, NeverCompressed) {
  Start();
  // Below --gzip-min-bytes: as is, but it could have been compressed: Vary.
  auto r = Fetch("/small", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_EQ(r->Header("vary"), "Accept-Encoding");
  EXPECT_EQ(r->body, "short body");
  // Not a compressible type: untouched, no Vary.
  r = Fetch("/png", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_FALSE(r->headers.contains("vary"));
  EXPECT_EQ(r->body, Page());
  // Already encoded by the handler: left as it is.
  r = Fetch("/encoded", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("content-encoding"), "br");
  EXPECT_FALSE(r->headers.contains("vary"));
  EXPECT_EQ(r->body, Page());
  // A range of the identity body stays one.
  r = Fetch("/partial", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 206);
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_EQ(r->body, Page());
  // No body at all.
  r = Fetch("/empty", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 204);
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  // The connection is still in step after all of them.
  r = Fetch("/html", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Gunzip(r->body), Page());
}

TEST_F(GzipTest, HeadSaysWhatGetWouldWithoutALengthOrBody) {
  Start();
  auto r = Fetch("/html", kAcceptGzip, /*head=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-encoding"), "gzip");
  EXPECT_EQ(r->Header("vary"), "Accept-Encoding");
  EXPECT_FALSE(r->headers.contains("content-length"));
  // Nothing followed the head: the next answer on the connection is whole.
  r = Fetch("/html", "");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, Page());
  // Without gzip accepted, HEAD states the identity length as before.
  r = Fetch("/html", "", /*head=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("content-length"), std::to_string(Page().size()));
  EXPECT_FALSE(r->headers.contains("content-encoding"));
}

TEST_F(GzipTest, StreamedEventsDecodeOneByOneAsTheyAreWritten) {
  Start();
  ASSERT_TRUE(client_->Send(Get("/events", kAcceptGzip)));
  ChunkReader reader(client_->fd());
  const std::optional<std::string> head = reader.Head();
  ASSERT_TRUE(head.has_value());
  EXPECT_NE(head->find("Content-Encoding: gzip\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Vary: Accept-Encoding\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Transfer-Encoding: chunked\r\n"), std::string::npos) << *head;
  GunzipStream gunzip;
  std::string expected;
  for (int i = 0; i < kEvents; ++i) {
    expected += Event(i);
    // The handler has not written event i+1 yet: what arrived must decode to
    // exactly the events so far, or this loop waits forever (test timeout).
    while (gunzip.decoded().size() < expected.size()) {
      const std::optional<std::string> chunk = reader.Chunk();
      ASSERT_TRUE(chunk.has_value() && !chunk->empty()) << "event " << i;
      ASSERT_TRUE(gunzip.Feed(*chunk));
    }
    EXPECT_EQ(gunzip.decoded(), expected);
    if (i + 1 < kEvents) EventGate().release();
  }
  // The end: the gzip trailer, then the last chunk.
  for (;;) {
    const std::optional<std::string> chunk = reader.Chunk();
    ASSERT_TRUE(chunk.has_value());
    if (chunk->empty()) break;
    ASSERT_TRUE(gunzip.Feed(*chunk));
  }
  EXPECT_TRUE(gunzip.ended());
  EXPECT_EQ(gunzip.decoded(), expected);
  // And the connection goes on.
  const auto r = client_->Send(Get("/small", "")) ? client_->ReadResponse() : std::nullopt;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "short body");
}

TEST_F(GzipTest, StreamWithPromisedLengthGoesChunked) {
  Start();
  ASSERT_TRUE(client_->Send(Get("/sized", kAcceptGzip)));
  ChunkReader reader(client_->fd());
  const std::optional<std::string> head = reader.Head();
  ASSERT_TRUE(head.has_value());
  EXPECT_NE(head->find("Content-Encoding: gzip\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Transfer-Encoding: chunked\r\n"), std::string::npos) << *head;
  EXPECT_EQ(head->find("Content-Length"), std::string::npos) << *head;
  std::string body;
  for (;;) {
    const std::optional<std::string> chunk = reader.Chunk();
    ASSERT_TRUE(chunk.has_value());
    if (chunk->empty()) break;
    body += *chunk;
  }
  EXPECT_EQ(Gunzip(body), BigPage());
  // Not accepted: the promised length, as is.
  const auto r = client_->Send(Get("/sized", "")) ? client_->ReadResponse() : std::nullopt;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("content-length"), std::to_string(BigPage().size()));
  EXPECT_EQ(r->body, BigPage());
}

TEST_F(GzipTest, FastProducerStreamsCompressed) {
  Start();
  for (const char* path : {"/produced", "/produced-sized"}) {
    ASSERT_TRUE(client_->Send(Get(path, kAcceptGzip)));
    ChunkReader reader(client_->fd());
    const std::optional<std::string> head = reader.Head();
    ASSERT_TRUE(head.has_value());
    EXPECT_NE(head->find("Content-Encoding: gzip\r\n"), std::string::npos) << *head;
    EXPECT_NE(head->find("Vary: Accept-Encoding\r\n"), std::string::npos) << *head;
    EXPECT_NE(head->find("Transfer-Encoding: chunked\r\n"), std::string::npos) << *head;
    std::string body;
    int chunks = 0;
    for (;;) {
      const std::optional<std::string> chunk = reader.Chunk();
      ASSERT_TRUE(chunk.has_value()) << path;
      if (chunk->empty()) break;
      body += *chunk;
      ++chunks;
    }
    EXPECT_GE(chunks, 2) << path;  // compressed piece by piece, not at the end
    EXPECT_EQ(Gunzip(body), BigPage()) << path;
  }
  // Not accepted: as before (the sized one with its length).
  const auto r = client_->Send(Get("/produced-sized", "")) ? client_->ReadResponse() : std::nullopt;
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_EQ(r->Header("vary"), "Accept-Encoding");
  EXPECT_EQ(r->body, BigPage());
}

TEST_F(GzipTest, OffByDefault) {
  Start(/*enabled=*/false);
  const auto r = Fetch("/html", kAcceptGzip);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_FALSE(r->headers.contains("vary"));
  EXPECT_EQ(r->body, Page());
}

TEST_F(GzipTest, CurlCompressedDecodesIt) {
  if (std::system("curl --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no curl";
  Start();
  const std::string command = "curl -sS --compressed -D - http://127.0.0.1:" +
                              std::to_string(server_->port()) + "/big";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0);
  const size_t end = out.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos);
  EXPECT_NE(out.substr(0, end).find("Content-Encoding: gzip"), std::string::npos);
  EXPECT_EQ(out.substr(end + 4), BigPage());
}

}  // namespace
}  // namespace uring_http::serving
