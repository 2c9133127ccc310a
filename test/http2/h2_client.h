// A small HTTP/2 client for tests: nghttp2's client session over a
// blocking socket (test/serving's TestClient), with h2c prior knowledge.
// Requests are submitted, then Run() exchanges frames until every one of
// them has ended (or the connection did, or the socket's timeout passed)
// and each stream's answer is kept: status, fields, body, trailers, or the
// RST_STREAM code that ended it.
#ifndef URING_HTTP_TEST_HTTP2_H2_CLIENT_H_
#define URING_HTTP_TEST_HTTP2_H2_CLIENT_H_

#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "test/serving/http_client.h"

namespace uring_http::testing {

class H2Client {
 public:
  struct Answer {
    int status = 0;
    std::map<std::string, std::string> fields;
    std::map<std::string, std::string> trailers;
    std::string body;
    bool closed = false;
    uint32_t reset = 0;  // the RST_STREAM code (0: ended normally)
    bool headers_done = false;
  };

  // `initial_window`: our SETTINGS_INITIAL_WINDOW_SIZE (0: the default,
  // 65,535), how much of each response the server may send unasked.
  explicit H2Client(uint16_t port, int timeout_ms = 10000, uint32_t initial_window = 0)
      : socket_(port, timeout_ms) {
    nghttp2_session_callbacks* cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, &OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &OnFrame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, &OnClose);
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    if (initial_window != 0) {
      const nghttp2_settings_entry window{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, initial_window};
      nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &window, 1);
    } else {
      nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
    }
  }
  ~H2Client() { nghttp2_session_del(session_); }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  bool connected() const { return socket_.connected(); }
  TestClient& socket() { return socket_; }

  // A request; `body` empty: none (END_STREAM on the HEADERS).
  int32_t Submit(const std::string& method, const std::string& path,
                 std::vector<std::pair<std::string, std::string>> fields = {},
                 const std::string& body = "") {
    std::vector<std::pair<std::string, std::string>> all = {
        {":method", method}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}};
    for (auto& f : fields) all.push_back(std::move(f));
    std::vector<nghttp2_nv> nv;
    for (const auto& [n, v] : all) {
      nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
    auto pending = std::make_unique<Pending>();
    pending->body = body;
    nghttp2_data_provider provider{};
    provider.source.ptr = pending.get();
    provider.read_callback = &ReadBody;
    const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                              body.empty() ? nullptr : &provider, this);
    if (id > 0) {
      answers_[id];
      bodies_.push_back(std::move(pending));
    }
    return id;
  }

  // h2c by Upgrade (RFC 7540 3.2): `request` is an HTTP/1.1 request (its
  // Upgrade, Connection and HTTP2-Settings fields are added here, and the
  // settings are this client's). Returns the HTTP/1 answer's status; on
  // 101 the session is upgraded and the request is stream 1 (Run waits
  // for it), and what came after the 101 is fed to the session.
  int Upgrade(const std::string& method, const std::string& path,
              const std::string& extra_fields = "", const std::string& settings_field = "") {
    uint8_t payload[64];
    const ssize_t len = nghttp2_pack_settings_payload(payload, sizeof(payload), nullptr, 0);
    std::string settings = settings_field;
    if (settings.empty()) {
      static constexpr char kAlphabet[] =
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      for (ssize_t i = 0; i < len; i += 3) {
        uint32_t v = payload[i] << 16;
        if (i + 1 < len) v |= payload[i + 1] << 8;
        if (i + 2 < len) v |= payload[i + 2];
        settings.push_back(kAlphabet[(v >> 18) & 63]);
        settings.push_back(kAlphabet[(v >> 12) & 63]);
        if (i + 1 < len) settings.push_back(kAlphabet[(v >> 6) & 63]);
        if (i + 2 < len) settings.push_back(kAlphabet[v & 63]);
      }
    }
    const std::string request = method + " " + path +
                                " HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, "
                                "HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " +
                                settings + "\r\n" + extra_fields + "\r\n";
    if (!socket_.Send(request)) return 0;
    const std::optional<HttpResponse> r = socket_.ReadResponse(method == "HEAD");
    if (!r.has_value()) return 0;
    if (r->status != 101) return r->status;
    if (nghttp2_session_upgrade2(session_, payload, static_cast<size_t>(len), method == "HEAD",
                                 nullptr) != 0) {
      return 0;
    }
    answers_[1];
    const std::string& rest = socket_.pending();
    if (!rest.empty() &&
        nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(rest.data()),
                                 rest.size()) < 0) {
      return 0;
    }
    return 101;
  }

  // Exchanges frames until every submitted stream has closed; false if the
  // connection ended first or the socket timed out.
  bool Run() {
    for (;;) {
      if (!Flush()) return false;
      bool open = false;
      for (const auto& [id, a] : answers_) open = open || !a.closed;
      if (!open) return true;
      char buf[16384];
      const ssize_t n = recv(socket_.fd(), buf, sizeof(buf), 0);
      if (n <= 0) return false;
      if (nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), n) < 0) {
        return false;
      }
    }
  }
  // One read's worth of frames (after sending what is queued).
  bool RunOnce() {
    if (!Flush()) return false;
    char buf[16384];
    const ssize_t n = recv(socket_.fd(), buf, sizeof(buf), 0);
    if (n <= 0) return false;
    return nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), n) >= 0;
  }
  // Reads until the server closes (after a GOAWAY, say); true if it did.
  // (What the session owes meanwhile, PING acks say, is sent.)
  bool ReadToClose() {
    Flush();
    char buf[16384];
    for (;;) {
      const ssize_t n = recv(socket_.fd(), buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), n);
      Flush();
    }
  }
  bool Flush() {
    for (;;) {
      const uint8_t* data;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) return true;
      if (!socket_.Send(std::string_view(reinterpret_cast<const char*>(data), n))) return false;
    }
  }

  const Answer& answer(int32_t id) { return answers_[id]; }
  bool goaway() const { return goaway_; }
  uint32_t goaway_code() const { return goaway_code_; }
  nghttp2_session* session() { return session_; }

 private:
  struct Pending {
    std::string body;
    size_t sent = 0;
  };
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* p = static_cast<Pending*>(source->ptr);
    const size_t n = std::min(len, p->body.size() - p->sent);
    std::memcpy(buf, p->body.data() + p->sent, n);
    p->sent += n;
    if (p->sent == p->body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* u) {
    auto* c = static_cast<H2Client*>(u);
    Answer& a = c->answers_[frame->hd.stream_id];
    const std::string n(reinterpret_cast<const char*>(name), namelen);
    const std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
      a.status = std::stoi(v);
    } else if (a.headers_done) {
      a.trailers[n] = v;
    } else {
      a.fields[n] = v;
    }
    return 0;
  }
  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* u) {
    auto* c = static_cast<H2Client*>(u);
    if (frame->hd.type == NGHTTP2_HEADERS) {
      Answer& a = c->answers_[frame->hd.stream_id];
      // A 1xx is interim: the final head comes after it.
      if (a.status >= 200) a.headers_done = true;
    } else if (frame->hd.type == NGHTTP2_GOAWAY) {
      c->goaway_ = true;
      c->goaway_code_ = frame->goaway.error_code;
    }
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* u) {
    static_cast<H2Client*>(u)->answers_[id].body.append(reinterpret_cast<const char*>(data),
                                                        len);
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t code, void* u) {
    Answer& a = static_cast<H2Client*>(u)->answers_[id];
    a.closed = true;
    a.reset = code;
    return 0;
  }

  TestClient socket_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Answer> answers_;
  std::vector<std::unique_ptr<Pending>> bodies_;
  bool goaway_ = false;
  uint32_t goaway_code_ = 0;
};

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_HTTP2_H2_CLIENT_H_
