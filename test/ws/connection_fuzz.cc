// libFuzzer target for the WebSocket connection (src/ws/connection.h) with
// test/http1's recording FakeHost beneath it (connection_harness.h): no
// kernel. The input plays a whole session, cut at arbitrary points, and
// then more sessions on the same object (Release, then Open again: a
// slot's reuse).
//
// The input, byte by byte from the front:
//   a mode byte: bit 0 a small max_message (200), bit 1 a small output
//     bound (1024: receives pause past 512), bit 2 short timers (idle 2 s,
//     ping 0.5 s: 21 and 6 ticks), bit 3 permessage-deflate (then a byte
//     of its parameters: bit 0 dedicated zlib state, else the thread's and
//     no context takeover; bits 1 and 2 no context takeover for the client
//     and for the server; bits 3 and 4 12-bit windows for each), bits 4-5
//     how many scripted client frames HTTP/1 read past the handshake (the
//     handoff's bytes), bit 6 HTTP/1's receive was armed, bit 7 the
//     client's FIN came with them;
//   then one event a byte (Driver::Step), each with its own operands:
//     the client writes a frame (scripted: text, binary, continuation,
//     ping, pong, close with a code, invalid UTF-8, any opcode; FIN or
//     not, unmasked or RSV1 now and then; with deflate, a message
//     compressed by the client's own context in one to three frames;
//     lengths in each form, up to
//     70,000 bytes) or raw bytes; the armed receive delivers a piece of what the
//     client wrote (or, all read, its FIN); the send in flight completes
//     whole, short, or fails; time passes (a little, or to the deadline);
//     the client's FIN, a reset, -ENOBUFS, buffers back, a cancel landing;
//     the shutdown's and the close's completions (the cancelled operations
//     before or after it); the server drains; Abort; the app sends or
//     closes from outside any callback; the session ends (everything
//     completes, Release, a new Open with the next mode byte).
// From the input's end, as they are called: what the route's callbacks
// do (echo, echo twice, close with an application code, a 5000-byte
// binary message, nothing; `open` may greet, close or send a lot;
// `drain` may send again; `close` tries to send and close).
//
// Checks, after every event:
//   - no URING_CHECK fails, nothing ASan or UBSan sees;
//   - FakeHost's: one receive and one send at a time, a cancel only of an
//     armed receive, a close that states what is armed, no close before
//     the shutdown completed, no send after the close;
//   - the harness's (Observe): the first bytes are a 101; every server
//     frame unmasked, unfragmented, no RSV, a known opcode, control frames
//     at most 125 bytes, a close code a peer may receive; nothing after our
//     close frame; no send after our FIN; `close` at most once, and before
//     the socket is shut or closed; Freeable() only once the close and
//     every operation it cancelled have completed;
//   - the messages the route got are a prefix of what a fresh FrameParser
//     (and, with deflate, an Inflater kept as the connection's must be)
//     reads from the same client bytes (each whole, once, in order, none
//     after a protocol error or the client's close), every text one UTF-8
//     (checked here on its own), none over max_message; the pongs sent
//     answer the client's pings, in order, with their payloads; with
//     deflate, the client inflates every compressed server frame (its
//     context following the server's);
//   - the server's data frames are the messages Send() took (kQueued or
//     kBackpressure), in order, each intact (inflated, with deflate), and
//     none other;
//   - Send(): kClosed once our close frame was submitted; kQueued leaves
//     at most the bound buffered, kBackpressure more, kDropped takes
//     nothing; `drain` only after a send saw the bound, and with at most
//     half of it buffered;
//   - nothing of ours in flight (no send, no shutdown) and not closed: a
//     deadline is armed (idle, ping, the closing handshake's, the
//     linger's), or a client holds the connection for ever;
//   - at each session's end, once everything completed: `close` called
//     exactly once, Freeable(), and after Release() every chunk back in
//     the pool.
// Three rules once broken (connection_test.cc's Bug... tests) are checked
// too:
//   - Send() in the `close` callback is kClosed;
//   - our FIN only after our close frame went;
//   - the client inflates the server's frames even after a compressed send
//     was refused for want of a segment.
//
// Fuzz:   test/fuzz/run_fuzz.sh 600 //test/ws:connection_fuzz
// Replay: bazel run //test/ws:connection_fuzz -- FILE_OR_DIR...
//         (WS_FUZZ_TRACE=1 prints the events as they happen)
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/ws/connection.h"
#include "src/ws/deflate.h"
#include "src/ws/frame.h"
#include "src/ws/frame_parser.h"
#include "test/ws/connection_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
#include "test/fuzz/replay_main.h"

namespace uring_http::ws {
namespace {

using testing::ClientFrame;
using testing::Harness;
using testing::ServerFrame;

bool Tracing() {
  static const bool on = std::getenv("WS_FUZZ_TRACE") != nullptr;
  return on;
}
// The checks of the rules above (once bugs, now fixed): always on.
bool KnownBugs() { return true; }

void Trace(const char* format, ...) {
  if (!Tracing()) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

// The input, read from the front (events) and from the back (what the
// callbacks do), zeros once the two meet.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), end_(size) {}
  uint8_t Byte() { return pos_ < end_ ? data_[pos_++] : 0; }
  uint8_t Back() { return pos_ < end_ ? data_[--end_] : 0; }
  bool empty() const { return pos_ >= end_; }

 private:
  const uint8_t* data_;
  size_t end_;
  size_t pos_ = 0;
};

// Strict UTF-8 (RFC 3629), written apart from src/ws/utf8_validator.
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<uint8_t>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// Text of about `len` bytes, cut at a character's boundary (so fragments
// made of it join into UTF-8).
std::string Utf8Pattern(size_t len, uint8_t seed) {
  static const char* const kPieces[] = {"a", "é", "✓", "😀", " ", "bc", "ß"};
  std::string s;
  size_t i = seed;
  for (;;) {
    const char* p = kPieces[i++ % 7];
    if (s.size() + std::strlen(p) > len) break;
    s += p;
  }
  return s;
}

// What a fresh parser reads from the client's bytes: the reference the
// connection's messages must be a prefix of.
class Reference {
 public:
  // `inflater`: permessage-deflate was agreed, and the client's compressed
  // messages are inflated as the connection must (null: not agreed).
  Reference(uint64_t max_message, std::unique_ptr<Inflater> inflater)
      : parser_(Options(max_message, inflater != nullptr)),
        inflater_(std::move(inflater)),
        max_message_(max_message) {}
  void Feed(std::string_view bytes) {
    if (stopped_) return;
    std::string copy(bytes);
    char* p = copy.data();
    size_t len = copy.size();
    while (len > 0 && !stopped_) {
      const FrameParser::Event e = parser_.Feed(p, len);
      p += e.consumed;
      len -= e.consumed;
      switch (e.kind) {
        case FrameParser::Kind::kNeedMore:
          return;
        case FrameParser::Kind::kError:
          stopped_ = true;
          return;
        case FrameParser::Kind::kData:
          if (!in_message_) {
            kind_ = e.opcode == Opcode::kBinary ? MessageKind::kBinary : MessageKind::kText;
            compressed_ = e.compressed;
          }
          in_message_ = true;
          message_.append(e.data);
          if (e.message_end) {
            EndMessage();
            message_.clear();
            in_message_ = false;
          }
          break;
        case FrameParser::Kind::kControl:
          if (e.opcode == Opcode::kPing) pings.emplace_back(e.data);
          if (e.opcode == Opcode::kClose) stopped_ = true;
          break;
      }
    }
  }
  std::vector<std::pair<MessageKind, std::string>> messages;
  std::vector<std::string> pings;

 private:
  static FrameParser::Options Options(uint64_t max_message, bool deflate) {
    FrameParser::Options o;
    o.max_message = max_message;
    o.deflate = deflate;
    return o;
  }
  void EndMessage() {
    if (!compressed_) {
      messages.emplace_back(kind_, message_);
      return;
    }
    std::string inflated;
    if (inflater_->Inflate(message_, max_message_, &inflated) != Inflater::Result::kOk ||
        (kind_ == MessageKind::kText && !IsUtf8(inflated))) {
      stopped_ = true;  // the connection fails here (1009 or 1007)
      return;
    }
    messages.emplace_back(kind_, std::move(inflated));
  }

  FrameParser parser_;
  std::unique_ptr<Inflater> inflater_;
  const uint64_t max_message_;
  bool stopped_ = false;
  bool in_message_ = false;
  bool compressed_ = false;
  MessageKind kind_ = MessageKind::kText;
  std::string message_;
};

#define VIOLATION(...)                         \
  do {                                         \
    std::fprintf(stderr, "violation: ");       \
    std::fprintf(stderr, __VA_ARGS__);         \
    std::fputc('\n', stderr);                  \
    std::abort();                              \
  } while (0)

class Driver {
 public:
  explicit Driver(Input& in) : in_(in), h_(Behavior{}, Config()) {}

  void Run() {
    for (int session = 0; session < 4; ++session) {
      if (!OpenSession()) return;
      bool ended = false;
      for (int steps = 0; steps < 2000 && !in_.empty(); ++steps) {
        if (!Step()) {
          ended = true;
          break;
        }
        Check();
      }
      EndSession();
      if (!ended) return;
    }
  }

 private:
  static exchange::ConnectionConfig Config() {
    exchange::ConnectionConfig c = testing::DefaultConfig();
    // As the server runs it: large frames move the receive to the bulk
    // buffers (a cancel and a new arm) and back.
    c.bulk_receives = true;
    return c;
  }

  // ---- sessions

  bool OpenSession() {
    if (in_.empty() && opened_any_) return false;
    opened_any_ = true;
    const uint8_t mode = in_.Byte();
    Behavior b;
    max_message_ = (mode & 1) ? 200 : h_.config().ws_max_message;
    bound_ = (mode & 2) ? 1024 : h_.config().ws_max_backpressure;
    b.max_message = max_message_;
    b.max_backpressure = bound_;
    if (mode & 4) {
      b.idle_timeout_ms = 2000;
      b.ping_interval_ms = 500;
    }
    // permessage-deflate, as a handshake may agree it.
    h_.deflate.reset();
    h_.dedicated = false;
    client_deflater_.reset();
    server_inflater_.reset();
    std::unique_ptr<Inflater> reference_inflater;
    poisoned_ = false;
    if (mode & 8) {
      const uint8_t d = in_.Byte();
      DeflateParams p;
      h_.dedicated = (d & 1) != 0;
      // Shared zlib state keeps no context: the handshake asks both sides
      // for none.
      p.client_no_context_takeover = !h_.dedicated || (d & 2) != 0;
      p.server_no_context_takeover = !h_.dedicated || (d & 4) != 0;
      if (d & 8) {
        p.client_max_window_bits = 12;
        p.client_window_asked = true;
      }
      if (d & 16) p.server_max_window_bits = 12;
      h_.deflate = p;
      client_deflater_ = std::make_unique<Deflater>(p.client_max_window_bits, 8,
                                                    !p.client_no_context_takeover);
      server_inflater_ = std::make_unique<Inflater>(!p.server_no_context_takeover);
      const bool takeover = h_.dedicated && !p.client_no_context_takeover;
      reference_inflater = std::make_unique<Inflater>(takeover, takeover ? p.client_max_window_bits : 15);
    }
    b.open = [this](WebSocket& s) { OnOpen(s); };
    b.message = [this](WebSocket& s, std::string_view m, MessageKind k) { OnMessage(s, m, k); };
    b.drain = [this](WebSocket& s) { OnDrainCallback(s); };
    b.close = [this](WebSocket& s, uint16_t code, std::string_view) { OnClose(s, code); };
    h_.SetBehavior(std::move(b));
    reference_.emplace(max_message_, std::move(reference_inflater));
    messages_checked_ = frames_checked_ = pings_matched_ = data_frames_ = 0;
    taken_.clear();
    client_.clear();
    client_fin_ = false;
    reset_ = false;
    drain_owed_ = false;
    in_close_callback_ = false;
    // What HTTP/1 read past the handshake.
    const int handoff_frames = (mode >> 4) & 3;
    for (int i = 0; i < handoff_frames; ++i) ClientWritesFrame();
    std::string handoff;
    handoff.swap(client_);
    const bool recv_armed = (mode & 64) != 0;
    const bool peer_eof = (mode & 128) != 0;
    client_fin_ = peer_eof;
    Trace("open: mode %02x, %zu handoff bytes%s%s%s", mode, handoff.size(),
          recv_armed ? ", receive armed" : "", peer_eof ? ", FIN" : "",
          !h_.deflate ? "" : h_.dedicated ? ", deflate (dedicated)" : ", deflate (shared)");
    reference_->Feed(handoff);
    h_.Open(handoff, recv_armed, peer_eof);
    Check();
    return true;
  }

  void EndSession() {
    Trace("end of session: everything completes");
    if (!h_.Finish()) {
      Report();
      VIOLATION("not Freeable once everything completed");
    }
    Check();
    if (h_.closes.size() != 1) VIOLATION("`close` called %zu times in a session", h_.closes.size());
    h_.Release();
    if (!h_.Violations().empty()) {
      Report();
      VIOLATION("%s", h_.Violations()[0].c_str());
    }
  }

  // ---- the route

  SendResult CheckedSend(WebSocket& s, std::string_view m, MessageKind k, const char* who) {
    const bool closed_before = h_.CloseFrameSubmitted();
    const size_t before = s.buffered();
    const SendResult r = s.Send(m, k);
    Trace("  %s sends %zu bytes: %s", who, m.size(), SendResultName(r));
    if (closed_before && r != SendResult::kClosed) {
      VIOLATION("Send() after our close frame went: %s", SendResultName(r));
    }
    if (in_close_callback_ && KnownBugs() && r != SendResult::kClosed) {
      VIOLATION("Send() in the close callback: %s", SendResultName(r));
    }
    switch (r) {
      case SendResult::kQueued:
        if (s.buffered() > bound_) VIOLATION("kQueued with %zu buffered", s.buffered());
        taken_.emplace_back(k, std::string(m));
        break;
      case SendResult::kBackpressure:
        if (s.buffered() <= bound_) VIOLATION("kBackpressure with %zu buffered", s.buffered());
        drain_owed_ = true;
        taken_.emplace_back(k, std::string(m));
        break;
      case SendResult::kDropped:
        if (s.buffered() != before) VIOLATION("kDropped took bytes");
        drain_owed_ = true;
        // Refused for want of a segment, after it was compressed (a known
        // bug: connection_test.cc's DISABLED_BugADroppedCompressedMessage...).
        if (before <= bound_) poisoned_ = true;
        break;
      case SendResult::kClosed:
        if (s.buffered() != before) VIOLATION("kClosed took bytes");
        break;
    }
    return r;
  }

  void OnOpen(WebSocket& s) {
    const uint8_t b = in_.Back();
    switch (b % 4) {
      case 1:
        CheckedSend(s, "hello", MessageKind::kText, "open");
        break;
      case 2:
        s.Close(4000, "bye");
        break;
      case 3:
        CheckedSend(s, std::string(size_t{b} * 40, 'o'), MessageKind::kBinary, "open");
        break;
      default:
        break;
    }
  }

  void OnMessage(WebSocket& s, std::string_view m, MessageKind k) {
    Trace("  message: %s, %zu bytes", k == MessageKind::kText ? "text" : "binary", m.size());
    if (m.size() > max_message_) VIOLATION("a message over max_message: %zu", m.size());
    if (k == MessageKind::kText && !IsUtf8(m)) VIOLATION("a text message that is not UTF-8");
    const uint8_t b = in_.Back();
    switch (b % 8) {
      case 4:
        s.Close(static_cast<uint16_t>(3000 + b), "");
        break;
      case 5:
        CheckedSend(s, std::string(5000, 'B'), MessageKind::kBinary, "message");
        break;
      case 6:
        break;
      case 7:
        CheckedSend(s, m, k, "message");
        CheckedSend(s, m, k, "message");
        break;
      default:
        CheckedSend(s, m, k, "message");
    }
  }

  void OnDrainCallback(WebSocket& s) {
    Trace("  drain (%zu buffered)", s.buffered());
    if (!drain_owed_) VIOLATION("`drain` with no send that saw the bound");
    if (s.buffered() > bound_ / 2) VIOLATION("`drain` with %zu buffered", s.buffered());
    drain_owed_ = false;
    if (in_.Back() % 2 == 1) CheckedSend(s, "more", MessageKind::kText, "drain");
  }

  void OnClose(WebSocket& s, uint16_t code) {
    Trace("  close callback: %u", code);
    const bool ok = code == close_code::kNoStatus || code == close_code::kAbnormal || CloseCodeValid(code);
    if (!ok) VIOLATION("`close` told code %u", code);
    in_close_callback_ = true;
    CheckedSend(s, "after", MessageKind::kText, "close");
    s.Close(1000, "again");
    in_close_callback_ = false;
  }

  // ---- the client

  void ClientWritesFrame() {
    const uint8_t t = in_.Byte();
    const uint8_t l = in_.Byte();
    const uint8_t m = in_.Byte();
    const uint8_t mask[4] = {m, static_cast<uint8_t>(m * 3 + 1), static_cast<uint8_t>(m * 7 + 2),
                             static_cast<uint8_t>(m * 13 + 3)};
    const bool fin = (t & 0x08) == 0;
    const bool masked = (t & 0xF0) != 0xF0;
    const uint8_t rsv = (t & 0xF0) == 0xE0 ? 4 : 0;
    size_t len;
    if (l < 192) {
      len = l % 126;
    } else if (l < 255) {
      len = 126 + size_t{l - 192u} * 37;  // up to 2457 bytes
    } else {
      len = 70000;  // the 64-bit form
    }
    const size_t control_len = l >= 250 ? 126 : l % 126;
    std::string payload;
    uint8_t opcode = 0;
    if (client_deflater_ != nullptr && (t & 0xF0) == 0xD0 && (t & 7) <= 1) {
      // A compressed message (RSV1 on its first frame), whole, in one to
      // three frames.
      const std::string message = (t & 7) == 0 ? Utf8Pattern(len, m) : std::string(len, static_cast<char>(m));
      std::string z;
      if (!client_deflater_->Compress(message, &z)) std::abort();
      const size_t pieces = 1 + m % 3;
      Trace("client writes a compressed message: %zu bytes as %zu, in %zu frames", message.size(), z.size(), pieces);
      for (size_t i = 0; i < pieces; ++i) {
        const size_t from = z.size() * i / pieces;
        const size_t to = z.size() * (i + 1) / pieces;
        client_ += ClientFrame(i == 0 ? (t & 7) + 1 : 0, std::string_view(z).substr(from, to - from),
                               i + 1 == pieces, i == 0 ? 4 : 0, true, mask);
      }
      return;
    }
    switch (t & 7) {
      case 0:
        opcode = 0x1;
        payload = Utf8Pattern(len, m);
        break;
      case 1:
        opcode = 0x2;
        payload.assign(len, static_cast<char>(m));
        break;
      case 2:
        opcode = 0x0;
        payload = Utf8Pattern(len, m);
        break;
      case 3:
        opcode = 0x9;
        payload.assign(control_len, static_cast<char>('0' + m % 10));
        break;
      case 4:
        opcode = 0xA;
        payload.assign(control_len, 'p');
        break;
      case 5: {
        opcode = 0x8;
        static constexpr uint16_t kCodes[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011,
                                              1012, 3000, 4999, 1005, 1006, 999,  5000};
        if ((l & 0x0F) != 0x0F) {
          const uint16_t code = kCodes[l & 0x0F];
          payload.push_back(static_cast<char>(code >> 8));
          payload.push_back(static_cast<char>(code & 0xFF));
          payload += Utf8Pattern((l >> 4) * 3, m);
        }
        if (m == 0xFF) payload += "\xff";  // a reason that is not UTF-8
        break;
      }
      case 6: {
        opcode = 0x1;
        payload = Utf8Pattern(len, m);
        payload.insert(payload.begin() + static_cast<long>(payload.empty() ? 0 : m % payload.size()),
                       static_cast<char>(0xC0 | (m & 1) << 5 | (m & 0x1F)));
        break;
      }
      default:
        opcode = (t >> 4) & 0xF;
        payload.assign(control_len, 'r');
    }
    Trace("client writes a frame: opcode %x, %zu bytes%s%s%s", opcode, payload.size(),
          fin ? "" : ", not FIN", masked ? "" : ", unmasked", rsv ? ", RSV1" : "");
    client_ += ClientFrame(opcode, payload, fin, rsv, masked, mask);
  }

  // ---- events

  // One event; false when the session ends.
  bool Step() {
    const uint8_t op = in_.Byte();
    switch (op % 25) {
      case 0:
      case 1:
      case 2:
        if (!client_fin_) ClientWritesFrame();
        return true;
      case 3: {
        const size_t n = in_.Byte() % 32;
        std::string raw;
        for (size_t i = 0; i < n; ++i) raw.push_back(static_cast<char>(in_.Byte()));
        Trace("client writes %zu raw bytes", n);
        if (!client_fin_) client_ += raw;
        return true;
      }
      case 4:
      case 5:
      case 6:
        Receive(in_.Byte());
        return true;
      case 7:
      case 8:
        if (h_.host.send.has_value()) {
          Trace("send completes (%zu bytes)", h_.host.send->bytes.size());
          if (reset_) {
            h_.FailSend(-ECONNRESET);
          } else {
            h_.CompleteSend();
          }
        }
        return true;
      case 9: {
        const uint8_t n = in_.Byte();
        if (h_.host.send.has_value() && !reset_) {
          const size_t total = h_.host.send->bytes.size();
          const size_t k = total > 1 ? 1 + n % (total - 1) : total;
          Trace("send completes short (%zu of %zu)", k, total);
          h_.CompleteSend(k);
        }
        return true;
      }
      case 10:
        if (h_.host.send.has_value()) {
          Trace("send fails");
          h_.FailSend(op & 0x80 ? -ECONNRESET : -EPIPE);
        }
        return true;
      case 11: {
        const uint8_t n = in_.Byte() % 16;
        Trace("%u ticks pass", n);
        h_.Tick(n);
        return true;
      }
      case 12:
        Trace("time passes to the deadline (%llu)", static_cast<unsigned long long>(h_.host.deadline));
        h_.TickToDeadline();
        return true;
      case 13:
        Trace("the client's FIN (after its %zu unread bytes)", client_.size());
        client_fin_ = true;
        return true;
      case 14:
        if (h_.host.recv_armed) {
          Trace("the receive ends: reset");
          reset_ = client_fin_ = true;
          client_.clear();
          h_.RecvEnd(-ECONNRESET);
        }
        return true;
      case 15:
        if (h_.host.recv_armed) {
          Trace("the receive ends: no buffers");
          h_.starved = true;
          h_.RecvEnd(-ENOBUFS);
        }
        return true;
      case 16:
        if (h_.starved) {
          Trace("buffers available");
          h_.starved = false;
          h_.BuffersAvailable();
        }
        return true;
      case 17:
        if (h_.host.cancel_pending && h_.host.recv_armed) {
          Trace("the cancel lands");
          h_.LandCancel();
        }
        return true;
      case 18:
        if (h_.host.shutdown_pending) {
          Trace("the shutdown completes");
          h_.ShutdownDone();
        }
        return true;
      case 19:
        if (h_.host.closed) {
          // The cancelled operations end before the close's own
          // completion, right after it, or later (other events, Finish).
          if (op & 0x80) {
            Trace("the cancelled operations end");
            h_.FailSend(-ECANCELED);
            if (h_.host.recv_armed) h_.RecvEnd(-ECANCELED);
          }
          Trace("the close completes");
          h_.CloseDone(/*and_cancelled=*/(op & 0x40) == 0);
        }
        return true;
      case 20:
        Trace("the server drains");
        h_.Drain();
        return true;
      case 21:
        Trace("abort");
        h_.Abort();
        return true;
      case 22: {
        const uint8_t n = in_.Byte();
        const size_t size = n < 128 ? n : size_t{n - 127u} * 97;
        Trace("the app sends %zu bytes%s", size, (n & 3) == 3 ? " of noise" : "");
        const bool closed_before = h_.CloseFrameSubmitted();
        const size_t before = h_.conn.buffered();
        std::string m(size, 'A');
        if ((n & 3) == 3) {
          // Noise, which no compressor shrinks (a heap segment past a chunk).
          uint32_t x = ++noise_;  // never the same twice (a kept context would shrink it)
          for (char& c : m) {
            x = x * 1103515245 + 12345;
            c = static_cast<char>(x >> 24);
          }
        }
        const MessageKind kind = n & 1 ? MessageKind::kBinary : MessageKind::kText;
        const SendResult r = h_.AppSend(m, kind);
        Trace("  %s", SendResultName(r));
        if (r == SendResult::kQueued || r == SendResult::kBackpressure) taken_.emplace_back(kind, m);
        if (closed_before && r != SendResult::kClosed) VIOLATION("AppSend after our close: %s", SendResultName(r));
        if (r == SendResult::kBackpressure || r == SendResult::kDropped) drain_owed_ = true;
        if (r == SendResult::kDropped && before <= bound_) poisoned_ = true;
        return true;
      }
      case 23: {
        const uint8_t n = in_.Byte();
        Trace("the app closes");
        h_.AppClose(n & 1 ? 1000 : static_cast<uint16_t>(3000 + n), n & 2 ? "reason" : "");
        return true;
      }
      default:
        return false;  // the session ends
    }
  }

  // The armed receive: a piece of what the client wrote, or its FIN.
  void Receive(uint8_t k) {
    if (!h_.host.recv_armed) return;
    if (client_.empty()) {
      if (client_fin_ && !reset_) {
        Trace("the receive ends: the client's FIN");
        h_.RecvEnd(0);
      }
      return;
    }
    size_t n = k == 0 ? client_.size() : k < 128 ? k : size_t{k - 127u} * 64;
    n = std::min(n, client_.size());
    const std::string piece = client_.substr(0, n);
    client_.erase(0, n);
    Trace("the receive delivers %zu bytes", n);
    reference_->Feed(piece);
    h_.Recv(piece, 16 * 1024);  // in provided buffers of 16 KiB
  }

  // ---- checks

  void Report() {
    for (const std::string& v : h_.Violations()) std::fprintf(stderr, "  harness: %s\n", v.c_str());
  }

  void Check() {
    if (!h_.Violations().empty()) {
      Report();
      VIOLATION("%s", h_.Violations()[0].c_str());
    }
    // The route's messages: a prefix of the reference's (those not yet
    // compared).
    const auto& ref = reference_->messages;
    const auto& got = h_.messages;
    if (got.size() > ref.size()) VIOLATION("%zu messages delivered, %zu sent", got.size(), ref.size());
    for (; messages_checked_ < got.size(); ++messages_checked_) {
      if (got[messages_checked_] != ref[messages_checked_]) {
        VIOLATION("message %zu is not the client's", messages_checked_);
      }
    }
    // Pongs answer pings, in order, with their payloads (one may be
    // skipped: a later ping's answers for it, RFC 6455 5.5.3).
    const std::vector<ServerFrame>& frames = h_.Frames();
    for (; frames_checked_ < frames.size(); ++frames_checked_) {
      const ServerFrame& p = frames[frames_checked_];
      if (p.opcode == 0x1 || p.opcode == 0x2) {
        // Every message a Send() took goes, in order, intact; none other.
        if (data_frames_ >= taken_.size()) VIOLATION("a message sent that no Send() took");
        const auto& [kind, expected] = taken_[data_frames_++];
        if ((p.opcode == 0x2) != (kind == MessageKind::kBinary)) VIOLATION("a message of the wrong kind");
        std::string m = p.payload;
        if (p.rsv == 4 && server_inflater_ != nullptr) {
          // The client inflates what the server compressed (its context,
          // if kept, follows every message the server sent).
          const Inflater::Result r = server_inflater_->Inflate(p.payload, uint64_t{1} << 32, &m);
          if (!poisoned_ || KnownBugs()) {
            if (r != Inflater::Result::kOk) {
              VIOLATION("the client cannot inflate the server's frame %zu", frames_checked_);
            }
          } else if (r != Inflater::Result::kOk) {
            m = expected;  // past the known bug: the context is lost
          }
          if (poisoned_ && !KnownBugs()) m = expected;
        }
        if (m != expected) VIOLATION("the server's message %zu is not what was sent", data_frames_ - 1);
      }
      if (p.opcode != 0xA) continue;
      const std::vector<std::string>& pings = reference_->pings;
      while (pings_matched_ < pings.size() && pings[pings_matched_] != p.payload) ++pings_matched_;
      if (pings_matched_ == pings.size()) VIOLATION("a pong that answers no ping");
      ++pings_matched_;
    }
    if (KnownBugs() && (h_.host.shutdown_pending || h_.host.shutdown_done) && !h_.CloseFrameSubmitted()) {
      VIOLATION("our FIN without our close frame");
    }
    // Only the client can move: some deadline must be armed.
    if (!h_.host.closed && !h_.host.send.has_value() && !h_.host.shutdown_pending &&
        h_.host.deadline == 0) {
      VIOLATION("the connection waits for the client with no deadline armed");
    }
  }

  Input& in_;
  Harness h_;
  std::optional<Reference> reference_;
  std::string client_;  // what the client wrote and the server has not read
  uint64_t max_message_ = 0;
  size_t bound_ = 0;
  bool client_fin_ = false;
  bool reset_ = false;
  bool drain_owed_ = false;
  bool in_close_callback_ = false;
  bool opened_any_ = false;
  // permessage-deflate: the client's compressor, and its decompressor of
  // the server's messages; `poisoned_`: a compressed send was refused
  // (the known bug), so the server's context no longer matches.
  std::unique_ptr<Deflater> client_deflater_;
  std::unique_ptr<Inflater> server_inflater_;
  bool poisoned_ = false;
  uint32_t noise_ = 0;
  // What Check() compared already, this session.
  size_t messages_checked_ = 0;
  size_t frames_checked_ = 0;
  size_t pings_matched_ = 0;
  // The messages Send() took, in order, and how many of them were seen sent.
  std::vector<std::pair<MessageKind, std::string>> taken_;
  size_t data_frames_ = 0;
};

}  // namespace
}  // namespace uring_http::ws

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::ws::Input in(data, size);
  uring_http::ws::Driver driver(in);
  driver.Run();
  return 0;
}
