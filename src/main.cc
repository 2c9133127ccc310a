// The shipped server: the reference design's two endpoints on the library,
// and a few more for tests and benchmarks of bodies.
//
//   GET /test/fast     200, answered inline on the accept thread
//   GET /test/slow     200 after --slow-duration ms on a worker thread
//   GET /test/sleep?ms=N  200 after N ms (default --slow-duration, at most
//                      60000) on a ring timer: an ASYNC handler, no thread
//                      held while it waits
//   GET /test/events?count=N&interval_ms=M  N server-sent events (at most
//                      1000000, default 10) M ms apart (at most 60000,
//                      default 1000), then the end: ASYNC, no thread held
//   GET /test/bytes?N  200 with an N-byte body (N <= 1 MiB), for measuring
//                      large responses (--send-zc) with wrk
//   POST /test/echo    the request body back (any framing, buffered, up to
//                      --max-body-bytes), with Content-Length
//   POST /test/sink    a streamed body of any size, read on a worker and
//                      discarded; answered with its length
//   POST /test/count   the same on the ring thread (a FAST BodySink): what
//                      the worker's share of /test/sink costs
//   GET /test/text?N   200 with the first N bytes (N <= 1 MiB) of a fixed
//                      text/plain prose, for measuring --gzip=on
//   GET /test/stream?bytes=N&chunk=M  N bytes written on a worker in M-byte
//                      writes (default 16384): chunked, or close-delimited
//                      for HTTP/1.0
//   GET /test/ws       a WebSocket (RFC 6455) that echoes each text and
//                      binary message: what outside suites (Autobahn) drive
//   GET /test/ws/topic?name=T[&subscribe=0]  a WebSocket subscribed to topic
//                      T (1 to 64 bytes, default "default") unless
//                      subscribe=0; each message it sends is published to
//                      T, its sender included when subscribed: pub/sub
//                      fan-out (perf/compare_ws --fanout)
//   GET/HEAD anything else: with --root=DIR, the files under DIR (hidden
//                      ones only with --static-dotfiles=allow)
//
// Run: bazel run //src:server -- --workers=300
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <algorithm>
#include <any>
#include <cstdint>
#include <memory>
#include <cstdio>
#include <string_view>
#include <thread>

#include "src/async/exchange.h"
#include "src/http/sse.h"
#include "src/serving/options.h"
#include "src/serving/server.h"
#include "src/serving/systemd_notify.h"
#include "src/ws/sender.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;

// A /test/ws/topic socket: its topic, and whether it gets what is published.
struct TopicMember {
  std::string name;
  bool subscribed;
};

// `name`=<decimal> in a query string. Absent: `required` decides. A value
// that is not a plain decimal below 2^62 is an error.
bool ParseQueryNumber(std::string_view query, std::string_view name, uint64_t* value,
                      bool required) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    const std::string_view digits = pair.substr(eq + 1);
    if (digits.empty() || digits.size() > 18) return false;
    uint64_t n = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    *value = n;
    return true;
  }
  return !required;
}

// /test/events' ?name=N (at most 7 digits, and `max`); absent: *out is
// left as it is. (Plain functions, not the handler's lambdas: see below.)
bool TestQueryNumber(const Request& request, std::string_view name, uint64_t max, uint64_t* out) {
  const auto q = request.QueryParam(name);
  if (!q.present()) return true;
  uint64_t n = 0;
  bool ok = !q.value().empty() && q.value().size() <= 7;
  for (char ch : q.value()) {
    ok = ok && ch >= '0' && ch <= '9';
    n = n * 10 + static_cast<uint64_t>(ch - '0');
  }
  *out = n;
  return ok && n <= max;
}

// /test/events' event `i` ("id: i", "data: event i"), in the thread's
// scratch: valid until the next call on this thread, which is long enough
// for Exchange::Write (it copies what it is given before it suspends).
// Apart from the handler, which is a coroutine: what a coroutine declares
// is kept in its frame (and what that holds of the heap) for the stream's
// whole life; what a plain call uses, only while it runs.
std::string_view TestEvent(uint64_t i) {
  thread_local std::string text;
  const std::string id = std::to_string(i);
  text.clear();
  (void)uring_http::http::AppendEvent(&text, {.id = id, .data = "event " + id});
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  namespace serving = uring_http::serving;
  // The flags of this program rather than of the server: the test routes'
  // -D, the one static mount, and running as a daemon with a pid file.
  serving::Flags flags(
      "uring-http: an io_uring HTTP/1.1, HTTP/2 and WebSocket server (event loop + worker "
      "threads). Endpoints: GET /test/fast (200, inline), GET /test/slow (200 after "
      "--slow-duration on a worker), GET /test/sleep?ms=N (200 after N ms on a ring timer, no "
      "thread held), GET /test/events?count=N&interval_ms=M (server-sent events), GET "
      "/test/bytes?N, GET /test/text?N, POST /test/echo (the body back), POST /test/sink and "
      "/test/count (a streamed body of any size, answered with its length), GET "
      "/test/stream?bytes=N&chunk=M (streamed from a worker), WebSockets /test/ws (echo) and "
      "/test/ws/topic?name=T (publish/subscribe); with --root, files.");
  flags.Section("This program");
  uint32_t slow_ms = 30;
  flags.Add("slow-duration", &slow_ms, "What GET /test/slow sleeps on a worker, in ms", 0u,
            3'600'000u)
      .Short('D')
      .Value("MS");
  std::string root;
  flags
      .AddParsed(
          "root", "DIR", "Serve DIR for every GET/HEAD path no route claims",
          [&root](std::string_view text) -> absl::Status {
            if (text.empty()) return absl::InvalidArgumentError("expected a directory");
            root = std::string(text);
            return absl::OkStatus();
          },
          [&root] { return root.empty() ? std::string("none") : root; });
  std::string dotfiles = "deny";
  flags.AddChoice("static-dotfiles", &dotfiles, {"deny", "allow"},
                  "deny: paths of --root with a segment starting with '.' (/.env, "
                  "/.git/config) are 404 as if absent, except /.well-known/; allow: served "
                  "like any file");
  bool daemonize = false;
  flags.Add("daemonize", &daemonize, "Detach from the terminal and run in the background")
      .Short('d');
  std::string pid_file;
  flags.AddParsed(
      "pid-file", "FILE",
      "Write the process id there once serving (removed on exit, unless a --takeover "
      "successor has written its own since)",
      [&pid_file](std::string_view text) -> absl::Status {
        if (text.empty()) return absl::InvalidArgumentError("expected a path");
        pid_file = std::string(text);
        return absl::OkStatus();
      },
      [&pid_file] { return pid_file.empty() ? std::string("none") : pid_file; });
  serving::Options options = serving::ParseOptions(argc, argv, &flags);

  uring_http::ws::Topics topics;  // outlives the server, whose rings publish to it
  uring_http::router::Router router;
  router.Fast("GET", "/test/fast", [](const Request&, Response&) {});
  const auto slow = std::chrono::milliseconds(slow_ms);
  router.Slow("GET", "/test/slow",
                    [slow](const Request&, Response&) { std::this_thread::sleep_for(slow); });
  // The same wait as /test/slow, on the ring: the coroutine is suspended on
  // an IORING_OP_TIMEOUT, and no thread waits for it.
  router.Async("GET", "/test/sleep",
               [slow](uring_http::async::Exchange& ex) -> uring_http::async::Task<> {
                 auto ms = slow;
                 if (const auto q = ex.request().QueryParam("ms"); q.present()) {
                   uint64_t n = 0;
                   bool ok = !q.value().empty() && q.value().size() <= 5;
                   for (char ch : q.value()) {
                     ok = ok && ch >= '0' && ch <= '9';
                     n = n * 10 + static_cast<uint64_t>(ch - '0');
                   }
                   if (!ok || n > 60'000) {
                     ex.response().set_status(400);
                     ex.response().set_body("expected /test/sleep?ms=N with N in [0, 60000]\n");
                     co_return;
                   }
                   ms = std::chrono::milliseconds(n);
                 }
                 // Cancelled (the client left): nobody reads the answer.
                 (void)co_await ex.Sleep(ms);
               });
  router.Async("GET", "/test/events",
               [](uring_http::async::Exchange& ex) -> uring_http::async::Task<> {
                 uint64_t count = 10, interval = 1000;
                 if (!TestQueryNumber(ex.request(), "count", 1'000'000, &count) ||
                     !TestQueryNumber(ex.request(), "interval_ms", 60'000, &interval)) {
                   ex.response().set_status(400);
                   ex.response().set_body(
                       "expected /test/events?count=N&interval_ms=M with N in [0, 1000000] and "
                       "M in [0, 60000]\n");
                   co_return;
                 }
                 uring_http::http::StartEventStream(ex.response());
                 for (uint64_t i = 1; i <= count; ++i) {
                   // Cancelled: the client left, or the server drains.
                   if (i > 1) {
                     absl::Status waited = co_await ex.Sleep(std::chrono::milliseconds(interval));
                     if (!waited.ok()) co_return;
                   }
                   absl::Status wrote = co_await ex.Write(TestEvent(i));
                   if (!wrote.ok()) co_return;
                 }
               });

  // Echo on the ring: the message is sent back from the receive buffer it
  // arrived in (or the connection's assembly buffer).
  uring_http::ws::Behavior echo;
  echo.message = [](uring_http::ws::WebSocket& socket, std::string_view message,
                    uring_http::ws::MessageKind kind) { (void)socket.Send(message, kind); };
  router.WebSocket("/test/ws", std::move(echo));

  // Fan-out: one publish frames (and, with --ws-deflate, compresses) a
  // message once for every subscriber, on whichever ring the publisher is;
  // each subscriber's ring copies it out (ws::Topics).
  uring_http::ws::Behavior topic;
  topic.upgrade = [](uring_http::ws::Upgrade& u) {
    const auto name = u.request->QueryParam("name");
    const auto subscribe = u.request->QueryParam("subscribe");
    if (name.malformed() || (name.present() && (name.value().empty() || name.value().size() > 64)) ||
        subscribe.malformed() || (subscribe.present() && subscribe != "0" && subscribe != "1")) {
      return 400;
    }
    u.user = TopicMember{name.present() ? std::string(*name) : "default", subscribe != "0"};
    return 0;
  };
  topic.open = [&topics](uring_http::ws::WebSocket& socket) {
    const auto& m = std::any_cast<const TopicMember&>(socket.user());
    if (m.subscribed) topics.Subscribe(m.name, socket.sender());
  };
  topic.message = [&topics](uring_http::ws::WebSocket& socket, std::string_view message,
                            uring_http::ws::MessageKind kind) {
    (void)topics.Publish(std::any_cast<const TopicMember&>(socket.user()).name, message, kind);
  };
  topic.close = [&topics](uring_http::ws::WebSocket& socket, uint16_t, std::string_view) {
    const auto& m = std::any_cast<const TopicMember&>(socket.user());
    if (m.subscribed) topics.Unsubscribe(m.name, socket.sender().get());
  };
  router.WebSocket("/test/ws/topic", std::move(topic));

  // The body is built per request, as a handler's would be; N is capped so a
  // client cannot make the server allocate without bound.
  router.Fast("GET", "/test/bytes", [](const Request& request, Response& response) {
    constexpr size_t kMaxBytes = size_t{1} << 20;
    size_t n = 0;
    bool ok = !request.query.empty() && request.query.size() <= 7;
    for (char ch : request.query) {
      ok = ok && ch >= '0' && ch <= '9';
      n = n * 10 + static_cast<size_t>(ch - '0');
    }
    if (!ok || n > kMaxBytes) {
      response.set_status(400);
      response.set_body("expected /test/bytes?N with N in [0, 1048576]\n");
      return;
    }
    response.body().assign(n, 'x');
  });
  // Prose-like text (words of a fixed vocabulary drawn with a skew), made
  // once: it compresses as text does (neither random nor one repeated byte,
  // which would flatter or defeat gzip).
  static const std::string text = [] {
    std::string vocabulary[512];
    uint32_t x = 12345;
    auto next = [&x] { return x = x * 1103515245u + 12345u; };
    for (std::string& w : vocabulary) {
      for (uint32_t n = 2 + (next() >> 16) % 9; n > 0; --n) {
        w.push_back(static_cast<char>('a' + (next() >> 16) % 26));
      }
    }
    std::string s;
    s.reserve((size_t{1} << 20) + 16);
    for (int i = 1; s.size() < (size_t{1} << 20); ++i) {
      const uint32_t r = (next() >> 16) % 512;
      s += vocabulary[r * r / 512];  // small indices far more often
      s += i % 14 == 0 ? ".\n" : " ";
    }
    s.resize(size_t{1} << 20);
    return s;
  }();
  router.Fast("GET", "/test/text", [](const Request& request, Response& response) {
    size_t n = 0;
    bool ok = !request.query.empty() && request.query.size() <= 7;
    for (char ch : request.query) {
      ok = ok && ch >= '0' && ch <= '9';
      n = n * 10 + static_cast<size_t>(ch - '0');
    }
    if (!ok || n > text.size()) {
      response.set_status(400);
      response.set_body("expected /test/text?N with N in [0, 1048576]\n");
      return;
    }
    response.set_content_type("text/plain");
    response.set_static_body(std::string_view(text).substr(0, n));
  });
  router.Fast("POST", "/test/echo", [](const Request& request, Response& response) {
    response.set_content_type("application/octet-stream");
    response.set_body(request.body);
  });
  uring_http::router::RouteOptions streamed;
  streamed.body = uring_http::router::BodyMode::kStreamed;
  streamed.max_body_bytes = uring_http::router::kUnlimitedBody;
  router.Slow(
      "POST", "/test/sink",
      [](const Request& request, Response& response) {
        char buffer[64 * 1024];
        uint64_t total = 0;
        long n;
        while ((n = request.ReadBody(buffer, sizeof(buffer))) > 0) total += static_cast<uint64_t>(n);
        if (n < 0) return;  // the body failed (request.body_error()): the server answers
        response.set_content_type("text/plain");
        response.set_body(std::to_string(total) + "\n");
      },
      streamed);
  // A FAST sink: the body's pieces counted on the ring thread as they arrive.
  struct CountingSink : uring_http::router::BodySink {
    uint64_t total = 0;
    void OnData(std::string_view piece) override { total += piece.size(); }
    void OnEnd(const Request&, Response& response) override {
      response.set_content_type("text/plain");
      response.set_body(std::to_string(total) + "\n");
    }
  };
  router.FastStream("POST", "/test/count", [](const Request&) {
    return std::make_unique<CountingSink>();
  });
  router.Slow("GET", "/test/stream", [](const Request& request, Response& response) {
    uint64_t bytes = 0;
    uint64_t chunk = 16384;
    bool ok = ParseQueryNumber(request.query, "bytes", &bytes, /*required=*/true) &&
              ParseQueryNumber(request.query, "chunk", &chunk, /*required=*/false) &&
              chunk >= 1 && chunk <= (uint64_t{16} << 20);
    if (!ok) {
      response.set_status(400);
      response.set_body("expected /test/stream?bytes=N[&chunk=M], M in [1, 16 MiB]\n");
      return;
    }
    response.set_content_type("application/octet-stream");
    const std::string piece(static_cast<size_t>(std::min(chunk, bytes)), 'x');
    while (bytes > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, piece.size()));
      if (!response.Write(std::string_view(piece.data(), n))) return;  // the client left
      bytes -= n;
    }
  });
  // Files last: every route above (and /metrics, /healthz) comes first.
  if (!root.empty()) {
    uring_http::router::StaticOptions files;
    files.serve_dotfiles = dotfiles == "allow";
    if (absl::Status s = router.Static("/", root, files); !s.ok()) {
      std::fprintf(stderr, "uring-http: --root: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (daemonize && daemon(/*nochdir=*/0, /*noclose=*/0) != 0) {
    std::perror("uring-http: daemon");
    return 1;
  }

  uring_http::serving::ServerConfig config = options.config;
  config.handle_signals = true;
  uring_http::serving::Server server(config, std::move(router));
  // A server whose sockets a successor took over is no longer the service:
  // the successor says READY=1 and MAINPID= (systemd must not see the
  // service stopping).
  server.set_on_stop([&server] {
    if (!server.handed_over()) uring_http::serving::SystemdNotify("STOPPING=1");
  });
  bool pid_written = false;
  absl::Status status = server.Run([&](const uring_http::serving::Server& s) {
    std::printf("%s\n", s.ReadyLine().c_str());
    std::fflush(stdout);
    if (!pid_file.empty()) {
      // Written whole under another name, then renamed over it: a reader
      // (the predecessor of a takeover, a supervisor) never sees it empty.
      const std::string temporary = pid_file + ".tmp";
      bool written = false;
      if (FILE* f = std::fopen(temporary.c_str(), "w")) {
        const bool printed = std::fprintf(f, "%d\n", static_cast<int>(getpid())) > 0;
        const bool closed = std::fclose(f) == 0;
        written = printed && closed && std::rename(temporary.c_str(), pid_file.c_str()) == 0;
        if (!written) std::remove(temporary.c_str());
      }
      if (written) {
        pid_written = true;
      } else {
        std::fprintf(stderr, "uring-http: cannot write --pid-file %s: %s\n", pid_file.c_str(),
                     std::strerror(errno));
      }
    }
    uring_http::serving::SystemdNotify("READY=1\nMAINPID=" + std::to_string(getpid()));
  });
  // Removed only while it names this process. After a takeover it is the
  // successor's: left alone without looking, since reading it and then
  // removing it would race with the successor writing it (the old process
  // could read its own pid, the successor write its own, and the removal
  // take the successor's file).
  if (pid_written && !server.handed_over()) {
    if (FILE* f = std::fopen(pid_file.c_str(), "r")) {
      long pid = 0;
      const bool ours = std::fscanf(f, "%ld", &pid) == 1 && pid == static_cast<long>(getpid());
      std::fclose(f);
      if (ours) std::remove(pid_file.c_str());
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "uring-http: %s\n", std::string(status.message()).c_str());
  }
  return serving::ExitStatus(status);  // 2: a file the flags name is unusable, as a bad flag
}
