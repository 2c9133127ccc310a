// WebSocket routes (RFC 6455): what a handler sees of a WebSocket, and the
// behaviour a route gives it.
//
//   router.WebSocket("/chat", ws::Behavior{
//       .open = [](ws::WebSocket& s) { s.Send("hello"); },
//       .message = [](ws::WebSocket& s, std::string_view m, ws::MessageKind k) {
//         s.Send(m, k);  // echo
//       },
//   });
//
// After the 101 the connection is the ring's: every callback runs on the
// ring thread that owns the socket, under FAST rules (never block; hand
// long work to a worker or an ASYNC coroutine and send its result from
// there). The message a callback is given is a
// view, valid during the call only: usually straight into the receive
// buffer (a message that arrived in one receive is not copied), else the
// connection's assembly buffer.
//
// Thread-safety: a WebSocket& belongs to its ring thread and to the
// callback it was given to; keep it only until `close`.
#ifndef URING_HTTP_SRC_WS_WEBSOCKET_H_
#define URING_HTTP_SRC_WS_WEBSOCKET_H_

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <memory>
#include <string_view>

#include "src/http/request.h"

namespace uring_http::ws {

class Sender;  // sender.h: sends from any thread

enum class MessageKind : uint8_t { kText, kBinary };

// permessage-deflate (RFC 7692) for a route's sockets, when the client
// offers it (every browser does):
enum class Compression : uint8_t {
  kDefault,    // the server's --ws-deflate
  kOff,        // never: the offer is declined
  kShared,     // the ring thread's compressor, no context kept between
               // messages: no zlib memory per socket
  kDedicated,  // each socket's own, with context (better ratios on
               // repetitive messages) in a 4 KiB window: zlib's memory,
               // made on the socket's first compressed message each way,
               // is about 38 KiB to compress and 11 KiB to inflate (40 KiB
               // when the client cannot be asked for a smaller window)
};

// What a send did (as uWebSockets' send):
enum class SendResult : uint8_t {
  kQueued,        // taken (and perhaps already on its way)
  kBackpressure,  // taken, but the bytes the client has not read are now
                  // past the bound (--ws-max-backpressure): slow down until
                  // the `drain` callback
  kDropped,       // not taken: the bound was passed already (a client that
                  // reads nothing holds at most the bound and one message)
  kClosed,        // not taken: the connection is closing or gone
};
inline const char* SendResultName(SendResult r) {
  switch (r) {
    case SendResult::kQueued: return "queued";
    case SendResult::kBackpressure: return "backpressure";
    case SendResult::kDropped: return "dropped";
    case SendResult::kClosed: return "closed";
  }
  return "?";
}

class WebSocket {
 public:
  // A message to the client. Text must be UTF-8 (it is not checked: the
  // client would close with 1007).
  virtual SendResult Send(std::string_view message, MessageKind kind = MessageKind::kText) = 0;
  // Starts the closing handshake (1000, another code RFC 6455 7.4 lets an
  // endpoint send such as 1003 or 1008, or 3000-4999 for the application's
  // own; anything else is sent as 1000; a reason of at most 123 bytes). Nothing more is
  // sent after it; `close` is called once the connection has ended.
  virtual void Close(uint16_t code = 1000, std::string_view reason = {}) = 0;
  // Bytes queued that the client has not read yet.
  virtual size_t buffered() const = 0;
  // The subprotocol agreed in the handshake ("" for none).
  virtual std::string_view protocol() const = 0;
  // What the route's `upgrade` stored for this connection (e.g. the user
  // its token named); empty when it stored nothing.
  virtual std::any& user() = 0;
  // The socket's sends from any thread, and its subscriptions to topics
  // (sender.h). Made on first use; every call gives the same one.
  virtual std::shared_ptr<Sender> sender() = 0;
  // Runs `work` on a worker thread (the server's --workers pool), for what
  // would block the ring or take long: it answers through a sender it
  // captured. False, and `work` not run, when the pool's queue is full or
  // the server has no workers:
  //   socket.Offload([m = std::string(message), out = socket.sender()] {
  //     out->Send(Render(Lookup(m)));
  //   });
  virtual bool Offload(std::function<void()> work) = 0;

 protected:
  ~WebSocket() = default;
};

// The handshake, as the route's `upgrade` sees it: the request (valid
// during the call) and what the answer should be.
struct Upgrade {
  const http::Request* request = nullptr;
  // Sec-WebSocket-Protocol as sent ("" if none): the client's choices.
  std::string_view offered_protocols;
  std::string_view origin;  // Origin ("" if none)
  // Set by the callback: the subprotocol chosen (one of the offered, or
  // "" for none), and state kept with the connection (WebSocket::user()).
  std::string protocol;
  std::any user;
};

struct Behavior {
  // Before the 101 (optional): 0 accepts; an HTTP status refuses (403 for
  // a foreign Origin, 401 without a token, ...), answered over HTTP/1 with
  // the connection kept.
  std::function<int(Upgrade&)> upgrade;
  std::function<void(WebSocket&)> open;
  std::function<void(WebSocket&, std::string_view message, MessageKind kind)> message;
  // What the client had not read has gone under half the bound again
  // (after a kBackpressure or kDropped result).
  std::function<void(WebSocket&)> drain;
  // The connection ended: the client's close code and reason (1005: it sent
  // none; 1006: it vanished without one), or ours when we closed. Called
  // once, for every connection `open` was called for.
  std::function<void(WebSocket&, uint16_t code, std::string_view reason)> close;

  Compression compression = Compression::kDefault;
  // Limits (0: the server's --ws-* setting).
  uint64_t max_message = 0;       // a larger message closes with 1009
  size_t max_backpressure = 0;    // bytes queued for the client (see SendResult)
  uint32_t idle_timeout_ms = 0;   // nothing received for this long: close 1001
  uint32_t ping_interval_ms = 0;  // a ping after this long without a frame
};

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_WEBSOCKET_H_
