#include "src/http2/connection.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "src/base/check.h"
#include "src/exchange/route_request.h"
#include "src/exchange/run_handler.h"
#include "src/http/header.h"
#include "src/http/http_date.h"
#include "src/http/request.h"

namespace uring_http::http2 {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Fields HTTP/2 has no place for (RFC 9113 8.2.2): the response carries
// none of them, whatever a handler set.
bool ConnectionSpecific(std::string_view lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
         lower == "transfer-encoding" || lower == "upgrade";
}

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  nghttp2_nv nv;
  nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  // Our names are lowercased already; nghttp2 need not copy what stays
  // valid until the submit returns (it copies into its own frame anyway).
  nv.flags = NGHTTP2_NV_FLAG_NONE;
  return nv;
}

}  // namespace

// nghttp2 calls back with its own signatures; each finds the Connection
// in user_data and forwards. A return other than 0 is fatal to the
// session (nghttp2 then ends it), so only real protocol failures return one.
struct Callbacks {
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* c = static_cast<Connection*>(user);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    auto s = std::make_unique<Connection::Stream>();
    s->id = frame->hd.stream_id;
    s->route_id = c->env_->unmatched_route;
    s->started_ns = NowNs();
    c->streams_[s->id] = std::move(s);
    return 0;
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                      void* user) {
    // Trailers of a request (a HEADERS after its body) are accepted and,
    // for now, not given to handlers.
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    static_cast<Connection*>(user)->OnHeader(
        frame->hd.stream_id, std::string_view(reinterpret_cast<const char*>(name), namelen),
        std::string_view(reinterpret_cast<const char*>(value), valuelen));
    return 0;
  }
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* c = static_cast<Connection*>(user);
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      if (Connection::Stream* s = c->Find(frame->hd.stream_id)) c->OnRequestEnd(*s);
    }
    return 0;
  }
  static int OnDataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                         void* user) {
    static_cast<Connection*>(user)->OnBodyChunk(id, data, len);
    return 0;
  }
  static int OnStreamClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    auto* c = static_cast<Connection*>(user);
    if (Connection::Stream* s = c->Find(id)) {
      c->body_bytes_ -= s->body.size();
      c->Orphan(*s);
    }
    c->streams_.erase(id);
    return 0;
  }
  static ssize_t ReadBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t len,
                          uint32_t* flags, nghttp2_data_source*, void* user) {
    return static_cast<Connection*>(user)->ReadBody(id, buf, len, flags);
  }
};

Connection::Connection() = default;

Connection::~Connection() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

void Connection::Open(http1::ConnectionEnv* env, uint32_t slot, const conn::Handoff& handoff,
                      const http::ClientAddress& client) {
  env_ = env;
  slot_ = slot;
  client_ = client;
  recv_armed_ = handoff.recv_armed;
  peer_eof_ = handoff.peer_eof;
  phase_ = Phase::kOpen;
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_option* option = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&option) != 0) {
    if (cb != nullptr) nghttp2_session_callbacks_del(cb);
    fatal_ = true;
    StartClose();
    return;
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, &Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &Callbacks::OnStreamClose);
  // A client's PINGs and SETTINGS are acknowledged by nghttp2; past this
  // many acknowledgements waiting to go (a peer that floods and never
  // reads), the session ends (CVE-2019-9512, 9515).
  nghttp2_option_set_max_outbound_ack(option, 1000);
  const int rv = nghttp2_session_server_new2(&session_, cb, this, option);
  nghttp2_session_callbacks_del(cb);
  nghttp2_option_del(option);
  if (rv != 0) {
    session_ = nullptr;
    fatal_ = true;
    StartClose();
    return;
  }
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(env_->config->limits.max_header_bytes)},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                          sizeof(settings) / sizeof(settings[0]));
  if (!handoff.bytes.empty()) {
    OnRecv(handoff.bytes.data(), handoff.bytes.size(), /*ended=*/false);
  } else {
    Sync();
  }
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

// ---------------------------------------------------------------- input

void Connection::OnRecv(const char* data, size_t len, bool ended) {
  if (ended) recv_armed_ = false;
  if (phase_ != Phase::kOpen || fatal_) return Sync();
  const ssize_t rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data), len);
  if (rv < 0) {
    // A protocol error nghttp2 could not confine to a stream (a bad
    // preface, a flood, a broken frame): GOAWAY with its reason if the
    // session can still say it, then the close.
    env_->stats->bad_requests.Add();
    nghttp2_session_terminate_session(session_, rv == NGHTTP2_ERR_FLOODED
                                                    ? NGHTTP2_ENHANCE_YOUR_CALM
                                                    : NGHTTP2_PROTOCOL_ERROR);
    fatal_ = true;
  }
  Sync();
}

void Connection::OnRecvEnd(int res) {
  recv_armed_ = false;
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
  Sync();
}

void Connection::OnHeader(int32_t id, std::string_view name, std::string_view value) {
  Stream* s = Find(id);
  if (s == nullptr || s->too_large) return;
  // The server's header limits hold as over HTTP/1 (431): the decoded
  // size as RFC 9113 6.5.2 counts it, and the number of fields.
  const http::ParseLimits& limits = env_->config->limits;
  s->head_bytes += name.size() + value.size() + 32;
  if (s->head_bytes > limits.max_header_bytes + 4 * 32 ||
      s->fields.size() >= limits.max_headers) {
    s->too_large = true;
    s->fields.clear();
    return;
  }
  // nghttp2 has checked the field (RFC 9113 8.2, 8.3): lowercase names,
  // no connection-specific ones, the pseudo-headers once and first.
  if (name == ":method") {
    s->method = value;
  } else if (name == ":scheme") {
    s->scheme = value;
  } else if (name == ":authority") {
    s->authority = value;
  } else if (name == ":path") {
    s->path = value;
  } else if (!name.empty() && name[0] != ':') {
    s->fields.emplace_back(std::string(name), std::string(value));
  }
}

void Connection::OnBodyChunk(int32_t id, const uint8_t* data, size_t len) {
  Stream* s = Find(id);
  if (s == nullptr || s->refused) return;
  // One stream's body within the server's limit (the route's is checked
  // once the request is routed), and all of the connection's buffered
  // bodies within it too: a connection holds no more than one HTTP/1
  // request could, however many streams it opens.
  const uint64_t limit = env_->config->limits.max_body_bytes;
  if (s->body.size() + len > limit || body_bytes_ + len > limit) {
    // Answered at once; what else comes of the body is dropped.
    s->refused = true;
    body_bytes_ -= s->body.size();
    s->body = std::string();
    env_->stats->bad_requests.Add();
    SubmitError(*s, 413);
    return;
  }
  s->body.append(reinterpret_cast<const char*>(data), len);
  body_bytes_ += len;
}

void Connection::OnRequestEnd(Stream& s) {
  if (s.answered) return;
  env_->stats->requests.Add();
  if (s.too_large) {
    env_->stats->bad_requests.Add();
    return SubmitError(s, 431);
  }
  // The request as a handler sees it, whatever the protocol (request.h).
  std::vector<http::Header> headers;
  headers.reserve(s.fields.size() + 1);
  if (!s.authority.empty()) headers.push_back({"host", s.authority});
  for (const auto& [name, value] : s.fields) {
    // :authority stands for Host (RFC 9113 8.3.1): one Host, not two.
    if (name == "host" && !s.authority.empty()) continue;
    headers.push_back({name, value});
  }
  http::Request request;
  request.method = s.method;
  request.method_id = http::Method::kOther;
  static constexpr std::pair<std::string_view, http::Method> kMethods[] = {
      {"GET", http::Method::kGet},         {"HEAD", http::Method::kHead},
      {"POST", http::Method::kPost},       {"PUT", http::Method::kPut},
      {"DELETE", http::Method::kDelete},   {"PATCH", http::Method::kPatch},
      {"OPTIONS", http::Method::kOptions}, {"TRACE", http::Method::kTrace},
      {"CONNECT", http::Method::kConnect},
  };
  for (const auto& [text, id] : kMethods) {
    if (s.method == text) request.method_id = id;
  }
  request.target = s.path;
  const size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  request.query = q == std::string_view::npos ? std::string_view() : request.target.substr(q + 1);
  request.version = http::Version::kHttp11;
  request.headers = headers.data();
  request.num_headers = headers.size();
  request.host = s.authority;
  request.keep_alive = true;
  request.body = s.body;
  request.content_length = s.body.size();
  request.framing = s.body.empty() ? http::BodyFraming::kNone : http::BodyFraming::kContentLength;
  request.client_address = client_;
  Answer(s, request);
}

void Connection::Answer(Stream& s, const http::Request& request_in) {
  http::Request request = request_in;
  const bool head = request.method_id == http::Method::kHead;
  if (request.method_id == http::Method::kConnect || request.path.empty() ||
      request.path[0] != '/') {
    // CONNECT (a tunnel) and the asterisk or absolute forms are not served.
    return SubmitError(s, request.method_id == http::Method::kConnect ? 501 : 400);
  }
  const router::Pipeline& pipeline = env_->router->pipeline();
  const exchange::Routing routing = exchange::RouteRequest(
      *env_->router, request, env_->config->limits.max_body_bytes, env_->has_workers);
  if (routing.kind != exchange::Routing::Kind::kRoute) {
    exchange::AnswerUnrouted(pipeline, routing, request, s.response);
    return Submit(s, head);
  }
  const router::Route& route = *routing.route;
  s.route_id = route.id;
  if (request.body.size() > routing.body_limit) return SubmitError(s, 413);
  if (route.mount != nullptr || route.sink != nullptr || routing.streamed) {
    // Static files, body sinks and streamed request bodies are not wired
    // to HTTP/2 yet.
    return SubmitError(s, 501);
  }
  s.head = head;
  if (routing.slow) {
    if (!Dispatch(s, request, route)) {
      env_->stats->slow_rejected.Add();
      SubmitError(s, 503);
    }
    return;
  }
  exchange::RunHandler(pipeline, route, request, s.response);
  if (s.response.has_producer() || s.response.header_refused()) {
    return SubmitError(s, s.response.header_refused() ? 500 : 501);
  }
  exchange::FinishBuffered(env_->config->compression,
                           exchange::GzipAccepted(env_->config->compression, request), head,
                           s.response);
  Submit(s, head);
}

void Connection::SubmitError(Stream& s, int status) {
  s.response.Clear();
  s.response.set_status(status);
  s.response.set_body(status == 413   ? "Payload Too Large\n"
                      : status == 431 ? "Request Header Fields Too Large\n"
                      : status == 501 ? "Not Implemented over HTTP/2 yet\n"
                      : status == 400 ? "Bad Request\n"
                                      : "Internal Server Error\n");
  (void)s.response.AddHeader("Content-Type", "text/plain");
  Submit(s, /*head_request=*/false);
}

void Connection::Submit(Stream& s, bool head_request) {
  if (s.answered) return;
  s.answered = true;
  const int status = s.response.status();
  s.send_body = !head_request && status != 204 && status != 304;
  // Names lowercased (RFC 9113 8.2.1) into storage that outlives the call.
  std::vector<std::string> names;
  std::vector<nghttp2_nv> nv;
  names.reserve(s.response.headers().size() + 2);
  nv.reserve(s.response.headers().size() + 4);
  char status_text[4] = {static_cast<char>('0' + status / 100),
                         static_cast<char>('0' + status / 10 % 10),
                         static_cast<char>('0' + status % 10), 0};
  nv.push_back(Nv(":status", std::string_view(status_text, 3)));
  for (const http::HeaderTable::Field f : s.response.headers()) {
    std::string& lower = names.emplace_back(f.name);
    std::transform(lower.begin(), lower.end(), lower.begin(), Lower);
    if (ConnectionSpecific(lower)) continue;
    nv.push_back(Nv(lower, f.value));
  }
  char date[http::kHttpDateSize];
  const size_t date_len = http::FormatHttpDate(std::time(nullptr), date);
  nv.push_back(Nv("date", std::string_view(date, date_len)));
  nv.push_back(Nv("server", "uring-http"));
  const std::string length = std::to_string(s.response.body_view().size());
  if (status != 204 && status != 304) nv.push_back(Nv("content-length", length));
  nghttp2_data_provider provider{};
  provider.read_callback = &Callbacks::ReadBody;
  const bool body = s.send_body && !s.response.body_view().empty();
  if (nghttp2_submit_response(session_, s.id, nv.data(), nv.size(), body ? &provider : nullptr) !=
      0) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
  }
  env_->host->ExchangeDone(
      slot_, http1::ConnectionHost::Exchange{
                 s.route_id, status, s.started_ns, std::string_view(),
                 head_request ? 0 : s.response.body_view().size(), &client_, {}});
}

long Connection::ReadBody(int32_t id, uint8_t* buf, size_t len, uint32_t* flags) {
  Stream* s = Find(id);
  if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (s->pipe == nullptr) {
    const std::string_view body = s->response.body_view();
    const size_t n = std::min(len, body.size() - s->body_sent);
    std::memcpy(buf, body.data() + s->body_sent, n);
    s->body_sent += n;
    if (s->body_sent == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<long>(n);
  }
  // A worker's streamed answer: what its pipe holds, as the client's
  // windows let nghttp2 ask for it. Taking bytes frees room for the
  // worker, which sleeps on a full pipe.
  worker::BodyPipe& pipe = *s->pipe;
  for (;;) {
    const size_t n = pipe.Read(reinterpret_cast<char*>(buf), len);
    if (n > 0) {
      s->body_sent += n;
      return static_cast<long>(n);
    }
    if (pipe.aborted()) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM
    if (pipe.finished()) {
      // The trailers and whether the body came whole are the task's to
      // say once it has returned (slow_task.h).
      if (!s->task_done) break;
      // A short body cannot end normally: the client must see it cut.
      if (s->stream_broken) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      const http::HeaderTable* trailers =
          s->stream_head != nullptr ? s->stream_head->trailers.get() : nullptr;
      if (trailers != nullptr && trailers->size() > 0) {
        std::vector<std::string> names;
        std::vector<nghttp2_nv> nv;
        names.reserve(trailers->size());
        for (const http::HeaderTable::Field f : *trailers) {
          std::string& lower = names.emplace_back(f.name);
          std::transform(lower.begin(), lower.end(), lower.begin(), Lower);
          nv.push_back(Nv(lower, f.value));
        }
        // The DATA does not end the stream: the trailers' HEADERS does.
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_submit_trailer(session_, id, nv.data(), nv.size());
      }
      return 0;
    }
    // Empty: wait for the worker's message (unless bytes came meanwhile).
    if (pipe.ArmReadNotify(0)) break;
  }
  s->deferred = true;
  return NGHTTP2_ERR_DEFERRED;
}

// ---------------------------------------------------------------- SLOW routes

bool Connection::Dispatch(Stream& s, const http::Request& request, const router::Route& route) {
  // The worker parses the head again (worker_pool.cc), as HTTP/1 text:
  // the fields as they came (nghttp2 has checked them), the authority as
  // Host, and the length of the body it is given.
  std::string head;
  head.reserve(256 + s.path.size() + s.fields.size() * 32);
  head.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\n");
  bool has_length = false;
  for (size_t i = 0; i < request.num_headers; ++i) {
    const http::Header& h = request.headers[i];
    has_length = has_length || h.name == "content-length";
    head.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!request.body.empty() && !has_length) {
    head.append("content-length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  head.append("\r\n");
  const std::string_view allow = request.allowed_methods.substr(0, UINT16_MAX);
  const size_t need = sizeof(worker::TaskBuffer) + head.size() + request.body.size() + allow.size();
  void* memory = std::malloc(need);
  if (memory == nullptr) return false;
  auto* task = new (memory) worker::TaskBuffer();
  task->head_len = static_cast<uint32_t>(head.size());
  task->body_len = request.body.size();
  task->capacity = static_cast<uint32_t>(need - sizeof(worker::TaskBuffer));
  task->allow_len = static_cast<uint16_t>(allow.size());
  task->head_only = s.head;
  task->keep_alive = true;
  task->client_address = client_;
  std::memcpy(task->data(), head.data(), head.size());
  if (!request.body.empty()) {
    std::memcpy(task->data() + head.size(), request.body.data(), request.body.size());
  }
  if (!allow.empty()) {
    std::memcpy(task->data() + head.size() + request.body.size(), allow.data(), allow.size());
  }
  if (!env_->host->Dispatch(slot_, task, route, s.started_ns)) {
    task->~TaskBuffer();
    std::free(memory);
    return false;
  }
  env_->stats->slow_dispatched.Add();
  s.task = task;
  tasks_.push_back({task, nullptr, false});
  return true;
}

void Connection::OnTaskDone() {
  // Acquire: what the worker wrote before its release store is ours.
  for (auto& [id, sp] : streams_) {
    Stream& s = *sp;
    if (s.task != nullptr && s.task->state.load(std::memory_order_acquire) ==
                                 worker::TaskBuffer::kDone) {
      env_->stats->slow_completed.Add();
      TakeTaskResult(s);
    }
  }
  // Tasks whose stream has gone: their memory goes once they return.
  for (size_t i = 0; i < tasks_.size();) {
    worker::TaskBuffer* task = tasks_[i].task;
    if (tasks_[i].orphaned &&
        task->state.load(std::memory_order_acquire) == worker::TaskBuffer::kDone) {
      env_->stats->slow_completed.Add();
      FreeTaskOf(task);  // erases tasks_[i]
    } else {
      ++i;
    }
  }
  Sync();
}

void Connection::OnStreamNotify() {
  for (auto& [id, sp] : streams_) {
    Stream& s = *sp;
    if (s.task != nullptr && s.pipe == nullptr) {
      // The worker's first Write published its pipe and the answer's head.
      if (worker::BodyPipe* pipe =
              s.task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
        s.pipe.reset(pipe);
        StartStreamed(s);
      }
    }
    if (s.deferred) {
      s.deferred = false;
      nghttp2_session_resume_data(session_, s.id);
    }
  }
  // A pipe published after its stream went: aborted, so the worker stops.
  for (Task& t : tasks_) {
    if (!t.orphaned || t.orphan_pipe != nullptr) continue;
    if (worker::BodyPipe* pipe = t.task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
      t.orphan_pipe.reset(pipe);
      t.orphan_pipe->Abort();
    }
  }
  Sync();
}

void Connection::TakeTaskResult(Stream& s) {
  worker::TaskBuffer* task = s.task;
  s.task_done = true;
  if (s.pipe == nullptr) {
    if (worker::BodyPipe* pipe = task->response_body.exchange(nullptr, std::memory_order_acq_rel)) {
      s.pipe.reset(pipe);
    }
  }
  if (s.pipe != nullptr) {
    if (!s.answered) StartStreamed(s);
    s.stream_head = std::move(task->stream_head);
    s.stream_broken = task->stream_broken;
    s.task = nullptr;
    FreeTaskOf(task);
    if (s.deferred) {
      s.deferred = false;
      nghttp2_session_resume_data(session_, s.id);
    }
    return;
  }
  s.response = std::move(task->response);
  s.task = nullptr;
  FreeTaskOf(task);
  if (s.response.header_refused()) return SubmitError(s, 500);
  Submit(s, s.head);
}

void Connection::StartStreamed(Stream& s) {
  const worker::StreamHead* head =
      s.task != nullptr ? s.task->stream_head.get() : s.stream_head.get();
  if (head == nullptr || s.answered) return;
  s.answered = true;
  const int status = head->status;
  s.send_body = !s.head && http::StatusHasBody(status);
  std::vector<std::string> names;
  std::vector<nghttp2_nv> nv;
  names.reserve(head->fields.size());
  char status_text[3] = {static_cast<char>('0' + status / 100),
                         static_cast<char>('0' + status / 10 % 10),
                         static_cast<char>('0' + status % 10)};
  nv.push_back(Nv(":status", std::string_view(status_text, 3)));
  for (const http::HeaderTable::Field f : head->fields) {
    std::string& lower = names.emplace_back(f.name);
    std::transform(lower.begin(), lower.end(), lower.begin(), Lower);
    if (ConnectionSpecific(lower)) continue;
    nv.push_back(Nv(lower, f.value));
  }
  char date[http::kHttpDateSize];
  const size_t date_len = http::FormatHttpDate(std::time(nullptr), date);
  nv.push_back(Nv("date", std::string_view(date, date_len)));
  nv.push_back(Nv("server", "uring-http"));
  const std::string length = std::to_string(head->length);
  if (head->length_known && http::StatusHasBody(status)) nv.push_back(Nv("content-length", length));
  nghttp2_data_provider provider{};
  provider.read_callback = &Callbacks::ReadBody;
  if (nghttp2_submit_response(session_, s.id, nv.data(), nv.size(),
                              s.send_body ? &provider : nullptr) != 0) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
  }
  env_->stats->streamed_responses.Add();
  env_->host->ExchangeDone(slot_, http1::ConnectionHost::Exchange{
                                      s.route_id, status, s.started_ns, std::string_view(), 0,
                                      &client_, {}});
}

void Connection::Orphan(Stream& s) {
  if (s.task == nullptr) return;  // (a finished task's pipe goes with the stream)
  for (Task& t : tasks_) {
    if (t.task != s.task) continue;
    t.orphaned = true;
    t.orphan_pipe = std::move(s.pipe);
    if (t.orphan_pipe == nullptr) {
      t.orphan_pipe.reset(s.task->response_body.exchange(nullptr, std::memory_order_acq_rel));
    }
    // The worker's next Write fails (a blocked one wakes): it stops soon.
    if (t.orphan_pipe != nullptr) t.orphan_pipe->Abort();
  }
  s.task = nullptr;
}

void Connection::FreeTaskOf(worker::TaskBuffer* task) {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].task != task) continue;
    tasks_[i] = std::move(tasks_.back());
    tasks_.pop_back();
    break;
  }
  // A pipe the ring never took is still the task's.
  delete task->response_body.exchange(nullptr, std::memory_order_acq_rel);
  task->~TaskBuffer();
  std::free(task);
}

// ---------------------------------------------------------------- output and life

void Connection::Flush() {
  if (send_inflight_ || phase_ != Phase::kOpen) return;
  if (sent_ == out_.size()) {
    out_.clear();
    sent_ = 0;
  }
  // Frames are copied out of nghttp2's buffer (valid only until its next
  // call) into ours, up to kOutputBytes per send.
  while (session_ != nullptr && out_.size() < kOutputBytes && nghttp2_session_want_write(session_)) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) {
      if (n < 0) fatal_ = true;
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (sent_ < out_.size()) {
    iov_ = {out_.data() + sent_, out_.size() - sent_};
    send_inflight_ = true;
    send_deadline_ = After(env_->config->send_timeout_ms);
    env_->transport->Send(slot_, &iov_, 1, /*zero_copy=*/false, nullptr, /*dont_wait=*/false);
  }
}

void Connection::OnSend(int res, bool notification_follows) {
  send_inflight_ = false;
  if (res < 0) {
    out_.clear();
    sent_ = 0;
    fatal_ = true;  // the peer is gone: nothing more can go
    peer_eof_ = true;
  } else {
    sent_ += static_cast<size_t>(res);
  }
  Sync();
}

void Connection::Sync() {
  if (phase_ != Phase::kOpen) return;
  Flush();
  const bool want_read = session_ != nullptr && !fatal_ && nghttp2_session_want_read(session_);
  const bool want_write = session_ != nullptr && !fatal_ && nghttp2_session_want_write(session_);
  const bool output_left = send_inflight_ || sent_ < out_.size();
  // Done: both sides said GOAWAY (or the peer is gone, or the session
  // failed) and what was queued is out.
  if (!output_left && (fatal_ || peer_eof_ || (!want_read && !want_write))) {
    return StartClose();
  }
  if (!recv_armed_ && !recv_starved_ && !peer_eof_ && !fatal_ && want_read) {
    recv_armed_ = true;
    env_->transport->ArmRecv(slot_, /*bulk=*/false, /*once=*/false);
  }
  // With output going: --send-timeout from the last send's start (a peer
  // that stops reading is not kept alive by the frames it sends); idle (no
  // stream open): --idle-timeout from the last event.
  uint64_t deadline = 0;
  if (output_left) {
    deadline = send_deadline_;
  } else if (streams_.empty()) {
    deadline = After(env_->draining ? env_->config->drain_idle_ms
                                    : env_->config->idle_timeout_ms);
  }
  if (deadline != armed_deadline_) {
    armed_deadline_ = deadline;
    env_->transport->SetDeadline(slot_, deadline);
  }
}

void Connection::OnDeadline() {
  if (phase_ != Phase::kOpen) return;
  if (armed_deadline_ == 0 || env_->now_tick < armed_deadline_) return Sync();
  armed_deadline_ = 0;
  env_->stats->timeouts.Add();
  if (send_inflight_) {
    // No progress on our output: the peer stopped reading.
    fatal_ = true;
    return StartClose();
  }
  // Idle: GOAWAY, then the close once it is out.
  if (session_ != nullptr) nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
  fatal_ = true;
  Sync();
}

void Connection::OnDrain() {
  if (phase_ != Phase::kOpen || session_ == nullptr) return;
  // GOAWAY naming the last stream begun: those finish, no new one starts.
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  Sync();
}

void Connection::Abort() {
  if (phase_ != Phase::kOpen) return;
  fatal_ = true;
  StartClose();
}

void Connection::StartClose() {
  if (phase_ != Phase::kOpen) return;
  phase_ = Phase::kCloseSubmitted;
  // Workers still answering streams of this connection stop soon; their
  // tasks are freed as they return (Freeable waits for them).
  for (auto& [id, sp] : streams_) Orphan(*sp);
  if (armed_deadline_ != 0) {
    armed_deadline_ = 0;
    env_->transport->SetDeadline(slot_, 0);
  }
  env_->transport->Close(slot_, recv_armed_, send_inflight_);
}

void Connection::OnClosed() {
  phase_ = Phase::kClosed;
  // The close cancelled what was armed; their completions may still come
  // (Freeable waits for them).
}

void Connection::Release() {
  URING_CHECK(tasks_.empty());  // Freeable: every task has returned
  if (session_ != nullptr) nghttp2_session_del(session_);
  session_ = nullptr;
  streams_.clear();
  body_bytes_ = 0;
  out_ = std::string();
  sent_ = 0;
  phase_ = Phase::kOpen;
  recv_armed_ = recv_starved_ = peer_eof_ = send_inflight_ = fatal_ = false;
  armed_deadline_ = send_deadline_ = 0;
  client_ = http::ClientAddress();
}

}  // namespace uring_http::http2
