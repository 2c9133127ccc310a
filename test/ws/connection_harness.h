// A kernel-less stand-in for a WebSocket connection's loop, shared by
// connection_test.cc and connection_fuzz.cc: test/http1's FakeHost records
// what the ws::Connection asks of its transport (receives, cancels, sends,
// the shutdown, the close, deadlines), and the test completes each by hand,
// in whatever order it wants to try. Beside it: a client frame builder
// (masked, any length form), a reader of what the server sent (the 101,
// then its frames), and a route's behaviour that records every callback
// (echo by default).
//
// Harness::Violations() lists what the connection must never do, whatever
// the order of events: FakeHost's own checks (two receives or sends at
// once, a close that misstates what is armed, a close before the shutdown
// completed), plus the WebSocket's: a malformed or masked server frame,
// anything sent after our close frame, a send after our FIN, the `close`
// callback twice (or not at all once the socket is shut or closed), and
// Freeable() while the kernel still holds an operation.
#ifndef URING_HTTP_TEST_WS_CONNECTION_HARNESS_H_
#define URING_HTTP_TEST_WS_CONNECTION_HARNESS_H_

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/async/push_stream.h"
#include "src/exchange/connection_env.h"
#include "src/io/arena.h"
#include "src/worker/mailbox.h"
#include "src/ws/connection.h"
#include "src/ws/frame.h"
#include "src/ws/handshake.h"
#include "src/ws/sender.h"
#include "src/ws/websocket.h"
#include "test/http1/connection_harness.h"

namespace uring_http::ws::testing {

// ---------------------------------------------------------------- client frames

inline constexpr uint8_t kDefaultMask[4] = {0x37, 0xFA, 0x21, 0x3D};

// A client frame: masked with `mask` (unless `masked` is false), its
// length in the shortest form unless `form` says 126 or 127. `rsv` is the
// three reserved bits (RSV1 = 4).
inline std::string ClientFrame(uint8_t opcode, std::string_view payload, bool fin = true,
                               uint8_t rsv = 0, bool masked = true,
                               const uint8_t mask[4] = kDefaultMask, int form = 0) {
  std::string f;
  f.push_back(static_cast<char>((fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0xF)));
  const uint8_t m = masked ? 0x80 : 0;
  const uint64_t n = payload.size();
  if (form == 127 || n > 0xFFFF) {
    f.push_back(static_cast<char>(m | 127));
    for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  } else if (form == 126 || n > 125) {
    f.push_back(static_cast<char>(m | 126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xFF));
  } else {
    f.push_back(static_cast<char>(m | n));
  }
  if (masked) f.append(reinterpret_cast<const char*>(mask), 4);
  const size_t at = f.size();
  f.append(payload);
  if (masked) {
    for (size_t i = 0; i < payload.size(); ++i) f[at + i] = static_cast<char>(f[at + i] ^ mask[i & 3]);
  }
  return f;
}
inline std::string ClientText(std::string_view s, bool fin = true) { return ClientFrame(0x1, s, fin); }
inline std::string ClientBinary(std::string_view s, bool fin = true) { return ClientFrame(0x2, s, fin); }
inline std::string ClientClose(uint16_t code, std::string_view reason = "") {
  std::string p;
  p.push_back(static_cast<char>(code >> 8));
  p.push_back(static_cast<char>(code & 0xFF));
  p.append(reason);
  return ClientFrame(0x8, p);
}

// ---------------------------------------------------------------- what the server sent

struct ServerFrame {
  uint8_t opcode = 0;
  bool fin = false;
  uint8_t rsv = 0;
  bool masked = false;
  std::string payload;
  // A close frame's code (0: none).
  uint16_t code() const {
    if (payload.size() < 2) return 0;
    return static_cast<uint16_t>((static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]));
  }
  std::string reason() const { return payload.size() > 2 ? payload.substr(2) : ""; }
};

// Reads what the server sent, as it comes (bytes appended in any pieces):
// the 101's head, then frames, each checked for what no server may send.
class ServerReader {
 public:
  // `keep_frames`: false keeps only what the checks need (a scan of bytes
  // not yet sent).
  explicit ServerReader(bool keep_frames = true) : keep_frames_(keep_frames) {}

  // permessage-deflate was agreed: RSV1 marks a compressed data frame.
  bool allow_rsv1 = false;

  void Feed(std::string_view bytes) {
    pending_.append(bytes);
    size_t at = 0;
    if (head.empty()) {
      const size_t end = pending_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      head = pending_.substr(0, end + 4);
      if (head.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) != 0) {
        errors.push_back("the first bytes sent are not a 101");
      }
      at = end + 4;
    }
    for (;;) {
      const std::string_view rest = std::string_view(pending_).substr(at);
      const size_t used = ReadFrame(rest);
      if (used == 0) break;
      at += used;
    }
    pending_.erase(0, at);
  }
  // Bytes of a frame (or of the head) not whole yet.
  size_t partial() const { return pending_.size(); }
  const std::string& pending() const { return pending_; }
  bool close_seen() const { return close_seen_; }

  std::string head;                 // the 101, through its blank line ("" if not whole yet)
  std::vector<ServerFrame> frames;  // whole frames after it (if kept)
  std::vector<std::string> errors;  // what no server may send

 private:
  // One whole frame at the start of `wire`: its length (0: not whole).
  size_t ReadFrame(std::string_view wire) {
    if (wire.size() < 2) return 0;
    const auto* p = reinterpret_cast<const uint8_t*>(wire.data());
    ServerFrame f;
    f.fin = (p[0] & 0x80) != 0;
    f.rsv = (p[0] >> 4) & 7;
    f.opcode = p[0] & 0xF;
    f.masked = (p[1] & 0x80) != 0;
    uint64_t len = p[1] & 0x7F;
    size_t h = 2;
    if (len == 126) {
      if (wire.size() < 4) return 0;
      len = (uint64_t{p[2]} << 8) | p[3];
      h = 4;
      if (len <= 125) Error("a 16-bit length for a short payload");
    } else if (len == 127) {
      if (wire.size() < 10) return 0;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
      h = 10;
      if (len <= 0xFFFF) Error("a 64-bit length for a shorter payload");
    }
    if (f.masked) h += 4;
    if (wire.size() < h + len) return 0;
    const std::string_view payload = wire.substr(h, len);
    if (f.masked) Error("a masked server frame");
    const bool compressed_data = allow_rsv1 && f.rsv == 4 && (f.opcode == 0x1 || f.opcode == 0x2);
    if (f.rsv != 0 && !compressed_data) Error("a server frame with RSV bits");
    if (!f.fin) Error("a fragmented server frame");
    if (f.opcode != 0x1 && f.opcode != 0x2 && f.opcode != 0x8 && f.opcode != 0x9 && f.opcode != 0xA) {
      Error("a server frame with opcode " + std::to_string(f.opcode));
    }
    if ((f.opcode & 0x8) != 0 && payload.size() > kMaxControlPayload) {
      Error("a control frame over 125 bytes");
    }
    if (f.opcode == 0x8 || keep_frames_) f.payload = std::string(payload);
    if (f.opcode == 0x8 && f.payload.size() == 1) Error("a close with one byte");
    if (f.opcode == 0x8 && f.payload.size() >= 2 && !CloseCodeValid(f.code())) {
      Error("a close with code " + std::to_string(f.code()));
    }
    if (close_seen_) Error("a frame after our close frame");
    close_seen_ = close_seen_ || f.opcode == 0x8;
    if (keep_frames_) frames.push_back(std::move(f));
    return h + len;
  }
  void Error(const std::string& e) { errors.push_back(e); }

  bool keep_frames_;
  bool close_seen_ = false;
  std::string pending_;
};

// ---------------------------------------------------------------- the harness

// test/http1's host, whose sockets also get senders: posts to an inbox with
// no ring behind it (fd -1); the test calls Harness::Posted for the ring.
class WsHost final : public http1::testing::FakeHost {
 public:
  std::shared_ptr<Sender> MakeSender(uint32_t slot, size_t bound, int deflate_window) override {
    ++senders_made;
    return std::make_shared<Sender>(&inbox, slot, bound, deflate_window);
  }
  int senders_made = 0;
  worker::Mailbox mailbox{64};
  async::RingInbox inbox{worker::RingAddress{-1, &mailbox}, 99};
};

// A `close` callback's arguments, as recorded.
struct Closed {
  uint16_t code;
  std::string reason;
};

inline exchange::ConnectionConfig DefaultConfig() {
  exchange::ConnectionConfig c;
  c.tick_ms = 100;
  c.send_timeout_ms = 30'000;     // 301 ticks after a send is submitted
  c.linger_timeout_ms = 5'000;    // 51 ticks
  c.ws_max_message = 1 << 20;
  c.ws_max_backpressure = 64 * 1024;
  c.ws_idle_timeout_ms = 120'000;  // 1201 ticks after the last receive
  c.ws_ping_interval_ms = 30'000;  // 301 ticks
  return c;
}

class Harness {
  // Declared first, destroyed last: the connection gives its chunks back here.
  exchange::ConnectionConfig config_;
  io::Arena arena_;
  io::ChunkPool chunks_;
  exchange::ConnectionEnv env_;
  Behavior behavior_;

 public:
  // `b`'s callbacks (any may be empty; an empty `message` echoes) and
  // limits are the route's.
  explicit Harness(Behavior b = {}, exchange::ConnectionConfig config = DefaultConfig(),
                   size_t chunks = 64)
      : config_(config) {
    arena_ = *io::Arena::Create(chunks * 4096 + 8192);
    (void)chunks_.Init(arena_, 4096, chunks);
    env_.config = &config_;
    env_.chunks = &chunks_;
    env_.transport = &host;
    env_.host = &host;
    env_.stats = &stats;
    env_.now_tick = 1000;
    SetBehavior(std::move(b));
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // The route's behaviour for the next Open (the callbacks recorded).
  void SetBehavior(Behavior b) {
    user_ = std::move(b);
    behavior_ = Behavior{};
    behavior_.max_message = user_.max_message;
    behavior_.max_backpressure = user_.max_backpressure;
    behavior_.idle_timeout_ms = user_.idle_timeout_ms;
    behavior_.ping_interval_ms = user_.ping_interval_ms;
    behavior_.open = [this](WebSocket& s) {
      ++opens;
      if (user_.open) user_.open(s);
    };
    behavior_.message = [this](WebSocket& s, std::string_view m, MessageKind k) {
      messages.emplace_back(k, std::string(m));
      if (user_.message) {
        user_.message(s, m, k);
      } else {
        send_results.push_back(s.Send(m, k));
      }
    };
    behavior_.drain = [this](WebSocket& s) {
      ++drains;
      if (user_.drain) user_.drain(s);
    };
    behavior_.close = [this](WebSocket& s, uint16_t code, std::string_view reason) {
      closes.push_back({code, std::string(reason)});
      if (user_.close) user_.close(s, code, reason);
    };
  }

  // HTTP/1 hands the socket over: the bytes it read past the handshake
  // (the connection may unmask them in place: a copy, as HTTP/1's buffer
  // is), whether its multishot receive is armed, whether the client's FIN
  // came.
  void Open(std::string_view bytes = {}, bool recv_armed = false, bool peer_eof = false,
            std::string_view accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", Upgrade* upgrade = nullptr) {
    if (recv_armed) host.recv_armed = true;
    reader_->allow_rsv1 = deflate.has_value();
    handoff_buffer_.assign(bytes);
    Accepted accepted;
    accepted.behavior = &behavior_;
    accepted.accept = accept;
    accepted.upgrade = upgrade;
    accepted.deflate = deflate;
    accepted.dedicated = dedicated;
    conn::Handoff h;
    h.bytes = handoff_buffer_;
    h.websocket = &accepted;
    h.recv_armed = recv_armed;
    h.peer_eof = peer_eof;
    conn.Open(&env_, /*slot=*/7, h);
    std::fill(handoff_buffer_.begin(), handoff_buffer_.end(), '#');  // HTTP/1 reuses it
    Observe();
  }

  // The armed receive delivers `bytes`, in completions of at most `piece`
  // bytes each (a provided buffer's worth), all with F_MORE; `ended`: the
  // last one without (the receive ends with it).
  void Recv(std::string_view bytes, size_t piece = SIZE_MAX, bool ended = false) {
    while (!bytes.empty()) {
      if (!host.recv_armed) own_violations.push_back("bytes delivered with no receive armed");
      const size_t n = std::min(piece, bytes.size());
      std::string buffer(bytes.substr(0, n));  // the provided buffer
      const bool last = ended && n == bytes.size();
      if (last) {
        host.recv_armed = false;
        host.cancel_pending = false;
      }
      conn.OnRecv(buffer.data(), buffer.size(), last);
      std::fill(buffer.begin(), buffer.end(), '#');  // recycled: anything kept was copied
      bytes.remove_prefix(n);
      Observe();
    }
  }
  // The multishot receive's last completion: 0 (the client's FIN),
  // -ENOBUFS, -ECANCELED, another -errno.
  void RecvEnd(int res) {
    host.recv_armed = false;
    host.cancel_pending = false;
    conn.OnRecvEnd(res);
    Observe();
  }
  // A pending cancel lands (the receive ends -ECANCELED); false if none.
  bool LandCancel() {
    if (!host.cancel_pending || !host.recv_armed) return false;
    RecvEnd(-ECANCELED);
    return true;
  }
  // The ring takes what the socket's sender queued (its inbox's post).
  void Posted() {
    conn.OnPosted();
    Observe();
  }
  void BuffersAvailable() {
    conn.OnBuffersAvailable();
    Observe();
  }

  // The send in flight completes with up to `n` bytes (they reach the client).
  size_t CompleteSend(size_t n = SIZE_MAX) {
    if (!host.send.has_value()) return 0;
    http1::testing::FakeHost::SendCall s = std::move(*host.send);
    host.send.reset();
    if (!host.Intact(s)) own_violations.push_back("send buffer changed before completion");
    n = std::min(n, s.bytes.size());
    wire += s.bytes.substr(0, n);
    conn.OnSend(static_cast<int>(n), /*notification_follows=*/false);
    Observe();
    return n;
  }
  bool FailSend(int error = -EPIPE) {
    if (!host.send.has_value()) return false;
    host.send.reset();
    conn.OnSend(error, false);
    Observe();
    return true;
  }
  // Sends complete whole until none is in flight.
  void Flush() {
    for (int i = 0; i < 10000 && host.send.has_value(); ++i) CompleteSend();
  }
  bool ShutdownDone() {
    if (!host.shutdown_pending) return false;
    host.shutdown_pending = false;
    host.shutdown_done = true;
    conn.OnShutdownDone();
    Observe();
    return true;
  }
  // The close completes; what it cancelled then ends (as io_uring may
  // order them: the cancelled operations after the close's completion).
  // `and_cancelled`: false leaves them to the test.
  bool CloseDone(bool and_cancelled = true) {
    if (!host.closed || close_done_) return false;
    close_done_ = true;
    conn.OnClosed();
    Observe();
    if (!and_cancelled) return true;
    if (host.send.has_value()) FailSend(-ECANCELED);
    if (host.recv_armed) RecvEnd(-ECANCELED);
    return true;
  }

  // Time passes; the deadline fires if it came due.
  void Tick(uint64_t ticks) {
    env_.now_tick += ticks;
    if (host.deadline != 0 && env_.now_tick >= host.deadline) {
      host.deadline = 0;
      ++deadlines_fired;
      conn.OnDeadline();
      Observe();
    }
  }
  // To the armed deadline (false if none).
  bool TickToDeadline() {
    if (host.deadline == 0) return false;
    Tick(host.deadline > env_.now_tick ? host.deadline - env_.now_tick : 0);
    return true;
  }
  void Drain() {
    env_.draining = true;
    conn.OnDrain();
    Observe();
  }
  void Abort() {
    conn.Abort();
    Observe();
  }
  // The app acts from outside any event (a timer, another connection).
  SendResult AppSend(std::string_view m, MessageKind k = MessageKind::kText) {
    const SendResult r = conn.Send(m, k);
    Observe();
    return r;
  }
  void AppClose(uint16_t code, std::string_view reason = {}) {
    conn.Close(code, reason);
    Observe();
  }

  // Everything completes, as a client that reads and then leaves would
  // have it: sends whole, the shutdown, the client's FIN, deadlines, the
  // close. True once the connection is Freeable.
  bool Finish() {
    for (int i = 0; i < 10000 && !conn.Freeable(); ++i) {
      if (host.closed) {
        // The close cancels what is out: each ends -ECANCELED.
        if (CloseDone()) continue;
        if (FailSend(-ECANCELED)) continue;
        if (host.recv_armed) {
          RecvEnd(-ECANCELED);
          continue;
        }
        own_violations.push_back("Finish: closed, nothing out, and not Freeable");
        break;
      }
      if (host.send.has_value()) {
        CompleteSend();
      } else if (host.shutdown_pending) {
        ShutdownDone();
      } else if (host.cancel_pending && host.recv_armed) {
        LandCancel();
      } else if (host.recv_armed) {
        RecvEnd(0);
      } else if (starved) {
        starved = false;
        BuffersAvailable();
      } else if (!TickToDeadline()) {
        own_violations.push_back("Finish: nothing left to complete, and not closed");
        break;
      }
    }
    return conn.Freeable();
  }
  // Release(), and every chunk back in the pool.
  void Release() {
    conn.Release();
    if (chunks_.available() != chunks_.count()) own_violations.push_back("chunks not all back after Release");
    // The slot is as new: the next session's state is its own.
    static_cast<http1::testing::FakeHost&>(host) = http1::testing::FakeHost{};
    wire.clear();
    reader_ = std::make_unique<ServerReader>();
    read_ = 0;
    close_done_ = false;
    close_submitted_ = false;
    sends_at_shutdown_ = -1;
    starved = false;
    messages.clear();
    send_results.clear();
    closes.clear();
    opens = drains = 0;
    deadlines_fired = 0;
  }

  // Every violation so far (empty: none).
  std::vector<std::string> Violations() const {
    std::vector<std::string> v = host.violations;
    v.insert(v.end(), own_violations.begin(), own_violations.end());
    return v;
  }

  // What the client read, as read so far (kept up to date after every event).
  const ServerReader& Server() const { return *reader_; }
  const std::vector<ServerFrame>& Frames() const { return reader_->frames; }
  // Frames of one opcode.
  std::vector<ServerFrame> Frames(uint8_t opcode) const {
    std::vector<ServerFrame> out;
    for (const ServerFrame& f : reader_->frames) {
      if (f.opcode == opcode) out.push_back(f);
    }
    return out;
  }
  // Whether our close frame has been submitted (in a send, or sent).
  bool CloseFrameSubmitted() const { return close_submitted_; }

  uint64_t now() const { return env_.now_tick; }
  exchange::ConnectionEnv& env() { return env_; }
  const exchange::ConnectionConfig& config() const { return config_; }
  size_t chunks_available() const { return chunks_.available(); }
  size_t chunks_count() const { return chunks_.count(); }

  // permessage-deflate for the next Open (as agreed in the handshake), with
  // the socket's own zlib state (`dedicated`) or the thread's.
  std::optional<DeflateParams> deflate;
  bool dedicated = false;

  WsHost host;
  exchange::ConnectionStats stats;
  std::string wire;  // what the client received
  std::vector<std::pair<MessageKind, std::string>> messages;
  std::vector<SendResult> send_results;  // the echo's
  std::vector<Closed> closes;
  int opens = 0;
  int drains = 0;
  int deadlines_fired = 0;
  bool starved = false;  // the test gave -ENOBUFS: OnBuffersAvailable is due
  std::vector<std::string> own_violations;

 private:
  // After every event: the checks that hold whatever happened.
  void Observe() {
    if (closes.size() > 1) Violation("the close callback called twice");
    if ((host.shutdown_pending || host.shutdown_done || host.closed) && opens > 0 && closes.empty()) {
      Violation("the socket is shut or closed and `close` was not called");
    }
    if (host.shutdown_pending || host.shutdown_done) {
      if (sends_at_shutdown_ < 0) sends_at_shutdown_ = host.sends;
      if (host.sends != sends_at_shutdown_) Violation("a send after our FIN");
    }
    // What the client read (appended to `wire` since the last look)...
    if (wire.size() < read_) {
      Violation("the wire shrank");
      read_ = 0;
    }
    reader_->Feed(std::string_view(wire).substr(read_));
    read_ = wire.size();
    for (const std::string& e : reader_->errors) Violation(e);
    // ... and what was submitted and not sent yet (a short send's rest is
    // sent again from where the wire ends): our close frame is the last.
    close_submitted_ = reader_->close_seen();
    if (host.send.has_value()) {
      ServerReader scan(/*keep_frames=*/false);
      scan.allow_rsv1 = reader_->allow_rsv1;
      scan.head = reader_->head;  // past the head (if read): frames only
      scan.Feed(reader_->pending());
      scan.Feed(host.send->bytes);
      for (const std::string& e : scan.errors) Violation("in flight: " + e);
      if (reader_->close_seen() && !host.send->bytes.empty()) Violation("a send after our close frame went");
      close_submitted_ = close_submitted_ || scan.close_seen();
    }
    if (conn.Freeable() && (!close_done_ || host.send.has_value() || host.recv_armed ||
                            host.shutdown_pending)) {
      Violation("Freeable while the kernel holds an operation");
    }
  }
  void Violation(const std::string& what) {
    if (std::find(own_violations.begin(), own_violations.end(), what) == own_violations.end()) {
      own_violations.push_back(what);
    }
  }

  Behavior user_;
  std::unique_ptr<ServerReader> reader_ = std::make_unique<ServerReader>();
  size_t read_ = 0;  // bytes of `wire` the reader has
  std::string handoff_buffer_;
  bool close_done_ = false;
  bool close_submitted_ = false;
  int sends_at_shutdown_ = -1;

 public:
  Connection conn;  // last: destroyed first
};

}  // namespace uring_http::ws::testing

#endif  // URING_HTTP_TEST_WS_CONNECTION_HARNESS_H_
