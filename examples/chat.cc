// chat: rooms over WebSocket, with topics (pub/sub fan-out) and a
// broadcast from a thread of the application's.
//
//   GET /chat?room=R&name=N   a WebSocket (subprotocol "chat" if the client
//                 offers it) in room R (default "lobby"; letters, digits,
//                 '-' and '_', at most 32) as N (default "anonymous", the
//                 same characters): every text message it sends goes to
//                 everyone in the room as "N: message", its sender too.
//                 Joining and leaving are announced ("* N joined").
//                 "/rooms" answers the sender alone with the room's size;
//                 "/shout TEXT" answers it alone with TEXT in capitals,
//                 worked out on a worker thread (WebSocket::Offload) as
//                 anything slow would be, and sent back through its Sender.
//                 A binary message is refused: close 1003.
//   GET /clock    a WebSocket that gets the time every --tick-ms from the
//                 clock thread, one publish to the topic "clock" for all.
//   GET /         a page that chats (room "lobby").
//
// Everything but the clock runs on the ring threads: the callbacks, the
// publishing (Topics::Publish frames a message once and queues that frame
// to every subscriber's sender; each ring gets one MSG_RING per burst).
// The clock is a plain std::thread that holds no socket, only the topic.
//
// Run: bazel run //examples:chat -- --port=8080   (--help lists the flags)
//      then open http://127.0.0.1:8080/ in two browsers, or:
//      python3 -m websockets 'ws://127.0.0.1:8080/chat?room=lobby&name=ann'
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "uring_http/uring_http.h"

namespace {

using uring_http::ws::MessageKind;
using uring_http::ws::WebSocket;

constexpr std::string_view kPage = R"(<!doctype html>
<html>
<head><meta charset="utf-8"><title>uring-http chat</title></head>
<body>
<h1>Lobby</h1>
<input id="name" placeholder="name" value="guest"> <button id="join">join</button>
<ul id="log"></ul>
<input id="text" size="60" disabled> <span id="time"></span>
<script>
const log = document.getElementById('log');
function line(text) {
  const item = document.createElement('li');
  item.textContent = text;
  log.prepend(item);
}
new WebSocket(`ws://${location.host}/clock`).onmessage = (e) => {
  document.getElementById('time').textContent = e.data;
};
document.getElementById('join').onclick = () => {
  const name = encodeURIComponent(document.getElementById('name').value);
  const ws = new WebSocket(`ws://${location.host}/chat?room=lobby&name=${name}`, 'chat');
  const text = document.getElementById('text');
  ws.onopen = () => { text.disabled = false; };
  ws.onmessage = (e) => line(e.data);
  ws.onclose = (e) => { line(`closed: ${e.code} ${e.reason}`); text.disabled = true; };
  text.onkeydown = (e) => { if (e.key === 'Enter') { ws.send(text.value); text.value = ''; } };
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
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Who a chat socket is, set by the handshake (WebSocket::user()).
struct Member {
  std::string room;
  std::string name;
};

// The clock thread: the time to the topic "clock" every `every`.
class Clock {
 public:
  explicit Clock(uring_http::ws::Topics* topics) : topics_(topics) {}
  void Start(std::chrono::milliseconds every) {
    thread_ = std::thread([this, every] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stopped_) {
        char text[32];
        const std::time_t now = std::time(nullptr);
        std::tm utc;
        gmtime_r(&now, &utc);
        std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
        // Framed once; each subscriber's ring copies the frame.
        topics_->Publish("clock", text);
        changed_.wait_for(lock, every, [this] { return stopped_; });
      }
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
  uring_http::ws::Topics* const topics_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  serving::Flags flags;
  uint64_t tick_ms = 1000;
  flags.AddParsed(
      "tick-ms", "MS", "How often the clock publishes the time (1 to 3600000, default 1000)",
      [&tick_ms](std::string_view text) -> absl::Status {
        uint64_t n = 0;
        bool ok = !text.empty() && text.size() <= 7;
        for (char c : text) {
          ok = ok && c >= '0' && c <= '9';
          n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (!ok || n < 1 || n > 3'600'000) {
          return absl::InvalidArgumentError("expected milliseconds in [1, 3600000]");
        }
        tick_ms = n;
        return absl::OkStatus();
      },
      [&tick_ms] { return std::to_string(tick_ms); });
  serving::Options options = serving::ParseOptions(argc, argv, &flags);

  ws::Topics topics;  // outlives the server, whose rings publish to it
  router::Router router;
  router.Fast("GET", "/", [](const http::Request&, http::Response& response) {
    response.set_content_type("text/html; charset=utf-8");
    response.set_static_body(kPage);
  });

  ws::Behavior chat;
  chat.upgrade = [](ws::Upgrade& u) {
    Member m{"lobby", "anonymous"};
    if (auto room = QueryValue(u.request->query, "room")) m.room = std::string(*room);
    if (auto name = QueryValue(u.request->query, "name")) m.name = std::string(*name);
    if (!PlainName(m.room) || !PlainName(m.name)) return 400;
    for (std::string_view p : u.request->HeaderElements("sec-websocket-protocol")) {
      if (p == "chat") u.protocol = "chat";
    }
    u.user = std::move(m);
    return 0;
  };
  chat.open = [&topics](WebSocket& socket) {
    const Member& m = std::any_cast<Member&>(socket.user());
    topics.Subscribe("room:" + m.room, socket.sender());
    topics.Publish("room:" + m.room, "* " + m.name + " joined");
  };
  chat.message = [&topics](WebSocket& socket, std::string_view text, MessageKind kind) {
    if (kind == MessageKind::kBinary) return socket.Close(1003, "text only");
    const Member& m = std::any_cast<Member&>(socket.user());
    if (text == "/rooms") {
      (void)socket.Send(m.room + ": " + std::to_string(topics.subscribers("room:" + m.room)));
      return;
    }
    if (text.substr(0, 7) == "/shout ") {
      // Off the ring: the worker sleeps as a slow lookup would, then
      // answers through the sender (kClosed if the client left meanwhile).
      const bool taken = socket.Offload([words = std::string(text.substr(7)),
                                         out = socket.sender()]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (char& c : words) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        (void)out->Send(words);
      });
      if (!taken) (void)socket.Send("busy: try again");
      return;
    }
    std::string line = m.name + ": ";
    line.append(text);
    topics.Publish("room:" + m.room, line);
  };
  chat.close = [&topics](WebSocket& socket, uint16_t, std::string_view) {
    const Member& m = std::any_cast<Member&>(socket.user());
    topics.Unsubscribe("room:" + m.room, socket.sender().get());
    topics.Publish("room:" + m.room, "* " + m.name + " left");
  };
  router.WebSocket("/chat", std::move(chat));

  ws::Behavior clock;
  clock.open = [&topics](WebSocket& socket) { topics.Subscribe("clock", socket.sender()); };
  clock.close = [&topics](WebSocket& socket, uint16_t, std::string_view) {
    topics.Unsubscribe("clock", socket.sender().get());
  };
  router.WebSocket("/clock", std::move(clock));

  Clock ticker(&topics);
  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  // Started from on_ready, on Run()'s thread after the server has blocked
  // SIGTERM there, so the clock thread inherits the mask.
  const absl::Status status = server.Run([&ticker, tick_ms](const serving::Server& s) {
    ticker.Start(std::chrono::milliseconds(tick_ms));
    std::cout << s.ReadyLine() << std::endl;
  });
  ticker.Stop();
  if (!status.ok()) {
    std::cerr << "chat: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
