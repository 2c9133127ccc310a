// http2::Connection: one HTTP/2 connection (RFC 9113) as a conn::Protocol,
// beside http1::Connection over the same transport. The codec is
// http2::Session (session.h, libnghttp2 behind it), driven byte in, byte
// out: received bytes go to Session::Receive, frames to send come from
// Session::Send into one output buffer and leave with one send at a time on
// the loop's ring. No socket call is made by the library.
//
// Each stream is an exchange answered through the same steps as an HTTP/1
// request (src/exchange): the router's answers, the middleware, the FAST
// handler on the ring, gzip. A SLOW route's request goes to the workers as
// over HTTP/1 (its head written as HTTP/1 for the worker to parse, its body
// buffered), and its answer comes back buffered or streamed through the
// task's pipe as DATA within the client's flow-control windows: the pipe's
// bound holds the worker back. Request bodies are buffered up to the
// server's limit, all of a connection's streams together.
//
// This is the first step of HTTP/2 (issue 20, Part 2), with --http2=on:
// over TLS when ALPN chose h2 (the TLS layer tells the loop once its
// handshake is done, before any plaintext), and on plain listeners by h2c
// with prior knowledge (the HTTP/1 connection hands its socket over when
// the first bytes are the preface, or after an HTTP/1 request with
// Upgrade: h2c, which becomes stream 1). Static files are answered as over
// HTTP/1 (file_streams.cc); streamed request bodies (into a FAST route's
// sink, or a pipe a SLOW handler reads) and FAST producers stream as DATA
// comes and goes (streamed_bodies.cc).
//
// Thread-safety: owned by its loop's ring thread.
#ifndef URING_HTTP_SRC_HTTP2_CONNECTION_H_
#define URING_HTTP_SRC_HTTP2_CONNECTION_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/conn/protocol.h"
#include "src/http/client_address.h"
#include "src/http/gzip_encoder.h"
#include "src/http/response.h"
#include "src/exchange/connection_env.h"
#include "src/http2/file_answer.h"
#include "src/http2/session.h"
#include "src/router/router.h"
#include "src/worker/body_pipe.h"
#include "src/worker/slow_task.h"

namespace uring_http::http2 {

// Why a session ended, for /metrics (ConnectionStats::http2_errors).
enum class ErrorKind : uint8_t {
  kFloodPing,
  kFloodSettings,
  kFloodPriority,
  kFloodRstStream,   // Rapid Reset (CVE-2023-44487)
  kFloodWindowUpdate,
  kFloodEmptyData,
  kFloodContinuation,  // CVE-2024-27316
  kFloodOutbound,      // control frames we owe piling up unread
  kBadPreface,
  kProtocolError,
  kOther,
  kCount,
};
static_assert(static_cast<size_t>(ErrorKind::kCount) <=
              exchange::ConnectionStats::kHttp2ErrorKinds);
// The kind of a Session::failure(), and its label in /metrics.
ErrorKind ErrorKindOf(std::string_view failure);
const char* ErrorKindName(ErrorKind kind);
// Frames gathered into the output before a send goes (bounded, so that one
// connection does not hold the ring for long).
inline constexpr size_t kOutputBytes = 64 * 1024;
// A streamed answer's bytes queued in the session beyond which the pipe is
// not read until the session frames some (OnStreamWritable).
inline constexpr size_t kStreamQueueBytes = 64 * 1024;
// Closed streams' objects a loop keeps for its next ones.
inline constexpr size_t kSpareStreams = 256;

class Connection final : public conn::Protocol, private SessionEvents {
 public:
  Connection();
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The slot's socket is HTTP/2 from here: `handoff` carries the bytes the
  // protocol before read (the preface on) and the receive it had armed.
  // `client`: the client the connection is for (the peer, or its PROXY
  // header's); `secure`: TLS beneath (ALPN chose h2).
  void Open(exchange::ConnectionEnv* env, uint32_t slot, const conn::Handoff& handoff,
            const http::ClientAddress& client, bool secure = false);

  // ---- conn::Protocol
  void OnRecv(const char* data, size_t len, bool ended) override;
  void OnRecvEnd(int res) override;
  void OnBuffersAvailable() override;
  void OnSend(int res, bool notification_follows) override;
  void OnSendNotification(bool copied) override {}
  void OnShutdownDone() override;
  void OnClosed() override;
  void OnWritable(int res) override {}
  void OnDeadline() override;
  void OnDrain() override;
  void OnBatchEnd() override;
  void Abort() override;
  void SetProxiedClient(const http::ClientAddress& client) override { client_ = client; }
  void SetClientCertificate(std::shared_ptr<const http::ClientCertificate> cert) override {
    client_cert_ = std::move(cert);
  }
  // A worker finished the task of the stream it names, or made progress
  // on its answer or its body (a stream that has gone: its orphan).
  void OnTaskDone(uint32_t stream) override;
  void OnStreamNotify(uint32_t stream) override;
  // Static files' operations (file_streams.cc); nothing is spliced.
  void OnFileStat(int res) override;
  void OnFileOpen(int res) override;
  void OnFileRead(int res) override;
  void OnFileSplice(int) override {}
  // (A worker's task, and a file operation, hold memory of this connection
  // until they return.)
  bool Freeable() const override {
    return phase_ == Phase::kClosed && !recv_armed_ && !send_inflight_ && !shutdown_inflight_ &&
           tasks_.empty() &&
           (files_ == nullptr || files_->op == FileOp::kNone);
  }
  void Release() override;

  // For tests.
  size_t open_streams() const { return streams_.size(); }

 private:
  // kLingering: our GOAWAY has gone and our FIN with it; what the client
  // still sends is read and dropped until its FIN (or linger_timeout_ms),
  // so that its late frames do not make the kernel reset the connection
  // and throw away the last answers before the client read them.
  enum class Phase : uint8_t { kOpen, kLingering, kCloseSubmitted, kClosed };

  // One stream's request as it arrives, and its answer as it leaves.
  struct Stream {
    // Not `= default`: value-initializing (Stream(), as a closed stream's
    // spare is reset) would first zero all of it, kilobytes of inline
    // field storage, for every stream. Every member has its initializer.
    Stream() noexcept {}
    int32_t id = 0;
    RequestHead head;  // views into the session's storage, valid until the stream closes
    std::string body;
    bool too_large = false;  // its head passed the server's limits: 431
    bool refused = false;    // answered before its body ended (413): the rest is dropped
    bool answered = false;   // a response is submitted
    bool head_request = false;
    int64_t started_ns = 0;
    uint32_t route_id = 0;   // for metrics: the route, or the loop's "unmatched"
    const router::Route* route = nullptr;  // once routed
    uint16_t afters_due = 0; // middlewares whose afters run once a file's answer is known
    bool limits_held = false; // a place in flight is the stream's until it closes
    std::unique_ptr<FileAnswer> file;  // a static file's answer in progress
    // A streamed request body (streamed_bodies.cc): into the route's sink,
    // or into a pipe its SLOW handler reads. Bytes the pipe has no room for
    // wait in body_waiting, not consumed (the window holds the rest back).
    bool streaming = false;
    bool body_ended = false;  // END_STREAM seen
    uint64_t streamed_bytes = 0;
    uint64_t body_limit = 0;
    std::unique_ptr<router::BodySink> sink;
    std::unique_ptr<worker::BodyPipe> req_pipe;
    std::string body_waiting;
    // A FAST handler's producer, and its gzip; `promised`: its
    // Content-Length (~0: none).
    http::BodyProducer producer;
    std::unique_ptr<http::GzipStream> gzip;
    uint64_t produced = 0;
    uint64_t promised = ~uint64_t{0};
    // Stream 1 of an Upgrade: its head's bytes (HTTP/1's were copied).
    std::string upgrade_bytes;
    std::vector<http::Header> upgrade_fields;
    http::Response response;
    // A SLOW route's task, while a worker has it; then, for a streamed
    // answer, its pipe (the ring's once seen) and trailers (null: none).
    worker::TaskBuffer* task = nullptr;
    std::unique_ptr<worker::BodyPipe> pipe;
    std::unique_ptr<http::HeaderTable> trailers;
    bool task_done = false;
    bool stream_broken = false;
    bool ended = false;      // EndData or a reset: nothing more is written
    // The rest of the request is awaited (no END_STREAM yet): --body-timeout
    // from its last byte, while the window is open to it (0: not waiting).
    uint64_t client_deadline = 0;
  };

  // ---- SessionEvents
  void OnRequest(int32_t id, const RequestHead& head) override;
  void OnRequestRefused(int32_t id, int status) override;
  void OnRequestData(int32_t id, std::string_view data) override;
  void OnRequestTrailers(int32_t id, const http::Header* fields, size_t n) override {}
  void OnRequestEnd(int32_t id) override;
  void OnStreamClosed(int32_t id, uint32_t error_code) override;
  void OnStreamWritable(int32_t id) override;

  // Upgrade: h2c: the 101, then stream 1 is the HTTP/1 request (copied).
  void OpenUpgraded(const conn::UpgradeRequest& upgrade);
  Stream* Find(int32_t id);
  Stream& NewStream(int32_t id);
  static std::vector<std::unique_ptr<Stream>>& SpareStreams();
  // The request as a handler sees it, whatever the protocol (request.h);
  // `storage` holds its fields. Views into the session's head: valid until
  // the stream closes.
  void BuildRequest(const Stream& s, std::vector<http::Header>& storage,
                    http::Request& request) const;
  void Answer(Stream& s);
  // --max-in-flight and the rate limits, as over HTTP/1: false when the
  // stream was answered 503 or 429 (with Retry-After) instead.
  bool Admit(Stream& s);
  void ReleaseLimits(Stream& s);
  // The handler's (or sink's) answer: a producer's, or a buffered one.
  void FinishHandler(Stream& s, const http::Request& request);
  // A buffered answer (its fields, body and trailers) to the session.
  void Submit(Stream& s);
  void SubmitError(Stream& s, int status);
  // The exchange is answered: metrics and the access log.
  void Done(const Stream& s, int status, uint64_t body_bytes);
  // The answer's head to the session: `fields` (the answer's own, not
  // copied), then date and server (and the length when known). False if
  // the session would not take it (the stream has gone).
  bool SubmitHead(const Stream& s, int status, const http::HeaderTable& fields,
                  bool length_known, uint64_t length, bool has_body);
  // ---- SLOW routes (slow_streams.cc)
  // Hands a SLOW route's request to the workers; false if refused.
  // `request_body`: a streamed body's pipe (null: request.body is it).
  bool Dispatch(Stream& s, const http::Request& request, const router::Route& route,
                worker::BodyPipe* request_body = nullptr);
  // What came back of a stream's task: a buffered answer, or the end of a
  // streamed one.
  void TakeTaskResult(Stream& s);
  void StartStreamed(Stream& s);
  // Moves a streamed answer's bytes from the pipe into the session, up to
  // kStreamQueueBytes queued, and ends it once the task has returned.
  void PumpPipe(Stream& s);
  // The stream goes while a worker has its task: the task is kept (and its
  // pipe aborted) until it returns.
  void Orphan(Stream& s);
  // The task has returned: its memory goes.
  void FreeTaskOf(worker::TaskBuffer* task);

  // ---- streamed bodies and producers (streamed_bodies.cc)
  // At the head of a request with a body: true if its route streams it
  // (the stream is then set up, or already answered).
  bool StartStreamedBody(Stream& s);
  void StreamedData(Stream& s, std::string_view data);
  void StreamedEnd(Stream& s);
  // What waits goes into the pipe, as far as it has room.
  void FeedPipe(Stream& s);
  // The body will not be read to its end: the sink hears OnAbort, the
  // pipe's reader an abort.
  void AbortStreamedBody(Stream& s, bool stream_open);
  void EndSink(Stream& s);
  void FailSink(Stream& s);
  void StartProducer(Stream& s, const http::Request& request);
  void PumpProducer(Stream& s);
  void RetryProducers();

  // ---- static files (file_streams.cc)
  void StartFile(Stream& s, const http::Request& request, const router::Route& route);
  // The stream's next file operation: now, or in its turn.
  void QueueFileOp(Stream& s, FileOp op);
  void IssueFileOp(Stream& s);
  void NextFileOp();
  // The operation completed: its stream (null if it went: *answer is then
  // the orphan, freed by FreeOrphanFile).
  Stream* EndFileOp(FileOp expected, FileAnswer** answer);
  void FreeOrphanFile();
  void FileStatDone(Stream& s, int res);
  // ---- which representation (file_variants.cc)
  // True when the file, a sibling or the gzip is ready to be answered;
  // false when an operation was queued (ServeFile comes back after it).
  bool ChooseFileVariant(Stream& s, const http::Request& request);
  void SiblingProbed(Stream& s, int res);
  void FallBackToOriginal(Stream& s);
  void ServeFile(Stream& s);
  void PumpFile(Stream& s);
  void RedirectToDirectory(Stream& s);
  void ServeListing(Stream& s);
  void FileError(Stream& s, int status);
  void RunDueAfters(Stream& s, const http::Request& request);
  // The stream is done with its file (or gone): the entry or descriptor
  // goes, or waits for the operation in flight.
  void EndFile(Stream& s);
  void ReleaseFileAnswer(FileAnswer& f);

  // ---- output and life (connection_life.cc)
  // Output buffers of connections with nothing to send wait in a per-thread
  // spare list for the next that has: an idle connection holds none.
  static std::unique_ptr<char[]> TakeOutputBuffer();
  static void GiveOutputBuffer(std::unique_ptr<char[]>& b);
  // After every event: output, the receive, closing, the deadline.
  void Sync();
  void Flush();
  // An answered stream has bytes the session cannot frame (the client's
  // windows are shut).
  bool FlowBlocked() const;
  // The earliest deadline of streams waiting for the rest of their request
  // (0: none). One whose body waits for our pipe is not the client's
  // fault: its clock restarts.
  uint64_t ClientDeadline();
  // Those past it: answered 408, or reset if an answer has begun.
  void ExpireClientWaits();
  void StartClose();
  // A graceful end (GOAWAY sent, the client still there): our FIN, then
  // the lingering read, then the close.
  void StartLinger();
  void FinishLinger();
  // The streams' work stops: workers' tasks orphaned, files, limits.
  void DropStreams();
  uint64_t After(uint32_t ms) const;

  exchange::ConnectionEnv* env_ = nullptr;
  uint32_t slot_ = 0;
  std::unique_ptr<Session> session_;
  Phase phase_ = Phase::kOpen;
  bool recv_armed_ = false;
  bool recv_starved_ = false;
  bool peer_eof_ = false;
  bool send_inflight_ = false;
  bool shutdown_inflight_ = false;  // our FIN (kLingering)
  bool linger_done_ = false;        // close once the shutdown completes
  bool fatal_ = false;  // the session ended: what is queued goes, then the close
  bool error_counted_ = false;  // its failure() is counted in /metrics
  uint64_t body_bytes_ = 0;  // request bodies buffered, all streams
  std::unique_ptr<char[]> out_;  // frames being sent: out_[sent_..out_len_)
  size_t out_len_ = 0;
  size_t sent_ = 0;
  iovec iov_{};
  uint64_t armed_deadline_ = 0;
  uint64_t timeout_deadline_ = 0;  // the send or idle timeout's (armed_deadline_: the earliest)
  uint64_t send_deadline_ = 0;
  uint64_t stall_deadline_ = 0;  // answers blocked on the client's windows since

  http::ClientAddress client_;
  std::shared_ptr<const http::ClientCertificate> client_cert_;  // mTLS, else null
  bool secure_ = false;  // TLS beneath (ALPN h2)
  // The open streams. A closed one's object waits in a per-thread spare
  // list for the next stream of any connection of the loop (connection.cc):
  // streams are not allocated per request, and idle connections hold none.
  absl::flat_hash_map<int32_t, std::unique_ptr<Stream>> streams_;
  // The fields of the request Answer builds (its Request points into them).
  std::vector<http::Header> request_fields_;
  // Every task a worker holds; one whose stream has gone keeps the pipe
  // (aborted, so the worker stops soon) until the task returns.
  struct Task {
    worker::TaskBuffer* task;
    std::unique_ptr<worker::BodyPipe> orphan_pipe;
    std::unique_ptr<worker::BodyPipe> orphan_request_pipe;  // a streamed body's
    bool orphaned = false;
  };
  std::vector<Task> tasks_;
  std::unique_ptr<FileOps> files_;  // once a stream answers with a file
  uint64_t producer_retry_tick_ = 0;  // a producer had nothing: asked again then
  bool pipe_written_ = false;  // request pipes were written: their readers wake at the batch's end
};

}  // namespace uring_http::http2

#endif  // URING_HTTP_SRC_HTTP2_CONNECTION_H_
