#include "src/http2/connection.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>

#include "src/exchange/route_request.h"
#include "src/exchange/run_handler.h"
#include "src/http/header.h"
#include "src/http/header_values.h"
#include "src/http/http_date.h"
#include "src/http/request.h"
#include "src/limits/request_limits.h"
#include "src/router/middleware.h"

namespace uring_http::http2 {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

http::Method MethodOf(std::string_view method) {
  static constexpr std::pair<std::string_view, http::Method> kMethods[] = {
      {"GET", http::Method::kGet},         {"HEAD", http::Method::kHead},
      {"POST", http::Method::kPost},       {"PUT", http::Method::kPut},
      {"DELETE", http::Method::kDelete},   {"PATCH", http::Method::kPatch},
      {"OPTIONS", http::Method::kOptions}, {"TRACE", http::Method::kTrace},
      {"CONNECT", http::Method::kConnect},
  };
  for (const auto& [text, id] : kMethods) {
    if (method == text) return id;
  }
  return http::Method::kOther;
}

}  // namespace

ErrorKind ErrorKindOf(std::string_view failure) {
  static constexpr std::pair<std::string_view, ErrorKind> kKinds[] = {
      {"flood: PING", ErrorKind::kFloodPing},
      {"flood: SETTINGS", ErrorKind::kFloodSettings},
      {"flood: PRIORITY", ErrorKind::kFloodPriority},
      {"flood: RST_STREAM", ErrorKind::kFloodRstStream},
      {"flood: WINDOW_UPDATE", ErrorKind::kFloodWindowUpdate},
      {"flood: empty DATA", ErrorKind::kFloodEmptyData},
      {"flood: CONTINUATION", ErrorKind::kFloodContinuation},
      {"flood: outbound", ErrorKind::kFloodOutbound},
      {"bad preface", ErrorKind::kBadPreface},
      {"protocol error", ErrorKind::kProtocolError},
  };
  for (const auto& [prefix, kind] : kKinds) {
    if (failure.substr(0, prefix.size()) == prefix) return kind;
  }
  // The rest are the peer's frames breaking a rule (nghttp2's or the
  // codec's frame check), but for our own callbacks failing.
  return failure == "callback failure" ? ErrorKind::kOther : ErrorKind::kProtocolError;
}

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kFloodPing: return "flood_ping";
    case ErrorKind::kFloodSettings: return "flood_settings";
    case ErrorKind::kFloodPriority: return "flood_priority";
    case ErrorKind::kFloodRstStream: return "flood_rst_stream";
    case ErrorKind::kFloodWindowUpdate: return "flood_window_update";
    case ErrorKind::kFloodEmptyData: return "flood_empty_data";
    case ErrorKind::kFloodContinuation: return "flood_continuation";
    case ErrorKind::kFloodOutbound: return "flood_outbound";
    case ErrorKind::kBadPreface: return "bad_preface";
    case ErrorKind::kProtocolError: return "protocol_error";
    case ErrorKind::kOther:
    case ErrorKind::kCount: break;
  }
  return "other";
}

Connection::Connection() = default;
Connection::~Connection() = default;

void Connection::Open(exchange::ConnectionEnv* env, uint32_t slot, const conn::Handoff& handoff,
                      const http::ClientAddress& client, bool secure) {
  env_ = env;
  slot_ = slot;
  client_ = client;
  secure_ = secure;
  recv_armed_ = handoff.recv_armed;
  peer_eof_ = handoff.peer_eof;
  phase_ = Phase::kOpen;
  const http::ParseLimits& limits = env_->config->limits;
  SessionSettings settings;
  const exchange::ConnectionConfig& config = *env_->config;
  settings.max_concurrent_streams = config.http2_max_streams;
  settings.initial_window_size = config.http2_stream_window;
  settings.connection_window_size = config.http2_connection_window;
  settings.max_frame_size = config.http2_max_frame;
  // HTTP/2 counts 32 bytes more per field than an HTTP/1 line's 4: room
  // for the pseudo-headers and as many fields as --max-headers allows.
  settings.max_header_list_size =
      static_cast<uint32_t>(limits.max_header_bytes + 28 * (limits.max_headers + 4));
  session_ = std::make_unique<Session>(static_cast<SessionEvents*>(this), settings);
  if (handoff.upgrade != nullptr) OpenUpgraded(*handoff.upgrade);
  if (!handoff.bytes.empty() && !fatal_) {
    OnRecv(handoff.bytes.data(), handoff.bytes.size(), /*ended=*/false);
  } else {
    Sync();
  }
}

void Connection::OpenUpgraded(const conn::UpgradeRequest& upgrade) {
  const bool head_request = upgrade.method == "HEAD";
  if (!session_->Upgrade(upgrade.settings, head_request)) {
    // HTTP2-Settings that do not decode: the request is refused in the
    // protocol it came in, and the connection ends. It never became HTTP/2,
    // so the session goes: its SETTINGS must not follow the 400.
    static constexpr std::string_view kBad =
        "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    session_.reset();
    out_ = TakeOutputBuffer();
    std::memcpy(out_.get(), kBad.data(), kBad.size());
    out_len_ = kBad.size();
    env_->stats->bad_requests.Add();
    fatal_ = true;
    return;
  }
  // The 101 goes first; our SETTINGS follow it in the same send (Flush
  // appends the session's frames), then stream 1's answer.
  static constexpr std::string_view k101 =
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  out_ = TakeOutputBuffer();
  std::memcpy(out_.get(), k101.data(), k101.size());
  out_len_ = k101.size();
  Stream& s = NewStream(1);
  s.head_request = head_request;
  env_->stats->requests.Add();
  // The head's bytes are HTTP/1's receive buffer's: copied, the fields as
  // HTTP/2 has them (lowercase names, none of HTTP/1's connection-specific
  // ones, RFC 9113 8.2.2; Host is :authority).
  static constexpr std::string_view kDropped[] = {
      "connection", "upgrade", "http2-settings", "keep-alive", "proxy-connection",
      "transfer-encoding", "host"};
  size_t bytes = upgrade.method.size() + upgrade.target.size() + upgrade.host.size();
  for (size_t i = 0; i < upgrade.num_headers; ++i) {
    bytes += upgrade.headers[i].name.size() + upgrade.headers[i].value.size();
  }
  std::string& b = s.upgrade_bytes;
  b.reserve(bytes);  // no reallocation below: the views stay put
  auto keep = [&b](std::string_view text, bool lower) {
    const size_t at = b.size();
    for (char c : text) {
      b.push_back(lower && c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c);
    }
    return std::string_view(b.data() + at, text.size());
  };
  s.head.method = keep(upgrade.method, false);
  s.head.scheme = "http";
  s.head.path = keep(upgrade.target, false);
  s.head.authority = keep(upgrade.host, false);
  for (size_t i = 0; i < upgrade.num_headers; ++i) {
    const http::Header& h = upgrade.headers[i];
    bool dropped = false;
    for (std::string_view name : kDropped) dropped = dropped || http::HeaderNameEquals(h.name, name);
    if (dropped) continue;
    const std::string_view name = keep(h.name, true);
    s.upgrade_fields.push_back({name, keep(h.value, false)});
  }
  s.head.headers = s.upgrade_fields.data();
  s.head.num_headers = s.upgrade_fields.size();
  s.head.end_stream = true;
  // HTTP/1's parser held it to HTTP/1's limits already.
  Answer(s);
}

uint64_t Connection::After(uint32_t ms) const {
  if (ms == 0) return 0;
  const uint32_t tick = env_->config->tick_ms;
  return env_->now_tick + (ms + tick - 1) / tick + 1;
}

Connection::Stream* Connection::Find(int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

std::vector<std::unique_ptr<Connection::Stream>>& Connection::SpareStreams() {
  thread_local std::vector<std::unique_ptr<Stream>> spares;
  return spares;
}

Connection::Stream& Connection::NewStream(int32_t id) {
  std::unique_ptr<Stream> s;
  auto& spares = SpareStreams();
  if (!spares.empty()) {
    s = std::move(spares.back());
    spares.pop_back();
  } else {
    s = std::make_unique<Stream>();
  }
  s->id = id;
  s->started_ns = NowNs();
  s->route_id = env_->unmatched_route;
  Stream& ref = *s;
  streams_[id] = std::move(s);
  return ref;
}

// ---------------------------------------------------------------- input

void Connection::OnRecv(const char* data, size_t len, bool ended) {
  if (ended) recv_armed_ = false;
  if (phase_ == Phase::kLingering) {
    // Dropped: the connection has ended (kLingering says why we read).
    if (!recv_armed_ && !recv_starved_) {
      recv_armed_ = true;
      env_->transport->ArmRecv(slot_, /*bulk=*/false, /*once=*/false);
    }
    return;
  }
  if (phase_ != Phase::kOpen || fatal_) return Sync();
  if (!session_->Receive(data, len)) {
    // A protocol error, a flood, a bad preface: the session has queued its
    // GOAWAY; it goes, then the close.
    env_->stats->bad_requests.Add();
    fatal_ = true;
  }
  Sync();
}

void Connection::OnRecvEnd(int res) {
  recv_armed_ = false;
  if (phase_ == Phase::kLingering) {
    if (res == -ENOBUFS) {
      recv_starved_ = true;  // read again once there are buffers
      return;
    }
    return FinishLinger();  // the client's FIN (or its reset): done
  }
  if (res == 0) {
    peer_eof_ = true;
  } else if (res == -ENOBUFS) {
    recv_starved_ = true;
  } else if (res < 0 && res != -ECANCELED) {
    peer_eof_ = true;
    fatal_ = true;  // reset: nobody to answer (a send in flight fails too)
  }
  Sync();
}

void Connection::OnBuffersAvailable() {
  recv_starved_ = false;
  if (phase_ == Phase::kLingering && !recv_armed_) {
    recv_armed_ = true;
    env_->transport->ArmRecv(slot_, /*bulk=*/false, /*once=*/false);
    return;
  }
  Sync();
}

void Connection::OnRequest(int32_t id, const RequestHead& head) {
  Stream& s = NewStream(id);
  s.head = head;
  s.head_request = head.method == "HEAD";
  if (!head.end_stream) s.client_deadline = After(env_->config->body_timeout_ms);
  env_->stats->requests.Add();
  const http::ParseLimits& limits = env_->config->limits;
  // The server's header limits as over HTTP/1 (431): the fields measured
  // as the lines they would be ("name: value\r\n"), Host among them.
  size_t line_bytes = s.head.authority.size() + 8;
  for (size_t i = 0; i < head.num_headers; ++i) {
    line_bytes += head.headers[i].name.size() + head.headers[i].value.size() + 4;
  }
  if (head.num_headers > limits.max_headers || line_bytes > limits.max_header_bytes) {
    s.too_large = true;  // answered 431 at its end (OnRequestEnd)
    return;
  }
  if (head.method == "CONNECT") {
    // A tunnel (RFC 9113 8.5) is not served: refused at the head, since
    // its stream stays open, and what the client sends on it is dropped.
    s.refused = true;
    return SubmitError(s, 501);
  }
  // A route that reads its body as it comes is found at the head (its own
  // body limit applies, which may pass the server's).
  if (!head.end_stream && StartStreamedBody(s)) return;
  if (head.has_content_length && head.content_length > limits.max_body_bytes) {
    // Refused before its body comes (and without a 100 Continue).
    s.refused = true;
    env_->stats->bad_requests.Add();
    return SubmitError(s, 413);
  }
  // The body is buffered for the handler: the client may send it now.
  if (head.expect_continue && !head.end_stream) session_->SubmitContinue(id);
}

void Connection::OnRequestRefused(int32_t id, int status) {
  Stream& s = NewStream(id);
  env_->stats->requests.Add();
  env_->stats->bad_requests.Add();
  SubmitError(s, status);
}

void Connection::OnRequestData(int32_t id, std::string_view data) {
  Stream* s = Find(id);
  if (s != nullptr && s->client_deadline != 0) {
    s->client_deadline = After(env_->config->body_timeout_ms);
  }
  if (s != nullptr && s->streaming && !s->refused) return StreamedData(*s, data);
  // Taken at once: the bytes are buffered here (bounded below), so the
  // windows reopen as they arrive.
  session_->Consume(id, data.size());
  if (s == nullptr || s->refused || s->answered) return;
  // One stream's body within the server's limit (the route's is checked
  // once the request is routed), and all of the connection's buffered
  // bodies within it too: a connection holds no more than one HTTP/1
  // request could, however many streams it opens.
  const uint64_t limit = env_->config->limits.max_body_bytes;
  if (s->body.size() + data.size() > limit || body_bytes_ + data.size() > limit) {
    // Answered at once; what else comes of the body is dropped.
    s->refused = true;
    body_bytes_ -= s->body.size();
    s->body = std::string();
    env_->stats->bad_requests.Add();
    return SubmitError(*s, 413);
  }
  s->body.append(data);
  body_bytes_ += data.size();
}

void Connection::OnRequestEnd(int32_t id) {
  Stream* s = Find(id);
  if (s == nullptr) return;
  s->client_deadline = 0;
  if (s->streaming && !s->refused) return StreamedEnd(*s);
  if (s->answered) return;
  if (s->too_large) {
    env_->stats->bad_requests.Add();
    return SubmitError(*s, 431);
  }
  Answer(*s);
}

void Connection::OnStreamClosed(int32_t id, uint32_t error_code) {
  Stream* s = Find(id);
  if (s == nullptr) return;
  body_bytes_ -= s->body.size();
  if (s->streaming && !s->body_ended) AbortStreamedBody(*s, /*stream_open=*/false);
  Orphan(*s);
  EndFile(*s);
  ReleaseLimits(*s);
  auto it = streams_.find(id);
  std::unique_ptr<Stream> spare = std::move(it->second);
  streams_.erase(it);
  if (SpareStreams().size() < kSpareStreams) {
    *spare = Stream();  // what it held goes now
    SpareStreams().push_back(std::move(spare));
  }
}

void Connection::OnStreamWritable(int32_t id) {
  Stream* s = Find(id);
  if (s == nullptr) return;
  if (s->pipe != nullptr) PumpPipe(*s);
  if (s->file != nullptr) PumpFile(*s);
  if (s->producer) PumpProducer(*s);
}

// ---------------------------------------------------------------- answers

void Connection::BuildRequest(const Stream& s, std::vector<http::Header>& storage,
                              http::Request& request) const {
  storage.clear();
  storage.reserve(s.head.num_headers + 1);
  if (!s.head.authority.empty()) storage.push_back({"host", s.head.authority});
  for (size_t i = 0; i < s.head.num_headers; ++i) {
    // :authority stands for Host (RFC 9113 8.3.1): one Host, not two.
    if (s.head.headers[i].name == "host" && !s.head.authority.empty()) continue;
    storage.push_back(s.head.headers[i]);
  }
  request.method = s.head.method;
  request.method_id = MethodOf(s.head.method);
  request.target = s.head.path;
  const size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  request.query = q == std::string_view::npos ? std::string_view() : request.target.substr(q + 1);
  request.version = http::Version::kHttp11;
  request.headers = storage.data();
  request.num_headers = storage.size();
  request.host = s.head.authority;
  request.keep_alive = true;
  request.body = s.body;
  request.content_length = s.body.size();
  request.framing = s.body.empty() ? http::BodyFraming::kNone : http::BodyFraming::kContentLength;
  request.client_address = client_;
  request.client_certificate = client_cert_.get();
  request.secure = secure_;
}

void Connection::Answer(Stream& s) {
  // The session's head outlives the handler's call (until the stream closes).
  http::Request request;
  BuildRequest(s, request_fields_, request);
  if (request.method_id == http::Method::kConnect || request.path.empty() ||
      request.path[0] != '/') {
    // CONNECT (a tunnel) and the asterisk or absolute forms are not served.
    return SubmitError(s, request.method_id == http::Method::kConnect ? 501 : 400);
  }
  const router::Pipeline& pipeline = env_->router->pipeline();
  const exchange::Routing routing = exchange::RouteRequest(
      *env_->router, request, env_->path_params, env_->config->limits.max_body_bytes,
      env_->has_workers);
  if (routing.kind != exchange::Routing::Kind::kRoute) {
    exchange::AnswerUnrouted(pipeline, routing, request, s.response);
    return Submit(s);
  }
  const router::Route& route = *routing.route;
  s.route_id = route.id;
  s.route = &route;
  if (route.sink != nullptr || routing.streamed) {
    // A route that streams its body, asked without one (END_STREAM on the
    // head): its sink or its worker gets the empty body now (admitted
    // there, as a streamed body's head is).
    if (StartStreamedBody(s) && !s.answered && !s.refused) StreamedEnd(s);
    return;
  }
  if (!Admit(s)) return;
  if (request.body.size() > routing.body_limit) return SubmitError(s, 413);
  if (route.mount != nullptr) {
    if (pipeline.Active(route.options.middleware)) {
      // Around a static file: the befores before it is looked up, the
      // afters once its answer is known (ServeFile, FileError).
      bool answered = false;
      const size_t ran = router::RunBefores(pipeline, route.options.middleware, request,
                                            s.response, &answered, route.name());
      if (answered) {
        pipeline.MaybeFailPage(request, s.response);
        router::RunAfters(pipeline, route.options.middleware, ran, request, s.response,
                          route.name());
        exchange::FinishBuffered(env_->config->compression,
                                 exchange::GzipAccepted(env_->config->compression, request),
                                 s.head_request, s.response);
        return Submit(s);
      }
      s.afters_due = static_cast<uint16_t>(ran);
    }
    return StartFile(s, request, route);
  }
  if (routing.slow) {
    if (!Dispatch(s, request, route)) {
      env_->stats->slow_rejected.Add();
      SubmitError(s, 503);
    }
    return;
  }
  exchange::RunHandler(pipeline, route, request, s.response);
  FinishHandler(s, request);
}

void Connection::FinishHandler(Stream& s, const http::Request& request) {
  if (s.response.has_producer()) return StartProducer(s, request);
  if (s.response.header_refused()) return SubmitError(s, 500);
  exchange::FinishBuffered(env_->config->compression,
                           exchange::GzipAccepted(env_->config->compression, request),
                           s.head_request, s.response);
  Submit(s);
}

bool Connection::Admit(Stream& s) {
  if (env_->limits == nullptr) return true;
  using Verdict = limits::RequestLimits::Verdict;
  const limits::RequestLimits::Decision d =
      env_->limits->Admit(s.route_id, client_, s.started_ns);
  if (d.verdict == Verdict::kAdmit) {
    s.limits_held = d.holds;
    return true;
  }
  const bool rate = d.verdict == Verdict::kRate;
  s.refused = true;  // a body that follows is dropped
  s.response.Clear();
  s.response.set_status(rate ? 429 : 503);
  s.response.set_content_type("text/plain");
  (void)s.response.AddHeader("Retry-After", std::to_string(d.retry_after_s));
  s.response.set_static_body(rate ? "429 Too Many Requests\n" : "503 Service Unavailable\n");
  Submit(s);
  return false;
}

void Connection::ReleaseLimits(Stream& s) {
  if (!s.limits_held) return;
  s.limits_held = false;
  env_->limits->Release(s.route_id);
}

void Connection::SubmitError(Stream& s, int status) {
  s.response.Clear();
  s.response.set_status(status);
  s.response.set_body(status == 413   ? "Payload Too Large\n"
                      : status == 431 ? "Request Header Fields Too Large\n"
                      : status == 501 ? "Not Implemented over HTTP/2 yet\n"
                      : status == 503 ? "Service Unavailable\n"
                      : status == 400 ? "Bad Request\n"
                      : status == 408 ? "Request Timeout\n"
                                      : "Internal Server Error\n");
  (void)s.response.AddHeader("Content-Type", "text/plain");
  s.head_request = false;
  Submit(s);
}

bool Connection::SubmitHead(const Stream& s, int status, const http::HeaderTable& fields,
                            bool length_known, uint64_t length, bool has_body) {
  // Formatted once a second (per thread: a loop is one).
  thread_local time_t date_second = 0;
  thread_local char date[http::kHttpDateSize];
  thread_local size_t date_len = 0;
  const time_t now = std::time(nullptr);
  if (now != date_second) {
    date_second = now;
    date_len = http::FormatHttpDate(now, date);
  }
  ServerField server[3] = {{"date", std::string_view(date, date_len)}, {"server", "uring-http"}, {}};
  size_t n = 2;
  char digits[20];
  if (length_known && status != 204 && status != 304) {
    const std::to_chars_result r = std::to_chars(digits, digits + sizeof(digits), length);
    server[n++] = {"content-length", std::string_view(digits, static_cast<size_t>(r.ptr - digits))};
  }
  return session_->SubmitResponse(s.id, status, fields, has_body, std::span(server, n));
}

void Connection::Submit(Stream& s) {
  if (s.answered) return;
  s.answered = true;
  const int status = s.response.status();
  const std::string_view body = s.response.body_view();
  const bool has_body = !s.head_request && http::StatusHasBody(status) &&
                        (!body.empty() || !s.response.trailers().empty());
  if (!SubmitHead(s, status, s.response.headers(), true, body.size(), has_body)) return;
  if (has_body) {
    session_->WriteData(s.id, body);
    session_->EndData(s.id, s.response.trailers().empty() ? nullptr : &s.response.trailers());
  }
  s.ended = true;
  Done(s, status, s.head_request ? 0 : body.size());
}

void Connection::Done(const Stream& s, int status, uint64_t body_bytes) {
  // The access log's request line, as HTTP/1's would read ("GET /p HTTP/2.0").
  std::string line;
  if (env_->access_log) {
    line.reserve(s.head.method.size() + s.head.path.size() + 10);
    line.append(s.head.method).append(" ").append(s.head.path).append(" HTTP/2.0");
  }
  env_->host->ExchangeDone(slot_, exchange::ConnectionHost::Exchange{
                                      s.route_id, status, s.started_ns, line, body_bytes,
                                      &client_, {}});
}

}  // namespace uring_http::http2
