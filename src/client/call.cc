#include "src/client/call.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "src/client/tls_client.h"
#include "src/http/field_syntax.h"

namespace uring_http::client {
namespace {

// A connection's receive buffer: enough for most heads; grown once a body
// of more than that is read (and kept, in the pool, for the next), so a
// large body takes a quarter of the receives.
constexpr size_t kReadPiece = 16 * 1024;
constexpr size_t kBodyPiece = 64 * 1024;

bool IsFramingField(std::string_view name) {
  using http::field_syntax::EqualsIgnoreCase;
  // The call frames the request itself; hop-by-hop fields that would
  // change how the upstream reads it are not the caller's to send.
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
         EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "keep-alive") ||
         EqualsIgnoreCase(name, "te") || EqualsIgnoreCase(name, "upgrade") ||
         EqualsIgnoreCase(name, "proxy-connection");
}

bool FieldTextOk(std::string_view s) {
  for (char c : s) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

bool TokenOk(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!http::field_syntax::Is(c, http::field_syntax::kTchar)) return false;
  }
  return true;
}

}  // namespace

Call::Call(const CallOptions& options, Transport& transport)
    : options_(options), transport_(transport) {}

Call::~Call() {
  // Kept only when the exchange ended cleanly on both sides.
  if (conn_ != nullptr && failed_.ok() && request_done_ && body_done_ && head_.keep_alive &&
      !until_close_ && conn_->begin == conn_->end && !transport_.cancelled()) {
    Pool::ForThread(options_.client_id).Put(std::move(conn_), options_.max_idle);
  }
}

int64_t Call::TimeoutNs(std::chrono::milliseconds base) const {
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(base).count();
  if (deadline_ != std::chrono::steady_clock::time_point::max()) {
    const int64_t left = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             deadline_ - std::chrono::steady_clock::now())
                             .count();
    if (left <= 0) return 0;
    if (ns <= 0 || left < ns) ns = left;
  }
  return ns;
}

absl::Status Call::Fail(absl::Status status) {
  if (failed_.ok()) failed_ = status;
  conn_.reset();  // closed: nothing of it can be trusted now
  return failed_;
}

absl::Status Call::IoFailure(const char* what, int res) {
  if (res == -ETIMEDOUT) return Fail(absl::DeadlineExceededError(std::string("upstream ") + what + " timed out"));
  if (res == -ECANCELED || transport_.cancelled()) return Fail(absl::CancelledError("the exchange was stopped"));
  return Fail(absl::UnavailableError(std::string("upstream ") + what + ": " + std::strerror(-res)));
}

async::Task<absl::Status> Call::Connect(const io::SocketAddress& address) {
  auto conn = std::make_unique<Connection>();
  conn->key = address.ToString();
  async::IoOp op;
  op.kind = async::IoOp::Kind::kSocket;
  op.domain = address.family();
  const int fd = co_await transport_.Do(op);
  if (fd < 0) co_return IoFailure("socket", fd);
  conn->fd = fd;  // closed by the connection from here on
  if (transport_.cancelled()) co_return Fail(absl::CancelledError("the exchange was stopped"));
  // Requests are written whole and small responses awaited at once: no
  // Nagle delay between a head and its body.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int64_t timeout = TimeoutNs(options_.connect_timeout);
  if (timeout == 0) co_return Fail(absl::DeadlineExceededError("the call's deadline passed"));
  op = async::IoOp();
  op.kind = async::IoOp::Kind::kConnect;
  op.fd = fd;
  op.addr = address.get();
  op.addrlen = address.size();
  op.timeout_ns = timeout;
  const int res = co_await transport_.Do(op);
  if (res < 0) {
    conn_ = std::move(conn);
    co_return IoFailure("connect", res);
  }
  conn_ = std::move(conn);
  co_return absl::OkStatus();
}

async::Task<absl::Status> Call::Begin(const io::SocketAddress& address, const RequestHead& head) {
  if (!failed_.ok()) co_return failed_;
  if (!TokenOk(head.method) || head.target.empty() || !FieldTextOk(head.target) ||
      head.target.find(' ') != std::string_view::npos || !FieldTextOk(head.authority)) {
    co_return Fail(absl::InvalidArgumentError("malformed request line"));
  }
  const bool tls = !head.tls_host.empty();
  if (tls && options_.tls == nullptr) {
    co_return Fail(absl::FailedPreconditionError("TLS was asked for without a TLS context"));
  }
  // A TLS connection is the upstream's for one name: not shared with
  // plain calls, nor with another name's (its certificate was checked for
  // this one).
  std::string key = address.ToString();
  if (tls) key.append("|tls:").append(head.tls_host);
  if (!head.fresh_connection) {
    conn_ = Pool::ForThread(options_.client_id).Take(key, options_.idle_timeout);
  }
  if (conn_ == nullptr) {
    absl::Status connected = co_await Connect(address);
    if (!connected.ok()) co_return connected;
    conn_->key = std::move(key);
    if (tls) {
      absl::StatusOr<std::unique_ptr<TlsConnection>> started =
          TlsConnection::Start(*options_.tls, head.tls_host);
      if (!started.ok()) co_return Fail(started.status());
      conn_->tls = std::move(*started);
      absl::Status shaken = co_await Handshake();
      if (!shaken.ok()) co_return shaken;
    }
  }
  std::string& out = conn_->out;
  out.clear();
  out.append(head.method).append(" ").append(head.target).append(" HTTP/1.1\r\n");
  bool host_given = false;
  for (size_t i = 0; i < head.num_fields; ++i) {
    const http::Header& f = head.fields[i];
    if (!TokenOk(f.name) || !FieldTextOk(f.value)) {
      co_return Fail(absl::InvalidArgumentError("malformed request field"));
    }
    if (IsFramingField(f.name)) continue;
    if (http::field_syntax::EqualsIgnoreCase(f.name, "host")) {
      if (host_given) continue;  // one Host only
      host_given = true;
    }
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  if (!host_given) out.append("Host: ").append(head.authority).append("\r\n");
  body_kind_ = head.body;
  switch (head.body) {
    case RequestHead::Body::kNone:
      break;
    case RequestHead::Body::kLength: {
      char len[32];
      std::snprintf(len, sizeof(len), "%llu", static_cast<unsigned long long>(head.length));
      out.append("Content-Length: ").append(len).append("\r\n");
      break;
    }
    case RequestHead::Body::kChunked:
      out.append("Transfer-Encoding: chunked\r\n");
      break;
  }
  out.append("\r\n");
  body_left_ = head.body == RequestHead::Body::kLength ? head.length : 0;
  if (!head.body_now.empty() && head.body == RequestHead::Body::kLength) {
    const size_t n = std::min<uint64_t>(head.body_now.size(), body_left_);
    out.append(head.body_now.substr(0, n));
    body_left_ -= n;
  }
  request_done_ = head.body == RequestHead::Body::kNone ||
                  (head.body == RequestHead::Body::kLength && body_left_ == 0);
  co_return co_await SendAll(out.data(), out.size());
}

async::Task<absl::Status> Call::SendAll(const char* data, size_t len) {
  if (conn_->tls == nullptr) {
    absl::Status sent = co_await SendRaw(data, len);
    co_return sent;
  }
  TlsConnection& t = *conn_->tls;
  while (len > 0) {
    const size_t took = t.session.Encrypt(data, len);
    if (took == 0 && t.session.output_len() == 0) {
      co_return Fail(absl::UnavailableError(std::string("upstream TLS: ") + t.session.error()));
    }
    data += took;
    len -= took;
    absl::Status sent = co_await SendTlsOutput();
    if (!sent.ok()) co_return sent;
  }
  co_return absl::OkStatus();
}

async::Task<absl::Status> Call::SendTlsOutput() {
  TlsConnection& t = *conn_->tls;
  if (t.session.output_len() == 0) co_return absl::OkStatus();
  absl::Status sent = co_await SendRaw(t.session.output(), t.session.output_len());
  t.session.ClearOutput();
  co_return sent;
}

async::Task<absl::Status> Call::Handshake() {
  TlsConnection& t = *conn_->tls;
  char plain[1];
  size_t plain_len = 0;
  // The ClientHello (no input yet), then each flight of the server's.
  tls::TlsSession::Status st = t.session.Feed(nullptr, 0, plain, 0, &plain_len);
  for (;;) {
    absl::Status sent = co_await SendTlsOutput();
    if (!sent.ok()) co_return sent;
    if (st == tls::TlsSession::Status::kFailed) {
      co_return Fail(absl::UnavailableError("upstream TLS handshake: " + t.HandshakeError()));
    }
    if (t.session.handshake_done()) break;
    const int res = co_await RecvRaw(t.in.data(), t.in.size());
    if (res < 0) co_return IoFailure("TLS handshake", res);
    if (res == 0) co_return Fail(absl::UnavailableError("upstream closed during the TLS handshake"));
    // Plaintext cannot come before our request: room for none.
    st = t.session.Feed(t.in.data(), static_cast<size_t>(res), plain, 0, &plain_len);
    if (st == tls::TlsSession::Status::kPlainFull) st = tls::TlsSession::Status::kNeedMore;
  }
  co_return absl::OkStatus();
}

async::Task<int> Call::RecvRaw(char* buf, size_t len) {
  const int64_t timeout = TimeoutNs(options_.read_timeout);
  if (timeout == 0) co_return -ETIMEDOUT;  // the call's deadline has passed
  async::IoOp op;
  op.kind = async::IoOp::Kind::kRecv;
  op.fd = conn_->fd;
  op.buf = buf;
  op.len = len;
  op.timeout_ns = timeout;
  const int res = co_await transport_.Do(op);
  co_return res;
}

async::Task<int> Call::Receive(char* buf, size_t len) {
  if (conn_->tls == nullptr) {
    const int res = co_await RecvRaw(buf, len);
    co_return res;
  }
  TlsConnection& t = *conn_->tls;
  for (;;) {
    size_t plain = 0;
    tls::TlsSession::Status st;
    if (t.more_plain) {
      // The last Feed filled the room: the session goes on with the input
      // it still holds.
      st = t.session.Feed(nullptr, 0, buf, len, &plain);
    } else {
      const int res = co_await RecvRaw(t.in.data(), t.in.size());
      if (res <= 0) co_return res;  // an upstream that closes without close_notify: its end
      st = t.session.Feed(t.in.data(), static_cast<size_t>(res), buf, len, &plain);
    }
    t.more_plain = st == tls::TlsSession::Status::kPlainFull;
    // A key update or an alert of ours goes out now.
    if (t.session.output_len() > 0) {
      absl::Status sent = co_await SendTlsOutput();
      if (!sent.ok()) co_return -EPIPE;
    }
    if (plain > 0) co_return static_cast<int>(plain);
    if (st == tls::TlsSession::Status::kPeerClosed) co_return 0;
    if (st == tls::TlsSession::Status::kFailed) {
      tls_error_ = t.session.error();
      co_return -EPROTO;
    }
    // A record with no plaintext (a session ticket): read on.
  }
}

async::Task<absl::Status> Call::SendRaw(const char* data, size_t len) {
  while (len > 0) {
    const int64_t timeout = TimeoutNs(options_.read_timeout);
    if (timeout == 0) co_return Fail(absl::DeadlineExceededError("the call's deadline passed"));
    async::IoOp op;
    op.kind = async::IoOp::Kind::kSend;
    op.fd = conn_->fd;
    op.buf = const_cast<char*>(data);
    op.len = len;
    op.timeout_ns = timeout;
    const int res = co_await transport_.Do(op);
    if (res <= 0) {
      // A kept connection the upstream had closed fails its first send.
      if (conn_->reused && !got_bytes_) stale_ = true;
      co_return IoFailure("send", res == 0 ? -EPIPE : res);
    }
    sent_any_ = true;
    data += res;
    len -= static_cast<size_t>(res);
  }
  co_return absl::OkStatus();
}

async::Task<absl::Status> Call::WriteBody(std::string_view bytes) {
  if (!failed_.ok()) co_return failed_;
  if (conn_ == nullptr || request_done_ || body_kind_ == RequestHead::Body::kNone) {
    co_return Fail(absl::FailedPreconditionError("no request body is open"));
  }
  if (bytes.empty()) co_return absl::OkStatus();
  if (body_kind_ == RequestHead::Body::kLength) {
    if (bytes.size() > body_left_) {
      co_return Fail(absl::InvalidArgumentError("more request body than its Content-Length"));
    }
    body_left_ -= bytes.size();
    absl::Status sent = co_await SendAll(bytes.data(), bytes.size());
    if (sent.ok() && body_left_ == 0) request_done_ = true;
    co_return sent;
  }
  char size[24];
  const int n = std::snprintf(size, sizeof(size), "%zx\r\n", bytes.size());
  std::string& out = conn_->out;
  out.assign(size, static_cast<size_t>(n));
  out.append(bytes).append("\r\n");
  co_return co_await SendAll(out.data(), out.size());
}

async::Task<absl::Status> Call::EndBody() {
  if (!failed_.ok()) co_return failed_;
  if (conn_ == nullptr) co_return Fail(absl::FailedPreconditionError("not begun"));
  if (request_done_) co_return absl::OkStatus();
  if (body_kind_ == RequestHead::Body::kLength) {
    // The upstream would wait for the rest, or read the next request
    // from it: the connection cannot go on.
    co_return Fail(absl::InvalidArgumentError("the request body ended before its Content-Length"));
  }
  static constexpr std::string_view kLast = "0\r\n\r\n";
  absl::Status sent = co_await SendAll(kLast.data(), kLast.size());
  if (sent.ok()) request_done_ = true;
  co_return sent;
}

async::Task<absl::StatusOr<size_t>> Call::Fill() {
  Connection& c = *conn_;
  if (c.begin == c.end) c.begin = c.end = 0;
  if (c.in.size() < kReadPiece) c.in.resize(kReadPiece);
  if (c.end == c.in.size()) {
    if (c.begin > 0) {
      std::memmove(c.in.data(), c.in.data() + c.begin, c.end - c.begin);
      c.end -= c.begin;
      c.begin = 0;
    } else {
      // A head larger than the buffer: grow, to the head's limits.
      const size_t most = options_.limits.max_status_line + options_.limits.max_header_bytes + 2;
      if (c.in.size() >= most) co_return Fail(absl::InvalidArgumentError("response head too large"));
      c.in.resize(std::min(most, c.in.size() * 2));
    }
  }
  const int res = co_await Receive(c.in.data() + c.end, c.in.size() - c.end);
  if (res == -EPROTO) co_return Fail(absl::UnavailableError("upstream TLS: " + tls_error_));
  if (res < 0) {
    if (c.reused && !got_bytes_ && res != -ETIMEDOUT && res != -ECANCELED) stale_ = true;
    co_return IoFailure("read", res);
  }
  if (res > 0) got_bytes_ = true;
  c.end += static_cast<size_t>(res);
  co_return static_cast<size_t>(res);
}

async::Task<absl::StatusOr<const ResponseHead*>> Call::ReadHead(bool head_request) {
  if (!failed_.ok()) co_return failed_;
  if (conn_ == nullptr || head_read_) co_return Fail(absl::FailedPreconditionError("no response to read"));
  for (;;) {
    Connection& c = *conn_;
    if (c.headers.size() < options_.limits.max_headers) c.headers.resize(options_.limits.max_headers);
    const ResponseParseResult r =
        ParseResponseHead(std::string_view(c.in.data() + c.begin, c.end - c.begin), options_.limits,
                          head_request, &head_, c.headers.data(), c.headers.size());
    if (r.status == http::ParseStatus::kError) {
      co_return Fail(absl::InvalidArgumentError(std::string("malformed response: ") + r.error));
    }
    if (r.status == http::ParseStatus::kComplete) {
      c.begin += r.consumed;
      if (head_.interim()) continue;  // 100 Continue, 103 Early Hints: the final one follows
      break;
    }
    absl::StatusOr<size_t> got = co_await Fill();
    if (!got.ok()) co_return got.status();
    if (*got == 0) {
      if (c.reused && !got_bytes_) stale_ = true;
      co_return Fail(absl::UnavailableError(c.end > c.begin ? "upstream closed mid-head"
                                                            : "upstream closed before answering"));
    }
  }
  head_read_ = true;
  switch (head_.framing) {
    case ResponseFraming::kNone:
      body_done_ = true;
      break;
    case ResponseFraming::kContentLength:
      decoder_.Start(http::BodyFraming::kContentLength, head_.content_length, UINT64_MAX);
      break;
    case ResponseFraming::kChunked:
      decoder_.Start(http::BodyFraming::kChunked, 0, UINT64_MAX);
      break;
    case ResponseFraming::kUntilClose:
      until_close_ = true;
      break;
  }

  co_return &head_;
}

async::Task<absl::StatusOr<std::string_view>> Call::ReadBody() {
  if (!failed_.ok()) co_return failed_;
  if (!head_read_) co_return Fail(absl::FailedPreconditionError("the head was not read"));
  if (!body_done_ && conn_->in.size() < kBodyPiece &&
      (head_.framing != ResponseFraming::kContentLength || head_.content_length > kReadPiece)) {
    // Here, not in ReadHead: growing may move the head's bytes, whose
    // views are the caller's until its first ReadBody.
    conn_->in.resize(kBodyPiece);
  }
  for (;;) {
    if (!until_close_ && decoder_.done()) body_done_ = true;
    if (body_done_) co_return std::string_view();
    Connection& c = *conn_;
    if (until_close_) {
      if (c.begin < c.end) {
        const std::string_view piece(c.in.data() + c.begin, c.end - c.begin);
        c.begin = c.end;
        co_return piece;
      }
    } else if (c.begin < c.end) {
      const http::BodyDecoder::Result r =
          decoder_.Decode(std::string_view(c.in.data() + c.begin, c.end - c.begin));
      c.begin += r.consumed;
      if (r.status == http::BodyDecoder::Status::kError) {
        co_return Fail(absl::DataLossError("malformed chunked response body"));
      }
      if (r.status == http::BodyDecoder::Status::kData) co_return r.data;
      if (r.status == http::BodyDecoder::Status::kDone) {
        body_done_ = true;
        co_return std::string_view();
      }
    }
    absl::StatusOr<size_t> got = co_await Fill();
    if (!got.ok()) co_return got.status();
    if (*got == 0) {
      if (until_close_) {
        body_done_ = true;
        co_return std::string_view();
      }
      co_return Fail(absl::DataLossError("upstream closed mid-body"));
    }
  }
}

}  // namespace uring_http::client
