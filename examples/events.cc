// events: server-sent events (text/event-stream) with no thread held per
// stream, two ways.
//
//   GET /events?count=N&interval_ms=M
//                 one event every M ms (default 1000, at most 3600000), N of
//                 them (default: until the client leaves; at least 1):
//                     id: <i>
//                     data: {"tick": <i>, "time": "<ISO-8601 UTC>"}
//                 A parameter that is not a plain decimal in range: 400.
//                 An ASYNC handler: a coroutine on the ring thread that
//                 awaits a ring timer between events and each Write (which
//                 waits while the client is slow to read: backpressure).
//   GET /ticks    the shared ticker: one producer thread broadcasts an event
//                 every --tick-ms to every open /ticks stream (the same id
//                 and time to all), through each stream's PushStream.
//   GET /         a small HTML page showing the ticks with EventSource.
//
// No stream holds a worker (--workers=0 is fine): 10,000 open streams cost
// their sockets and buffers, not threads. A client that closes its socket
// is noticed at once (its FIN): its /events await is cancelled, its /ticks
// stream closes and the ticker drops it at its next tick. A client that
// stops reading is held to each stream's bound (32 KiB unsent): /events
// waits, /ticks drops the events that do not fit (PushStream::kDropped).
// On SIGTERM every stream ends at once, cleanly, so the drain does not wait
// for them.
//
// Run: bazel run //examples:events -- --port=8080 --workers=0   (--help lists the flags)
//      curl -N 'http://127.0.0.1:8080/events?count=5&interval_ms=200'
//      curl -N 'http://127.0.0.1:8080/ticks'
//      or open http://127.0.0.1:8080/ in a browser
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

std::string TickEvent(uint64_t i) {
  std::string text;
  const std::string id = std::to_string(i);
  (void)uring_http::http::AppendEvent(
      &text, {.id = id, .data = "{\"tick\": " + id + ", \"time\": \"" + NowIso8601() + "\"}"});
  return text;
}

// GET /events: a coroutine on the ring thread for as long as the stream lasts.
uring_http::async::Task<> Events(uring_http::async::Exchange& ex) {
  const Request& request = ex.request();
  Response& response = ex.response();
  uint64_t count = kUnlimited;
  uint64_t interval_ms = 1000;
  if (const auto text = QueryValue(request.query, "count")) {
    const std::optional<uint64_t> n = ParseDecimal(*text, 1, kMaxCount);
    if (!n) co_return BadRequest(response, "count must be a whole number, at least 1");
    count = *n;
  }
  if (const auto text = QueryValue(request.query, "interval_ms")) {
    const std::optional<uint64_t> n = ParseDecimal(*text, 0, kMaxIntervalMs);
    if (!n) co_return BadRequest(response, "interval_ms must be a whole number in [0, 3600000]");
    interval_ms = *n;
  }
  uring_http::http::StartEventStream(response);
  for (uint64_t i = 0; i < count; ++i) {
    // Resumes once the event is on its way (at once, unless the client
    // reads slowly); not OK once the client is gone or the server drains.
    const absl::Status wrote = co_await ex.Write(TickEvent(i));
    if (!wrote.ok()) co_return;
    if (i + 1 == count) break;
    const absl::Status waited = co_await ex.Sleep(std::chrono::milliseconds(interval_ms));
    if (!waited.ok()) co_return;
  }
  // Returning ends the stream (the last chunk); the connection may go on.
}

// The /ticks streams, and the thread that writes to all of them.
class Ticker {
 public:
  void Add(std::shared_ptr<uring_http::async::PushStream> stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(std::move(stream));
  }
  void Start(std::chrono::milliseconds every) {
    thread_ = std::thread([this, every] {
      std::unique_lock<std::mutex> lock(mutex_);
      for (uint64_t i = 0; !stopped_; ++i) {
        const std::string event = TickEvent(i);
        // Each Write copies the event into that stream's buffer and returns
        // at once; the streams' rings get one message each for the lot.
        std::erase_if(streams_, [&event](const auto& stream) {
          return stream->Write(event) == uring_http::async::PushStream::Result::kClosed;
        });
        changed_.wait_for(lock, every, [this] { return stopped_; });
      }
      for (const auto& stream : streams_) stream->End();
      streams_.clear();
    });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopped_ = false;
  std::vector<std::shared_ptr<uring_http::async::PushStream>> streams_;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  serving::Flags flags;
  uint64_t tick_ms = 1000;
  flags.AddParsed(
      "tick-ms", "MS", "How often the /ticks producer broadcasts (1 to 3600000, default 1000)",
      [&tick_ms](std::string_view text) -> absl::Status {
        const std::optional<uint64_t> n = ParseDecimal(text, 1, kMaxIntervalMs);
        if (!n) return absl::InvalidArgumentError("expected milliseconds in [1, 3600000]");
        tick_ms = *n;
        return absl::OkStatus();
      },
      [&tick_ms] { return std::to_string(tick_ms); });
  // --help: the usage, exit 0; a bad flag: the reason, exit 2.
  serving::Options options = serving::ParseOptions(argc, argv, &flags);

  Ticker ticker;  // outlives the server, whose rings hand it streams
  router::Router router;
  router.Fast("GET", "/", [](const Request&, Response& response) {
    response.set_content_type("text/html; charset=utf-8");
    response.set_static_body(kPage);
  });
  router.Async("GET", "/events", &Events);
  router.Async("GET", "/ticks", [&ticker](async::Exchange& ex) -> async::Task<> {
    http::StartEventStream(ex.response());
    ticker.Add(ex.Push());  // the head goes now; the stream outlives this handler
    co_return;
  });

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  // The ticker starts from on_ready, on Run()'s thread after the server
  // has blocked SIGTERM there: a thread started before Run() would not
  // inherit the mask, and a SIGTERM delivered to it would kill the process
  // instead of draining it.
  const absl::Status status = server.Run([&ticker, tick_ms](const serving::Server& s) {
    ticker.Start(std::chrono::milliseconds(tick_ms));
    std::cout << s.ReadyLine() << std::endl;
  });
  ticker.Stop();
  if (!status.ok()) {
    std::cerr << "events: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
