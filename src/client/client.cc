#include "src/client/client.h"

#include <atomic>
#include <charconv>

#include "src/client/pool.h"
#include "src/client/tls_client.h"
#include "src/http/field_syntax.h"

namespace uring_http::client {
namespace {

std::atomic<uint64_t> next_client_id{1};

}  // namespace

std::string_view Response::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = http::field_syntax::AsciiLower(n[i]) == http::field_syntax::AsciiLower(name[i]);
    }
    if (same) return v;
  }
  return {};
}

bool IdempotentMethod(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "TRACE" || m == "PUT" ||
         m == "DELETE";
}

absl::StatusOr<Url> ParseUrl(std::string_view url) {
  Url out;
  if (url.starts_with("https://")) {
    out.tls = true;
    out.port = 443;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError("not an http:// or https:// URL");
  }
  const size_t slash = url.find_first_of("/?#");
  std::string_view authority = url.substr(0, slash);
  std::string_view target = slash == std::string_view::npos ? std::string_view() : url.substr(slash);
  if (const size_t hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (authority.find('@') != std::string_view::npos) {
    return absl::InvalidArgumentError("user information in a URL is not supported");
  }
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError("unclosed [ in the URL's host");
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return absl::InvalidArgumentError("malformed URL authority");
      port = rest.substr(1);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return absl::InvalidArgumentError("no host in the URL");
  for (char c : host) {
    if (c <= ' ' || c == 0x7f || c == '/' || c == '\\') {
      return absl::InvalidArgumentError("malformed host in the URL");
    }
  }
  if (!port.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return absl::InvalidArgumentError("malformed port in the URL");
    }
    out.port = static_cast<uint16_t>(value);
  }
  out.host = std::string(host);
  out.authority = std::string(authority);
  out.target = target.empty() ? "/" : (target[0] == '?' ? "/" + std::string(target) : std::string(target));
  for (char c : out.target) {
    if (c <= ' ' || c == 0x7f) return absl::InvalidArgumentError("malformed target in the URL");
  }
  return out;
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  call_options_.connect_timeout = options_.connect_timeout;
  call_options_.read_timeout = options_.read_timeout;
  call_options_.idle_timeout = options_.idle_timeout;
  call_options_.max_idle = options_.max_idle_per_upstream;
  call_options_.limits = options_.limits;
  call_options_.client_id = next_client_id.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<std::unique_ptr<TlsClientContext>> tls =
      TlsClientContext::Create(options_.tls_verify, options_.tls_ca_file);
  if (tls.ok()) {
    tls_ = std::move(*tls);
    call_options_.tls = tls_.get();
  } else {
    tls_status_ = tls.status();
  }
}

Client::~Client() = default;

size_t Client::idle_connections(const io::SocketAddress& address) const {
  return Pool::ForThread(call_options_.client_id).idle(address.ToString());
}

async::Task<absl::StatusOr<Response>> Client::Fetch(async::Exchange& ex, Request request) {
  return FetchWith(Transport(ex), std::move(request));
}

async::Task<absl::StatusOr<Response>> Client::Get(async::Exchange& ex, std::string url) {
  Request request;
  request.url = std::move(url);
  return FetchWith(Transport(ex), std::move(request));
}

absl::StatusOr<Response> Client::FetchBlocking(Request request) {
  return RunBlocking(FetchWith(Transport(), std::move(request)));
}

absl::StatusOr<Response> Client::GetBlocking(std::string url) {
  Request request;
  request.url = std::move(url);
  return FetchBlocking(std::move(request));
}

async::Task<absl::StatusOr<Response>> Client::FetchWith(Transport transport, Request request) {
  co_return co_await Fetch(transport, std::move(request));
}

async::Task<absl::StatusOr<Response>> Client::Fetch(Transport& transport, Request request) {
  absl::StatusOr<Url> url = ParseUrl(request.url);
  if (!url.ok()) co_return url.status();
  if (url->tls && !tls_status_.ok()) co_return tls_status_;
  absl::StatusOr<std::vector<io::SocketAddress>> addresses =
      co_await transport.Resolve(url->host, url->port, options_.dns_ttl);
  if (!addresses.ok()) co_return addresses.status();
  const auto deadline = options_.total_timeout.count() > 0
                            ? std::chrono::steady_clock::now() + options_.total_timeout
                            : std::chrono::steady_clock::time_point::max();
  std::vector<http::Header> fields;
  fields.reserve(request.headers.size());
  for (const auto& [name, value] : request.headers) fields.push_back({name, value});
  RequestHead head;
  head.method = request.method;
  head.target = url->target;
  head.authority = url->authority;
  if (url->tls) head.tls_host = url->host;
  head.fields = fields.data();
  head.num_fields = fields.size();
  const bool has_body = !request.body.empty() || (request.method != "GET" && request.method != "HEAD" &&
                                                  request.method != "OPTIONS" && request.method != "TRACE" &&
                                                  request.method != "DELETE");
  if (has_body) {
    head.body = RequestHead::Body::kLength;
    head.length = request.body.size();
    head.body_now = request.body;
  }
  const bool is_head = request.method == "HEAD";
  const bool may_retry = IdempotentMethod(request.method);
  absl::Status last = absl::UnavailableError("no address to connect to");
  // Each address in turn while connecting fails; a stale kept connection
  // once more on a fresh one.
  for (size_t a = 0; a < addresses->size(); ++a) {
    bool sent = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      head.fresh_connection = attempt > 0;
      Call call(call_options_, transport);
      call.set_deadline(deadline);
      absl::Status begun = co_await call.Begin((*addresses)[a], head);
      absl::StatusOr<const ResponseHead*> got = absl::UnknownError("not begun");
      if (begun.ok()) {
        got = co_await call.ReadHead(is_head);
      } else {
        got = begun;
      }
      if (!got.ok()) {
        last = got.status();
        sent = sent || call.sent_any();
        if (call.stale() && may_retry && attempt == 0) continue;
        break;
      }
      Response response;
      const ResponseHead& h = **got;
      response.status = h.status;
      response.headers.reserve(h.num_headers);
      for (size_t i = 0; i < h.num_headers; ++i) {
        response.headers.emplace_back(std::string(h.headers[i].name), std::string(h.headers[i].value));
      }
      for (;;) {
        absl::StatusOr<std::string_view> piece = co_await call.ReadBody();
        if (!piece.ok()) co_return piece.status();
        if (piece->empty()) break;
        if (response.body.size() + piece->size() > options_.max_response_body) {
          co_return absl::ResourceExhaustedError("the response body is over max_response_body");
        }
        response.body.append(*piece);
      }
      co_return response;
    }
    // Only an address that could not be reached moves on to the next:
    // nothing of the request went anywhere.
    if (sent || !absl::IsUnavailable(last) || transport.cancelled()) break;
  }
  co_return last;
}

}  // namespace uring_http::client
