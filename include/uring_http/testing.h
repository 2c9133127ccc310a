// uring-http's test helpers: a server started in the test's own process on
// an ephemeral loopback port, and an HTTP/1.1 client to talk to it, so that a
// test exercises its handlers over a real socket without writing one (what
// Go's net/http/httptest.Server and its Client are for).
//
//   #include "uring_http/testing.h"    // Bazel: @uring_http//:testing
//
//   uring_http::testing::TestServer server(config, std::move(router));
//   uring_http::testing::Client client = server.client();
//   uring_http::testing::Response r = client.Get("/users/42");
//   EXPECT_EQ(r.status, 200) << r;   // r.error says why when nothing came
//
// The target is testonly: a production binary cannot link it. It uses only
// the server's public API, and this header needs only the C++ standard
// library and abseil's Status (the server's types are declared, not
// included: a test includes "uring_http/uring_http.h" for them).
//
// Thread-safety: a TestServer is made and destroyed on one thread; port(),
// client() and server() from any. A Client serves one call at a time (calls
// from several threads wait for each other); use one Client per thread for
// concurrent requests. Everything a Client does blocks the calling thread,
// never longer than its timeout.
//
// Note: `testing` here is uring_http::testing. With gtest's ::testing in
// the same file, name it in full, or with `using` for the names you need,
// rather than `using namespace uring_http;` at file scope.
#ifndef URING_HTTP_INCLUDE_URING_HTTP_TESTING_H_
#define URING_HTTP_INCLUDE_URING_HTTP_TESTING_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace uring_http {
namespace serving {
struct ServerConfig;
class Server;
}  // namespace serving
namespace router {
class Router;
}  // namespace router

namespace testing {

// Header fields in order, names as written (compared without case).
using Headers = std::vector<std::pair<std::string, std::string>>;

// One response as the client read it. The body is decoded from its framing
// (Content-Length, chunked, or until the server closed); a chunked body's
// trailers are apart. Interim (1xx) responses before it are skipped and
// their statuses listed.
struct Response {
  // 0 when no response came: `error` says why (a timeout, a refused
  // connection, a malformed response) and names the request.
  int status = 0;
  absl::Status error;
  std::string reason;    // "OK"
  std::string version;   // "HTTP/1.1"
  Headers headers;
  std::string body;      // empty when the request's on_body took it
  Headers trailers;
  std::vector<int> informational;  // 1xx statuses skipped, in order (100, 103)
  // The connection ended with this response (Connection: close, a body
  // read until the server closed, a body left unread): the next request
  // opens a new one.
  bool connection_closed = false;

  bool ok() const { return error.ok(); }
  // The first value of the header `name` (any case); "" if none.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // Every value of `name`, in order (Set-Cookie, Vary, ...).
  std::vector<std::string> header_values(std::string_view name) const;
  std::string trailer(std::string_view name) const;
};

// "200 OK, 3 headers, 12-byte body" or "no response: DEADLINE_EXCEEDED: ...":
// for a failed expectation's message (EXPECT_EQ(r.status, 200) << r).
std::ostream& operator<<(std::ostream& out, const Response& response);

// One request with every option; the verbs below fill one in.
struct ClientRequest {
  std::string method = "GET";
  std::string target = "/";  // path and query, sent as written
  // Host is added unless given; Content-Length for `body` unless a
  // Content-Length or Transfer-Encoding is given. "Expect: 100-continue"
  // holds the body back until the server's 100 (or 1 s, as curl does);
  // a final answer first means the body is not sent.
  Headers headers;
  std::string body;
  // A streamed upload instead of `body`: called for each piece until it
  // returns nullopt, each piece sent at once as one chunk (Transfer-Encoding:
  // chunked), then `trailers`. With a Content-Length header among
  // `headers`, the pieces are sent as they are instead (their sum must be
  // that length). If the server answers before the upload ends, the upload
  // stops there and the answer is returned.
  std::function<std::optional<std::string>()> body_source;
  Headers trailers;
  // A streamed download: each piece of the decoded body as it arrives, on
  // the calling thread, instead of into Response::body. Returning false
  // stops reading: the connection is closed and what came is returned.
  std::function<bool(std::string_view piece)> on_body;
  // Opens a new connection for this request (and keeps it for the next
  // ones), instead of reusing the open one.
  bool new_connection = false;
  // Overrides ClientOptions::timeout for this request.
  std::optional<std::chrono::milliseconds> timeout;
};

struct ClientOptions {
  std::string host = "127.0.0.1";  // an IPv4 or IPv6 literal
  uint16_t port = 0;
  // The most a request may take, from connecting to its last body byte:
  // past it the request fails with DEADLINE_EXCEEDED (and the connection
  // is closed) instead of waiting for ever.
  std::chrono::milliseconds timeout{10'000};
  // One connection reused from request to request (reopened when the
  // server closed it). false: "Connection: close" on each request, a new
  // connection each time.
  bool keep_alive = true;
  // HTTPS.
  bool tls = false;
  // PEM files of the certificates to trust: a CA's, or the server's own
  // (trusted as it is, with no chain above it). None: the server's
  // certificate is not verified.
  std::vector<std::string> tls_ca_files;
  // Sent as SNI and, when verifying, the name the certificate must carry.
  // Empty: no SNI, and the name is not checked.
  std::string tls_server_name;
};

class Client {
 public:
  // Connects on the first request.
  explicit Client(ClientOptions options);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  Response Get(std::string_view target, const Headers& headers = {});
  Response Head(std::string_view target, const Headers& headers = {});
  Response Delete(std::string_view target, const Headers& headers = {});
  Response Post(std::string_view target, std::string_view body,
                std::string_view content_type = {}, const Headers& headers = {});
  Response Put(std::string_view target, std::string_view body,
               std::string_view content_type = {}, const Headers& headers = {});
  Response Patch(std::string_view target, std::string_view body,
                 std::string_view content_type = {}, const Headers& headers = {});
  // Any method.
  Response Request(std::string_view method, std::string_view target, std::string_view body = {},
                   const Headers& headers = {});
  Response Do(const ClientRequest& request);

  // Raw bytes on the connection (opened if needed), for requests the verbs
  // cannot write: malformed ones, several pipelined in one write. Then
  // ReadResponse() once per request sent (`head`: it answers a HEAD, so no
  // body follows).
  absl::Status SendRaw(std::string_view bytes);
  Response ReadResponse(bool head = false);

  // Closes the connection; the next request opens a new one.
  void CloseConnection();
  // Connections opened so far (a test of keep-alive counts them).
  int connections_opened() const;
  const ClientOptions& options() const;

 private:
  friend class TestServer;
  // Every request fails with `error` (a TestServer that did not start).
  void FailAll(absl::Status error);

  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A serving::Server on 127.0.0.1 and an ephemeral port, started by the
// constructor on threads of its own and stopped (drained) by the destructor.
// The configuration is used as given, except: address 127.0.0.1, port 0
// (and plain_port 0 when it asks for one), no signal handling.
class TestServer {
 public:
  TestServer(const serving::ServerConfig& config, router::Router&& router);
  // The default configuration.
  explicit TestServer(router::Router&& router);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Why the server did not start (a route it refused, no ring); its
  // clients' requests fail with this too.
  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  uint16_t port() const;
  // "http://127.0.0.1:PORT" ("https://" with TLS).
  std::string url() const;
  // A client of this server with a connection of its own (opened on its
  // first request): HTTPS when the server has TLS, trusting the server's
  // own certificates. `options` for the rest (its host, port and TLS
  // settings are this server's unless set).
  Client client(ClientOptions options = {}) const;
  // A client of the plain-HTTP port beside TLS (ServerConfig::plain_port).
  Client plain_client(ClientOptions options = {}) const;
  // The server itself, for Stats(), RenderMetrics() and the like.
  serving::Server& server() { return *server_; }
  // Stops it now (the destructor does otherwise). Idempotent.
  void Stop();

 private:
  std::unique_ptr<serving::Server> server_;
  absl::Status status_;
  bool tls_ = false;
  std::vector<std::string> certificate_files_;
};

}  // namespace testing
}  // namespace uring_http

#endif  // URING_HTTP_INCLUDE_URING_HTTP_TESTING_H_
