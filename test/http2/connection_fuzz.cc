// libFuzzer target for the HTTP/2 connection (src/http2/connection.h) with
// the recording host of test/http1 beneath it: no kernel. The input either
// is the client's bytes as they are (after the preface, so that the fuzzer
// gets past it), or scripts a real client (nghttp2's client session:
// requests of the test routes with bodies, resets, pings, settings) whose
// bytes are then mutated at positions the input picks. Either way the
// bytes are cut into receives of sizes the input picks, the first part
// handed over as an HTTP/1 connection would (conn::Handoff), and between
// receives the input completes sends whole or short, fails them, lets
// deadlines pass, drains the server, or ends the peer's side. Checks, after
// each event and at the end:
//   - the host was never asked for something impossible (two receives or
//     two sends at once, a send after the close, a close that misstates
//     what is armed);
//   - a send's bytes did not change while "the kernel" held them;
//   - once the peer is gone and every completion is in, the connection
//     has closed and is freeable.
//
// Fuzz:   test/fuzz/run_fuzz.sh 60 //test/http2:connection_fuzz
// Replay: bazel run //test/http2:connection_fuzz -- FILE_OR_DIR...
#include <nghttp2/nghttp2.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/http1/connection.h"
#include "src/http2/connection.h"
#include "test/http1/connection_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
#include "test/fuzz/replay_main.h"

namespace uring_http::http2 {
namespace {

// The input, read a byte at a time (zeros once it runs out).
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool empty() const { return pos_ >= size_; }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

router::Router Routes() {
  router::Router r;
  (void)r.Fast("GET", "/hello", [](const http::Request&, http::Response& resp) {
    (void)resp.AddHeader("Content-Type", "text/plain");
    resp.set_body("hello");
  });
  (void)r.Fast("POST", "/echo", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.body);
  });
  (void)r.Fast("GET", "/big", [](const http::Request&, http::Response& resp) {
    resp.set_body(std::string(200 * 1024, 'b'));
  });
  (void)r.Fast("GET", "/throw", [](const http::Request&, http::Response&) {
    throw std::runtime_error("thrown");
  });
  (void)r.Slow("GET", "/slow", [](const http::Request&, http::Response& resp) {
    resp.set_body("slow");
  });
  (void)r.Slow("POST", "/stream", [](const http::Request& req, http::Response& resp) {
    for (int i = 0; i < 3; ++i) {
      if (!resp.Write(req.body.substr(0, 100))) return;
    }
    (void)resp.AddTrailer("x-end", "3");
  });
  return r;
}

// What a client sends, scripted by the input through nghttp2's client (its
// connection preface first: nghttp2 sends it itself).
std::string ScriptedClient(Input& in) {
  nghttp2_session_callbacks* cb;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session* client;
  nghttp2_session_client_new(&client, cb, nullptr);
  nghttp2_session_callbacks_del(cb);
  nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0);
  static const char* kPaths[] = {"/hello", "/echo", "/big", "/throw", "/slow", "/x/../hello",
                                 "/stream", "*"};
  static const char* kMethods[] = {"GET", "POST", "HEAD", "DELETE", "OPTIONS", "PUT"};
  struct Source {
    std::string body;
    size_t sent = 0;
  };
  std::vector<std::unique_ptr<Source>> sources;
  std::string out;
  const int steps = in.Byte() % 12;
  for (int i = 0; i < steps; ++i) {
    const uint8_t op = in.Byte();
    if (op % 8 < 5) {
      const std::string method = kMethods[in.Byte() % 6];
      const std::string path = kPaths[in.Byte() % 8];
      const std::string big(static_cast<size_t>(in.Byte()) * 64, 'h');
      std::vector<nghttp2_nv> nv;
      auto add = [&nv](const std::string& n, const std::string& v) {
        nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(),
                      v.size(), NGHTTP2_NV_FLAG_NONE});
      };
      const std::string m = ":method", s = ":scheme", a = ":authority", p = ":path",
                        http = "http", host = "h", xf = "x-fill", ae = "accept-encoding",
                        gz = "gzip";
      add(m, method);
      add(s, http);
      add(a, host);
      add(p, path);
      add(xf, big);
      if (op & 8) add(ae, gz);
      // Each body lives until the client is gone: its DATA frames may
      // leave steps later, as the window opens.
      auto& source = sources.emplace_back(std::make_unique<Source>());
      source->body.assign(static_cast<size_t>(in.Byte()) * 257, 'd');
      nghttp2_data_provider provider{};
      provider.source.ptr = source.get();
      provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t len,
                                  uint32_t* flags, nghttp2_data_source* src,
                                  void*) -> ssize_t {
        auto* s = static_cast<Source*>(src->ptr);
        const size_t n = std::min(len, s->body.size() - s->sent);
        std::memcpy(buf, s->body.data() + s->sent, n);
        s->sent += n;
        if (s->sent == s->body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
      };
      nghttp2_submit_request(client, nullptr, nv.data(), nv.size(),
                             source->body.empty() ? nullptr : &provider, nullptr);
    } else if (op % 8 == 5) {
      nghttp2_submit_rst_stream(client, NGHTTP2_FLAG_NONE, 1 + 2 * (in.Byte() % 8),
                                in.Byte() % 14);
    } else if (op % 8 == 6) {
      nghttp2_submit_ping(client, NGHTTP2_FLAG_NONE, nullptr);
    } else {
      const nghttp2_settings_entry e{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
                                     static_cast<uint32_t>(in.Byte()) * 256u};
      nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, &e, 1);
    }
    // Frames leave in order as they are produced (a DATA frame's bytes
    // are read from `body` now, while it holds them).
    for (;;) {
      const uint8_t* bytes;
      const ssize_t n = nghttp2_session_mem_send(client, &bytes);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
    }
  }
  if (out.empty()) {
    // (No step: the preface and SETTINGS alone.)
    const uint8_t* bytes;
    for (ssize_t n; (n = nghttp2_session_mem_send(client, &bytes)) > 0;) {
      out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
    }
  }
  nghttp2_session_del(client);
  // Mutations: a few bytes flipped where the input says, past the preface
  // (HTTP/1 would not have handed over a broken one).
  const size_t preface = http1::kHttp2Preface.size();
  const int flips = in.Byte() % 4;
  for (int i = 0; i < flips && out.size() > preface; ++i) {
    const size_t at =
        preface + ((static_cast<size_t>(in.Byte()) << 8 | in.Byte()) % (out.size() - preface));
    out[at] = static_cast<char>(out[at] ^ (in.Byte() | 1));
  }
  return out;
}

class Driver {
 public:
  Driver() : router_(Routes()) {
    config_.limits.max_body_bytes = 64 * 1024;
    config_.limits.max_header_bytes = 4096;
    config_.idle_timeout_ms = 1000;
    env_.config = &config_;
    env_.router = &router_;
    env_.transport = &host_;
    env_.host = &host_;
    env_.stats = &stats_;
    env_.unmatched_route = static_cast<uint32_t>(router_.size());
    env_.has_workers = true;
    env_.now_tick = 1000;
  }

  void Run(Input& in) {
    const uint8_t mode = in.Byte();
    // (The scripted client's bytes start with the preface.)
    const std::string bytes =
        (mode & 1) ? ScriptedClient(in) : std::string(kHttp1Preface()) + in.Rest();
    // The first part came to HTTP/1, which handed it over.
    size_t first = std::min(bytes.size(), http1::kHttp2Preface.size() + in.Byte());
    conn::Handoff handoff;
    handoff.bytes = std::string_view(bytes).substr(0, first);
    handoff.recv_armed = (mode & 2) != 0;
    host_.recv_armed = handoff.recv_armed;
    http::ClientAddress client;
    conn_.Open(&env_, 0, handoff, client);
    Check();
    size_t pos = first;
    int rounds = 0;
    while (!host_.closed && rounds++ < 4000) {
      const uint8_t op = in.empty() ? 0 : in.Byte();
      switch (op % 8) {
        case 0:
        case 1:
        case 2: {  // bytes, if a receive is armed
          if (pos < bytes.size() && host_.recv_armed) {
            const size_t n = std::min(bytes.size() - pos, size_t{1} + op * 7);
            std::string copy = bytes.substr(pos, n);  // the provided buffer
            conn_.OnRecv(copy.data(), copy.size(), /*ended=*/false);
            pos += n;
          } else if (!CompleteSend(SIZE_MAX)) {
            EndPeer(0);
          }
          break;
        }
        case 3:
          CompleteSend(op);  // short
          break;
        case 4:
          if (host_.send.has_value()) {
            host_.send.reset();
            conn_.OnSend(-EPIPE, false);
          }
          break;
        case 5:
          if ((op & 16) && !host_.tasks.empty()) {
            RunTask();
          } else {
            env_.now_tick = std::max(env_.now_tick + 1, host_.deadline);
            conn_.OnDeadline();
          }
          break;
        case 6:
          env_.draining = true;
          conn_.OnDrain();
          break;
        case 7:
          if (host_.recv_armed) {
            host_.recv_armed = false;
            conn_.OnRecvEnd(op & 8 ? -ENOBUFS : 0);
            if (op & 8) conn_.OnBuffersAvailable();
          }
          break;
      }
      Check();
      if (pos >= bytes.size() && in.empty() && !host_.send.has_value() && !host_.closed &&
          host_.recv_armed) {
        EndPeer(0);
      }
    }
    // The end: the peer goes, everything in flight completes.
    while (!host_.tasks.empty()) RunTask();
    if (!host_.closed) {
      if (host_.recv_armed) EndPeer(0);
      while (!host_.closed && CompleteSend(SIZE_MAX)) Check();
      if (!host_.closed) conn_.Abort();
    }
    Finish();
  }

 private:
  static std::string kHttp1Preface() { return std::string(http1::kHttp2Preface); }

  // A worker runs the oldest task here (its handlers never block: their
  // answers fit in the pipe); its messages reach the connection at once.
  void RunTask() {
    const http1::testing::FakeHost::Task t = host_.tasks.front();
    host_.tasks.pop_front();
    worker::SlowTask task;
    task.route = t.route;
    task.buffer = t.buffer;
    worker::WorkerPool::RunTask(task, config_.limits);
    conn_.OnStreamNotify();
    conn_.OnTaskDone();
  }
  void EndPeer(int res) {
    if (!host_.recv_armed) return;
    host_.recv_armed = false;
    conn_.OnRecvEnd(res);
  }
  bool CompleteSend(size_t n) {
    if (!host_.send.has_value()) return false;
    FUZZ_CHECK(host_.Intact(*host_.send));
    const size_t len = host_.send->bytes.size();
    const size_t done = std::min(len, std::max<size_t>(n, 1));
    host_.send.reset();
    conn_.OnSend(static_cast<int>(done), false);
    return true;
  }
  void Check() {
    if (!host_.violations.empty()) {
      std::fprintf(stderr, "violation: %s\n", host_.violations.front().c_str());
      FUZZ_CHECK(host_.violations.empty());
    }
  }
  // The close was issued: what it cancelled completes, then the close.
  void Finish() {
    FUZZ_CHECK(host_.closed);
    if (host_.recv_armed) {
      host_.recv_armed = false;
      conn_.OnRecvEnd(-ECANCELED);
    }
    if (host_.send.has_value()) {
      host_.send.reset();
      conn_.OnSend(-ECANCELED, false);
    }
    conn_.OnClosed();
    while (!host_.tasks.empty()) RunTask();
    Check();
    FUZZ_CHECK(conn_.Freeable());
    conn_.Release();
  }

  router::Router router_;
  http1::ConnectionConfig config_;
  http1::ConnectionStats stats_;
  http1::testing::FakeHost host_;
  http1::ConnectionEnv env_;
  Connection conn_;
};

}  // namespace
}  // namespace uring_http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::http2::Input in(data, size);
  uring_http::http2::Driver driver;
  driver.Run(in);
  return 0;
}
