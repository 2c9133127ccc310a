// Client: an HTTP/1.1 client for handlers that call other services.
//
// From an ASYNC handler, on the exchange's ring (no thread waits; the
// client leaving cancels the call):
//
//   client::Client api({.read_timeout = std::chrono::seconds(2)});
//   router.Async("GET", "/user", [&api](async::Exchange& ex) -> async::Task<> {
//     absl::StatusOr<client::Response> r = co_await api.Get(ex, "http://127.0.0.1:9000/u/7");
//     if (!r.ok()) { ex.response().set_status(502); co_return; }
//     ex.response().set_body(r->body);
//   });
//
// From a SLOW handler (or any thread), the same call blocking:
// api.GetBlocking(url), api.FetchBlocking(request).
//
// What it does: http:// and https:// URLs (TLS through the server's own
// OpenSSL session, verified by default: tls_client.h); numeric addresses at once, host names by getaddrinfo (so
// /etc/hosts, then DNS) on a worker, cached for dns_ttl; a keep-alive pool
// per upstream per thread (pool.h); connect, read (each send and receive)
// and total timeouts; a failure on a kept connection before any byte of
// the answer is retried once on a fresh one, for idempotent methods only
// (RFC 9110 9.2.2); the response parsed by strict rules (response_parser.h:
// Content-Length with Transfer-Encoding is refused); its body buffered up
// to max_response_body (ResourceExhausted beyond). For bodies streamed
// either way, drive a Call (call.h) yourself.
//
// Thread-safety: one Client may be used from every ring and worker at
// once (each thread has its own pool).
#ifndef URING_HTTP_SRC_CLIENT_CLIENT_H_
#define URING_HTTP_SRC_CLIENT_CLIENT_H_

#include <chrono>
#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/async/exchange.h"
#include "src/async/task.h"
#include "src/client/call.h"
#include "src/client/transport.h"

namespace uring_http::client {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};   // each send and receive
  std::chrono::milliseconds total_timeout{60000};  // a whole Fetch (0: none)
  std::chrono::milliseconds idle_timeout{30000};   // a kept connection
  size_t max_idle_per_upstream = 32;               // per thread
  uint64_t max_response_body = 64 * 1024 * 1024;
  std::chrono::seconds dns_ttl{60};
  ResponseLimits limits;
  // https:// upstreams: their certificate chain verified (against
  // tls_ca_file, or the system's trust store when empty) and their name
  // against the URL's host. Turning it off is for tests and known hosts.
  bool tls_verify = true;
  std::string tls_ca_file;
};

struct Request {
  std::string method = "GET";
  std::string url;  // "http://host[:port]/path?query"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent with a Content-Length when not empty (or not GET/HEAD)
};

struct Response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first field of that name (case-insensitive), or "".
  std::string_view header(std::string_view name) const;
};

// "http[s]://host[:port][/target]": the pieces a call needs.
struct Url {
  bool tls = false;       // https://
  std::string host;       // without brackets
  uint16_t port = 80;     // 443 for https://
  std::string authority;  // as the Host field: "host[:port]"
  std::string target;     // "/..." ("/" when none)
};
// InvalidArgument for anything else.
absl::StatusOr<Url> ParseUrl(std::string_view url);

class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // On the exchange's ring.
  async::Task<absl::StatusOr<Response>> Fetch(async::Exchange& ex, Request request);
  async::Task<absl::StatusOr<Response>> Get(async::Exchange& ex, std::string url);
  // Blocking, on the calling thread.
  absl::StatusOr<Response> FetchBlocking(Request request);
  absl::StatusOr<Response> GetBlocking(std::string url);

  // Either, on the given transport.
  async::Task<absl::StatusOr<Response>> Fetch(Transport& transport, Request request);

  const ClientOptions& options() const { return options_; }
  const CallOptions& call_options() const { return call_options_; }
  // Connections kept for `address` on the calling thread.
  size_t idle_connections(const io::SocketAddress& address) const;

 private:
  async::Task<absl::StatusOr<Response>> FetchWith(Transport transport, Request request);

  ClientOptions options_;
  CallOptions call_options_;
  std::unique_ptr<TlsClientContext> tls_;
  absl::Status tls_status_;  // why https:// cannot be used, if it cannot
};

// RFC 9110 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT, DELETE.
bool IdempotentMethod(std::string_view method);

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_CLIENT_H_
