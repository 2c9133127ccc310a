// Connection: one HTTP/1.1 connection as a state machine that takes bytes
// and completions and says what to send, receive, pause, dispatch and close.
// It knows nothing of io_uring: everything it wants done goes through its
// loop's ConnectionHost, and everything that happens comes back as one of the
// On*() events below. A test drives it byte by byte and completion by
// completion, in any order (test/http1/connection_test.cc).
//
// Four small machines, each with its own named state:
//   Phase   the connection's life: open, finishing (answer what is queued,
//           then close), lingering (our FIN is out, reading until the
//           peer's), closing (waits for that FIN's SHUT_WR to complete),
//           close submitted, closed.
//   Input   what the next received byte is: part of a request head, of the
//           current request's body, held back (the current response comes
//           first), or past the last request we will answer (discarded).
//   Answer  where the current request's response is: not yet (its body is
//           being buffered), with a worker, streaming from a producer or a
//           worker's pipe, coming from a file (FileStream has the steps), or
//           complete in the output queue.
//   Recv    the multishot receive as the kernel sees it: off, armed, or
//           being cancelled. What we want (read, or pause because too much
//           is staged) is computed after every event and the two are
//           reconciled, so no order of completions can leave a connection
//           that wants to read without a receive armed.
// Output lives in an OutputQueue, which owns every buffer until the kernel is
// done with it. Deadlines (head, body and its minimum rate, send progress,
// idle, linger) are kept apart and the loop is asked for the earliest.
//
// On a --proxy-protocol listener (ConnectionConfig::proxy_protocol) the
// connection first reads a PROXY header (src/conn/proxy_header.h), under the head
// deadline, and closes without an answer if it is missing or malformed; the
// client it names is the connection's client_address().
//
// Requests are answered strictly in order. While a request is answered by a
// worker or streams its response, the next one waits (its bytes are staged,
// and reading pauses once too many are). A request body is buffered for the
// handler (up to the route's limit), streamed to it (a worker's pipe or a
// FAST BodySink), or discarded (after an error answered before the body).
// A streamed SLOW body goes to a worker with its first bytes, not with its
// head, so that a client that sends only a head holds no worker. A body
// that fails (malformed, past its limit, cut short by the client's FIN, too
// slow) is answered by the connection itself (400, 413, 408, with close),
// whatever its handler did, unless the handler's own answer has begun; a
// client that is gone gets nothing.
//
// Thread-safety: owned by its loop's ring thread.
#ifndef URING_HTTP_SRC_HTTP1_CONNECTION_H_
#define URING_HTTP_SRC_HTTP1_CONNECTION_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/conn/protocol.h"
#include "src/exchange/route_request.h"
#include "src/http/body_decoder.h"
#include "src/http/client_address.h"
#include "src/http/parser.h"
#include "src/http/response.h"
#include "src/http1/response_writer.h"
#include "src/exchange/connection_env.h"
#include "src/http1/output_queue.h"
#include "src/http1/stream_state.h"
#include "src/router/router.h"
#include "src/worker/body_pipe.h"
#include "src/worker/slow_task.h"

namespace uring_http::http1 {

// Bytes a connection may hold back while the current request is answered
// (or a worker's pipe is full) before it stops receiving.
inline constexpr size_t kStagedPauseBytes = 64 * 1024;

// A last answer up to this size goes into a fresh socket's send buffer at
// once (tcp_wmem's default is 16 KiB): the close is linked to its send,
// with no receive armed in between (see OnlyStrayBytesToRead).
inline constexpr size_t kSmallLastAnswerBytes = 16 * 1024;
// Output queued beyond which no further request is read and a producer is
// not called: a client that pipelines but never reads must not grow memory.
inline constexpr size_t kOutputHighWater = 64 * 1024;
// The first bytes of every HTTP/2 connection (RFC 9113 3.4).
inline constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class Connection final : public conn::Protocol, private ExternalOwner {
 public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // The slot holds a new socket: starts reading. `proxy_header_below`: on
  // a --proxy-protocol listener, the layer beneath reads the PROXY header
  // (TLS: it comes in clear, before the ClientHello) and names the client
  // with SetProxiedClient; the connection's bytes start after it. The
  // layer beneath is TLS exactly when it is set: requests are secure.
  void Open(exchange::ConnectionEnv* env, uint32_t slot, bool proxy_header_below = false);

  // ---- conn::Protocol: events from the loop, or from the TLS layer
  // beneath (protocol.h says what each means); each ends with the
  // connection's requests to its transport and host queued.
  void OnRecv(const char* data, size_t len, bool ended = false) override;
  void OnRecvEnd(int res) override;
  void OnBuffersAvailable() override;
  void OnSend(int res, bool notification_follows) override;
  void OnSendNotification(bool copied) override;
  void OnShutdownDone() override;
  void OnClosed() override;
  // Room to write, for a static file's bytes that waited for it.
  void OnWritable(int res) override;
  void OnDeadline() override;
  void OnDrain() override;
  // A worker waiting for more of a streamed body gets what has arrived.
  void OnBatchEnd() override;
  void Abort() override;
  void SetProxiedClient(const http::ClientAddress& client) override { proxied_ = client; }
  void SetClientCertificate(std::shared_ptr<const http::ClientCertificate> cert) override {
    client_cert_ = std::move(cert);
  }
  // The SLOW handler returned (its MSG_RING completion).
  // (HTTP/1 has one exchange at a time: `stream` is 0.)
  void OnTaskDone(uint32_t stream) override;
  // A worker made progress on a stream of this connection.
  void OnStreamNotify(uint32_t stream) override;
  // A static file's statx, openat2, read or splice completed (ConnectionHost).
  void OnFileStat(int res) override;
  void OnFileOpen(int res) override;
  void OnFileRead(int res) override;
  void OnFileSplice(int res) override;

  bool Freeable() const override {
    return phase_ == Phase::kClosed && recv_ == Recv::kOff && !out_.send_inflight() &&
           !out_.notification_pending() && !task_inflight_ && !shutdown_inflight_ &&
           (st_ == nullptr || st_->file == nullptr || !st_->file->inflight);
  }
  void Release() override;

  // Gives the socket up to another protocol chosen beneath (ALPN h2):
  // what it has armed goes with it; nothing has been read or answered.
  conn::Handoff Detach();

  bool open() const { return phase_ < Phase::kClosing; }
  // For tests and /metrics.
  size_t staged_bytes() const { return in_.len; }
  size_t output_pending() const { return out_.pending(); }
  bool receiving() const { return recv_ == Recv::kArmed; }

  // Where the loop has the kernel write the socket's peer address at
  // accept, before Open(). The connection never hears of that completion:
  // the getsockopt completes as it is issued, before the first receive is.
  http::ClientAddress* peer_address() { return &peer_; }
  // The client requests come from: the PROXY header's, else the peer.
  const http::ClientAddress& client_address() const {
    return proxied_.known() ? proxied_ : peer_;
  }

 private:
  enum class Phase : uint8_t { kOpen, kFinishing, kLingering, kClosing, kCloseSubmitted, kClosed };
  enum class Input : uint8_t { kHead, kBody, kWait, kDone };
  enum class Answer : uint8_t { kNone, kPending, kTask, kProducer, kPipe, kFile, kSent };
  enum class Recv : uint8_t { kOff, kArmed, kCancelling };
  enum class BodyMode : uint8_t { kBuffer, kPipe, kSink, kDiscard };

  // A byte buffer in a chunk of the loop's pool, or the heap when larger.
  struct Buffer {
    char* data = nullptr;
    uint32_t len = 0;
    uint32_t cap = 0;
    std::string_view view() const { return {data, len}; }
  };

  // The request being answered (its head has been read).
  struct Exchange {
    const router::Route* route = nullptr;
    uint32_t route_id = 0;
    int64_t started_ns = 0;
    BodyMode body = BodyMode::kBuffer;
    Answer answer = Answer::kNone;
    bool keep_alive = false;         // the request allows keep-alive
    bool http10 = false;
    bool head = false;               // HEAD: no body in the response
    bool body_done = true;
    bool body_failed = false;        // the body will never complete
    // The body failed: what the connection answers for it (400, 408, 413,
    // 431) unless the handler's answer has begun; 0: nothing to answer.
    uint16_t body_status = 0;
    bool close_after = false;        // the response ends the connection
    bool head_kept = false;          // the head is in req_ (else: still in the source)
    bool slow = false;               // a worker answers it
    bool bulk = false;               // a large body: received into bulk buffers
    const char* head_ptr = nullptr;  // where the head is now (source, req_ or the task)
    int status = 0;
    uint64_t response_bytes = 0;
    uint32_t head_len = 0;
    uint8_t request_id_len = 0;  // of request_id_
    bool limits_held = false;    // a place in flight is ours: ReleaseLimits()
    // The route's middleware chain (middleware.h): its befores ran and the
    // afters of the first `afters_due` are still to run on whatever answers
    // (a static file's answer, a body sink's); `chain_done`: it ran whole
    // (a handler, on the ring or a worker), and no after runs again.
    uint16_t afters_due = 0;
    bool chain_done = false;
    // Request::allowed_methods of the path; `allow_scratch`: a view of
    // the ring thread's scratch (route_tree.h), found again if needed.
    std::string_view allow;
    bool allow_scratch = false;
  };

  // ---- input (requests.cc; bodies in request_bodies.cc)
  // Consumes what it can of data[0..len) and returns how much.
  size_t Process(const char* data, size_t len, bool staged);
  void ProcessStaged();
  bool CanStartRequest() const;
  // A request head at data[0..len): false while incomplete.
  bool ReadHead(const char* data, size_t len, bool staged, size_t* used);
  void BeginExchange(http::Request& request, const char* data, size_t len, size_t* used);
  size_t FeedBody(const char* data, size_t len);
  bool DeliverBody(std::string_view piece);
  void BodyEnded();
  // The body cannot complete: `status` is the answer, `reason` what a
  // worker reading it is told (Request::body_error()).
  void BodyFailed(int status, http::BodyError reason);
  void PeerEndedBody();
  // A streamed SLOW body's first bytes (or its end) are here: the worker
  // gets the request now. False if it was refused (answered 503).
  bool DispatchStreamed();
  // The body timeout and the minimum rate's window (--body-min-rate) run
  // while the body's bytes are read, and stop while we do not read them.
  void StartBodyClocks();
  void StopBodyClocks() { body_deadline_ = rate_deadline_ = rate_bytes_ = 0; }
  uint32_t RateWindowMs() const {
    return env_->config->body_min_rate > 0 ? env_->config->body_rate_window_ms : 0;
  }
  // The window ended: 408 if it brought less than the minimum rate's due.
  void CheckBodyRate();
  bool KeepHead(const char* head, size_t len);
  // A request answered without its body: the body is read and dropped (or,
  // after Expect: 100-continue, never asked for: the answer closes). False
  // if it was too large to read through (answered 413).
  bool SkipBody(const http::Request& request, uint64_t limit);
  // The route's and the server's limits (ConnectionEnv::limits) let the
  // request in; else it is answered 503 or 429 with Retry-After (its body
  // read and dropped, as for a 404) and false.
  bool Admit(const http::Request& request, uint64_t body_limit);
  // Gives the exchange's place in flight back, once.
  void ReleaseLimits() {
    if (!ex_.limits_held) return;
    ex_.limits_held = false;
    env_->limits->Release(ex_.route_id);
  }
  // The route's BodySink for this request; false (answered 500) if it fails.
  bool MakeSink(const http::Request& request);
  bool ReparseHead(http::Request* request);
  // ---- answers (answers.cc; streamed ones: the producer, the pipe, their
  // head and the output they release, in streamed_answers.cc)
  void RunHandler(const http::Request& request);
  void Dispatch(const http::Request& request, std::string_view head, std::string_view body);
  void Respond(http::Response& response, bool close = false);
  // The response's X-Request-Id (if any) for the access log line.
  void NoteRequestId(const http::Response& response);
  void SetRequestId(std::string_view value);
  // A streamed response's head, framed for `framing`, into the output;
  // returns its size.
  size_t QueueStreamHead(int status, const http::HeaderTable& fields,
                         StreamFraming framing, uint64_t length);
  void RespondError(int status, bool close, std::string_view allow = {});
  // An error the server answers for the exchange (or, with none begun, for
  // the connection): its error page and the afters due (middleware.h) if
  // the router has pages or middlewares, else RespondError. `request`: the
  // request, when at hand; else the kept head is parsed again, or, with
  // none, a minimal request stands in.
  void AnswerError(int status, bool close, const http::Request* request = nullptr);
  // The afters still due on the exchange's answer, if any.
  void RunDueAfters(const http::Request& request, http::Response& response);
  // The router's own answers for a path that is not clean (clean_path.h):
  // 400 for a malformed escape, else a redirect to the clean path.
  void AnswerUncleanPath(const http::Request& request, const exchange::Routing& routing,
                         bool close);
  // A handler's response with a refused header (Response::header_refused):
  // logged, and answered 500 in its place.
  void RespondRefused(const http::Response& response, bool close);
  // The failure log's context of the exchange; its head is read where it
  // is now if `head_at_hand` (else only what the access log kept).
  router::FailureContext FailureWhere(const http::Response* response, bool head_at_hand) const;
  void BadRequest(int status);
  // `gzip_accepted`: the request's Accept-Encoding prefers gzip (and it is
  // on); the stream is then compressed as it is produced (compress.h).
  void StartProducer(http::Response& response, bool gzip_accepted);
  // A FAST handler's or body sink's response, on the ring thread: its
  // producer starts, or its body is gzipped if negotiated, and it is sent.
  void SendHandlerResponse(const http::Request& request, http::Response& response);
  void PumpProducer();
  void PumpPipe();
  void Answered();
  void MaybeFinishExchange();
  bool KeepAliveNow() const;
  // How the next response head is written: keep-alive if `can_keep` and
  // the exchange allows it (else the connection closes after it), HEAD.
  SerializeOptions HeadOptions(bool can_keep);
  bool MoreRequestsWaiting() const;
  std::string_view RequestLine() const;
  void FreeTask();
  void FreePipes();
  void ReleaseOutput(size_t bytes) override;
  // ---- static files (file_answer.cc)
  void StartFile(const http::Request& request);
  // The file's version is known and its descriptor open: answers.
  void ServeFile(const http::Request* request);
  // The path is a directory reached beneath the root: 301 to "path/".
  void RedirectToDirectory();
  // ---- a static file's encoded variants (file_variants.cc)
  // Picks a precompressed sibling or the on-the-fly gzip for the file now
  // open; false when that needs a ring operation first (the answer goes on
  // from its completion).
  bool ChooseFileVariant(const http::Request& request);
  void ProbeSibling();
  void OnSiblingProbed(int res);
  // The sibling chosen is missing or unusable after all: the original.
  void FallBackToOriginal();
  // A directory without index.html, on a mount that lists them.
  void ServeListing();
  void PumpFile();
  void PumpSplice();
  // A send of file bytes came back short (the socket is full): the file's
  // unsent bytes are taken back (their buffers freed) and the file waits
  // for room, holding nothing a stalled reader could starve others of.
  void YieldFileOutput();
  // A poll for the socket's room, the send deadline running.
  void WaitForRoom();
  // File bytes read into the loop's buffers are queued: a send of them
  // must not wait in the kernel for a reader that may never read.
  bool FileSendsMustNotWait() const {
    return FileBusy() && !st_->file->splice && st_->file->queued() > 0;
  }
  // The file ended before the body did: the connection closes after what
  // is queued (only that tells the client).
  void FileTruncated();
  // No file to send after all: an error answer (the head has not gone).
  void FileError(int status);
  // Lets go of the file (cache reference, descriptor) once nothing of it
  // is queued or in flight; ends a finished exchange that waited for it.
  void MaybeEndFile();
  void EndFile();
  bool FileBusy() const { return st_ != nullptr && st_->file != nullptr && !st_->file->idle(); }
  bool FileOwnsSocket() const { return FileBusy() && st_->file->socket_busy(); }

  // Gives the socket, and the bytes read from `bytes` on, to `next`
  // (ConnectionHost::HandOff).
  void HandOff(conn::ProtocolId next, std::string_view bytes);
  // The request asks for h2c (Upgrade: h2c with its HTTP2-Settings), and
  // may have it (requests.cc says when).
  static bool H2cUpgradeAsked(const http::Request& request);

  // ---- a WebSocket route's request (websocket_upgrade.cc)
  // A handshake is accepted (101 by the WebSocket connection the socket
  // goes to, with what followed the request) or refused (400, 426 with the
  // version we speak, the route's status); any other request is answered
  // 426. `rest`: the bytes read past the head.
  void AnswerWebSocketRoute(http::Request& request, const router::Route& route,
                            std::string_view rest);
  // A refusal with the fields only this layer may write (Upgrade,
  // Connection: Upgrade), which Response refuses from handlers.
  void RespondUpgradeRequired(std::string_view why);

  // ---- the PROXY header (requests.cc)
  // Reads the header from data[0..len) (after what is staged). Returns
  // true once it is read, with data/len left at the bytes after it (none
  // if they are staged); false while more is needed, or when the
  // connection closed for a bad header.
  bool ReadProxyHeader(const char** data, size_t* len);

  // ---- I/O and life (connection.cc)
  // After every event: drives output, closes when done, reconciles the
  // receive and the deadline with what the state now wants.
  void Sync();
  void Flush();
  void SyncRecv();
  void SyncDeadline();
  // No request in progress, nothing to send, nothing a worker streams.
  bool Quiet() const {
    return ex_.answer == Answer::kNone && !task_inflight_ && out_.empty() &&
           !out_.send_inflight() && (st_ == nullptr || st_->resp_pipe == nullptr);
  }
  bool WantRecv() const;
  // The last request is read and its answer is not a long one: no receive
  // is armed just to watch for stray bytes (see WantRecv).
  bool OnlyStrayBytesToRead() const;
  // The send being prepared is the connection's last: its close goes with
  // it (SendLastAndClose).
  bool CloseFollowsThisSend() const;
  void SendLastAndClose(unsigned iov_count);
  // Whether the receive should use the bulk buffers (a large body arrives).
  bool WantBulk() const;
  void StartClose(bool graceful);
  void IssueClose();
  uint64_t After(uint32_t ms) const;
  bool StageInput(const char* data, size_t len);
  void ReleaseBuffer(Buffer& b);
  bool Reserve(Buffer& b, size_t total);
  // The stream state, taken from the loop's pool on first use.
  StreamState& S() {
    if (st_ == nullptr) st_ = env_->streams->Acquire();
    return *st_;
  }
  worker::BodyPipe* req_pipe() const { return st_ ? st_->req_pipe.get() : nullptr; }
  worker::BodyPipe* resp_pipe() const { return st_ ? st_->resp_pipe.get() : nullptr; }
  router::BodySink* sink() const { return st_ ? st_->sink.get() : nullptr; }
  // Gives the stream state back once nothing in it is in use.
  void MaybeReleaseStreams() {
    if (st_ != nullptr) ReleaseStreamsIfIdle();
  }
  void ReleaseStreamsIfIdle();

  exchange::ConnectionEnv* env_ = nullptr;
  uint32_t slot_ = 0;
  Phase phase_ = Phase::kOpen;
  Input input_ = Input::kHead;
  Recv recv_ = Recv::kOff;
  bool recv_starved_ = false;     // ENOBUFS: re-armed when buffers return
  bool recv_bulk_ = false;        // the receive armed (or last armed) uses bulk buffers
  bool recv_used_ = false;        // a receive was armed before (the first is single-shot)
  bool peer_eof_ = false;         // the peer's FIN arrived
  bool recv_failed_ = false;      // the receive failed (reset, ...)
  bool shutdown_inflight_ = false;
  bool task_inflight_ = false;    // a worker holds task_
  bool linger_ = false;           // input was left unread: the close lingers
  bool in_staged_source_ = false; // Process() is working on in_ itself
  bool zc_inflight_ = false;      // the send in flight is zero-copy
  bool send_dont_wait_ = false;   // ... and it returns -EAGAIN, not waits, on a full socket
  bool batch_hook_ = false;       // OnBatchEnd() is due
  bool proxy_pending_ = false;    // the PROXY header is still to come
  bool secure_ = false;           // TLS below (Request::secure)

  Buffer in_;                     // staged input, not yet processed
  size_t head_scanned_ = 0;       // FindHeadEnd's progress over in_
  bool head_line_checked_ = false;// in_'s request line was parsed (early errors)
  bool began_ = false;            // a request head was read (an h2c preface comes first)
  Buffer req_;                    // the exchange's head and buffered body
  Exchange ex_;
  // The answer's X-Request-Id for the access log (up to its first bytes).
  static constexpr size_t kLoggedRequestId = 64;
  char request_id_[kLoggedRequestId];
  std::string_view unparsed_;     // the source's bytes after the current request
  worker::TaskBuffer* task_ = nullptr;
  std::unique_ptr<StreamState> st_;  // while a body is read or streams (S())
  http::ClientAddress peer_;      // the socket's peer (the loop fills it in)
  http::ClientAddress proxied_;   // the PROXY header's client, if it named one
  std::shared_ptr<const http::ClientCertificate> client_cert_;  // mTLS, else null
  OutputQueue out_;

  // Deadlines in ticks; 0: not running.
  uint64_t head_deadline_ = 0;
  uint64_t body_deadline_ = 0;
  uint64_t rate_deadline_ = 0;    // the end of the body rate's window
  uint64_t rate_bytes_ = 0;       // body bytes (framing included) in that window
  uint64_t send_deadline_ = 0;
  uint64_t idle_deadline_ = 0;
  uint64_t linger_deadline_ = 0;
  uint64_t producer_retry_ = 0;
  uint64_t armed_deadline_ = 0;

  friend class ProducerOutput;
};

}  // namespace uring_http::http1

#endif  // URING_HTTP_SRC_HTTP1_CONNECTION_H_
