// libFuzzer target for the HTTP/1 connection state machine: the input picks
// a stream of requests (every framing, pipelined, some malformed, plus raw
// bytes), how the stream is split into receives, and the order of every
// completion (sends short or whole, zero-copy notifications early or late,
// cancels landing late, buffer starvation, tasks finishing, deadlines, the
// peer's FIN or a reset). After each event and at the end it checks what
// must hold whatever happened:
//   - the host was never asked for something impossible (two receives or two
//     sends at once, a send after the close, a close before its shutdown, a
//     close that misstates what is armed);
//   - no buffer was released while "the kernel" could still read it (the
//     harness compares each send's bytes at submission and completion);
//   - requests are answered in order, each at most once, and all of them if
//     nothing went wrong (the answers carry the request's id);
//   - once closed and every completion is in, the slot is freeable and
//     every chunk is back in the pool.
//
// Fuzz:   test/fuzz/run_fuzz.sh 60 //test/http1:connection_fuzz
// Replay: bazel run //test/http1:connection_fuzz -- FILE_OR_DIR...
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "test/http1/connection_harness.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http1 {
namespace {


// Handlers answer with the request's id (its query), so that order and
// duplicates can be checked.
router::Router FuzzRouter() {
  router::Router r;
  (void)r.Fast("GET", "/f", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query));
  });
  (void)r.Fast("POST", "/f", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query) + ":" + std::to_string(req.body.size()));
  });
  (void)r.Slow("GET", "/s", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query));
  });
  (void)r.Slow("POST", "/s", [](const http::Request& req, http::Response& resp) {
    resp.set_static_body(req.body);  // a view the server must copy
    resp.AddHeader("X-Id", req.query);
  });
  // Streamed from the worker; small enough never to block on its pipe.
  (void)r.Slow("GET", "/w", [](const http::Request& req, http::Response& resp) {
    resp.AddHeader("X-Id", req.query);
    for (int i = 0; i < 3; ++i) resp.Write(std::string(1000 + i, 'w'));
  });
  (void)r.Fast("GET", "/p", [](const http::Request& req, http::Response& resp) {
    resp.AddHeader("X-Id", req.query);
    auto left = std::make_shared<int>(4);
    resp.Stream([left](http::BodyOutput& out) {
      out.Write(std::string(900, 'p'));
      return --*left == 0;
    });
  });
  struct Sink : router::BodySink {
    std::string id;
    size_t bytes = 0;
    void OnData(std::string_view piece) override { bytes += piece.size(); }
    void OnEnd(const http::Request&, http::Response& resp) override {
      resp.set_body(id + ":" + std::to_string(bytes));
    }
  };
  (void)r.FastStream("PUT", "/k", [](const http::Request& req) {
    auto sink = std::make_unique<Sink>();
    sink->id = std::string(req.query);
    return sink;
  });
  return r;
}

// Reads fuzz bytes; 0 once they run out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : Byte() % n; }
  bool done() const { return pos_ >= size_; }
  std::string_view Rest() {
    std::string_view r(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return r;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string ChunkedBody(size_t n, uint32_t pieces) {
  std::string out;
  size_t left = n;
  for (uint32_t i = 0; i < pieces && left > 0; ++i) {
    const size_t k = i + 1 == pieces ? left : (left + 1) / 2;
    char line[32];
    std::snprintf(line, sizeof line, "%zx\r\n", k);
    out += line + std::string(k, 'c') + "\r\n";
    left -= k;
  }
  if (left > 0) {
    char line[32];
    std::snprintf(line, sizeof line, "%zx\r\n", left);
    out += line + std::string(left, 'c') + "\r\n";
  }
  return out + "0\r\n\r\n";
}

struct Stream {
  std::string bytes;
  int requests = 0;          // well-formed requests, ids 0..requests-1
  bool malformed = false;    // something after them breaks the stream
};

Stream MakeStream(Input& in) {
  Stream s;
  const uint32_t count = 1 + in.Below(8);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string id = std::to_string(s.requests);
    const uint8_t kind = in.Byte();
    const size_t body = (in.Byte() % 8) * 700;
    const std::string close = (kind & 0x80) && i + 1 == count ? "Connection: close\r\n" : "";
    std::string r;
    switch (kind % 9) {
      case 0: r = "GET /f?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 1:
        r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body) +
            "\r\n" + close + "\r\n" + std::string(body, 'b');
        break;
      case 2:
        r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n" + close +
            "\r\n" + ChunkedBody(body, 1 + in.Below(4));
        break;
      case 3: r = "GET /s?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 4:
        r = "POST /s?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n" + close +
            "\r\n" + ChunkedBody(body, 1 + in.Below(3));
        break;
      case 5: r = "GET /w?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 6: r = "GET /p?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 7:
        r = "PUT /k?" + id + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body) +
            "\r\n" + close + "\r\n" + std::string(body, 'k');
        break;
      case 8:
        // Malformed: a bad chunk, a bad head, or raw fuzz bytes.
        s.malformed = true;
        if (kind & 0x40) {
          r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\n";
        } else {
          r = std::string(in.Rest());
        }
        break;
    }
    s.bytes += r;
    if (s.malformed) break;
    ++s.requests;
    if (!close.empty()) break;
  }
  return s;
}

void Check(const testing::Harness& h) {
  for (const std::string& v : h.host.violations) std::fprintf(stderr, "violation: %s\n", v.c_str());
  FUZZ_CHECK(h.host.violations.empty());
}

void RunOne(const uint8_t* data, size_t size) {
  Input in(data, size);
  ConnectionConfig config;
  config.limits.max_body_bytes = 4000;
  const uint8_t flags = in.Byte();
  config.send_zc_min_bytes = (flags & 1) ? 1024 : 0;
  config.bulk_receives = (flags & 2) != 0;  // large bodies move to the other buffer group
  config.bulk_body_bytes = 1500;
  config.request_pipe_bytes = 4096;
  config.header_timeout_ms = 1000;
  config.body_timeout_ms = 2000;
  config.send_timeout_ms = 3000;
  config.idle_timeout_ms = 5000;
  testing::Harness h(FuzzRouter(), config, 96);
  const Stream stream = MakeStream(in);
  h.Open();
  size_t fed = 0;
  bool eof_sent = false;
  // Events chosen by the input; when it runs out, everything is delivered
  // and completed in a plain order so that the end state can be judged.
  for (int step = 0; step < 400 && !in.done(); ++step) {
    switch (in.Below(12)) {
      case 0:
      case 1:
      case 2:
        if (fed < stream.bytes.size() && h.host.recv_armed && !eof_sent) {
          const size_t n = std::min<size_t>(stream.bytes.size() - fed, 1 + in.Below(3000));
          h.Recv(std::string_view(stream.bytes).substr(fed, n), 1 + in.Below(2048));
          fed += n;
        }
        break;
      case 3:
      case 4:
        h.CompleteSend(in.Below(4) == 0 ? 1 + in.Below(500) : SIZE_MAX);
        break;
      case 5:
        h.Notify();
        break;
      case 6:
        if (!h.host.tasks.empty()) h.RunTask();
        break;
      case 7:
        h.LandCancel();
        break;
      case 8:
        if (h.host.recv_armed && !h.host.cancel_pending) {
          h.RecvEnd(-ENOBUFS);
          h.conn.OnBuffersAvailable();
        }
        break;
      case 9:
        h.Tick(in.Below(30));
        break;
      case 10:
        h.ShutdownDone();
        if (h.host.closed) h.CloseDone();
        break;
      case 11:
        if (in.Below(4) == 0 && h.host.recv_armed && !eof_sent) {
          eof_sent = true;
          h.RecvEnd(in.Below(2) == 0 ? 0 : -ECONNRESET);
        }
        break;
    }
    Check(h);
  }
  // The plain end: the rest of the stream, then every completion.
  for (int round = 0; round < 200; ++round) {
    if (fed < stream.bytes.size() && h.host.recv_armed && !eof_sent) {
      h.Recv(std::string_view(stream.bytes).substr(fed));
      fed = stream.bytes.size();
    }
    h.LandCancel();
    h.RunTask();
    h.Flush();
    h.ShutdownDone();
    Check(h);
  }
  // Answers: each id at most once, in increasing order; all of them when
  // nothing went wrong.
  const auto replies = h.Replies();
  int next = 0;
  bool error = false;
  for (const testing::Reply& r : replies) {
    if (r.status == 100) continue;
    if (r.status != 200) {
      error = true;
      continue;
    }
    FUZZ_CHECK(!error);  // nothing is answered after an error
    std::string id = r.Header("x-id");
    if (id.empty()) id = r.body.substr(0, r.body.find(':'));
    FUZZ_CHECK(!id.empty() && id.size() < 4);
    FUZZ_CHECK(std::atoi(id.c_str()) == next);
    ++next;
  }
  FUZZ_CHECK(next <= stream.requests);
  if (!stream.malformed && !eof_sent && fed == stream.bytes.size() && !h.host.closed &&
      !h.host.shutdown_pending && !h.host.shutdown_done) {
    FUZZ_CHECK(next == stream.requests);
  }
  // Close it (the peer leaves) and let every completion in: the slot must
  // come free with all of its memory back.
  if (!h.host.closed) {
    if (h.host.recv_armed) h.RecvEnd(-ECONNRESET);
    h.conn.Abort();
    h.ShutdownDone();
  }
  FUZZ_CHECK(h.host.closed);
  h.CloseDone();
  h.Flush();
  while (!h.host.tasks.empty()) h.RunTask();
  Check(h);
  FUZZ_CHECK(h.conn.Freeable());
  h.conn.Release();
  FUZZ_CHECK(h.chunks_available() == 96);
}

}  // namespace
}  // namespace uring_http::http1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::http1::RunOne(data, size);
  return 0;
}

