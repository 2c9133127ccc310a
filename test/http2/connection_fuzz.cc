// libFuzzer target for the HTTP/2 connection (src/http2/connection.h) with
// the recording host of test/http1 beneath it: no kernel, no worker thread.
//
// The connection opens as HTTP/1 hands it over: after the preface, or after
// an HTTP/1 request with Upgrade: h2c (a conn::UpgradeRequest, its
// HTTP2-Settings valid or not) that becomes stream 1. The client's bytes
// either are the input as it is, or come from a real client (nghttp2's)
// that the input scripts: requests of the routes below (with bodies, Range
// and conditional fields, gzip, 100-continue, CONNECT), resets, pings,
// window updates, settings; a few of its bytes are then flipped where the
// input says. They arrive in receives of sizes the input picks, and between
// them the input orders every other event:
//   - sends complete whole or short, or fail; deadlines pass, time ticks;
//     the server drains; the peer ends its side or the connection aborts;
//   - a Static mount's file operations (statx, openat2, read) complete for
//     real on a small directory made once per process, fail with an errno,
//     or read short, while the host's open-file cache (small: few entries,
//     little memory) and few file buffers (some taken by "other
//     connections" when the input says) make streams wait their turn;
//   - workers: a SLOW task runs its handler; a streamed body's task is a
//     simulated worker that reads some of the request pipe, streams pieces
//     of its answer, returns without reading the rest (its handler may
//     throw, before or after the answer's head), or runs its handler once
//     the body is whole or failed; its messages (OnStreamNotify,
//     OnTaskDone, each naming its task's stream) come in the order the
//     input says, and the workers' queue may be
//     full (503);
//   - a FastStream route's BodySink, and a FAST producer (Response::Stream),
//     do what the input says as they are called: take data or throw, answer
//     early, write in pieces, write nothing and wait for the retry tick,
//     break or overrun a promised Content-Length, throw.
//
// The input, byte by byte: a mode (1: the scripted client, else the rest
// of the input is the client's bytes; 2: HTTP/1 had a receive armed; 4: an
// upgrade, whose request comes next; 8: gzip on; 16: no workers, SLOW
// handlers run inline), the client's script, how much of the client's
// bytes HTTP/1 read, then an event a byte (Driver::Event). Handlers, sinks
// and producers take their bytes from the input's end as they are called.
//
// Checks, after each event and at the end:
//   - the host was never asked for something impossible (two receives,
//     sends or file operations at once, a send after the close, a close
//     that misstates what is armed, a read of a closed descriptor);
//   - a send's bytes did not change while "the kernel" held them, and a
//     file read's buffer was not back in its pool while the read ran;
//   - every file buffer is either in its pool, in the read in flight, or
//     with "another connection": none lost, none given back twice;
//   - the connection is not Freeable while a file operation or a worker's
//     task is out (the kernel or the worker would write into freed memory);
//   - the server's frames (server_frames.h): each stream answered at most
//     once, nothing after a stream's end, a normal end only at the promised
//     length; and no more exchanges logged than requests came;
//   - every BodySink hears exactly one OnEnd or OnAbort, and nothing after;
//   - a producer that had nothing to give has a deadline armed for its
//     retry; after the close no file operation or task starts; with
//     nothing of ours out, some deadline is armed;
//   - at the end, once the connection is closed and released: every file
//     buffer is back, no cache entry is still referenced, and once the
//     cache is gone every descriptor the host opened has been closed once.
//
// Fuzz:   test/fuzz/run_fuzz.sh 600 //test/http2:connection_fuzz
// Replay: bazel run //test/http2:connection_fuzz -- FILE_OR_DIR...
//         (CONNECTION_FUZZ_TRACE=1 prints the events as they happen)
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/http1/connection.h"
#include "src/http2/connection.h"
#include "src/worker/task_streams.h"
#include "test/http1/connection_harness.h"
#include "test/http2/server_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
#include "test/fuzz/replay_main.h"

namespace uring_http::http2 {
namespace {

// A streamed answer's (the stream keeps a reference): none.
const http::CompressionOptions kNoCompression{};

using http1::testing::FakeHost;

bool Tracing() {
  static const bool on = std::getenv("CONNECTION_FUZZ_TRACE") != nullptr;
  return on;
}

void Trace(const char* format, ...) {
  if (!Tracing()) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

// The input, read a byte at a time from the front (the client and the
// events) and from the back (what handlers, sinks and producers do), zeros
// once the two meet.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), end_(size) {}
  uint8_t Byte() { return pos_ < end_ ? data_[pos_++] : 0; }
  uint8_t Back() { return pos_ < end_ ? data_[--end_] : 0; }
  bool empty() const { return pos_ >= end_; }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), end_ - pos_);
    pos_ = end_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t end_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------- the files

// What the Static mounts serve, made once per process (under $TEST_TMPDIR
// when Bazel runs it) and removed at exit: an empty file, 1 KiB (small
// enough for the cache's memory), 100 KiB (many file buffers' worth), a
// directory with an index.html and one without, a dotfile, a FIFO, and
// symbolic links inside and out of the root. Nothing changes it later.
class FileTree {
 public:
  FileTree() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/h2_connection_fuzz_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    root_ = tmpl;
    Write("empty", "");
    Write("1k.txt", Pattern(1024));
    Write("big.bin", Pattern(100 * 1024 + 123));
    mkdir((root_ + "/dir").c_str(), 0755);
    Write("dir/index.html", "<p>index</p>\n");
    mkdir((root_ + "/bare").c_str(), 0755);
    Write("bare/a.txt", "a\n");
    Write(".hidden", "secret\n");
    // Precompressed siblings (the /m/ mount looks for them): two for a
    // script, one for 1k.txt, a directory where big.bin's would be, and a
    // leftover older than its file.
    Write("app.js", std::string(3000, 'j'));
    Write("app.js.gz", "GZ");
    Write("app.js.br", "BR");
    Write("1k.txt.br", "BR1K");
    mkdir((root_ + "/big.bin.gz").c_str(), 0755);
    Write("old.txt", std::string(2000, 'o'));
    Write("old.txt.gz", "OLD");
    timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    if (utimensat(AT_FDCWD, (root_ + "/old.txt.gz").c_str(), old, 0) != 0) std::abort();
    if (mkfifo((root_ + "/fifo").c_str(), 0644) != 0 ||
        symlink("1k.txt", (root_ + "/inside").c_str()) != 0 ||
        symlink("/etc", (root_ + "/escape").c_str()) != 0) {
      std::abort();
    }
  }
  ~FileTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  const std::string& root() const { return root_; }

 private:
  static std::string Pattern(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    return s;
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(root_ + "/" + name, std::ios::binary | std::ios::trunc) << content;
  }

  std::string root_;
};

const std::string& FileRoot() {
  static const FileTree tree;
  return tree.root();
}

// File buffers: few, so that "other connections" can take them all.
constexpr size_t kFileBuffers = 3;
constexpr size_t kFileBufferBytes = 4096;

// ---------------------------------------------------------------- handlers

// What the routes' handlers, sinks and producers share with the driver: the
// input (they read what to do from its back as they are called, in the
// order the connection calls them) and what they saw.
struct Script {
  explicit Script(Input* input) : in(input) {}
  Input* in;
  int sinks_live = 0;
  // Each producer's last call gave nothing and asked to be called again
  // (the connection must have a deadline armed for its retry tick). Weak:
  // a producer goes with its stream.
  std::vector<std::weak_ptr<bool>> producers_waiting;
  std::vector<std::string> violations;
  uint8_t Byte() {
    const uint8_t b = in->Back();
    Trace("  (script: %02x)", b);
    return b;
  }
};

constexpr uint64_t kNoPromise = ~uint64_t{0};

// A FAST producer that writes what the input says, each call: its whole
// promise and done (what a spent input gives), nothing (asked again at the
// retry tick), a piece, pieces up to its room, more than it promised, done
// short of its promise, or a throw.
http::BodyProducer MakeProducer(Script* script, uint64_t promised) {
  auto written = std::make_shared<uint64_t>(0);
  auto waiting = std::make_shared<bool>(false);
  script->producers_waiting.push_back(waiting);
  return [script, written, waiting, promised](http::BodyOutput& out) -> bool {
    const uint8_t b = script->Byte();
    const uint64_t left = promised == kNoPromise ? 0 : promised - std::min(promised, *written);
    const uint64_t before = *written;
    auto put = [&out, &written](uint64_t n) {
      if (!out.Write(std::string(n, 'p'))) return false;
      *written += n;
      return true;
    };
    // Set below when it returns false having written nothing.
    *waiting = false;
    auto more = [&waiting, &written, before] {
      *waiting = *written == before;
      return false;
    };
    switch (b % 8) {
      case 0:  // done, as promised
        if (left > 0) (void)put(left);
        return true;
      case 1:  // nothing yet
        return more();
      case 2:  // a piece (within its promise)
        (void)put(promised == kNoPromise ? (b >> 3) * 37 + 1 : std::min<uint64_t>(left, (b >> 3) * 37 + 1));
        return more();
      case 3:  // pieces, as long as the connection has room
        for (int i = 0; i < 8 && out.room() > 0; ++i) {
          if (!put(std::min<size_t>(4096, out.room()))) break;
        }
        return more();
      case 4:
        throw std::runtime_error("producer");
      case 5:  // past its promise
        (void)put(left + 1 + (b >> 3));
        return more();
      case 6:  // done, short of a promise
        return true;
      default:  // a last piece, then done
        (void)put((b >> 3) + 1);
        return true;
    }
  };
}

// A FastStream route's sink; counts its calls (exactly one OnEnd or OnAbort).
class FuzzSink final : public router::BodySink {
 public:
  explicit FuzzSink(Script* script) : script_(script) { ++script_->sinks_live; }
  ~FuzzSink() override {
    --script_->sinks_live;
    if (!ended_ && !aborted_) script_->violations.push_back("a BodySink went without OnEnd or OnAbort");
  }
  void OnData(std::string_view piece) override {
    Expect("OnData");
    bytes_ += piece.size();
    const uint8_t b = script_->Byte();
    if (b % 16 == 1) throw std::runtime_error("sink data");
    if (b % 16 == 2) answer_now_ = true;  // seen enough: the rest is dropped
  }
  void OnEnd(const http::Request&, http::Response& resp) override {
    Expect("OnEnd");
    ended_ = true;
    const uint8_t b = script_->Byte();
    switch (b % 8) {
      case 1:
        throw std::runtime_error("sink end");
      case 2: {
        uint64_t promised = kNoPromise;
        if (b & 8) {
          promised = bytes_;
          resp.set_content_length(promised);
        }
        resp.Stream(MakeProducer(script_, promised));
        break;
      }
      case 3:
        resp.set_status(422);
        break;
      case 4:
        (void)resp.AddHeader("bad name", "x");  // refused: a 500
        break;
      default:
        resp.set_body("sink took " + std::to_string(bytes_) + "\n");
    }
  }
  void OnAbort() override {
    Expect("OnAbort");
    aborted_ = true;
  }
  bool answer_now() const override { return answer_now_; }

 private:
  void Expect(const char* call) {
    if (ended_ || aborted_) {
      script_->violations.push_back(std::string("a BodySink's ") + call + " after its " +
                                    (ended_ ? "OnEnd" : "OnAbort"));
    }
  }

  Script* script_;
  uint64_t bytes_ = 0;
  bool answer_now_ = false;
  bool ended_ = false;
  bool aborted_ = false;
};

// A before that answers 403 when the request says x-deny, an after that
// marks every answer it runs around.
router::Middleware Guard() {
  return router::Middleware{
      [](const http::Request& req, http::Response& resp) {
        if (req.FindHeader("x-deny").empty()) return router::Flow::kNext;
        resp.set_status(403);
        resp.set_body("denied\n");
        return router::Flow::kAnswered;
      },
      [](const http::Request&, http::Response& resp) { (void)resp.AddHeader("x-after", "1"); }};
}

router::Router Routes(Script* script) {
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
  // Static files: a plain mount, and one with middleware and listings.
  (void)r.Static("/files/", FileRoot());
  router::StaticOptions listed;
  listed.list_directories = true;
  listed.cache_control = "max-age=60";
  listed.precompressed = true;
  listed.middleware.push_back(Guard());
  (void)r.Static("/m/", FileRoot(), std::move(listed));
  // Streamed request bodies: a sink on the ring, and SLOW handlers that
  // read the pipe (run only once the body is whole or failed: they block).
  router::RouteOptions sink_options;
  sink_options.max_body_bytes = 4096;
  sink_options.middleware.push_back(Guard());
  (void)r.FastStream(
      "POST", "/sink",
      [script](const http::Request&) -> std::unique_ptr<router::BodySink> {
        const uint8_t b = script->Byte();
        if (b % 16 == 1) throw std::runtime_error("sink factory");
        if (b % 16 == 2) return nullptr;
        return std::make_unique<FuzzSink>(script);
      },
      sink_options);
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = 8192;
  (void)r.Slow(
      "POST", "/upload",
      [](const http::Request& req, http::Response& resp) {
        char buf[1000];
        uint64_t total = 0;
        long n;
        while ((n = req.ReadBody(buf, sizeof(buf))) > 0) total += static_cast<uint64_t>(n);
        if (n < 0) return;
        resp.set_body("read " + std::to_string(total) + "\n");
      },
      streamed);
  (void)r.Slow(
      "POST", "/upload-echo",
      [](const http::Request& req, http::Response& resp) {
        char buf[700];
        long n;
        while ((n = req.ReadBody(buf, sizeof(buf))) > 0) {
          if (!resp.Write(std::string_view(buf, static_cast<size_t>(n)))) return;
        }
        (void)resp.AddTrailer("x-echoed", "1");
      },
      streamed);
  // A FAST producer that does what the input says.
  (void)r.Fast("GET", "/produce", [script](const http::Request&, http::Response& resp) {
    const uint8_t b = script->Byte();
    if ((b & 0x30) == 0x30) throw std::runtime_error("before its producer");
    uint64_t promised = kNoPromise;
    if (b & 1) {
      promised = uint64_t{script->Byte()} * 61;
      resp.set_content_length(promised);
    }
    if (b & 2) (void)resp.AddTrailer("x-produced", "yes");
    if (b & 4) resp.set_content_type("text/plain");
    if (b & 8) resp.set_status(b & 64 ? 304 : 204);
    if (b & 128) (void)resp.AddHeader("bad name", "x");  // refused: a 500
    resp.Stream(MakeProducer(script, promised));
  });
  return r;
}

// ---------------------------------------------------------------- the client

const char* const kPaths[] = {
    "/hello", "/echo", "/big", "/throw", "/slow", "/x/../hello", "/stream", "*",
    "/files/empty", "/files/1k.txt", "/files/big.bin", "/files/dir/", "/files/dir",
    "/files/missing", "/files/escape", "/files/.hidden", "/m/bare/", "/m/1k.txt",
    "/files/inside", "/files/fifo", "/sink", "/upload", "/produce", "/files/",
    "/m/dir/", "/files/big.bin?v=1", "/m/big.bin", "/upload-echo", "/files/%2e%2e/x",
    "/files/dir/index.html", "/files/1k.txt/", "/m/escape/", "/files/a%2Fb", "/files/%5c.txt",
    "/files/dir/../1k.txt", "/m/", "/m/app.js", "/m/old.txt", "/files/app.js"};
constexpr size_t kPathCount = sizeof(kPaths) / sizeof(kPaths[0]);
const char* const kMethods[] = {"GET", "POST", "HEAD", "DELETE", "OPTIONS", "PUT", "CONNECT", "GET"};
const char* const kRanges[] = {"bytes=0-99", "bytes=1000-", "bytes=-10", "bytes=5000-6000",
                               "bytes=0-0,5-9", "bytes=99999-", "bytes=abc", "bytes=4000-70000"};
const char* const kConditions[][2] = {
    {"if-none-match", "*"},
    {"if-modified-since", "Sun, 01 Jan 2090 00:00:00 GMT"},
    {"if-unmodified-since", "Thu, 01 Jan 1970 00:00:00 GMT"},
    {"if-match", "\"nope\""},
    {"if-range", "\"old\""},
    {"if-none-match", "\"x\", W/\"y\""},
    {"if-modified-since", "garbage"},
    {"if-match", "*"}};

// The base64url (no padding) of `bytes`, as HTTP2-Settings carries it.
std::string Base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = acc << 8 | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

// An HTTP/1 request with Upgrade: h2c, as HTTP/1 hands it over (views into
// this object, which outlives the handoff).
struct Upgrade {
  std::string method, target, host = "h", settings;
  std::string payload;  // the SETTINGS payload, when `settings` is base64url of one
  bool encoded = false;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<http::Header> headers;
  conn::UpgradeRequest request;

  void Read(Input& in) {
    const uint8_t m = in.Byte();
    method = m % 4 == 1 ? "HEAD" : m % 4 == 2 ? "OPTIONS" : m % 4 == 3 ? "POST" : "GET";
    target = kPaths[in.Byte() % kPathCount];
    const uint8_t s = in.Byte();
    if (s % 4 == 0) {
      // Not a SETTINGS payload in base64url.
      static const char* const kBad[] = {"!!!!", "AAMAAABk$", "A", "AAMAAABkAA", "====",
                                         "AAMAAABk=AAA", "AAQAAP__AAEAAA", "AAIAAAAC"};
      settings = kBad[(s >> 2) % 8];
    } else {
      // Entries of ids and values the input picks (some out of range).
      const int entries = (s >> 2) % 4;
      for (int i = 0; i < entries; ++i) {
        const uint8_t id = 1 + in.Byte() % 7;
        const uint32_t value = uint32_t{in.Byte()} << 24 | uint32_t{in.Byte()} << 8 | in.Byte();
        const char entry[6] = {0, static_cast<char>(id), static_cast<char>(value >> 24),
                               static_cast<char>(value >> 16), static_cast<char>(value >> 8),
                               static_cast<char>(value)};
        payload.append(entry, sizeof(entry));
      }
      settings = Base64Url(payload);
      encoded = true;
    }
    fields = {{"Host", host},
              {"Connection", "Upgrade, HTTP2-Settings"},
              {"Upgrade", "h2c"},
              {"HTTP2-Settings", settings},
              {"User-Agent", "fuzz"}};
    if (m & 4) fields.push_back({"Accept-Encoding", "gzip"});
    if (m & 8) fields.push_back({"Range", kRanges[(m >> 4) % 8]});
    if (m & 128) fields.push_back({"X-Deny", "1"});
    for (const auto& [name, value] : fields) headers.push_back({name, value});
    request.method = method;
    request.target = target;
    request.host = host;
    request.headers = headers.data();
    request.num_headers = headers.size();
    request.settings = settings;
  }
};

// What a client sends, scripted by the input through nghttp2's client (its
// connection preface first). After an upgrade that it can take too, its
// stream 1 is the upgraded request's.
std::string ScriptedClient(Input& in, const Upgrade* upgrade) {
  nghttp2_session_callbacks* cb;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session* client;
  nghttp2_session_client_new(&client, cb, nullptr);
  nghttp2_session_callbacks_del(cb);
  if (upgrade != nullptr && upgrade->encoded) {
    (void)nghttp2_session_upgrade2(client,
                                   reinterpret_cast<const uint8_t*>(upgrade->payload.data()),
                                   upgrade->payload.size(), upgrade->method == "HEAD", nullptr);
  }
  nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0);
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
      const uint8_t how = in.Byte();
      const std::string method = kMethods[how % 8];
      const std::string path = kPaths[in.Byte() % kPathCount];
      const std::string big(static_cast<size_t>(in.Byte()) * 64, 'h');
      std::vector<nghttp2_nv> nv;
      std::vector<std::string> texts;  // what nv points into
      texts.reserve(32);
      auto add = [&nv, &texts](std::string n, std::string v) {
        texts.push_back(std::move(n));
        const std::string& name = texts.back();
        texts.push_back(std::move(v));
        const std::string& value = texts.back();
        nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                      value.size(), NGHTTP2_NV_FLAG_NONE});
      };
      add(":method", method);
      if (method != "CONNECT") {
        add(":scheme", "http");
        add(":path", path);
      }
      add(":authority", "h");
      add("x-fill", big);
      static constexpr const char* kEncodings[] = {"gzip", "br", "gzip, br, zstd",
                                                   "zstd, gzip;q=0"};
      if (op & 8) add("accept-encoding", kEncodings[(how >> 3) & 3]);
      if (op & 16) add("range", kRanges[in.Byte() % 8]);
      if (op & 32) {
        const auto& c = kConditions[in.Byte() % 8];
        add(c[0], c[1]);
      }
      if (how & 64) add("x-deny", "1");
      if (how & 128) add("expect", "100-continue");
      // Each body lives until the client is gone: its DATA frames may
      // leave steps later, as the window opens.
      auto& source = sources.emplace_back(std::make_unique<Source>());
      source->body.assign(static_cast<size_t>(in.Byte()) * 257, 'd');
      if (op & 128) {
        // The body's length, or (without a body, or if the input says) more
        // than any limit.
        const bool lie = source->body.empty() || (how & 32);
        add("content-length", lie ? "70000" : std::to_string(source->body.size()));
      }
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
      if (op & 16) {
        // More room for the server's answers (0: the connection's).
        const int32_t stream = (op & 32) ? 1 + 2 * (in.Byte() % 8) : 0;
        nghttp2_submit_window_update(client, NGHTTP2_FLAG_NONE, stream,
                                     (int32_t{in.Byte()} + 1) * 4096);
      } else {
        nghttp2_submit_ping(client, NGHTTP2_FLAG_NONE, nullptr);
      }
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

// ---------------------------------------------------------------- the driver

// Errors a file operation may fail with.
constexpr int kFileErrors[] = {ENOENT, EACCES, EIO,    ENOTDIR, ELOOP,     EXDEV, EMFILE, EPERM,
                               EINTR,  EAGAIN, ENOMEM, EINVAL,  ECANCELED, EBADF, ENFILE, ENAMETOOLONG};

class Driver {
 public:
  explicit Driver(Input& in) : in_(in), script_(&in), router_(Routes(&script_)) {
    config_.limits.max_body_bytes = 16 * 1024;
    config_.limits.max_header_bytes = 4096;
    config_.idle_timeout_ms = 1000;
    // A small request pipe: a streamed body fills it, waits, and is fed
    // again at the worker's message.
    config_.request_pipe_bytes = 1024;
    config_.compression.min_bytes = 16;
    env_.config = &config_;
    env_.router = &router_;
    env_.transport = &host_;
    env_.host = &host_;
    env_.stats = &stats_;
    env_.unmatched_route = static_cast<uint32_t>(router_.size());
    env_.now_tick = 1000;
    // The loop's file machinery: few buffers, a small cache that
    // revalidates soon, keeps 1 KiB files in memory, not two of them.
    // Two entries: two answers reading files hold them all.
    auto arena = io::Arena::Create(kFileBuffers * kFileBufferBytes + 4096);
    FUZZ_CHECK(arena.ok());
    file_arena_ = *std::move(arena);
    FUZZ_CHECK(file_buffers_.Init(file_arena_, kFileBufferBytes, kFileBuffers).ok());
    files::OpenFileCacheLimits limits;
    limits.max_entries = 2;
    limits.valid_ticks = 3;
    limits.max_content_bytes = 2000;
    limits.max_content_file = 1500;
    file_cache_.emplace(&closer_, limits);
    env_.file_cache = &*file_cache_;
    env_.file_closer = &closer_;
    env_.file_buffers = &file_buffers_;
  }

  void Run() {
    const uint8_t mode = in_.Byte();
    config_.compression.enabled = (mode & 8) != 0;
    env_.has_workers = (mode & 16) == 0;  // without: SLOW handlers run inline
    std::optional<Upgrade> upgrade;
    if (mode & 4) {
      upgrade.emplace();
      upgrade->Read(in_);
      // HTTP2-Settings that do not decode are answered 400, and nothing
      // follows it (corpus: upgrade_400_then_frames).
      wire_.ExpectHttp1Head();
    }
    // The client's bytes: with the preface, as HTTP/1 saw it (nghttp2's
    // client sends it itself).
    const std::string bytes = (mode & 1) ? ScriptedClient(in_, upgrade ? &*upgrade : nullptr)
                                         : std::string(http1::kHttp2Preface) + in_.Rest();
    // The first part came to HTTP/1, which handed it over (all of the
    // preface, unless the request before it was an upgrade).
    const size_t least = upgrade ? 0 : http1::kHttp2Preface.size();
    const size_t first = std::min(bytes.size(), least + in_.Byte());
    conn::Handoff handoff;
    handoff.bytes = std::string_view(bytes).substr(0, first);
    handoff.recv_armed = (mode & 2) != 0;
    handoff.upgrade = upgrade ? &upgrade->request : nullptr;
    host_.recv_armed = handoff.recv_armed;
    http::ClientAddress client;
    Trace("open: mode %02x, %zu client bytes, %zu handed over%s", mode, bytes.size(), first,
          upgrade ? (" by an upgrade, HTTP2-Settings " + upgrade->settings).c_str() : "");
    conn_.Open(&env_, 0, handoff, client);
    Check();
    size_t pos = first;
    int rounds = 0;
    while (!host_.closed && rounds++ < 4000) {
      const uint8_t op = in_.empty() ? 0 : in_.Byte();
      Event(op, bytes, pos);
      if (host_.batch_end_due && (op & 0x80) == 0) EndBatch();
      Check();
      if (pos >= bytes.size() && in_.empty() && !host_.send.has_value() && !host_.closed &&
          host_.recv_armed) {
        EndPeer(0);
      }
      // Spent, and no byte can be delivered any more: the end.
      if (in_.empty() && (pos >= bytes.size() || !host_.recv_armed)) break;
    }
    // The end: the input is spent. What is in flight completes, the
    // workers finish, the peer goes.
    for (int i = 0; i < 20000 && !host_.closed; ++i) {
      if (host_.shutdown_pending) {
        ShutdownDone();
      } else if (host_.file_op.has_value()) {
        CompleteFileOp(0);
      } else if (!host_.tasks.empty()) {
        WorkerStep(0, /*finish=*/true);
      } else if (!dones_.empty() || !notifies_.empty()) {
        Deliver(!dones_.empty() ? 0 : 16);
      } else if (host_.batch_end_due) {
        EndBatch();
      } else if (!CompleteSend(SIZE_MAX)) {
        break;
      }
      Check();
    }
    if (!host_.closed) {
      EndPeer(0);
      while (!host_.closed && CompleteSend(SIZE_MAX)) Check();
      if (!host_.closed) {
        Trace("abort");
        conn_.Abort();
      }
      ShutdownDone();
    }
    Finish();
  }

 private:
  void Event(uint8_t op, const std::string& bytes, size_t& pos) {
    switch (op % 16) {
      case 0:
      case 1:
      case 2:  // bytes, if a receive is armed (else a send completes)
        if (pos < bytes.size() && host_.recv_armed) {
          const size_t n = std::min(bytes.size() - pos, size_t{1} + op * 7);
          std::string copy = bytes.substr(pos, n);  // the provided buffer
          Trace("recv %zu", n);
          conn_.OnRecv(copy.data(), copy.size(), /*ended=*/false);
          pos += n;
        } else {
          CompleteSend(SIZE_MAX);
        }
        break;
      case 3:
        CompleteSend(op);  // short
        break;
      case 4:
        if (host_.send.has_value()) {
          Trace("send fails");
          host_.send.reset();
          wire_.Stop();
          conn_.OnSend(-EPIPE, false);
        }
        break;
      case 5:  // the deadline passes
        env_.now_tick = std::max(env_.now_tick + 1, host_.deadline);
        Trace("deadline, tick %llu", static_cast<unsigned long long>(env_.now_tick));
        conn_.OnDeadline();
        break;
      case 6:
        Trace("drain");
        env_.draining = true;
        conn_.OnDrain();
        break;
      case 7:
        if (host_.recv_armed) {
          const int res = op & 16 ? -ENOBUFS : op & 32 ? -ECONNRESET : 0;
          Trace("receive ends: %d", res);
          host_.recv_armed = false;
          conn_.OnRecvEnd(res);
          if (res == -ENOBUFS) conn_.OnBuffersAvailable();
        }
        break;
      case 8:
      case 9:
      case 10:  // the file operation in flight completes (fails, reads short)
        CompleteFileOp(op);
        break;
      case 11:  // a worker's step
        WorkerStep(op, /*finish=*/false);
        break;
      case 12:  // a worker's message arrives
        Deliver(op);
        break;
      case 13:  // other connections take file buffers, or give them back
        if (op & 16) {
          if (file_buffers_.available() > 0) stolen_.push_back(file_buffers_.Acquire());
          Trace("file buffer taken elsewhere (%zu)", stolen_.size());
        } else {
          ReturnStolen();
        }
        break;
      case 14: {  // the clock ticks
        env_.now_tick += 1 + (op >> 4);
        Trace("tick %llu", static_cast<unsigned long long>(env_.now_tick));
        if (host_.deadline != 0 && env_.now_tick >= host_.deadline) conn_.OnDeadline();
        break;
      }
      case 15:
        if ((op >> 4) >= 12) {
          Trace("abort");
          conn_.Abort();
        } else if ((op >> 4) >= 8) {
          host_.refuse_tasks = !host_.refuse_tasks;  // the workers' queue fills, or empties
          Trace("the workers' queue is %s", host_.refuse_tasks ? "full" : "open");
        } else if ((op >> 4) >= 4) {
          ShutdownDone();
        } else if (host_.batch_end_due) {
          EndBatch();
        }
        break;
    }
  }

  void EndBatch() {
    host_.batch_end_due = false;
    conn_.OnBatchEnd();
  }
  // Our FIN went (a connection that lingers before its close).
  void ShutdownDone() {
    if (!host_.shutdown_pending) return;
    Trace("shutdown done");
    host_.shutdown_pending = false;
    host_.shutdown_done = true;
    conn_.OnShutdownDone();
  }
  // The connection sent its FIN, or is about to: it lingers (reads until
  // the client's FIN or a timeout), its streams gone.
  bool Lingering() const { return host_.shutdown_pending || host_.shutdown_done; }
  void EndPeer(int res) {
    if (!host_.recv_armed) return;
    Trace("peer ends");
    host_.recv_armed = false;
    conn_.OnRecvEnd(res);
  }
  bool CompleteSend(size_t n) {
    if (!host_.send.has_value()) return false;
    FUZZ_CHECK(host_.Intact(*host_.send));
    const size_t len = host_.send->bytes.size();
    const size_t done = std::min(len, std::max<size_t>(n, 1));
    wire_.Feed(std::string_view(host_.send->bytes).substr(0, done));
    host_.send.reset();
    Trace("sent %zu of %zu", done, len);
    conn_.OnSend(static_cast<int>(done), false);
    return true;
  }
  void ReturnStolen() {
    for (char* b : stolen_) file_buffers_.Release(b);
    if (!stolen_.empty()) Trace("file buffers given back");
    stolen_.clear();
  }

  // ---- files

  // Carries out the file operation in flight as the ring would (regular
  // descriptors stand in for direct ones), or fails it with an errno
  // (op % 16 == 9), or reads short (10): what the input says.
  void CompleteFileOp(uint8_t op) {
    if (!host_.file_op.has_value()) return;
    const FakeHost::FileOp f = *host_.file_op;
    host_.file_op.reset();
    const bool fail = op % 16 == 9;
    const int error = -kFileErrors[op >> 4];
    switch (f.kind) {
      case FakeHost::FileOp::kStat: {
        const int res = fail ? error
                        : ::statx(f.dir_fd, f.path.c_str(), 0,
                                  STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME |
                                      STATX_CTIME | STATX_INO,
                                  f.stx) == 0
                            ? 0
                            : -errno;
        Trace("statx %s: %d", f.path.c_str(), res);
        conn_.OnFileStat(res);
        break;
      }
      case FakeHost::FileOp::kOpen: {
        int res = error;
        if (!fail) {
          open_how how{};
          // (O_NONBLOCK: a FIFO opened by mistake does not hang the fuzzer.)
          how.flags = f.check_only ? O_PATH : O_RDONLY | O_NOCTTY | O_NONBLOCK;
          how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
          const long fd = syscall(SYS_openat2, f.dir_fd, f.path.c_str(), &how, sizeof(how));
          res = fd >= 0 ? static_cast<int>(fd) : -errno;
          if (res >= 0) closer_.open.insert(res);
        }
        Trace("openat2 %s%s: %d", f.path.c_str(), f.check_only ? " (O_PATH)" : "", res);
        conn_.OnFileOpen(res);
        break;
      }
      case FakeHost::FileOp::kRead: {
        if (closer_.open.count(f.file_index) == 0) {
          host_.violations.push_back("a read of a descriptor that is not open");
        }
        if (InPool(f.buf)) {
          // Only this read may hold its buffer: it must not be free now.
          std::vector<char*> free_now;
          while (file_buffers_.available() > 0) free_now.push_back(file_buffers_.Acquire());
          for (char* b : free_now) {
            if (b == f.buf) host_.violations.push_back("a file buffer back in its pool while read into");
            file_buffers_.Release(b);
          }
        }
        uint32_t len = f.len;
        if (op % 16 == 10) len = static_cast<uint32_t>(uint64_t{len} * (op >> 4) / 16);
        const ssize_t n = ::pread(f.file_index, f.buf, len, static_cast<off_t>(f.offset));
        const int res = fail ? error : n >= 0 ? static_cast<int>(n) : -errno;
        Trace("read %u of %u at %llu: %d", len, f.len, static_cast<unsigned long long>(f.offset),
              res);
        conn_.OnFileRead(res);
        break;
      }
      default:
        host_.violations.push_back("a socket file operation over HTTP/2");
        break;
    }
  }
  bool InPool(const char* p) const {
    return p >= file_buffers_.base() && p < file_buffers_.base() + file_buffers_.bytes();
  }

  // ---- workers

  // A step of the task the input names (the oldest by default). A task
  // with a buffered body runs its handler (which never blocks: the answers
  // fit in the pipe). A streamed body's task is a worker the input plays:
  // it reads some of the pipe, writes a piece of a streamed answer (in
  // small pieces: the 256 KiB response pipe never fills), returns before
  // the body's end (its handler may throw, before or after the answer's
  // head), or runs its handler once the body is whole or failed (its reads
  // do not block then). `finish`: it returns.
  void WorkerStep(uint8_t op, bool finish) {
    if (host_.tasks.empty()) return;
    const size_t i = (op >> 4) % host_.tasks.size();
    worker::TaskBuffer* task = host_.tasks[i].buffer;
    worker::BodyPipe* body = task->request_body;
    auto live = answers_.find(task);
    const bool playing = live != answers_.end();
    const bool whole = body == nullptr || body->finished() || body->aborted();
    if (!playing && whole) return RunHandler(i);
    const uint8_t how = finish ? 2 : in_.Byte();
    http::Response& resp = task->response;
    switch (how % 4) {
      case 1: {  // writes a piece of a streamed answer (its head first)
        if (!playing) {
          live = answers_
                     .emplace(task,
                              std::make_unique<worker::PipeResponseStream>(task, kNoCompression))
                     .first;
          if (how & 8) resp.set_content_length(16);  // kept, or not
        }
        const bool ok = live->second->Write(resp, std::string(1 + (how >> 4) * 4, 'w'));
        Trace("worker writes a piece of its answer: %s", ok ? "taken" : "refused");
        NotifyDue(task);
        return;
      }
      case 2: {  // returns (its handler throws if the input says)
        std::unique_ptr<worker::PipeResponseStream> stream;
        if (playing) {
          stream = std::move(live->second);
          answers_.erase(live);
        }
        if (stream != nullptr && stream->started()) {
          if (how & 16) stream->Break();  // as WorkerPool::RunTask does
          stream->Finish(resp);
        } else if (how & 16) {
          resp.Clear();
          resp.set_status(500);
        } else {
          resp.set_body("enough\n");
        }
        Trace("worker returns%s", how & 16 ? " (its handler threw)" : "");
        NotifyDue(task);
        dones_.push_back(task->stream);
        task->state.store(worker::TaskBuffer::kDone, std::memory_order_release);
        host_.tasks.erase(host_.tasks.begin() + static_cast<long>(i));
        return;
      }
      default:  // reads some (or, the body whole, runs its handler)
        if (how % 4 == 3 && !playing && whole) return RunHandler(i);
        if (whole) return;
        std::string buf(size_t{in_.Byte()} * 16 + 1, '\0');
        const size_t n = body->Read(buf.data(), buf.size());
        Trace("worker reads %zu of the body", n);
        if (n > 0 && body->TakeNotify()) NotifyDue(task);
        return;
    }
  }
  void RunHandler(size_t i) {
    const FakeHost::Task t = host_.tasks[i];
    host_.tasks.erase(host_.tasks.begin() + static_cast<long>(i));
    worker::SlowTask task;
    task.route = t.route;
    task.buffer = t.buffer;
    Trace("worker runs %s %s", t.route->method.c_str(), t.route->path.c_str());
    const uint32_t stream = t.buffer->stream;
    NotifyDue(t.buffer);
    worker::WorkerPool::RunTask(task, config_.limits, config_.compression);
    dones_.push_back(stream);
  }
  // A worker's progress on its task's stream: one message on its way (the
  // real ones may be more; what one does, several do).
  void NotifyDue(const worker::TaskBuffer* task) {
    if (std::find(notifies_.begin(), notifies_.end(), task->stream) == notifies_.end()) {
      notifies_.push_back(task->stream);
    }
  }
  // A worker's message: progress on a stream, or a task's completion, each
  // naming the stream its task was for (TaskBuffer::stream), in an order
  // the input picks.
  void Deliver(uint8_t op) {
    std::vector<uint32_t>& list = ((op & 16) || dones_.empty()) && !notifies_.empty()
                                      ? notifies_ : dones_;
    if (list.empty()) return;
    const size_t i = (op >> 5) % list.size();
    const uint32_t stream = list[i];
    list.erase(list.begin() + static_cast<long>(i));
    if (&list == &notifies_) {
      Trace("stream %u notify", stream);
      conn_.OnStreamNotify(stream);
    } else {
      Trace("stream %u task done", stream);
      conn_.OnTaskDone(stream);
    }
  }

  // ---- checks

  void Check() {
    const std::vector<std::string>* lists[] = {&host_.violations, &script_.violations,
                                               &wire_.violations(), &closer_.errors};
    for (const auto* list : lists) {
      if (!list->empty()) {
        std::fprintf(stderr, "violation: %s\n", list->front().c_str());
        FUZZ_CHECK(list->empty());
      }
    }
    // The kernel or a worker still writes into the connection's memory.
    if (host_.file_op.has_value() || !host_.tasks.empty() || !dones_.empty()) {
      FUZZ_CHECK(!conn_.Freeable());
    }
    // Every file buffer is in the pool, in the read in flight, or elsewhere.
    const bool reading = host_.file_op.has_value() &&
                         host_.file_op->kind == FakeHost::FileOp::kRead && InPool(host_.file_op->buf);
    FUZZ_CHECK(file_buffers_.available() + stolen_.size() + (reading ? 1 : 0) == kFileBuffers);
    FUZZ_CHECK(file_buffers_.heap_fallbacks() == 0);
    // No stream is logged as answered twice.
    FUZZ_CHECK(host_.done.size() <= stats_.requests.Get());
    if (!host_.closed && !Lingering() && host_.recv_armed && !host_.send.has_value() &&
        !host_.file_op.has_value() && host_.tasks.empty() && dones_.empty() && host_.deadline == 0) {
      // Nothing of ours is out, only the client can move: a timer must be
      // armed (idle, stall, a retry, a stream's body timeout), or a client
      // holds the connection for ever (corpus: stream_waits_without_deadline).
      std::fprintf(stderr, "violation: the connection waits for the client, no deadline armed "
                           "(%zu streams open)\n", conn_.open_streams());
      FUZZ_CHECK(host_.deadline != 0);
    }
    if (!host_.closed && !Lingering()) {
      // A producer that had nothing is asked again at a tick: one is armed.
      for (const auto& weak : script_.producers_waiting) {
        const std::shared_ptr<bool> waiting = weak.lock();
        if (waiting != nullptr && *waiting && host_.deadline == 0) {
          std::fprintf(stderr, "violation: a producer waits for a retry, no deadline armed\n");
          FUZZ_CHECK(host_.deadline != 0);
        }
      }
    }
    // After the close nothing new starts (Freeable would wait for it).
    if (host_.closed && !closed_seen_) {
      closed_seen_ = true;
      file_ops_at_close_ = host_.file_ops;
      dispatched_at_close_ = stats_.slow_dispatched.Get();
    } else if (host_.closed && (host_.file_ops != file_ops_at_close_ ||
                                stats_.slow_dispatched.Get() != dispatched_at_close_)) {
      std::fprintf(stderr, "violation: a file operation or a task started after the close\n");
      FUZZ_CHECK(host_.file_ops == file_ops_at_close_);
      FUZZ_CHECK(stats_.slow_dispatched.Get() == dispatched_at_close_);
    }
  }

  // The close was issued: what it cancelled completes, then the close;
  // then what the kernel and the workers hold, in the order the input says.
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
    Trace("closed");
    conn_.OnClosed();
    Check();
    for (int i = 0; i < 10000 && (host_.file_op.has_value() || !host_.tasks.empty() ||
                                  !dones_.empty() || !notifies_.empty());
         ++i) {
      const uint8_t op = in_.Byte();
      switch (op % 4) {
        case 0:
          if (host_.file_op.has_value()) {
            static constexpr uint8_t kHow[] = {8, 9, 10, 8};  // whole, fails, short
            CompleteFileOp(static_cast<uint8_t>((op & 0xf0) | kHow[(op >> 2) & 3]));
            break;
          }
          [[fallthrough]];
        case 1:
          if (!host_.tasks.empty()) {
            WorkerStep(op, /*finish=*/true);
            break;
          }
          [[fallthrough]];
        default:
          if (!dones_.empty() || !notifies_.empty()) {
            Deliver(op);
          } else if (host_.file_op.has_value()) {
            CompleteFileOp(0);
          }
      }
      Check();
    }
    FUZZ_CHECK(conn_.Freeable());
    conn_.Release();
    Check();
    // Everything the connection held is back.
    ReturnStolen();
    FUZZ_CHECK(file_buffers_.available() == kFileBuffers);
    FUZZ_CHECK(script_.sinks_live == 0);
    CheckCacheUnreferenced();
    file_cache_.reset();
    env_.file_cache = nullptr;
    if (!closer_.open.empty()) {
      std::fprintf(stderr, "violation: %zu descriptors never closed\n", closer_.open.size());
      FUZZ_CHECK(closer_.open.empty());
    }
    Check();
    Trace("released: %zu frames, %zu streams answered", wire_.frames(), wire_.answered());
  }

  // No reader holds an entry: none out of the table (open_entries counts
  // those too), and every one in it can be evicted, which the cache does
  // only for entries nobody reads. Fresh entries (descriptors of /dev/null)
  // fill it: afterwards it holds them alone, or one it kept was still read.
  void CheckCacheUnreferenced() {
    files::OpenFileCache& cache = *file_cache_;
    if (cache.stats().open_entries != cache.size()) {
      std::fprintf(stderr, "violation: a cache entry out of the table still referenced\n");
      FUZZ_CHECK(cache.stats().open_entries == cache.size());
    }
    const size_t n = cache.limits().max_entries;
    constexpr uint32_t kMount = 1000;  // no mount's index
    bool all_in = true;
    for (size_t i = 0; i < n; ++i) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      FUZZ_CHECK(fd >= 0);
      files::FileVersion v;
      if (cache.Insert(kMount, std::to_string(i), fd, v, env_.now_tick) == nullptr) {
        ::close(fd);
        all_in = false;
        continue;
      }
      closer_.open.insert(fd);
    }
    for (size_t i = 0; i < n; ++i) {
      bool fresh = false;
      all_in = all_in && cache.Find(kMount, std::to_string(i), env_.now_tick, &fresh) != nullptr;
    }
    if (!all_in) {
      std::fprintf(stderr, "violation: a cache entry still referenced after the release\n");
      FUZZ_CHECK(all_in);
    }
  }

  Input& in_;
  Script script_;
  router::Router router_;
  exchange::ConnectionConfig config_;
  exchange::ConnectionStats stats_;
  FakeHost host_;
  // The loop's file machinery (the closer outlives the cache, which closes
  // what it holds when it goes).
  http1::testing::FdCloser closer_;
  io::Arena file_arena_;
  io::ChunkPool file_buffers_;
  std::optional<files::OpenFileCache> file_cache_;
  std::vector<char*> stolen_;  // file buffers "other connections" hold
  exchange::ConnectionEnv env_;
  // Streamed answers the simulated workers are writing, by task.
  std::map<worker::TaskBuffer*, std::unique_ptr<worker::PipeResponseStream>> answers_;
  std::vector<uint32_t> notifies_;  // workers' progress messages on their way: their streams
  std::vector<uint32_t> dones_;     // tasks' completions on their way: their streams
  bool closed_seen_ = false;
  int file_ops_at_close_ = 0;
  uint64_t dispatched_at_close_ = 0;
  testing::ServerFrames wire_;
  Connection conn_;  // last: destroyed first
};

}  // namespace
}  // namespace uring_http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::http2::Input in(data, size);
  uring_http::http2::Driver driver(in);
  driver.Run();
  return 0;
}
