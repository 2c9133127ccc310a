// Session: the server side of one HTTP/2 connection as a codec, bytes in and
// bytes out, around libnghttp2. The connection feeds it what it read (after
// TLS) with Receive, pulls what to write with Send, learns of requests
// through SessionEvents, and answers with the Submit/Write calls. It owns no
// socket, timer or thread; routing and handlers live above it.
//
// What is checked where (RFC 9113):
// - nghttp2 (HTTP messaging left on) checks the preface, framing, stream
//   states, flow control and HPACK (connection errors: GOAWAY, Receive
//   false), and each request (8.2, 8.3): pseudo-headers present, known,
//   first and once; lowercase field names; no connection-specific fields
//   (8.2.2); TE only "trailers"; content-length against the DATA received
//   (8.1.1); trailers with END_STREAM and no pseudo-headers. A field it
//   would drop (bad characters in a name or value, 8.2.1) is made to reset
//   the request by the wrapper. A malformed request is reset with
//   RST_STREAM(PROTOCOL_ERROR) by nghttp2 itself: its head never reaches
//   OnRequest (or, for a content-length mismatch found in the body, the
//   stream is closed with PROTOCOL_ERROR after OnRequest). It also refuses
//   streams past max_concurrent_streams (RST_STREAM REFUSED_STREAM) and caps
//   CONTINUATION frames per header block and queued SETTINGS/PING acks.
// - The wrapper adds: the header list limit (6.5.2 SETTINGS_MAX_HEADER_LIST_SIZE
//   is advisory; past it the request is refused with OnRequestRefused 431,
//   its fields dropped); :authority taken from Host when absent (8.3.1);
//   the flood limits of FloodLimits (10.5), each ending the connection with
//   GOAWAY(ENHANCE_YOUR_CALM); connection-specific fields dropped from our
//   responses (8.2.2); RST_STREAM(NO_ERROR) once a response has ended
//   while the client is still sending (8.1), so the stream frees its slot;
//   and what nghttp2 stops checking once we send NO_RFC7540_PRIORITIES
//   (peer_frame_check.h): DATA or HEADERS on a stream the client closed
//   (GOAWAY STREAM_CLOSED) or on a lower id it skipped, PRIORITY on stream
//   0 or on itself (GOAWAY PROTOCOL_ERROR).
//
// Events fire from Receive and Send (never from the Submit/Write calls, the
// destructor or Consume); handlers may call any Session method from inside
// an event. A stream gets OnStreamClosed only if it had OnRequest or
// OnRequestRefused (or was stream 1 of an Upgrade); streams nghttp2 refused
// or reset before their head was complete pass without any event.
//
// Thread-safety: none; owned by its connection's ring thread.
#ifndef URING_HTTP_SRC_HTTP2_SESSION_H_
#define URING_HTTP_SRC_HTTP2_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "src/http/header.h"
#include "src/http/header_table.h"
#include "src/http2/flood_guard.h"

namespace uring_http::http2 {

// RFC 9113 7 error codes the connection may pass to ResetStream/Terminate.
inline constexpr uint32_t kNoError = 0x0;
inline constexpr uint32_t kProtocolError = 0x1;
inline constexpr uint32_t kInternalError = 0x2;
inline constexpr uint32_t kRefusedStream = 0x7;
inline constexpr uint32_t kCancel = 0x8;
inline constexpr uint32_t kEnhanceYourCalm = 0xb;

// A field the server adds after a response's table (date, server,
// content-length): its own, so already lowercase and valid, taken as it is.
struct ServerField {
  std::string_view name, value;
};

struct SessionSettings {  // what we advertise in our SETTINGS
  uint32_t max_concurrent_streams = 100;
  uint32_t initial_window_size = 65535;       // per stream, request bodies
  uint32_t connection_window_size = 1 << 20;  // sent as a connection WINDOW_UPDATE at start
  uint32_t max_frame_size = 16384;
  uint32_t max_header_list_size = 64 * 1024;  // decoded header bytes per request (name+value+32 each, RFC 9113 6.5.2)
  uint32_t header_table_size = 4096;
  // Added: OnStreamWritable fires when framing takes a stream's queue from
  // at least this many bytes to fewer. A producer's high-water mark (where it
  // stops on WriteData's return) must be at or above it, or it waits forever.
  size_t write_low_water = 16 * 1024;
  FloodLimits flood;  // added: see flood_guard.h
};

// A request's head, decoded and validated. Views point into storage the
// Session keeps for the stream; they stay valid until OnStreamClosed for that
// stream returns.
struct RequestHead {
  std::string_view method, scheme, authority, path;  // pseudo-headers (authority: Host's value if absent; may be empty)
  const http::Header* headers = nullptr;  // regular fields, lowercase names, in order; cookie crumbs as sent
  size_t num_headers = 0;
  bool has_content_length = false;
  uint64_t content_length = 0;
  bool end_stream = false;  // no body follows
  bool expect_continue = false;
  size_t head_bytes = 0;  // decoded size counted toward max_header_list_size
};

class SessionEvents {  // implemented by the HTTP/2 connection (and by tests)
 public:
  virtual void OnRequest(int32_t stream_id, const RequestHead& head) = 0;
  // A request whose head cannot be served; the connection answers `status`
  // with SubmitResponse. Only 431: the decoded head passed
  // max_header_list_size (its fields were dropped; any body that follows is
  // consumed and discarded). Malformed heads never get here: nghttp2 resets
  // them (see the top of this file).
  virtual void OnRequestRefused(int32_t stream_id, int status) = 0;
  virtual void OnRequestData(int32_t stream_id, std::string_view data) = 0;  // body bytes (flow-controlled, see Consume)
  virtual void OnRequestTrailers(int32_t stream_id, const http::Header* fields, size_t n) = 0;
  virtual void OnRequestEnd(int32_t stream_id) = 0;  // END_STREAM seen (after data/trailers)
  // The stream is gone (ended both ways, reset by the peer or by us, or the
  // connection failed). error_code: the RST_STREAM/GOAWAY code, 0 for a
  // normal end.
  virtual void OnStreamClosed(int32_t stream_id, uint32_t error_code) = 0;
  // Bytes queued with WriteData for this stream were framed and the queue
  // fell below write_low_water: a producer that was told to wait may write.
  virtual void OnStreamWritable(int32_t stream_id) = 0;

 protected:
  ~SessionEvents() = default;
};

class Session {
 public:
  // Milliseconds from any fixed origin, never going back (the flood windows).
  using Clock = std::function<int64_t()>;

  // Server side; our SETTINGS and the connection WINDOW_UPDATE are queued at
  // once. `clock` defaults to the steady clock; tests pass their own.
  Session(SessionEvents* events, const SessionSettings& settings, Clock clock = nullptr);
  ~Session();  // fires no events
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Bytes from the peer (after TLS). Returns false when the connection must
  // end (flood, bad preface, Terminate): a GOAWAY with the reason is queued;
  // send it (Send) then close. Every open stream has had OnStreamClosed by
  // then. A protocol error nghttp2 finds in a frame (a connection error) is
  // told by nghttp2 only when its GOAWAY is framed: the Send that frames it
  // closes the streams, sets failure() to "protocol error", and from then
  // WantsRead() is false and Receive returns false.
  bool Receive(const char* data, size_t len);
  // h2c via "Upgrade: h2c": the HTTP2-Settings header's value (base64url)
  // and whether the upgraded request was HEAD. Stream 1 is then half-closed
  // (remote) and answered like any stream (no OnRequest: the HTTP/1 parser
  // had the request). Call before Receive. False if the settings are malformed.
  bool Upgrade(std::string_view http2_settings_base64url, bool head_request);
  // Copies up to cap bytes of frames to send into buf; returns the count (0:
  // nothing to send now). Bounded by cap, so one connection cannot
  // monopolise a turn; call again while WantsWrite().
  size_t Send(char* buf, size_t cap);
  bool WantsWrite() const;  // frames are waiting (Send would return > 0)
  bool WantsRead() const;   // the session still expects frames (false after GOAWAY both ways / fatal error)

  // The response head. has_body=false ends the stream with the HEADERS
  // (HEAD, 204, 304...). Names are lowercased; connection, keep-alive,
  // proxy-connection, transfer-encoding and upgrade are dropped (RFC 9113
  // 8.2.2), as are pseudo-header names. False for an unknown or closed
  // stream, a second response, or a status outside 200..999 (see
  // SubmitContinue for 100).
  // `server_fields` follow the table's as they are (the server's own).
  bool SubmitResponse(int32_t stream_id, int status, const http::HeaderTable& fields, bool has_body,
                      std::span<const ServerField> server_fields = {});
  // An interim 100 (Continue), before SubmitResponse.
  bool SubmitContinue(int32_t stream_id);
  // Queues body bytes (copied) for the stream, framed as DATA as the peer's
  // windows allow. Returns the bytes queued for the stream and not yet
  // framed; a caller above its high-water mark waits for OnStreamWritable.
  // 0 (the bytes dropped) for an unknown, closed or reset stream (so writes
  // racing a peer's RST_STREAM are harmless), before SubmitResponse, for a
  // response without a body, or after EndData.
  size_t WriteData(int32_t stream_id, std::string_view bytes);
  // The body ends: with trailers (a HEADERS frame with END_STREAM after the
  // data) when `trailers` is non-null and non-empty, else the last DATA
  // carries END_STREAM.
  bool EndData(int32_t stream_id, const http::HeaderTable* trailers = nullptr);
  size_t QueuedData(int32_t stream_id) const;
  // The answer still has bytes, or its end, to send: only the client's
  // windows hold it back once nothing is being written (an empty DATA
  // frame with END_STREAM waits for an open window as any other).
  bool AnswerPending(int32_t stream_id) const;
  // Request-body flow control: the connection has taken n body bytes of the
  // stream; only then do the stream's and connection's windows reopen
  // (WINDOW_UPDATE), so a slow handler holds the uploader back. Bytes of a
  // closed stream were given back to the connection window at its close.
  void Consume(int32_t stream_id, size_t n);
  void ResetStream(int32_t stream_id, uint32_t error_code);  // RST_STREAM
  // Graceful drain, RFC 9113 6.8's two steps: a GOAWAY with the last id
  // 2^31-1 and a PING at once; the final GOAWAY(NO_ERROR, last stream
  // processed) when that PING's ack shows the notice made the round trip.
  // Streams up to that id finish; later ones are refused by nghttp2.
  // A second call sends the final GOAWAY without waiting.
  void Shutdown();
  // Ends the connection with GOAWAY(error_code), e.g. kEnhanceYourCalm;
  // open streams get OnStreamClosed(error_code) at the end of the current
  // Receive/Send (at once outside them). Receive then returns false.
  void Terminate(uint32_t error_code);
  size_t open_streams() const;  // streams with a pending OnStreamClosed
  // For /metrics and tests: why the session ended ("flood: RST_STREAM",
  // "bad preface", "protocol error", "terminated", ...); empty while healthy.
  std::string_view failure() const;
  // Allocations nghttp2 made through our allocator since construction.
  uint64_t allocations() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace uring_http::http2

#endif  // URING_HTTP_SRC_HTTP2_SESSION_H_
