// What a connection of any protocol (HTTP/1, HTTP/2) needs from the loop
// that owns its socket to run its exchanges, and what it shares with the
// other connections of that loop. Protocol-neutral: http1/ and http2/ both
// stand on it, side by side.
//
// The socket's operations are a conn::Transport (src/conn/transport.h):
// the loop's, or the TLS layer's over the loop's. ConnectionHost is the
// rest: "run this task", "stat, open, read this file", "this exchange is
// done". The loop turns each into an io_uring SQE (or a queue push). Every
// call only queues work: none calls back into a connection before it
// returns. A unit test implements both with a recorder and drives
// completions by hand, in any order (test/http1/, test/http2/).
//
// Thread-safety: all of it belongs to the loop's ring thread.
#ifndef URING_HTTP_SRC_EXCHANGE_CONNECTION_ENV_H_
#define URING_HTTP_SRC_EXCHANGE_CONNECTION_ENV_H_

#include <linux/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "src/base/counter.h"
#include "src/conn/protocol.h"
#include "src/conn/transport.h"
#include "src/http/chunked_decoder.h"
#include "src/http/client_address.h"
#include "src/http/compress.h"
#include "src/files/open_file_cache.h"
#include "src/http/parser.h"
#include "src/http/stop_reason.h"
#include "src/io/arena.h"
#include "src/limits/request_limits.h"
#include "src/router/router.h"

// Named only: the exchange layer stands beneath both (the workers run its
// handler step), so it includes neither.
namespace uring_http::http1 {
class StreamStatePool;  // HTTP/1's per-loop stream states (ConnectionEnv::streams)
}  // namespace uring_http::http1
namespace uring_http::worker {
struct TaskBuffer;
}  // namespace uring_http::worker
namespace uring_http::ws {
class Sender;  // a WebSocket's sends from any thread (src/ws/sender.h)
}  // namespace uring_http::ws

namespace uring_http::exchange {

// What a connection's exchanges need from their loop beyond the
// socket (conn::Transport, which TLS may stand in for): worker tasks,
// static files, and the record of each exchange.
class ConnectionHost {
 public:
  // Hands a SLOW task to the workers; false when the queue is full. The
  // loop fills in how results reach this connection (ring address, user
  // data for the completion and for stream progress).
  virtual bool Dispatch(uint32_t slot, worker::TaskBuffer* task, const router::Route& route,
                        int64_t started_ns) = 0;
  // A dispatched task should stop: its client left, or the server drains
  // (http::StopReason). Its handler sees it (Request::stop_reason(); an
  // ASYNC handler's await in flight is cancelled on the ring); the task
  // still completes as usual, and its memory stays the connection's until
  // then.
  virtual void StopTask(uint32_t slot, worker::TaskBuffer* task, http::StopReason why) = 0;

  // ---- files (static mounts). At most one of these is in flight per
  // connection; each completes with the matching On*() even after the
  // connection closed, and the memory it was given stays valid until then.
  // statx of `path` (NUL-terminated) relative to `dir_fd`: OnFileStat(0 or
  // -errno) with the result in *out.
  virtual void StatFile(uint32_t slot, int dir_fd, const char* path, struct statx* out) = 0;
  // Opens `path` read-only beneath `dir_fd` (openat2 with RESOLVE_BENEATH |
  // RESOLVE_NO_MAGICLINKS: no "..", absolute or symbolic link leaves it) as
  // a direct descriptor: OnFileOpen(its index, or -errno). Close it with
  // ConnectionEnv::file_closer. `check_only`: O_PATH, only to learn
  // that the path (a directory, say) is reachable beneath `dir_fd`.
  virtual void OpenFile(uint32_t slot, int dir_fd, const char* path, bool check_only) = 0;
  // Reads len bytes at `offset` of a direct descriptor into buf (one of
  // ConnectionEnv::file_buffers): OnFileRead(bytes, 0 at the end, -errno).
  virtual void ReadFile(uint32_t slot, int file_index, char* buf, uint32_t len,
                        uint64_t offset) = 0;

  // len bytes at `offset` of the direct descriptor into a pipe from the
  // transport (conn::Transport::AcquirePipe, which also sends them on):
  // OnFileSplice(bytes, 0 at the end of the file, -errno).
  virtual void SpliceToPipe(uint32_t slot, int file_index, uint64_t offset, int pipe_write,
                            uint32_t len) = 0;

  // One request answered (its response is complete in the output queue):
  // metrics and the access log. `request_line` and `request_id` are valid
  // during the call.
  struct Exchange {
    uint32_t route_id = 0;
    int status = 0;
    int64_t started_ns = 0;
    std::string_view request_line;
    uint64_t body_bytes = 0;  // response body bytes (0 for HEAD)
    const http::ClientAddress* client = nullptr;  // valid during the call
    std::string_view request_id;  // the answer's X-Request-Id (access log only)
  };
  virtual void ExchangeDone(uint32_t slot, const Exchange& exchange) = 0;

  // The connection's bytes are another protocol's (an h2c preface): the
  // loop makes `next` the slot's protocol and gives it `handoff` before
  // returning. The connection has nothing in flight; it is then closed as
  // far as it knows, and released without touching the socket.
  virtual void HandOff(uint32_t slot, conn::ProtocolId next, const conn::Handoff& handoff) = 0;

  // A WebSocket's sender (ws::Sender), whose sends from any thread reach
  // this loop's ring and come back to the slot's protocol. Null where
  // there is no ring to reach (a unit test's host). `deflate_window`: as
  // ws::Sender's.
  virtual std::shared_ptr<ws::Sender> MakeSender(uint32_t slot, size_t bound, int deflate_window) {
    (void)slot;
    (void)bound;
    (void)deflate_window;
    return nullptr;
  }
  // Runs `work` on a worker (ws::WebSocket::Offload); false when it cannot.
  virtual bool Offload(std::function<void()> work) {
    (void)work;
    return false;
  }

 protected:
  ~ConnectionHost() = default;
};

struct ConnectionConfig : conn::TransportConfig {
  http::ParseLimits limits;
  http::ChunkedLimits chunked;
  // Milliseconds; 0 turns one off.
  uint32_t header_timeout_ms = 10'000;  // first byte of a head to its end: 408
  uint32_t body_timeout_ms = 60'000;    // no body byte for this long: 408
  // A request body must bring at least body_min_rate bytes a second,
  // counted over each window of body_rate_window_ms from the end of its
  // head (the first window is its grace), else 408 (0: no minimum). The
  // clock stops while we do not read (a worker's pipe is full).
  uint32_t body_min_rate = 1024;
  uint32_t body_rate_window_ms = 10'000;
  uint32_t idle_timeout_ms = 60'000;    // keep-alive, between requests
  uint32_t linger_timeout_ms = 5'000;   // after our FIN, wait for the peer's
  uint32_t drain_idle_ms = 1'000;       // draining: grace for an idle connection
  // Sends of a segment this large go zero-copy (0: never).
  uint32_t send_zc_min_bytes = 0;
  // The bound on a streamed request body held for a worker, per connection.
  size_t request_pipe_bytes = 256 * 1024;
  // All of the loop's provided receive buffers: what may still arrive for a
  // connection after it decided to pause its receive, until the cancel lands.
  size_t recv_pool_bytes = 2 * 1024 * 1024;
  // The loop has bulk receive buffers (ArmRecv's `bulk`), and a body larger
  // than this switches its connection's receive to them.
  bool bulk_receives = false;
  uint64_t bulk_body_bytes = 64 * 1024;
  // HTTP/2's SETTINGS (serving::ServerConfig says what each limits).
  uint32_t http2_max_streams = 128;
  uint32_t http2_stream_window = 65535;
  uint32_t http2_connection_window = 1u << 20;
  uint32_t http2_max_frame = 16384;
  // gzip for handlers' responses, and for compressible files the open-file
  // cache keeps in memory (StaticOptions::gzip).
  http::CompressionOptions compression;
  // A file body at least this large is spliced (file -> pipe -> socket)
  // rather than read into buffers and sent (0: never).
  uint64_t splice_min_bytes = 0;
  // WebSocket routes (--ws-*; a route's ws::Behavior may set its own): a
  // larger message closes with 1009; the bytes queued for a client past
  // which sends are refused; nothing received for this long closes with
  // 1001; a ping after this long without a frame (0: none).
  uint64_t ws_max_message = 16 * 1024 * 1024;
  size_t ws_max_backpressure = 1024 * 1024;
  uint32_t ws_idle_timeout_ms = 120'000;
  uint32_t ws_ping_interval_ms = 30'000;
  ws::Compression ws_deflate = ws::Compression::kOff;  // --ws-deflate
};

using Counter = base::Counter;

// Counters the connections of one loop keep (one writer: the ring thread;
// readers sum over loops). The transport's (timeouts, PROXY header errors)
// are counted with them.
struct ConnectionStats : conn::TransportStats {
  Counter requests;         // request heads parsed
  Counter bad_requests;     // answered 4xx/5xx by the parser or the body decoder
  Counter slow_dispatched;  // SLOW tasks pushed to the workers
  Counter slow_completed;   // their completions
  Counter slow_rejected;    // queue full: 503
  Counter body_rate_timeouts;  // of those, request bodies below body_min_rate
  Counter chunked_bodies;   // request bodies with chunked framing
  Counter streamed_requests;   // request bodies streamed to a handler
  Counter streamed_responses;  // responses streamed (worker pipe or producer)
  Counter aborted_streams;     // streams cut short (the peer left, bad framing)
  Counter sends_zc;         // sends issued as IORING_OP_SEND_ZC
  Counter sends_zc_copied;  // of those, the kernel copied after all (e.g. loopback)
  Counter sends_zc_refused; // ENOMEM (memlock limit): sent again by copying
  Counter lingering_closes; // closes that waited for the peer's FIN
  Counter files_served;     // static-file answers (any status)
  Counter file_opens;       // files opened (cache misses and changed files)
  Counter file_truncated;   // a file ended early while sent: connection closed
  Counter file_splices;     // file bodies spliced rather than read
  // HTTP/2 connections ended by their session's error, by kind (indexed by
  // http2::ErrorKind: floods of each frame, protocol errors, ...).
  static constexpr size_t kHttp2ErrorKinds = 12;
  Counter http2_errors[kHttp2ErrorKinds];
  // WebSockets: opened and closed (open = the difference), messages and
  // bytes each way (bytes as framed), sends refused past the bound,
  // connections failed for a protocol error, and closes by code (indexed
  // by ws::CloseCodeBucket).
  Counter ws_opened;
  Counter ws_closed;
  Counter ws_messages_in;
  Counter ws_messages_out;
  Counter ws_bytes_in;
  Counter ws_bytes_out;
  Counter ws_backpressure_drops;
  Counter ws_errors;
  static constexpr size_t kWsCloseCodes = 8;
  Counter ws_closes[kWsCloseCodes];
};

// Everything the connections of one loop share. The loop updates now_tick
// once per batch of completions and draining once (conn::LoopState).
struct ConnectionEnv : conn::LoopState {
  const ConnectionConfig* config = nullptr;
  const router::Router* router = nullptr;
  io::ChunkPool* chunks = nullptr;
  http1::StreamStatePool* streams = nullptr;
  // The socket's operations (the loop's, or the TLS layer's over them)
  // and the rest (the loop's).
  conn::Transport* transport = nullptr;
  ConnectionHost* host = nullptr;
  // Static files (null when the router has no mounts): the loop's cache of
  // open files, where descriptors are closed, and the buffers file bytes
  // are read into (bounded: a connection waits for one when none is free).
  files::OpenFileCache* file_cache = nullptr;
  files::FileCloser* file_closer = nullptr;
  io::ChunkPool* file_buffers = nullptr;
  ConnectionStats* stats = nullptr;
  // Requests in flight and per-client rates (null: nothing is limited).
  limits::RequestLimits* limits = nullptr;
  // Parse scratch: room for config->limits.max_headers headers. One request
  // is parsed at a time on a ring thread, so one array serves them all.
  http::Header* headers = nullptr;
  size_t headers_capacity = 0;
  // The routed request's path parameters, for the same reason: a Request
  // carries a view of them (path_params.h).
  http::PathParams path_params;
  uint32_t unmatched_route = 0;  // metrics index for requests no route matched
  bool has_workers = true;       // false: SLOW handlers run inline (--workers=0)
  bool access_log = false;       // keep request lines for Exchange::request_line
  // A connection on a plain listener that opens with the HTTP/2 preface
  // is handed to HTTP/2 (h2c with prior knowledge, RFC 9113 3.3).
  bool h2c = false;
  bool send_zc = false;          // zero-copy sends now (kernel has them, not paused)
  uint64_t zc_paused_until_tick = 0;
};

}  // namespace uring_http::exchange

#endif  // URING_HTTP_SRC_EXCHANGE_CONNECTION_ENV_H_
