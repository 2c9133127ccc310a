#include "test/http2/h2_test_peer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace uring_http::http2::testing {

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "h2_test_peer: %s failed\n", what);
    std::abort();
  }
}

std::vector<nghttp2_nv> ToNv(const Fields& fields) {
  std::vector<nghttp2_nv> nv;
  for (const auto& [name, value] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                  NGHTTP2_NV_FLAG_NONE});
  }
  return nv;
}

void PutInt(std::string* out, uint8_t prefix_bits, uint8_t first, size_t v) {
  const size_t max = (1u << prefix_bits) - 1;
  if (v < max) {
    out->push_back(static_cast<char>(first | v));
    return;
  }
  out->push_back(static_cast<char>(first | max));
  v -= max;
  while (v >= 128) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

uint32_t RawFrame::U32(size_t at) const {
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data() + at);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

std::string Frame(uint8_t type, uint8_t flags, int32_t stream_id, std::string_view payload) {
  std::string f;
  const size_t n = payload.size();
  f.push_back(static_cast<char>(n >> 16));
  f.push_back(static_cast<char>(n >> 8));
  f.push_back(static_cast<char>(n));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(stream_id >> shift));
  f.append(payload);
  return f;
}

std::vector<RawFrame> ParseFrames(std::string_view bytes) {
  std::vector<RawFrame> frames;
  while (bytes.size() >= 9) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const size_t n = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
    if (bytes.size() < 9 + n) break;
    RawFrame f;
    f.type = p[3];
    f.flags = p[4];
    f.stream_id = static_cast<int32_t>(((uint32_t{p[5]} << 24) | (uint32_t{p[6]} << 16) | (uint32_t{p[7]} << 8) | p[8]) &
                                       0x7fffffff);
    f.payload.assign(bytes.substr(9, n));
    frames.push_back(std::move(f));
    bytes.remove_prefix(9 + n);
  }
  return frames;
}

std::string ClientPreface() {
  return std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) + Frame(NGHTTP2_SETTINGS, 0, 0, "");
}

std::string LiteralBlock(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    out.push_back(0x00);  // literal without indexing, new name
    PutInt(&out, 7, 0x00, name.size());
    out += name;
    PutInt(&out, 7, 0x00, value.size());
    out += value;
  }
  return out;
}

TestClient::TestClient() {
  nghttp2_session_callbacks* cb = nullptr;
  Check(nghttp2_session_callbacks_new(&cb) == 0, "callbacks_new");
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &OnFrameRecv);
  nghttp2_session_callbacks_set_on_header_callback(cb, &OnHeader);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &OnBeginHeaders);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &OnClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  Check(nghttp2_session_client_new2(&session_, cb, this, opt) == 0, "client_new");
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  Check(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0) == 0, "settings");
}

TestClient::~TestClient() { nghttp2_session_del(session_); }

int32_t TestClient::Request(const Fields& fields, const std::string* body, const Fields* trailers) {
  const std::vector<nghttp2_nv> nv = ToNv(fields);
  nghttp2_data_provider provider{};
  provider.read_callback = &ReadBody;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), body ? &provider : nullptr, this);
  Check(id > 0, "submit_request");
  if (body != nullptr) {
    Body& b = bodies_[id];
    b.bytes = *body;
    if (trailers != nullptr) {
      b.trailers = *trailers;
      b.has_trailers = true;
    }
  }
  return id;
}

std::string TestClient::Output() {
  std::string out;
  for (;;) {
    const uint8_t* p = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &p);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  return out;
}

void TestClient::Input(std::string_view bytes) {
  nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

void TestClient::Consume(int32_t stream_id, size_t n) { nghttp2_session_consume(session_, stream_id, n); }

ssize_t TestClient::ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                             uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  Body& b = self->bodies_[stream_id];
  const size_t n = std::min(length, b.bytes.size() - b.pos);
  std::memcpy(buf, b.bytes.data() + b.pos, n);
  b.pos += n;
  if (b.pos == b.bytes.size()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (b.has_trailers) {
      const std::vector<nghttp2_nv> nv = ToNv(b.trailers);
      if (nghttp2_submit_trailer(session, stream_id, nv.data(), nv.size()) == 0) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      }
    }
  }
  return static_cast<ssize_t>(n);
}

int TestClient::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  RawFrame f;
  f.type = frame->hd.type;
  f.flags = frame->hd.flags;
  f.stream_id = frame->hd.stream_id;
  self->frames.push_back(f);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    self->goaway = true;
    ++self->goaways;
    self->goaway_code = frame->goaway.error_code;
    self->goaway_last_stream = frame->goaway.last_stream_id;
  } else if (frame->hd.type == NGHTTP2_RST_STREAM) {
    ClientStream& s = self->streams[frame->hd.stream_id];
    s.reset_by_server = true;
    s.rst_code = frame->rst_stream.error_code;
  }
  return 0;
}

int TestClient::OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  self->streams[frame->hd.stream_id].header_blocks.emplace_back();
  return 0;
}

int TestClient::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                         const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  self->streams[frame->hd.stream_id].header_blocks.back().emplace_back(
      std::string(reinterpret_cast<const char*>(name), namelen),
      std::string(reinterpret_cast<const char*>(value), valuelen));
  return 0;
}

int TestClient::OnData(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                       void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  self->streams[stream_id].body.append(reinterpret_cast<const char*>(data), len);
  if (self->auto_consume) nghttp2_session_consume(session, stream_id, len);
  return 0;
}

int TestClient::OnClose(nghttp2_session*, int32_t stream_id, uint32_t code, void* user_data) {
  auto* self = static_cast<TestClient*>(user_data);
  ClientStream& s = self->streams[stream_id];
  s.closed = true;
  s.close_code = code;
  return 0;
}

void Recorder::OnRequest(int32_t id, const RequestHead& head) {
  Request& r = requests[id];
  r.method = head.method;
  r.scheme = head.scheme;
  r.authority = head.authority;
  r.path = head.path;
  for (size_t i = 0; i < head.num_headers; ++i) {
    r.headers.emplace_back(std::string(head.headers[i].name), std::string(head.headers[i].value));
  }
  r.has_content_length = head.has_content_length;
  r.content_length = head.content_length;
  r.end_stream = head.end_stream;
  r.expect_continue = head.expect_continue;
  r.head_bytes = head.head_bytes;
  log.push_back("request " + std::to_string(id) + " " + r.method + " " + r.scheme + " " + r.authority + " " + r.path);
  if (on_request) on_request(id, head);
}

void Recorder::OnRequestRefused(int32_t id, int status) {
  refused[id] = status;
  log.push_back("refused " + std::to_string(id) + " " + std::to_string(status));
}

void Recorder::OnRequestData(int32_t id, std::string_view data) {
  requests[id].body.append(data);
  log.push_back("data " + std::to_string(id) + " " + std::to_string(data.size()));
}

void Recorder::OnRequestTrailers(int32_t id, const http::Header* fields, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    requests[id].trailers.emplace_back(std::string(fields[i].name), std::string(fields[i].value));
  }
  log.push_back("trailers " + std::to_string(id) + " " + std::to_string(n));
}

void Recorder::OnRequestEnd(int32_t id) {
  requests[id].ended = true;
  log.push_back("end " + std::to_string(id));
  if (on_end) on_end(id);
}

void Recorder::OnStreamClosed(int32_t id, uint32_t code) {
  requests[id].closed = true;
  requests[id].close_code = code;
  log.push_back("closed " + std::to_string(id) + " " + std::to_string(code));
  if (on_closed) on_closed(id, code);
}

void Recorder::OnStreamWritable(int32_t id) {
  log.push_back("writable " + std::to_string(id));
  if (on_writable) on_writable(id);
}

std::string Drain(Session& server, size_t cap) {
  std::string out;
  std::string buf(cap, '\0');
  for (;;) {
    const size_t n = server.Send(buf.data(), cap);
    if (n == 0) break;
    out.append(buf.data(), n);
  }
  return out;
}

bool Pump(Session& server, TestClient& client, size_t cap) {
  bool ok = true;
  for (int rounds = 0; rounds < 1000; ++rounds) {
    const std::string up = client.Output();
    if (!up.empty() && ok) ok = server.Receive(up.data(), up.size());
    const std::string down = Drain(server, cap);
    if (!down.empty()) client.Input(down);
    if (up.empty() && down.empty()) break;
  }
  return ok;
}

}  // namespace uring_http::http2::testing
