// Sender: a WebSocket's sends from any thread (a worker, an ASYNC
// coroutine, a thread of the application's), and topics that many sockets
// subscribe to.
//
//   // on the ring, in a callback:
//   std::shared_ptr<ws::Sender> out = socket.sender();
//   pool.Run([out] { out->Send(Render(Query())); });   // any thread
//
// Send frames the message once, in the calling thread, and queues it for
// the socket's ring: the first send the ring has not taken yet posts the
// socket to the ring's inbox, which sends one IORING_OP_MSG_RING for every
// burst of posts (async::RingInbox), so 10,000 sends to the sockets of one
// ring wake it once. It returns what WebSocket::Send does (websocket.h),
// counting what is queued here and what the ring still holds for the
// client, as of the ring's last look. A sender outlives its socket safely:
// once the socket has ended every send is kClosed.
//
// Topics (Topics below): Publish frames a message once and queues that one
// frame (shared, not copied) to every subscriber's sender; the ring copies
// it into each socket's output.
//
// Thread-safety: every public member, any thread.
#ifndef URING_HTTP_SRC_WS_SENDER_H_
#define URING_HTTP_SRC_WS_SENDER_H_

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

// A message framed for a client (header and payload), shared by the
// sockets it goes to.
using Frame = std::shared_ptr<const std::string>;
Frame MakeFrame(std::string_view message, MessageKind kind);

class Sender {
 public:
  // ---- any thread
  SendResult Send(std::string_view message, MessageKind kind = MessageKind::kText);
  // A frame made once for many sockets (MakeFrame).
  SendResult SendFrame(const Frame& frame);
  // Starts the closing handshake on the ring (as WebSocket::Close).
  void Close(uint16_t code = 1000, std::string_view reason = {});
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  size_t buffered() const;

  // ---- the ring's side (ws::Connection, the loop)
  // `inbox` and `token` (what the ring's inbox is given to find the
  // socket again) are the loop's; `bound` the socket's backpressure bound.
  Sender(async::RingInbox* inbox, uint64_t token, size_t bound)
      : inbox_(inbox), token_(token), bound_(bound) {}
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  struct Taken {
    std::vector<Frame> frames;
    bool close = false;
    uint16_t code = 0;
    std::string reason;
  };
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
  bool signalled_ = false;  // posted to the inbox, not taken yet
  bool close_ = false;
  uint16_t close_code_ = 0;
  std::string close_reason_;
  std::atomic<bool> closed_{false};
  async::RingInbox* const inbox_;
  const uint64_t token_;
  const size_t bound_;
};

// Topics: pub/sub fan-out over senders. Subscribe on the ring (a socket's
// callback, with the socket's sender) or anywhere with a sender; Publish
// from any thread. A socket that has closed is dropped from its topics at
// the next publish.
class Topics {
 public:
  void Subscribe(std::string_view topic, std::shared_ptr<Sender> sender);
  void Unsubscribe(std::string_view topic, const Sender* sender);
  // Frames `message` once and queues it to every live subscriber; returns
  // how many took it (kQueued or kBackpressure).
  size_t Publish(std::string_view topic, std::string_view message,
                 MessageKind kind = MessageKind::kText);
  size_t subscribers(std::string_view topic) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<std::shared_ptr<Sender>>> topics_;
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_SENDER_H_
