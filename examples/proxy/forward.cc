#include "examples/proxy/forward.h"

#include <cctype>
#include <memory>
#include <stdexcept>

namespace proxy {
namespace {

namespace async = uring_http::async;
namespace client = uring_http::client;
namespace http = uring_http::http;

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The tokens of every Connection field among `fields`.
template <typename Fields>
std::vector<std::string_view> ConnectionTokens(const Fields& fields) {
  std::vector<std::string_view> tokens;
  for (const auto& [name, value] : fields) {
    if (!SameName(name, "connection")) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) tokens.push_back(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return tokens;
}

struct HeaderPairs {
  const http::Header* begin_ = nullptr;
  const http::Header* end_ = nullptr;
  struct It {
    const http::Header* p;
    std::pair<std::string_view, std::string_view> operator*() const { return {p->name, p->value}; }
    It& operator++() {
      ++p;
      return *this;
    }
    bool operator!=(const It& o) const { return p != o.p; }
  };
  It begin() const { return {begin_}; }
  It end() const { return {end_}; }
};

// 502 or 504 with the reason, when nothing of the answer has gone.
void Fail(async::Exchange& ex, const absl::Status& status) {
  http::Response& response = ex.response();
  response.Clear();
  response.set_status(absl::IsDeadlineExceeded(status) ? 504 : 502);
  response.set_content_type("text/plain; charset=utf-8");
  response.set_body(std::string(absl::IsDeadlineExceeded(status) ? "upstream timed out: "
                                                                  : "bad gateway: ") +
                    std::string(status.message()) + "\n");
}

}  // namespace

bool HopByHop(std::string_view name, const std::vector<std::string_view>& connection) {
  static constexpr std::string_view kFixed[] = {"connection", "keep-alive", "proxy-connection",
                                                "te", "transfer-encoding", "upgrade",
                                                "content-length", "trailer"};
  for (std::string_view f : kFixed) {
    if (SameName(name, f)) return true;
  }
  for (std::string_view t : connection) {
    if (SameName(name, t)) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> UpstreamFields(const http::Request& request,
                                                                std::string_view client_text,
                                                                bool https) {
  const HeaderPairs fields{request.headers, request.headers + request.num_headers};
  const std::vector<std::string_view> connection = ConnectionTokens(fields);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(request.num_headers + 3);
  std::string xff;
  std::string forwarded;
  for (const auto& [name, value] : fields) {
    if (HopByHop(name, connection)) continue;
    // Appended to below, as one field each.
    if (SameName(name, "x-forwarded-for")) {
      xff.append(xff.empty() ? "" : ", ").append(value);
      continue;
    }
    if (SameName(name, "forwarded")) {
      forwarded.append(forwarded.empty() ? "" : ", ").append(value);
      continue;
    }
    if (SameName(name, "x-forwarded-proto")) continue;  // ours says how it came to us
    out.emplace_back(std::string(name), std::string(value));
  }
  xff.append(xff.empty() ? "" : ", ").append(client_text);
  out.emplace_back("X-Forwarded-For", std::move(xff));
  out.emplace_back("X-Forwarded-Proto", https ? "https" : "http");
  // RFC 7239 6: an IPv6 address is quoted and bracketed; a client whose
  // address is not known (a Unix socket) is "unknown".
  std::string node;
  if (client_text.find(':') != std::string_view::npos) {
    node = "\"[" + std::string(client_text) + "]\"";
  } else if (client_text.empty() || client_text == "-" || client_text == "unix") {
    node = "unknown";
  } else {
    node = std::string(client_text);
  }
  forwarded.append(forwarded.empty() ? "" : ", ")
      .append("for=")
      .append(node)
      .append(";proto=")
      .append(https ? "https" : "http");
  out.emplace_back("Forwarded", std::move(forwarded));
  return out;
}

async::Task<> Forwarder::Handle(async::Exchange& ex) {
  const http::Request& request = ex.request();
  char address[http::ClientAddress::kMaxText];
  const std::vector<std::pair<std::string, std::string>> owned =
      UpstreamFields(request, request.client_address.Format(address), request.secure);
  std::vector<http::Header> fields;
  fields.reserve(owned.size());
  for (const auto& [name, value] : owned) fields.push_back({name, value});

  client::RequestHead head;
  head.method = request.method;
  // Origin-form for the upstream whatever form the client used.
  std::string target_storage;
  if (request.target.starts_with("/")) {
    head.target = request.target;
  } else {
    target_storage = std::string(request.path.empty() ? "/" : request.path);
    if (!request.query.empty()) target_storage.append("?").append(request.query);
    head.target = target_storage;
  }
  head.fields = fields.data();
  head.num_fields = fields.size();
  // The body's framing as this server parsed it, re-framed by the client.
  if (request.framing == http::BodyFraming::kContentLength) {
    head.body = client::RequestHead::Body::kLength;
    head.length = request.content_length;
  } else if (request.framing == http::BodyFraming::kChunked) {
    head.body = client::RequestHead::Body::kChunked;
  }
  const bool has_body = head.body != client::RequestHead::Body::kNone;
  const bool is_head = request.method == "HEAD";
  const bool may_retry = !has_body && client::IdempotentMethod(request.method);

  client::Transport transport(ex);
  uint64_t tried = 0;
  size_t turn = 0;
  absl::Status last = absl::UnavailableError("no upstream");
  bool fresh = false;
  size_t at = 0;  // of the upstream's addresses, the one tried
  Upstream* u = upstreams_->Pick(&tried, &turn);
  while (u != nullptr) {
    absl::StatusOr<std::vector<uring_http::io::SocketAddress>> addresses =
        co_await transport.Resolve(u->host, u->port, client_.options().dns_ttl);
    if (!addresses.ok() || addresses->empty()) {
      last = addresses.ok() ? absl::UnavailableError("no address for " + u->authority) : addresses.status();
      upstreams_->MarkFailed(*u);
      u = upstreams_->Pick(&tried, &turn);
      at = 0;
      continue;
    }
    if (at >= addresses->size()) at = 0;
    if (request.host.empty()) head.authority = u->authority;  // an HTTP/1.0 client's request
    else head.authority = request.host;
    head.tls_host = u->tls ? std::string_view(u->host) : std::string_view();
    head.fresh_connection = fresh;
    client::Call call(client_.call_options(), transport);
    absl::Status begun = co_await call.Begin((*addresses)[at], head);
    if (!begun.ok()) {
      last = begun;
      if (ex.cancelled()) co_return;
      if (!call.sent_any() && absl::IsUnavailable(begun)) {
        // Not reached, nothing sent: a dead kept connection is tried again
        // fresh; else the name's next address (localhost: ::1, then
        // 127.0.0.1), then the next upstream.
        fresh = call.reused();
        if (fresh) continue;
        if (++at < addresses->size()) continue;
        upstreams_->MarkFailed(*u);
        u = upstreams_->Pick(&tried, &turn);
        at = 0;
        continue;
      }
      Fail(ex, begun);
      co_return;
    }
    if (has_body) {
      // Streamed: each piece goes upstream before the next is read, so
      // neither side runs ahead of the other.
      constexpr size_t kPiece = 64 * 1024;
      auto buffer = std::make_unique<char[]>(kPiece);
      for (;;) {
        absl::StatusOr<size_t> got = co_await ex.ReadBody(buffer.get(), kPiece);
        if (!got.ok()) co_return;  // the connection answers it (400, 408, 413)
        if (*got == 0) break;
        absl::Status sent = co_await call.WriteBody(std::string_view(buffer.get(), *got));
        if (!sent.ok()) {
          if (!ex.cancelled()) Fail(ex, sent);
          co_return;
        }
      }
      absl::Status ended = co_await call.EndBody();
      if (!ended.ok()) {
        if (!ex.cancelled()) Fail(ex, ended);
        co_return;
      }
    }
    absl::StatusOr<const client::ResponseHead*> answer = co_await call.ReadHead(is_head);
    if (!answer.ok()) {
      if (ex.cancelled()) co_return;
      if (call.stale() && may_retry && !fresh) {
        fresh = true;  // once, on a fresh connection to the same upstream
        continue;
      }
      Fail(ex, answer.status());
      co_return;
    }
    const client::ResponseHead& h = **answer;
    http::Response& response = ex.response();
    response.set_status(h.status);
    const HeaderPairs answer_fields{h.headers, h.headers + h.num_headers};
    const std::vector<std::string_view> connection = ConnectionTokens(answer_fields);
    for (const auto& [name, value] : answer_fields) {
      if (HopByHop(name, connection) || SameName(name, "date") || SameName(name, "server")) continue;
      if (!response.AddHeader(name, value)) {
        Fail(ex, absl::UnavailableError("the upstream sent a field this server cannot pass on"));
        co_return;
      }
    }
    if (h.framing == client::ResponseFraming::kContentLength && !is_head) {
      response.set_content_length(h.content_length);
    }
    if (h.framing == client::ResponseFraming::kNone) co_return;  // the head is the answer
    for (;;) {
      absl::StatusOr<std::string_view> piece = co_await call.ReadBody();
      if (!piece.ok()) {
        if (ex.cancelled()) co_return;
        if (!ex.streaming()) {
          Fail(ex, piece.status());
          co_return;
        }
        // Part of the body has gone: the answer is cut, never ended as if
        // it were whole.
        throw std::runtime_error("the upstream's body broke off: " + std::string(piece.status().message()));
      }
      if (piece->empty()) co_return;
      absl::Status wrote = co_await ex.Write(*piece);
      if (!wrote.ok()) co_return;  // the client left: the call closes its connection
    }
  }
  Fail(ex, last);
}

}  // namespace proxy
