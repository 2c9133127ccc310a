// events: a server-sent-events stream (text/event-stream) fed from a worker.
//
//   GET /events?count=N&interval_ms=M
//                 one event every M ms (default 1000, at most 3600000), N of
//                 them (default: until the client leaves; at least 1):
//                     id: <i>
//                     data: {"tick": <i>, "time": "<ISO-8601 UTC>"}
//                 A parameter that is not a plain decimal in range: 400.
//   GET /         a small HTML page showing the ticks with EventSource.
//
// /events is a SLOW handler: it writes each event with Response::Write (a
// chunk of its own, sent at once) and sleeps on its worker in between, until
// it has written N events or a Write returns false (the client is gone).
//
// Each open stream holds one worker thread for as long as it lasts, so
// -w/--workers bounds the number of concurrent streams; a request beyond
// that waits in the worker queue until a stream ends (or gets 503 once the
// queue is full). Size --workers for the streams you expect. --workers=0
// (SLOW handlers inline on the ring thread) is refused: a stream would stall
// every connection of its thread and gather its events in memory unsent.
//
// A stream is one HTTP/1.1 response (chunked; close-delimited for HTTP/1.0),
// so its connection is kept alive for the next request only once the stream
// ends. A client that stops reading is backpressured: once 256 KiB of the
// stream are unsent, that worker's Write blocks, and --send-timeout (30s)
// later the connection is closed and the Write returns false. A client that
// closes its socket is noticed only when sending to it fails, which is about
// two events later (the Write after that returns false): the worker stays
// held for up to three intervals after the client left. On SIGTERM every
// stream ends at once, cleanly, so the drain does not wait for them.
//
// Run: bazel run //examples:events -- --port=8080 --workers=64   (--help lists the flags)
//      curl -N 'http://127.0.0.1:8080/events?count=5&interval_ms=200'
//      or open http://127.0.0.1:8080/ in a browser
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;

constexpr uint64_t kUnlimited = UINT64_MAX;
constexpr uint64_t kMaxIntervalMs = 3'600'000;  // an hour
constexpr uint64_t kMaxCount = 1'000'000'000'000;

constexpr std::string_view kPage = R"(<!doctype html>
<html>
<head><meta charset="utf-8"><title>uring-http events</title></head>
<body>
<h1>Ticks</h1>
<p id="status">connecting...</p>
<ul id="ticks"></ul>
<script>
const source = new EventSource('/events');
const list = document.getElementById('ticks');
source.onopen = () => { document.getElementById('status').textContent = 'connected'; };
source.onerror = () => { document.getElementById('status').textContent = 'reconnecting...'; };
source.onmessage = (event) => {
  const tick = JSON.parse(event.data);
  const item = document.createElement('li');
  item.textContent = 'tick ' + tick.tick + ' at ' + tick.time;
  list.prepend(item);
  while (list.children.length > 20) list.lastChild.remove();
};
</script>
</body>
</html>
)";

// Set when the server starts draining; wakes every stream sleeping between
// two events so that it ends at once.
class StopSignal {
 public:
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
  }
  // Sleeps for `duration` or until Stop(); true when stopped.
  bool WaitFor(std::chrono::milliseconds duration) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, duration, [this] { return stopped_; });
  }
  bool stopped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopped_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopped_ = false;
};

// The raw value of `name` in a query string: nullopt when absent.
std::optional<std::string_view> QueryValue(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != name) continue;
    return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
  }
  return std::nullopt;
}

// A plain decimal in [min, max]; nullopt otherwise.
std::optional<uint64_t> ParseDecimal(std::string_view text, uint64_t min, uint64_t max) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (n < min || n > max) return std::nullopt;
  return n;
}

// "2024-05-01T12:34:56.789Z".
std::string NowIso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc;
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms.count() % 1000));
  return text;
}

void BadRequest(Response& response, std::string_view message) {
  response.set_status(400);
  response.set_content_type("text/plain");
  response.set_body(message);
  response.body() += '\n';
}

// GET /events (runs on a worker for as long as the stream lasts).
void Events(StopSignal& stop, const Request& request, Response& response) {
  uint64_t count = kUnlimited;
  uint64_t interval_ms = 1000;
  if (const auto text = QueryValue(request.query, "count")) {
    const std::optional<uint64_t> n = ParseDecimal(*text, 1, kMaxCount);
    if (!n) return BadRequest(response, "count must be a whole number, at least 1");
    count = *n;
  }
  if (const auto text = QueryValue(request.query, "interval_ms")) {
    const std::optional<uint64_t> n = ParseDecimal(*text, 0, kMaxIntervalMs);
    if (!n) return BadRequest(response, "interval_ms must be a whole number in [0, 3600000]");
    interval_ms = *n;
  }

  response.set_content_type("text/event-stream");
  if (!response.AddHeader("Cache-Control", "no-cache")) return;  // (never: a valid field)
  for (uint64_t i = 0; i < count && !stop.stopped(); ++i) {
    const std::string id = std::to_string(i);
    const std::string event = "id: " + id + "\ndata: {\"tick\": " + id + ", \"time\": \"" +
                              NowIso8601() + "\"}\n\n";
    if (!response.Write(event)) return;  // the client is gone
    if (i + 1 < count && stop.WaitFor(std::chrono::milliseconds(interval_ms))) break;
  }
  // Returning ends the stream (the last chunk); the connection may go on.
}

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  // --help: the usage, exit 0; a bad flag: the reason, exit 2.
  serving::Options options = serving::ParseOptions(argc, argv);
  if (options.config.workers == 0) {
    std::cerr << "events: --workers must be at least 1: each stream runs on a worker\n";
    return 2;
  }

  StopSignal stop;  // outlives the server, whose workers use it
  router::Router router;
  router.Fast("GET", "/", [](const Request&, Response& response) {
    response.set_content_type("text/html; charset=utf-8");
    response.set_static_body(kPage);
  });
  router.Slow("GET", "/events", [&stop](const Request& request, Response& response) {
    Events(stop, request, response);
  });

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  server.set_on_stop([&stop] { stop.Stop(); });  // open streams end, so the drain is quick
  const absl::Status status =
      server.Run([](const serving::Server& s) { std::cout << s.ReadyLine() << std::endl; });
  if (!status.ok()) {
    std::cerr << "events: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
