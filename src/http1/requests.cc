// Connection, part two: reading requests (and, on a --proxy-protocol
// listener, the PROXY header before them). A head is parsed once its end has
// arrived (or an early error is possible); its route decides how its body is
// taken (request_bodies.cc): buffered for the handler, streamed into a
// worker's pipe or a FAST BodySink, or discarded after an early answer. Part
// one, connection.cc, is the connection's life and I/O; part three,
// answers.cc, puts the answers in the output queue.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "src/base/check.h"
#include "src/http/compress.h"
#include "src/http1/connection.h"
#include "src/conn/proxy_header.h"
#include "src/exchange/route_request.h"
#include "src/router/failure_log.h"

namespace uring_http::http1 {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool Connection::ReadProxyHeader(const char** data, size_t* len) {
  // Usually the header and the first request arrive in one receive and the
  // header is read in place; a header split across receives is staged and
  // read again whole (it is at most a few hundred bytes).
  const bool staged = in_.len > 0;
  if (staged && !StageInput(*data, *len)) {
    Abort();
    return false;
  }
  const std::string_view bytes = staged ? in_.view() : std::string_view(*data, *len);
  const conn::ProxyHeader header = conn::ParseProxyHeader(bytes);
  switch (header.status) {
    case conn::ProxyStatus::kIncomplete:
      if (!staged && !StageInput(*data, *len)) {
        Abort();
        return false;
      }
      return false;
    case conn::ProxyStatus::kError:
      // Not a proxy we can trust, or not a proxy at all: no HTTP answer
      // (it may not even be HTTP that follows).
      env_->stats->proxy_header_errors.Add();
      Abort();
      return false;
    case conn::ProxyStatus::kDone:
      break;
  }
  proxy_pending_ = false;
  head_deadline_ = 0;
  if (!header.local) proxied_ = header.source;
  if (staged) {
    std::memmove(in_.data, in_.data + header.consumed, in_.len - header.consumed);
    in_.len -= static_cast<uint32_t>(header.consumed);
    if (in_.len == 0) ReleaseBuffer(in_);
    *len = 0;
  } else {
    *data += header.consumed;
    *len -= header.consumed;
  }
  return true;
}

bool Connection::CanStartRequest() const {
  return phase_ == Phase::kOpen && ex_.answer == Answer::kNone && !task_inflight_ &&
         (st_ == nullptr || st_->resp_pipe == nullptr) && out_.pending() < kOutputHighWater &&
         out_.room() >= 4;
}

size_t Connection::Process(const char* data, size_t len, bool staged) {
  size_t pos = 0;
  while (pos < len) {
    if (phase_ >= Phase::kLingering) return len;
    unparsed_ = std::string_view(data + pos, len - pos);
    if (input_ == Input::kDone) {
      // Past the last request we answer: dropped (and the close lingers).
      linger_ = true;
      pos = len;
      break;
    }
    if (input_ == Input::kWait) break;
    if (input_ == Input::kBody) {
      const size_t n = FeedBody(data + pos, len - pos);
      pos += n;
      if (input_ == Input::kBody) break;  // needs more bytes, or the worker's pipe is full
      continue;
    }
    if (!CanStartRequest()) {
      // Held back by our own output: the head's clock runs all the same
      // (a whole one is not held to it, see OnDeadline).
      if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
      break;
    }
    size_t used = 0;
    if (!ReadHead(data + pos, len - pos, staged, &used)) break;
    pos += used;
  }
  unparsed_ = {};
  return pos;
}

void Connection::ProcessStaged() {
  // (A PROXY header still arriving is not a request: ReadProxyHeader.)
  if (in_.len == 0 || in_staged_source_ || proxy_pending_) return;
  in_staged_source_ = true;
  const size_t used = Process(in_.data, in_.len, /*staged=*/true);
  in_staged_source_ = false;
  if (in_.data == nullptr) return;  // the connection closed meanwhile
  if (used >= in_.len) {
    if (input_ == Input::kBody && in_.cap > env_->chunks->chunk_size()) {
      // A streamed body that runs ahead of its reader is staged again at
      // every pause: its heap buffer is kept until the body ends (Sync)
      // instead of being allocated anew each time.
      in_.len = 0;
    } else {
      ReleaseBuffer(in_);
    }
    head_scanned_ = 0;
    head_line_checked_ = false;
  } else if (used > 0) {
    // Whole requests went; what is left starts a head (head_scanned_ was
    // reset when the last one ended, and counts from here).
    std::memmove(in_.data, in_.data + used, in_.len - used);
    in_.len -= static_cast<uint32_t>(used);
  }
}

bool Connection::ReadHead(const char* data, size_t len, bool staged, size_t* used) {
  const http::ParseLimits& limits = env_->config->limits;
  const std::string_view bytes(data, len);
  if (!began_ && env_->h2c && !secure_) {
    // h2c with prior knowledge (RFC 9113 3.3): a connection whose first
    // bytes are the HTTP/2 preface is HTTP/2's, with all it has sent.
    // (Over TLS only ALPN chooses h2: there the preface is a bad request.)
    const size_t n = std::min(len, kHttp2Preface.size());
    if (bytes.substr(0, n) == kHttp2Preface.substr(0, n)) {
      if (n < kHttp2Preface.size()) {
        if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
        return false;
      }
      *used = len;
      HandOff(conn::ProtocolId::kHttp2, bytes);
      return true;
    }
  }
  if (staged && http::FindHeadEnd(bytes, &head_scanned_) == 0) {
    // No end of head yet: parse only where an early answer exists (a
    // request line just completed, which may be malformed; a line or head
    // past its limit). Otherwise each receive costs O(new bytes).
    bool parse = false;
    if (!head_line_checked_ && std::memchr(data, '\n', len) != nullptr) {
      head_line_checked_ = true;
      parse = true;
    } else if (!head_line_checked_ && len > limits.max_request_line + 1) {
      parse = true;
    } else if (len > limits.max_request_line + limits.max_header_bytes + 4) {
      parse = true;
    }
    if (!parse) {
      if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
      return false;
    }
  }
  http::Request request;
  const http::ParseResult r = http::ParseRequestHead(bytes, limits, &request, env_->headers,
                                                     env_->headers_capacity);
  if (r.status == http::ParseStatus::kIncomplete) {
    if (head_deadline_ == 0) head_deadline_ = After(env_->config->header_timeout_ms);
    return false;
  }
  head_deadline_ = 0;
  head_scanned_ = 0;
  head_line_checked_ = false;
  const bool first_request = !began_;
  began_ = true;
  if (r.status == http::ParseStatus::kError) {
    // The stream cannot be trusted past a bad request: answer and close.
    *used = len;
    BadRequest(r.error_status);
    return true;
  }
  *used = r.consumed;
  request.client_address = client_address();
  request.client_certificate = client_cert_.get();
  request.secure = secure_;
  if (env_->h2c && !secure_ && first_request && out_.empty() && !out_.send_inflight() &&
      H2cUpgradeAsked(request)) {
    // Upgrade: h2c (RFC 7540 3.2, what curl --http2 sends to http://): the
    // HTTP/2 connection answers this request as its stream 1, after its
    // 101, with what follows it (the client's preface).
    conn::UpgradeRequest upgrade;
    upgrade.method = request.method;
    upgrade.target = request.target;
    upgrade.host = request.host;
    upgrade.headers = request.headers;
    upgrade.num_headers = request.num_headers;
    upgrade.settings = request.FindHeader("http2-settings");
    conn::Handoff handoff = Detach();
    handoff.bytes = std::string_view(data + r.consumed, len - r.consumed);
    handoff.upgrade = &upgrade;
    *used = len;
    env_->host->HandOff(slot_, conn::ProtocolId::kHttp2, handoff);
    return true;
  }
  BeginExchange(request, data, len, used);
  return true;
}

bool Connection::H2cUpgradeAsked(const http::Request& request) {
  // Only the first request of a connection, with no body (a body would have
  // to be read whole first; a server may ignore an Upgrade, RFC 9110 7.8),
  // with exactly one HTTP2-Settings, named with Upgrade as connection
  // options (RFC 7540 3.2.1).
  if (request.version != http::Version::kHttp11 ||
      request.framing != http::BodyFraming::kNone) {
    return false;
  }
  bool h2c = false;
  for (std::string_view token : request.HeaderElements("upgrade")) {
    h2c = h2c || http::HeaderNameEquals(token, "h2c");
  }
  if (!h2c) return false;
  size_t settings = 0;
  for (std::string_view v : request.HeaderValues("http2-settings")) {
    (void)v;
    ++settings;
  }
  if (settings != 1) return false;
  bool upgrade_option = false;
  bool settings_option = false;
  for (std::string_view option : request.HeaderElements("connection")) {
    upgrade_option = upgrade_option || http::HeaderNameEquals(option, "upgrade");
    settings_option = settings_option || http::HeaderNameEquals(option, "http2-settings");
  }
  return upgrade_option && settings_option;
}

void Connection::BeginExchange(http::Request& request, const char* data, size_t len,
                               size_t* used) {
  exchange::ConnectionStats& stats = *env_->stats;
  const exchange::ConnectionConfig& config = *env_->config;
  stats.requests.Add();
  ex_ = Exchange();
  ex_.started_ns = NowNs();
  ex_.keep_alive = request.keep_alive;
  ex_.http10 = request.version != http::Version::kHttp11;
  ex_.head = request.method_id == http::Method::kHead;
  ex_.head_len = static_cast<uint32_t>(*used);
  ex_.head_ptr = data;
  ex_.route_id = env_->unmatched_route;
  ex_.answer = Answer::kPending;
  const bool has_body = request.framing != http::BodyFraming::kNone;
  if (request.framing == http::BodyFraming::kChunked) stats.chunked_bodies.Add();
  const std::string_view head(data, *used);
  unparsed_ = std::string_view(data + *used, len - *used);

  const router::Pipeline& pipeline = env_->router->pipeline();
  const exchange::Routing routing = exchange::RouteRequest(
      *env_->router, request, env_->path_params, config.limits.max_body_bytes,
      env_->has_workers);
  uint64_t limit = routing.body_limit;
  ex_.allow = routing.allow;
  ex_.allow_scratch = routing.allow_scratch;
  if (routing.kind == exchange::Routing::Kind::kUnclean) {
    if (!SkipBody(request, limit)) return;
    AnswerUncleanPath(request, routing, has_body && request.expect_continue);
    return;
  }
  if (routing.kind == exchange::Routing::Kind::kUnmatched) {
    if (!SkipBody(request, limit)) return;
    const bool close = has_body && request.expect_continue;
    if (pipeline.HandlesNotFound()) {
      http::Response response;
      exchange::AnswerUnrouted(pipeline, routing, request, response);
      Respond(response, close);
    } else {
      RespondError(routing.status, close, routing.allow);
    }
    return;
  }
  const router::Route* route = routing.route;
  ex_.route = route;
  ex_.route_id = route->id;
  ex_.slow = routing.slow;
  const bool streamed = routing.streamed;
  if (request.framing == http::BodyFraming::kContentLength && request.content_length > limit) {
    // Refused without reading the body (and without a 100 Continue).
    stats.bad_requests.Add();
    linger_ = true;
    AnswerError(413, /*close=*/true, &request);
    return;
  }
  if (env_->limits != nullptr && !Admit(request, limit)) return;
  if (route->websocket != nullptr) {
    if (has_body) {
      // A handshake has no body; one that brings one is not a handshake
      // whose bytes can be told from the frames after it.
      stats.bad_requests.Add();
      linger_ = true;
      AnswerError(400, /*close=*/true, &request);
      return;
    }
    *used = len;
    AnswerWebSocketRoute(request, *route, unparsed_);
    return;
  }
  if (route->sink != nullptr && pipeline.Active(route->options.middleware)) {
    // A streamed body's befores run before it is read; an early answer
    // leaves it unread, as a 404 does. (What a before wrote into a response
    // it did not answer with is not kept: OnEnd starts a new one.)
    http::Response response;
    bool answered = false;
    const size_t ran =
        router::RunBefores(pipeline, route->options.middleware, request, response, &answered);
    if (answered) {
      pipeline.MaybeFailPage(request, response);
      router::RunAfters(pipeline, route->options.middleware, ran, request, response);
      ex_.chain_done = true;
      if (!SkipBody(request, limit)) return;
      Respond(response, /*close=*/has_body && request.expect_continue);
      return;
    }
    // Whatever answers (the sink, or the body's failure) gets the afters.
    ex_.afters_due = static_cast<uint16_t>(ran);
  }
  if (!has_body) {
    if (route->sink != nullptr) {
      // A streamed-body FAST route with no body: its sink sees the end at once.
      if (!KeepHead(data, *used)) return Abort();
      ex_.body = BodyMode::kSink;
      if (MakeSink(request)) BodyEnded();
    } else if (ex_.slow) {
      Dispatch(request, head, {});
    } else {
      RunHandler(request);
    }
    return;
  }
  const size_t available = len - *used;
  if (!streamed && request.framing == http::BodyFraming::kContentLength &&
      request.content_length <= available) {
    // The whole body is here already: no copy.
    request.body = std::string_view(data + *used, request.content_length);
    *used += request.content_length;
    unparsed_ = std::string_view(data + *used, len - *used);
    if (ex_.slow) {
      Dispatch(request, head, request.body);
    } else {
      RunHandler(request);
    }
    return;
  }
  // The body comes later, or needs decoding: the head is kept.
  if (!KeepHead(data, *used)) return Abort();
  S().decoder().Start(request.framing, request.content_length, limit);
  ex_.body_done = false;
  input_ = Input::kBody;
  StartBodyClocks();
  const bool none_here = request.framing == http::BodyFraming::kChunked
                             ? available == 0
                             : available < request.content_length;
  if (request.expect_continue && none_here) {
    // The handler will read the body: ask the client for it. (A SLOW
    // handler is not asked first: its worker gets the request only with
    // the body's first bytes, which the client sends after this.)
    out_.Append(kContinue);
  }
  if (streamed) {
    stats.streamed_requests.Add();
    if (route->sink != nullptr) {
      ex_.body = BodyMode::kSink;
      MakeSink(request);
    } else {
      // The worker gets the request with the body's first bytes
      // (DispatchStreamed): a client that sends a head and then nothing
      // holds no worker, only its slot, until the body's clocks run out.
      ex_.body = BodyMode::kPipe;
      S().req_pipe = std::make_unique<worker::BodyPipe>(config.request_pipe_bytes);
    }
    return;
  }
  ex_.body = BodyMode::kBuffer;
  // Room for a small body at once; a large one grows as its bytes arrive,
  // so that what a client merely announces costs no memory.
  if (request.framing == http::BodyFraming::kContentLength &&
      !Reserve(req_, ex_.head_len + std::min<uint64_t>(request.content_length, 64 * 1024))) {
    return Abort();
  }
}

bool Connection::Admit(const http::Request& request, uint64_t body_limit) {
  using Verdict = limits::RequestLimits::Verdict;
  const limits::RequestLimits::Decision d =
      env_->limits->Admit(ex_.route_id, client_address(), ex_.started_ns);
  if (d.verdict == Verdict::kAdmit) {
    ex_.limits_held = d.holds;
    return true;
  }
  // Answered like a 404: the body (if any) is read and dropped so that the
  // connection goes on; nothing here allocates.
  if (!SkipBody(request, body_limit)) return false;
  const bool rate = d.verdict == Verdict::kRate;
  http::Response response;
  response.set_status(rate ? 429 : 503);
  response.set_content_type("text/plain");
  char seconds[16];
  const int n = std::snprintf(seconds, sizeof(seconds), "%u", d.retry_after_s);
  (void)response.AddHeader("Retry-After", std::string_view(seconds, static_cast<size_t>(n)));
  response.set_static_body(rate ? "429 Too Many Requests\n" : "503 Service Unavailable\n");
  Respond(response, /*close=*/request.framing != http::BodyFraming::kNone &&
                        request.expect_continue);
  return false;
}

bool Connection::KeepHead(const char* head, size_t len) {
  if (ex_.head_kept) return true;
  ReleaseBuffer(req_);
  if (!Reserve(req_, len)) return false;
  std::memcpy(req_.data, head, len);
  req_.len = static_cast<uint32_t>(len);
  ex_.head_kept = true;
  ex_.head_ptr = req_.data;
  return true;
}

bool Connection::ReparseHead(http::Request* request) {
  const http::ParseResult r = http::ParseRequestHead(
      std::string_view(req_.data, ex_.head_len), env_->config->limits, request, env_->headers,
      env_->headers_capacity);
  // The same bytes parsed complete once already.
  URING_CHECK(r.status == http::ParseStatus::kComplete && r.consumed == ex_.head_len);
  request->client_address = client_address();
  request->client_certificate = client_cert_.get();
  request->secure = secure_;
  // The route's own pattern gives back the parameters Find() gave.
  if (ex_.route != nullptr) {
    ex_.route->pattern.Match(request->path, &env_->path_params);
    request->path_params = env_->path_params.view();
  }
  if (ex_.allow_scratch) {
    // The thread's scratch may hold another request's text by now.
    ex_.allow = env_->router->Find(request->method, request->path).allow;
  }
  request->allowed_methods = ex_.allow;
  ex_.head_ptr = req_.data;
  return true;
}

}  // namespace uring_http::http1
