// Call: one HTTP/1.1 request and its response over one upstream
// connection, streamed both ways, as coroutine steps on a Transport (an
// ASYNC exchange's ring, or blocking calls: transport.h). The client's
// Fetch (client.h) is a Call whose bodies are buffered; the reverse proxy
// (examples/proxy) drives one step by step, so that neither body is ever
// held whole:
//
//   Call call(client, transport);
//   status = co_await call.Begin(address, head);          // connect or reuse, send the head
//   status = co_await call.WriteBody(piece); ...          // as they come
//   status = co_await call.EndBody();
//   head   = co_await call.ReadHead();                    // 1xx skipped
//   piece  = co_await call.ReadBody(); ... until empty    // the response body
//
// Each step waits only for its own operation: a request body is sent as
// the upstream takes it, a response body read as the caller asks for it
// (backpressure both ways: nothing is read ahead of the caller).
//
// The request's framing is the call's: one Content-Length, or chunked,
// never both, and never a framing field of the caller's (Host is the
// caller's if given, else the upstream's). The response is parsed by
// response_parser.h's strict rules.
//
// The connection goes back to the pool (pool.h) only when the whole
// request went, the response ended where its framing said, nothing
// followed it, and both sides allow keep-alive; in every other case it is
// closed. A call that failed on a kept connection before any byte of the
// response came back may have met a connection the upstream had closed
// while idle: stale() says so, and an idempotent request may be tried
// again on a fresh connection (Client::Fetch does, once).
//
// Errors (absl::Status): DeadlineExceeded (a connect, send or read
// timeout, or the call's deadline); Unavailable (refused, reset, closed
// before the response); DataLoss (closed mid-body, a malformed chunk);
// InvalidArgument (a malformed response head, or a request field with a
// CR or LF); Cancelled (the exchange was stopped). After an error the call
// is over: later steps return it again.
//
// Thread-safety: its transport's thread.
#ifndef URING_HTTP_SRC_CLIENT_CALL_H_
#define URING_HTTP_SRC_CLIENT_CALL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/async/task.h"
#include "src/client/pool.h"
#include "src/client/response_parser.h"
#include "src/client/transport.h"
#include "src/http/body_decoder.h"
#include "src/http/header.h"
#include "src/io/socket_address.h"

namespace uring_http::client {

class TlsClientContext;  // tls_client.h

struct CallOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};  // each send and receive
  std::chrono::milliseconds idle_timeout{30000};  // a kept connection's
  size_t max_idle = 32;                           // kept per upstream
  ResponseLimits limits;
  uint64_t client_id = 0;                         // its pool
  // For https upstreams (RequestHead::tls_host); null: TLS refused.
  const TlsClientContext* tls = nullptr;
};

struct RequestHead {
  std::string_view method = "GET";
  std::string_view target = "/";  // origin-form: "/path?query"
  std::string_view authority;     // Host, unless the fields give one
  const http::Header* fields = nullptr;
  size_t num_fields = 0;
  enum class Body : uint8_t { kNone, kLength, kChunked };
  Body body = Body::kNone;
  uint64_t length = 0;            // kLength
  // Sent with the head, in one send (a small buffered body): part of
  // `length`, whose rest WriteBody sends.
  std::string_view body_now;
  bool fresh_connection = false;  // do not take a kept one (a retry)
  // Not empty: the connection speaks TLS, to this host (SNI, and the name
  // the certificate must carry).
  std::string_view tls_host;
};

class Call {
 public:
  Call(const CallOptions& options, Transport& transport);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The call's deadline (each operation's timeout is cut to it).
  void set_deadline(std::chrono::steady_clock::time_point at) { deadline_ = at; }

  async::Task<absl::Status> Begin(const io::SocketAddress& address, const RequestHead& head);
  async::Task<absl::Status> WriteBody(std::string_view bytes);
  async::Task<absl::Status> EndBody();
  // The response's head (interim 1xx ones skipped). Its views (fields,
  // reason) are valid until the first ReadBody.
  async::Task<absl::StatusOr<const ResponseHead*>> ReadHead(bool head_request = false);
  // The body's next piece (a view valid until the next call), empty at
  // its end.
  async::Task<absl::StatusOr<std::string_view>> ReadBody();

  bool stale() const { return stale_; }
  // Some of the request went out (a retry elsewhere could repeat it).
  bool sent_any() const { return sent_any_; }
  bool reused() const { return conn_ != nullptr && conn_->reused; }
  bool body_done() const { return body_done_; }

 private:
  async::Task<absl::Status> Connect(const io::SocketAddress& address);
  async::Task<absl::Status> SendAll(const char* data, size_t len);
  async::Task<absl::Status> SendRaw(const char* data, size_t len);
  // The TLS handshake on a new connection.
  async::Task<absl::Status> Handshake();
  // What the TLS session wrote (handshake flights, records) to the peer.
  async::Task<absl::Status> SendTlsOutput();
  // Plaintext into buf[0..len): the count, 0 at the peer's end, or -errno
  // (-EPROTO: the TLS session failed, tls_error_ says why).
  async::Task<int> Receive(char* buf, size_t len);
  // One receive of ciphertext or plaintext, with the read timeout cut to
  // the deadline: the count, 0 at the end, or -errno.
  async::Task<int> RecvRaw(char* buf, size_t len);
  // More bytes into the connection's buffer: the count, 0 at the peer's
  // end, or the error.
  async::Task<absl::StatusOr<size_t>> Fill();
  absl::Status Fail(absl::Status status);
  absl::Status IoFailure(const char* what, int res);
  // An operation's timeout: `base`, cut to the deadline; 0 when the
  // deadline has passed.
  int64_t TimeoutNs(std::chrono::milliseconds base) const;

  const CallOptions& options_;
  Transport& transport_;
  std::unique_ptr<Connection> conn_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  absl::Status failed_;
  RequestHead::Body body_kind_ = RequestHead::Body::kNone;
  uint64_t body_left_ = 0;  // kLength: still to send
  bool request_done_ = false;
  bool stale_ = false;
  bool got_bytes_ = false;
  bool sent_any_ = false;
  std::string tls_error_;
  ResponseHead head_;
  bool head_read_ = false;
  bool body_done_ = false;
  bool until_close_ = false;
  http::BodyDecoder decoder_;
};

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_CALL_H_
