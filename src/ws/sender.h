// Sender: a WebSocket's sends from any thread (a worker, an ASYNC
// coroutine, a thread of the application's), and topics that many sockets
// subscribe to.
//
//   // on the ring, in a callback:
//   std::shared_ptr<ws::Sender> out = socket.sender();
//   pool.Run([out] { out->Send(Render(Query())); });   // any thread
//
// Send prepares the message once, in the calling thread (framed, and
// compressed there too when the socket agreed permessage-deflate with no
// context kept on our side), and queues it for the socket's ring: the
// first send the ring has not taken yet posts the socket to the ring's
// inbox, which sends one IORING_OP_MSG_RING for every burst of posts
// (async::RingInbox), so 10,000 sends to the sockets of one ring wake it
// once. It returns what WebSocket::Send does (websocket.h), counting what
// is queued here and what the ring still holds for the client, as of the
// ring's last look. A sender outlives its socket safely: once the socket
// has ended every send is kClosed.
//
// Topics (Topics below): Publish prepares a message once and queues that
// one PreparedMessage (shared, not copied) to every subscriber's sender:
// one framing for all, and one compression for each window size the
// subscribers agreed (in practice one), made by the first that needs it.
// The ring copies the bytes into each socket's output. A socket with a
// dedicated compressor that keeps its context (Compression::kDedicated
// without server_no_context_takeover) cannot take a message compressed
// without that context: its ring compresses the message with its own.
//
// Thread-safety: every public member, any thread.
#ifndef URING_HTTP_SRC_WS_SENDER_H_
#define URING_HTTP_SRC_WS_SENDER_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/ws/websocket.h"

namespace uring_http::async {
class RingInbox;
}  // namespace uring_http::async

namespace uring_http::ws {

// A message made once for many sockets: its frame as it is, and its
// permessage-deflate frames (RSV1, compressed with no context), each made
// on first use and then shared.
class PreparedMessage {
 public:
  PreparedMessage(std::string_view message, MessageKind kind);
  PreparedMessage(const PreparedMessage&) = delete;
  PreparedMessage& operator=(const PreparedMessage&) = delete;

  MessageKind kind() const { return kind_; }
  std::string_view payload() const { return std::string_view(frame_).substr(header_); }
  // Header and payload, uncompressed.
  std::string_view frame() const { return frame_; }
  // The frame to send to a socket that agreed permessage-deflate with our
  // side keeping no context and a window of `window_bits` (9..15):
  // compressed the first time it is asked for that window (by any thread;
  // others asking meanwhile wait for it), then the same bytes. The plain
  // frame when compressing would not make it smaller (short or
  // incompressible messages) or zlib failed.
  std::string_view FrameFor(int window_bits) const;

 private:
  std::string frame_;
  size_t header_;
  MessageKind kind_;
  // [window_bits - 9]: made under mu_, then read without it (every
  // subscriber after the first asks: a lock each would cost more than the
  // copy). An empty string: compressing did not make it smaller.
  mutable std::mutex mu_;
  mutable std::array<std::unique_ptr<const std::string>, 7> made_;
  mutable std::array<std::atomic<const std::string*>, 7> deflated_{};
};
using Frame = std::shared_ptr<const PreparedMessage>;
Frame MakeFrame(std::string_view message, MessageKind kind);

class Sender {
 public:
  // ---- any thread
  SendResult Send(std::string_view message, MessageKind kind = MessageKind::kText);
  // A message prepared once for many sockets (MakeFrame).
  SendResult SendFrame(const Frame& frame);
  // Starts the closing handshake on the ring (as WebSocket::Close).
  void Close(uint16_t code = 1000, std::string_view reason = {});
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  size_t buffered() const;

  // ---- the ring's side (ws::Connection, the loop)
  // `inbox` and `token` (what the ring's inbox is given to find the
  // socket again) are the loop's; `bound` the socket's backpressure bound.
  // `deflate_window`: the window of the permessage-deflate the socket
  // agreed when our side keeps no context (its messages are then
  // compressed before they reach the ring: PreparedMessage::FrameFor); 0
  // when they go as they are or the ring compresses them (a dedicated
  // context).
  Sender(async::RingInbox* inbox, uint64_t token, size_t bound, int deflate_window = 0)
      : inbox_(inbox), token_(token), bound_(bound), deflate_window_(deflate_window) {}
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  struct Taken {
    std::vector<Frame> frames;
    // Sends refused (kDropped) since the last take, for the socket's
    // metrics; and whether any send saw the bound (kBackpressure or
    // kDropped): the route's `drain` is then owed.
    uint64_t dropped = 0;
    bool drain_owed = false;
    bool close = false;
    uint16_t code = 0;
    std::string reason;
  };
  int deflate_window() const { return deflate_window_; }
  // The bytes of `frame` this socket is sent (compressed or not).
  std::string_view Wire(const PreparedMessage& frame) const;
  // Everything queued since the last take (the vectors' memory is reused).
  void Take(Taken* out);
  // What the ring holds for the client now (for buffered()).
  void Held(size_t ring_bytes);
  // The socket ended: every send from now on is kClosed, and nothing more
  // is posted to the ring (whose inbox may go away after this).
  void Shut();

 private:
  SendResult Queue(Frame frame, size_t bytes);

  mutable std::mutex mu_;
  std::vector<Frame> pending_;
  size_t pending_bytes_ = 0;
  size_t ring_bytes_ = 0;
  uint64_t dropped_ = 0;
  bool drain_owed_ = false;
  bool signalled_ = false;  // posted to the inbox, not taken yet
  bool close_ = false;
  uint16_t close_code_ = 0;
  std::string close_reason_;
  std::atomic<bool> closed_{false};
  async::RingInbox* const inbox_;
  const uint64_t token_;
  const size_t bound_;
  const int deflate_window_;
};

// Topics: pub/sub fan-out over senders. Subscribe on the ring (a socket's
// callback, with the socket's sender) or anywhere with a sender; Publish
// from any thread. A socket that has closed is dropped from its topics at
// the next publish.
class Topics {
 public:
  Topics() = default;
  Topics(const Topics&) = delete;
  Topics& operator=(const Topics&) = delete;
  void Subscribe(std::string_view topic, std::shared_ptr<Sender> sender);
  void Unsubscribe(std::string_view topic, const Sender* sender);
  // Prepares `message` once and queues it to every live subscriber; returns
  // how many took it (kQueued or kBackpressure).
  size_t Publish(std::string_view topic, std::string_view message,
                 MessageKind kind = MessageKind::kText);
  size_t subscribers(std::string_view topic) const;

 private:
  // A topic's subscribers in a vector (what a publish walks) and where
  // each one is in it (subscribing, unsubscribing and dropping a closed
  // one are O(1): 10,000 sockets leaving a topic is not quadratic).
  struct Topic {
    std::vector<std::shared_ptr<Sender>> subs;
    std::unordered_map<const Sender*, size_t> at;
    void Remove(size_t i);
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Topic> topics_;
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_SENDER_H_
