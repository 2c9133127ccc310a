// Client: writes requests, reads responses through response_reader, keeps
// one connection (connection.h) from request to request.
#include <algorithm>
#include <mutex>
#include <ostream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/testing/connection.h"
#include "src/testing/response_reader.h"
#include "src/testing/text.h"
#include "uring_http/testing.h"

namespace uring_http::testing {

using internal::Clock;
using internal::Connection;
using internal::Deadline;

// ------------------------------------------------------------- Response

std::string Response::header(std::string_view name) const {
  for (const auto& [n, value] : headers) {
    if (internal::EqualsIgnoreCase(n, name)) return value;
  }
  return std::string();
}

bool Response::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [name](const auto& h) { return internal::EqualsIgnoreCase(h.first, name); });
}

std::vector<std::string> Response::header_values(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [n, value] : headers) {
    if (internal::EqualsIgnoreCase(n, name)) values.push_back(value);
  }
  return values;
}

std::string Response::trailer(std::string_view name) const {
  for (const auto& [n, value] : trailers) {
    if (internal::EqualsIgnoreCase(n, name)) return value;
  }
  return std::string();
}

std::ostream& operator<<(std::ostream& out, const Response& r) {
  if (r.status == 0) return out << "no response: " << r.error.ToString();
  out << r.version << " " << r.status << " " << r.reason;
  for (const auto& [name, value] : r.headers) out << " | " << name << ": " << value;
  constexpr size_t kShown = 256;
  out << " | body (" << r.body.size() << " bytes): \""
      << absl::CHexEscape(r.body.substr(0, kShown))
      << (r.body.size() > kShown ? "\"..." : "\"");
  if (!r.error.ok()) out << " | then: " << r.error.ToString();
  return out;
}

// ------------------------------------------------------------- Client

namespace {

// The connection's bytes until the request's deadline.
class ConnectionSource : public internal::ByteSource {
 public:
  ConnectionSource(Connection& connection, Deadline deadline)
      : connection_(connection), deadline_(deadline) {}
  absl::StatusOr<size_t> Read(std::string* buffer) override {
    return connection_.Read(buffer, deadline_);
  }

 private:
  Connection& connection_;
  Deadline deadline_;
};

const Headers::value_type* FindField(const Headers& headers, std::string_view name) {
  for (const auto& h : headers) {
    if (internal::EqualsIgnoreCase(h.first, name)) return &h;
  }
  return nullptr;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

absl::Status CheckFields(const Headers& fields) {
  for (const auto& [name, value] : fields) {
    if (name.empty() || HasLineBreak(name) || HasLineBreak(value) ||
        name.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "header \"", absl::CHexEscape(name), "\" cannot be sent as it is (use SendRaw)"));
    }
  }
  return absl::OkStatus();
}

void AppendFields(std::string* out, const Headers& fields) {
  for (const auto& [name, value] : fields) absl::StrAppend(out, name, ": ", value, "\r\n");
}

}  // namespace

class Client::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)) {}

  Response Do(const ClientRequest& request);
  absl::Status SendRaw(std::string_view bytes);
  Response ReadResponse(bool head);

  void CloseConnection() {
    std::lock_guard<std::mutex> lock(mu_);
    Close();
  }
  int connections_opened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_opened_;
  }

  const ClientOptions options_;
  absl::Status preset_error_;  // a TestServer that did not start

 private:
  void Close() {
    connection_.reset();
    buffer_.clear();
  }
  absl::Status Open(Deadline deadline);
  // The open connection if it is still good, else none (the server closed
  // it while idle, or sent something unasked).
  void DropIfStale();
  absl::StatusOr<std::string> Head(const ClientRequest& request) const;
  Clock::duration Timeout(const ClientRequest& request) const {
    return request.timeout.value_or(options_.timeout);
  }
  // "GET /x: what (timeout 10000 ms)".
  absl::Status Named(const ClientRequest& request, const absl::Status& s) const;
  Response Failed(const ClientRequest& request, const absl::Status& s) const {
    Response r;
    r.error = Named(request, s);
    r.connection_closed = true;
    return r;
  }
  // Sends the body (or the upload); sets *early when the server answered
  // before the upload ended.
  absl::Status SendBody(const ClientRequest& request, Deadline deadline, bool* early);

  mutable std::mutex mu_;
  std::shared_ptr<internal::TlsClientContext> tls_;
  std::unique_ptr<Connection> connection_;
  std::string buffer_;  // received, not yet read
  int connections_opened_ = 0;
};

absl::Status Client::Impl::Named(const ClientRequest& request, const absl::Status& s) const {
  std::string text = absl::StrCat(request.method, " ", request.target, ": ", s.message());
  if (absl::IsDeadlineExceeded(s)) {
    absl::StrAppend(&text, " (timeout ",
                    std::chrono::duration_cast<std::chrono::milliseconds>(Timeout(request)).count(),
                    " ms)");
  }
  return absl::Status(s.code(), text);
}

absl::Status Client::Impl::Open(Deadline deadline) {
  if (options_.tls && tls_ == nullptr) {
    absl::StatusOr<std::shared_ptr<internal::TlsClientContext>> ctx =
        internal::MakeTlsClientContext(options_);
    if (!ctx.ok()) return ctx.status();
    tls_ = *std::move(ctx);
  }
  absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(options_, tls_, deadline);
  if (!c.ok()) return c.status();
  connection_ = *std::move(c);
  buffer_.clear();
  ++connections_opened_;
  return absl::OkStatus();
}

void Client::Impl::DropIfStale() {
  if (connection_ == nullptr) return;
  if (!buffer_.empty()) {
    Close();  // bytes nobody read (a response to a raw request, or unasked)
    return;
  }
  absl::StatusOr<size_t> n = connection_->Read(&buffer_, internal::kNoWait);
  if (n.ok() || !absl::IsDeadlineExceeded(n.status())) Close();  // closed, or data unasked
}

absl::StatusOr<std::string> Client::Impl::Head(const ClientRequest& r) const {
  if (r.method.empty() || HasLineBreak(r.method) || r.method.find(' ') != std::string::npos ||
      r.target.empty() || HasLineBreak(r.target) || r.target.find(' ') != std::string::npos) {
    return absl::InvalidArgumentError("the method or target cannot be sent as it is (use SendRaw)");
  }
  if (absl::Status s = CheckFields(r.headers); !s.ok()) return s;
  if (absl::Status s = CheckFields(r.trailers); !s.ok()) return s;
  std::string head = absl::StrCat(r.method, " ", r.target, " HTTP/1.1\r\n");
  if (FindField(r.headers, "host") == nullptr) {
    const bool v6 = options_.host.find(':') != std::string::npos;
    absl::StrAppend(&head, "Host: ", v6 ? "[" : "", options_.host, v6 ? "]" : "", ":",
                    options_.port, "\r\n");
  }
  AppendFields(&head, r.headers);
  if (!options_.keep_alive && FindField(r.headers, "connection") == nullptr) {
    head += "Connection: close\r\n";
  }
  const bool framed = FindField(r.headers, "content-length") != nullptr ||
                      FindField(r.headers, "transfer-encoding") != nullptr;
  if (!framed) {
    if (r.body_source) {
      head += "Transfer-Encoding: chunked\r\n";
    } else if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
      absl::StrAppend(&head, "Content-Length: ", r.body.size(), "\r\n");
    }
  }
  head += "\r\n";
  return head;
}

absl::Status Client::Impl::SendBody(const ClientRequest& request, Deadline deadline, bool* early) {
  if (!request.body_source) return connection_->Write(request.body, deadline);
  const bool chunked = FindField(request.headers, "content-length") == nullptr;
  uint64_t sent = 0;
  for (;;) {
    std::optional<std::string> piece = request.body_source();
    if (!piece.has_value()) break;
    if (piece->empty()) continue;  // an empty chunk would end the body
    // A source that never ends, to a server that reads on.
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out sending the body (", sent, " bytes sent)"));
    }
    sent += piece->size();
    // An answer (or a close) before the upload ends: stop sending.
    absl::StatusOr<size_t> n = connection_->Read(&buffer_, internal::kNoWait);
    if (n.ok() || !absl::IsDeadlineExceeded(n.status())) {
      *early = true;
      return absl::OkStatus();
    }
    std::string bytes = chunked ? absl::StrFormat("%zx\r\n%s\r\n", piece->size(), *piece)
                                : *std::move(piece);
    if (absl::Status s = connection_->Write(bytes, deadline); !s.ok()) return s;
  }
  if (!chunked) return absl::OkStatus();
  std::string end = "0\r\n";
  AppendFields(&end, request.trailers);
  end += "\r\n";
  return connection_->Write(end, deadline);
}

Response Client::Impl::Do(const ClientRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!preset_error_.ok()) return Failed(request, preset_error_);
  const Deadline deadline = Clock::now() + Timeout(request);
  absl::StatusOr<std::string> head = Head(request);
  if (!head.ok()) return Failed(request, head.status());

  if (request.new_connection || !options_.keep_alive) Close();
  DropIfStale();
  if (connection_ == nullptr) {
    if (absl::Status s = Open(deadline); !s.ok()) return Failed(request, s);
  }

  const bool has_body = !request.body.empty() || request.body_source;
  const Headers::value_type* expect = FindField(request.headers, "expect");
  const bool wait_continue = has_body && expect != nullptr &&
                             internal::EqualsIgnoreCase(expect->second, "100-continue");
  std::vector<int> interim;
  absl::Status sent;
  bool early = false;  // the server answered before the body was all sent
  if (!has_body || (!wait_continue && !request.body_source)) {
    sent = connection_->Write(*head + request.body, deadline);
  } else {
    sent = connection_->Write(*head, deadline);
    if (sent.ok() && wait_continue) {
      // The server's 100 Continue, or its final answer, or (as curl does)
      // after a second, the body anyway.
      ConnectionSource source(*connection_,
                              std::min(deadline, Clock::now() + std::chrono::seconds(1)));
      internal::ReadOptions options;
      options.return_interim = true;
      options.head = request.method == "HEAD";
      options.on_body = request.on_body;
      Response first = internal::ReadResponse(source, buffer_, options);
      if (first.ok() && first.status >= 200) {
        // Answered without the body, which the server will not read.
        first.connection_closed = true;
        Close();
        return first;
      }
      if (first.ok()) {
        interim.push_back(first.status);
      } else if (!absl::IsDeadlineExceeded(first.error) || Clock::now() >= deadline) {
        Close();
        return Failed(request, first.error);
      }
    }
    if (sent.ok()) sent = SendBody(request, deadline, &early);
  }

  ConnectionSource source(*connection_, deadline);
  internal::ReadOptions options;
  options.head = request.method == "HEAD";
  options.on_body = request.on_body;
  Response r = internal::ReadResponse(source, buffer_, options);
  if (!sent.ok() && !r.ok()) {
    // Neither sent nor answered: the send's failure says more.
    Close();
    return Failed(request, sent);
  }
  r.informational.insert(r.informational.begin(), interim.begin(), interim.end());
  if (!r.ok()) r.error = Named(request, r.error);
  // A body not sent whole leaves the connection unusable.
  if (!sent.ok() || early) r.connection_closed = true;
  if (r.connection_closed) Close();
  return r;
}

absl::Status Client::Impl::SendRaw(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!preset_error_.ok()) return preset_error_;
  const Deadline deadline = Clock::now() + options_.timeout;
  if (connection_ == nullptr) {
    if (absl::Status s = Open(deadline); !s.ok()) return s;
  }
  absl::Status s = connection_->Write(bytes, deadline);
  if (!s.ok()) Close();
  return s;
}

Response Client::Impl::ReadResponse(bool head) {
  std::lock_guard<std::mutex> lock(mu_);
  ClientRequest what;
  what.method = "(raw)";
  what.target = "ReadResponse";
  if (!preset_error_.ok()) return Failed(what, preset_error_);
  if (connection_ == nullptr) {
    return Failed(what, absl::FailedPreconditionError("no connection (SendRaw opens one)"));
  }
  ConnectionSource source(*connection_, Clock::now() + options_.timeout);
  internal::ReadOptions options;
  options.head = head;
  Response r = internal::ReadResponse(source, buffer_, options);
  if (!r.ok()) r.error = Named(what, r.error);
  if (r.connection_closed) Close();
  return r;
}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Response Client::Do(const ClientRequest& request) { return impl_->Do(request); }

Response Client::Request(std::string_view method, std::string_view target, std::string_view body,
                         const Headers& headers) {
  ClientRequest r;
  r.method = std::string(method);
  r.target = std::string(target);
  r.body = std::string(body);
  r.headers = headers;
  return Do(r);
}

Response Client::Get(std::string_view target, const Headers& headers) {
  return Request("GET", target, {}, headers);
}
Response Client::Head(std::string_view target, const Headers& headers) {
  return Request("HEAD", target, {}, headers);
}
Response Client::Delete(std::string_view target, const Headers& headers) {
  return Request("DELETE", target, {}, headers);
}

namespace {
Headers WithContentType(const Headers& headers, std::string_view content_type) {
  Headers all = headers;
  if (!content_type.empty() && FindField(headers, "content-type") == nullptr) {
    all.emplace_back("Content-Type", std::string(content_type));
  }
  return all;
}
}  // namespace

Response Client::Post(std::string_view target, std::string_view body,
                      std::string_view content_type, const Headers& headers) {
  return Request("POST", target, body, WithContentType(headers, content_type));
}
Response Client::Put(std::string_view target, std::string_view body,
                     std::string_view content_type, const Headers& headers) {
  return Request("PUT", target, body, WithContentType(headers, content_type));
}
Response Client::Patch(std::string_view target, std::string_view body,
                       std::string_view content_type, const Headers& headers) {
  return Request("PATCH", target, body, WithContentType(headers, content_type));
}

absl::Status Client::SendRaw(std::string_view bytes) { return impl_->SendRaw(bytes); }
Response Client::ReadResponse(bool head) { return impl_->ReadResponse(head); }
void Client::CloseConnection() { impl_->CloseConnection(); }
int Client::connections_opened() const { return impl_->connections_opened(); }
const ClientOptions& Client::options() const { return impl_->options_; }
void Client::FailAll(absl::Status error) { impl_->preset_error_ = std::move(error); }

}  // namespace uring_http::testing
