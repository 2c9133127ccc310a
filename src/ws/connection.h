// ws::Connection: a WebSocket on its ring, the protocol a slot speaks after
// HTTP/1 answered a handshake with 101 (http1 hands the socket over with
// the bytes it read past the request: conn::Handoff).
//
// Its life, as a state machine (Phase):
//   kOpen         messages both ways; the route's callbacks run.
//   kClosing      our close frame is queued (the route closed, an error,
//                 idle, the drain): nothing more is sent, and we read until
//                 the client's close answers it (or the linger time is up).
//   kLingering    our FIN is sent once the output is out (the server closes
//                 the TCP connection first, RFC 6455 7.1.1); reads are
//                 dropped until the client's FIN or the linger time.
//   kCloseSubmitted, kClosed  the socket is being closed, then is.
// A client's close answered (its code echoed) goes from kOpen straight to
// kLingering once the answer is out.
//
// Receiving: frames are parsed in the receive buffer, unmasked in place; a
// message that arrives whole in one receive reaches the route without a
// copy, one that spans receives is assembled in the connection's buffer
// (bounded by max_message). Text is checked as UTF-8 as it arrives, so a bad
// byte fails the connection at once (1007). Past half the output bound the
// receive pauses (the client's sends wait in its socket) until the client
// has read what it was sent: an echo never drops a message to a client that
// reads.
//
// Thread-safety: owned by its loop's ring thread.
#ifndef URING_HTTP_SRC_WS_CONNECTION_H_
#define URING_HTTP_SRC_WS_CONNECTION_H_

#include <any>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/conn/protocol.h"
#include "src/exchange/connection_env.h"
#include "src/http1/output_queue.h"
#include "src/ws/deflate.h"
#include "src/ws/frame.h"
#include "src/ws/frame_parser.h"
#include "src/ws/handshake.h"
#include "src/ws/sender.h"
#include "src/ws/utf8_validator.h"
#include "src/ws/websocket.h"

namespace uring_http::ws {

// What a handshake that was accepted hands to the connection with its
// socket (conn::Handoff::websocket). Valid during the handoff only.
struct Accepted {
  const Behavior* behavior = nullptr;
  std::string_view accept;     // Sec-WebSocket-Accept
  Upgrade* upgrade = nullptr;  // the chosen protocol and user state (taken)
  // permessage-deflate as agreed (deflate.h): with the ring thread's
  // shared zlib state, or the socket's own (`dedicated`).
  std::optional<DeflateParams> deflate;
  bool dedicated = false;
};

// When this few of the output queue's segments are left, its receive
// pauses, and each new segment is a buffer of kCoalesceBytes that later
// frames share (see QueueFrame).
inline constexpr unsigned kSpareSegments = 4;
inline constexpr size_t kCoalesceBytes = 256 * 1024;

// Reading into the bulk buffers (recv_bulk_ below).
inline constexpr uint64_t kBulkFrameBytes = 8192;
inline constexpr size_t kSmallReceiveBytes = 2048;
inline constexpr uint8_t kSmallReceivesToLeaveBulk = 8;
// The dedicated compressor: a 4 KiB window (its memory twice that, 16 KiB)
// and a 16 KiB hash table (1 << (5 + 9)); the client is asked for the same
// window when it lets us ask (client_max_window_bits offered).
inline constexpr int kDedicatedWindowBits = 12;
inline constexpr int kDedicatedMemLevel = 5;

// Closes counted by code (ConnectionStats::ws_closes): 1000, 1001, 1002,
// 1006, 1007, 1009, 1005, the rest.
inline constexpr size_t kCloseCodeBuckets = 8;
size_t CloseCodeBucket(uint16_t code);
const char* CloseCodeBucketName(size_t bucket);

// The 101 that accepts a handshake.
std::string SwitchingProtocols(std::string_view accept, std::string_view protocol,
                               std::string_view extensions = {});

class Connection final : public conn::Protocol, public WebSocket {
 public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() = default;

  void Open(exchange::ConnectionEnv* env, uint32_t slot, const conn::Handoff& handoff);

  // ---- conn::Protocol
  void OnRecv(const char* data, size_t len, bool ended) override;
  void OnRecvEnd(int res) override;
  void OnBuffersAvailable() override;
  void OnSend(int res, bool notification_follows) override;
  void OnSendNotification(bool copied) override;
  void OnShutdownDone() override;
  void OnClosed() override;
  void OnWritable(int res) override {}
  void OnDeadline() override;
  void OnDrain() override;
  void OnBatchEnd() override {}
  void Abort() override;
  void SetProxiedClient(const http::ClientAddress&) override {}
  void SetClientCertificate(std::shared_ptr<const http::ClientCertificate>) override {}
  void OnTaskDone(uint32_t) override {}
  void OnStreamNotify(uint32_t) override {}
  void OnFileStat(int) override {}
  void OnFileOpen(int) override {}
  void OnFileRead(int) override {}
  void OnFileSplice(int) override {}
  bool Freeable() const override {
    return phase_ == Phase::kClosed && !recv_armed_ && !send_inflight_ && !shutdown_inflight_ &&
           !out_.notification_pending();
  }
  void Release() override;

  // ---- WebSocket
  SendResult Send(std::string_view message, MessageKind kind) override;
  void Close(uint16_t code, std::string_view reason) override;
  size_t buffered() const override { return out_.pending(); }
  std::string_view protocol() const override { return protocol_; }
  std::any& user() override { return user_; }
  std::shared_ptr<Sender> sender() override;
  bool Offload(std::function<void()> work) override {
    return env_->host->Offload(std::move(work));
  }

  // The loop: the sender has sends (or a close) for the socket.
  void OnPosted();
  // The loop is going away: the sender's sends are kClosed from now on.
  void ShutSender() {
    if (sender_ != nullptr) sender_->Shut();
  }

 private:
  enum class Phase : uint8_t { kOpen, kClosing, kLingering, kCloseSubmitted, kClosed };

  // Parses what arrived (data is ours to unmask in place).
  void Feed(char* data, size_t len);
  void OnData(const FrameParser::Event& e);
  void OnControl(const FrameParser::Event& e);
  void Deliver(std::string_view message, MessageKind kind);
  // Fails the connection (RFC 6455 7.1.7): our close with `code`, then the
  // TCP close without waiting for the client's.
  void Fail(uint16_t code, const char* why);
  // Close() with any code of ours (1001 for the drain), not only the
  // application's.
  void CloseWith(uint16_t code, std::string_view reason);
  // Queues our close frame (once) and stops sending anything else.
  void QueueClose(uint16_t code, std::string_view reason);
  void TryQueueCloseFrame();
  bool QueueFrame(Opcode opcode, std::string_view payload, bool compressed = false);
  // A message into the output, compressed when permessage-deflate was
  // agreed and it is long enough; kLost: the dedicated compressor's
  // context was lost and the connection is closing (1011).
  enum class Queued : uint8_t { kYes, kNoRoom, kLost };
  Queued QueueMessage(Opcode opcode, std::string_view message);
  // A frame made elsewhere (a sender's PreparedMessage), copied.
  bool QueueBytes(std::string_view frame);
  // The window of the compressor without a context of ours this socket
  // agreed; 0 with none or a dedicated context.
  int SharedDeflateWindow() const;
  // After a receive of `len` bytes: whether large messages are arriving.
  void NoteReceive(size_t len);
  void ArmRecv(bool bulk);
  // What to Reserve() for `need` bytes of frames (kCoalesceBytes).
  size_t ReserveSize(size_t need) const;
  void OnCompressedData(const FrameParser::Event& e, bool first);

  // After every event: sends, arms the receive, moves the phase on, sets
  // the deadline.
  void Sync();
  void Flush();
  void StartLinger();
  void FinishLinger();
  void StartClose();
  // The route's `close`, once, with the code that ended the connection.
  void NotifyClosed();
  void MaybeDrain();
  // The sender learns what the ring holds; once the socket ends, it is
  // shut (its sends are kClosed, nothing more is posted).
  void UpdateSender();
  uint64_t After(uint32_t ms) const;
  size_t bound() const { return max_backpressure_; }

  exchange::ConnectionEnv* env_ = nullptr;
  uint32_t slot_ = 0;
  const Behavior* behavior_ = nullptr;
  std::optional<FrameParser> parser_;
  Utf8Validator utf8_;
  http1::OutputQueue out_;
  std::string message_;   // a message spanning receives, assembled
  std::string protocol_;
  std::any user_;
  std::shared_ptr<Sender> sender_;  // made on first use
  size_t held_told_ = 0;            // what sender_->Held() last heard
  bool taken_since_told_ = false;
  // permessage-deflate, when agreed; a dedicated socket's zlib state is
  // made on its first compressed message each way.
  DeflateParams deflate_;
  bool deflate_on_ = false;
  bool dedicated_ = false;
  bool message_compressed_ = false;  // the message being read has RSV1
  std::unique_ptr<Deflater> deflater_;
  std::unique_ptr<Inflater> inflater_;
  // The limits, the route's or the server's.
  uint64_t max_message_ = 0;
  size_t max_backpressure_ = 0;
  uint32_t idle_timeout_ms_ = 0;
  uint32_t ping_interval_ms_ = 0;

  Phase phase_ = Phase::kOpen;
  bool recv_armed_ = false;
  // Large messages are read into the loop's bulk buffers (16 KiB where the
  // others are 2: an eighth of the receives): from a frame with
  // kBulkFrameBytes still to come, until kSmallReceivesToLeaveBulk
  // receives in a row would have fit a small buffer (NoteReceive). The
  // armed receive changes group by a cancel and a new arm.
  bool recv_bulk_ = false;        // the armed receive's group
  bool recv_cancelling_ = false;  // its cancel is in flight
  bool bulk_wanted_ = false;
  uint8_t small_receives_ = 0;
  bool recv_starved_ = false;   // -ENOBUFS: armed again on OnBuffersAvailable
  bool recv_paused_ = false;    // past half the output bound: not armed again
  bool peer_eof_ = false;
  bool fatal_ = false;          // the socket failed: close at once
  bool send_inflight_ = false;
  bool shutdown_inflight_ = false;
  bool linger_done_ = false;    // the linger ended while the shutdown was in flight
  bool close_queued_ = false;   // our close frame is in the output (or pending)
  bool close_frame_pending_ = false;  // ... waiting for a segment to free
  bool close_frame_reason_ = false;   // its reason is close_reason_
  uint16_t close_frame_code_ = 0;     // its code (0: an empty payload)
  bool close_received_ = false; // the client's close arrived
  bool fail_ = false;           // ours ends it: no wait for the client's close
  bool opened_ = false;         // `open` was called: `close` is owed
  bool notified_ = false;       // `close` was called
  bool want_drain_ = false;     // a send saw the bound: `drain` is owed
  bool ping_sent_ = false;      // since the last frame received
  bool message_begun_ = false;  // a piece of the message being read has come
  MessageKind message_kind_ = MessageKind::kText;
  uint16_t close_code_ = close_code::kAbnormal;  // what `close` is told
  std::string close_reason_;
  int in_event_ = 0;            // inside an event: Sync runs at its end
  uint64_t last_rx_tick_ = 0;
  uint64_t send_deadline_ = 0;
  uint64_t close_deadline_ = 0;  // kClosing: the client's close is due
  uint64_t armed_deadline_ = 0;
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_CONNECTION_H_
