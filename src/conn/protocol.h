// Protocol: what a connection slot holds above its transport, the HTTP/1
// connection today, an HTTP/2 session next. The loop, and the TLS layer
// beneath a TLS connection, know a connection only as this: the socket's
// completions come in as the events below, and everything the protocol
// wants done goes out through its conn::Transport (transport.h). A protocol
// never calls into the loop from an event except through that interface.
//
// Thread-safety: owned by its loop's ring thread.
#ifndef URING_HTTP_SRC_CONN_PROTOCOL_H_
#define URING_HTTP_SRC_CONN_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "src/http/client_address.h"
#include "src/http/client_certificate.h"
#include "src/http/header.h"

// Named only: what an accepted WebSocket handshake hands on (src/ws).
namespace uring_http::ws {
struct Accepted;
}  // namespace uring_http::ws

namespace uring_http::conn {

// The protocols a slot can speak.
enum class ProtocolId : uint8_t { kHttp1, kHttp2, kWebSocket };

// What a protocol hands to the next one on its socket (HTTP/1 to HTTP/2 on
// an h2c preface; later an Upgrade): the bytes it read and did not use,
// which the next protocol takes (copies or consumes) during the call, and
// the socket's receive, whose completions now go to the next protocol.
// An HTTP/1 request that asked for the next protocol (Upgrade: h2c, RFC
// 7540 3.2): the next protocol answers it. Views into the HTTP/1 receive
// buffer, valid during the handoff only: the next protocol copies them.
struct UpgradeRequest {
  std::string_view method, target, host;
  const http::Header* headers = nullptr;  // every field as sent
  size_t num_headers = 0;
  std::string_view settings;  // HTTP2-Settings (base64url)
};

struct Handoff {
  std::string_view bytes;
  const UpgradeRequest* upgrade = nullptr;
  // A WebSocket handshake HTTP/1 accepted: the connection sends its 101.
  const ws::Accepted* websocket = nullptr;
  bool recv_armed = false;  // a multishot receive is armed
  bool recv_bulk = false;   // ... into the bulk buffers
  bool peer_eof = false;    // the peer's FIN has arrived
};

class Protocol {
 public:
  // ---- the socket's events (from the loop, or the TLS layer's plaintext)
  // Received bytes; the buffer goes back to the kernel after the call.
  // `ended`: the receive ended with them (no F_MORE: a single-shot one);
  // no OnRecvEnd follows then.
  virtual void OnRecv(const char* data, size_t len, bool ended) = 0;
  // The receive ended without bytes: 0 the peer's FIN, -ENOBUFS (no
  // provided buffer: wait for OnBuffersAvailable), -ECANCELED (we
  // cancelled it), another -errno (the socket failed).
  virtual void OnRecvEnd(int res) = 0;
  virtual void OnBuffersAvailable() = 0;
  // A send completed: res bytes, or -errno. `notification_follows`: a
  // zero-copy send whose bytes the kernel holds until OnSendNotification.
  virtual void OnSend(int res, bool notification_follows) = 0;
  virtual void OnSendNotification(bool copied) = 0;
  virtual void OnShutdownDone() = 0;
  virtual void OnClosed() = 0;
  // Transport::PollWritable completed: POLLOUT or -errno.
  virtual void OnWritable(int res) = 0;
  // The deadline last given to Transport::SetDeadline has passed.
  virtual void OnDeadline() = 0;
  // The server began draining (LoopState::draining is set).
  virtual void OnDrain() = 0;
  // The loop ran out of completions after Transport::AfterBatch.
  virtual void OnBatchEnd() = 0;
  // Close now, whatever is pending (the drain's time is up, or the layer
  // beneath failed).
  virtual void Abort() = 0;

  // ---- who the peer is, as the layers beneath learn it
  // A --proxy-protocol header's client (read beneath TLS, in clear).
  virtual void SetProxiedClient(const http::ClientAddress& client) = 0;
  // The TLS layer's verified client certificate, once its handshake is done.
  virtual void SetClientCertificate(std::shared_ptr<const http::ClientCertificate> cert) = 0;

  // ---- an exchange's completions: a worker's, a static file's
  // (ConnectionHost). A worker's name the stream its task was for
  // (TaskBuffer::stream: HTTP/2's stream id, HTTP/1's 0); a file's name
  // the connection, which has one file operation in flight at a time.
  virtual void OnTaskDone(uint32_t stream) = 0;
  virtual void OnStreamNotify(uint32_t stream) = 0;
  virtual void OnFileStat(int res) = 0;
  virtual void OnFileOpen(int res) = 0;
  virtual void OnFileRead(int res) = 0;
  virtual void OnFileSplice(int res) = 0;

  // ---- life
  // Nothing the kernel or a worker holds refers to the protocol any more:
  // its slot may be reused (after Release()).
  virtual bool Freeable() const = 0;
  // Frees whatever it still holds; the slot is then as new.
  virtual void Release() = 0;

 protected:
  ~Protocol() = default;
};

}  // namespace uring_http::conn

#endif  // URING_HTTP_SRC_CONN_PROTOCOL_H_
