// TlsLayer: TLS between one loop's socket operations and the protocols of
// its connections (conn::Protocol: HTTP/1, HTTP/2). The loop hands it the
// ciphertext its receives bring; it decrypts and hands plaintext to the
// protocol; the protocol's sends come to it (it is the protocol's
// conn::Transport) and leave encrypted, sent by the same ring. The
// protocol cannot tell it from plain TCP, and the layer knows no protocol.
//
//      ring (loop)  --ciphertext-->  TlsLayer  --plaintext-->  Protocol
//      ring (loop)  <--ciphertext--  TlsLayer  <--plaintext--  Protocol
//
// Per connection it keeps two receives apart: the kernel's (always a
// multishot receive, armed while the handshake runs or while the
// connection wants bytes) and the one the connection believes it has armed
// (its ArmRecv/CancelRecv), whose ends it is told exactly once, as the
// kernel would. Its output buffer (a chunk of the loop's pool, held only
// while there is something to send) takes handshake flights, records and
// alerts; one kernel send is in flight at a time, and a connection's send
// completes when the records carrying its bytes are sent.
//
// Closing: our close_notify goes out before a graceful close or a
// shutdown; a handshake that fails sends its alert and closes; plain HTTP
// on the TLS port is answered 400 in plain text and closed. The handshake
// has its own deadline (TlsSettings::handshake_timeout_ms); the
// connection's deadlines start once it completes.
//
// Slots of the loop not on a TLS listener pass straight through.
//
// tls_layer.cc: life and input; tls_layer_output.cc: output and what the
// connection is owed; tls_layer_close.cc: failures, closing, deadlines;
// tls_layer_offload.cc: handshake steps on the TLS workers.
//
// Thread-safety: the loop's ring thread.
#ifndef URING_HTTP_SRC_TLS_TLS_LAYER_H_
#define URING_HTTP_SRC_TLS_TLS_LAYER_H_

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "src/conn/protocol.h"
#include "src/conn/transport.h"
#include "src/io/arena.h"
#include "src/worker/slow_task.h"
#include "src/tls/tls_context.h"
#include "src/tls/tls_session.h"
#include "src/tls/tls_stats.h"

namespace uring_http::tls {

class TlsLayer final : public conn::Transport {
 public:
  // Output chunks (ciphertext) come from `buffers`, whose chunk size must
  // be at least kMinBufferBytes; plaintext is decrypted into a scratch
  // buffer of `scratch_bytes`.
  static constexpr size_t kMinBufferBytes = 96 * 1024;
  // Hands a handshake step to the worker pool; its completion comes back
  // as OnJobDone(slot). False: the queue is full (the step runs inline).
  using SubmitJob = std::function<bool(uint32_t slot, worker::WorkerJob* job)>;
  // `submit` null, or `gate` kInline: every handshake runs on the ring.
  // `adaptive`: `gate` applies only while the ring's connections are
  // being reused (a second delivery of bytes on one, within the last
  // second: keep-alive requests a signature would hold up); otherwise
  // handshakes run inline (TlsSettings::Offload::kAuto).
  // `handshake_timeout_ms`: 0 means none (HandshakeTimeoutMs picks it).
  TlsLayer(conn::Transport* below, uint32_t capacity, io::ChunkPool* buffers,
           const conn::TransportConfig& config, const conn::LoopState* loop,
           conn::TransportStats* conn_stats, TlsStats* stats, uint32_t handshake_timeout_ms,
           HandshakeGate::Mode gate = HandshakeGate::Mode::kInline, SubmitJob submit = nullptr,
           bool adaptive = false);
  ~TlsLayer();
  TlsLayer(const TlsLayer&) = delete;
  TlsLayer& operator=(const TlsLayer&) = delete;

  // The connection on `slot` speaks TLS with `ssl` (owned from here; from
  // TlsContext::NewSsl, which keeps its context alive). Before
  // conn->Open().
  void Attach(uint32_t slot, conn::Protocol* conn, SSL* ssl);
  // --handshake-timeout=0 does not mean "wait for ever": a client that
  // never finishes its handshake has sent no request, so the head's
  // deadline (or, without one, the idle one) bounds it instead.
  static uint32_t HandshakeTimeoutMs(uint32_t handshake_ms, uint32_t header_ms,
                                     uint32_t idle_ms) {
    return handshake_ms != 0 ? handshake_ms : header_ms != 0 ? header_ms : idle_ms;
  }
  bool attached(uint32_t slot) const { return links_[slot].conn != nullptr; }
  // The handshake chose h2 (ALPN): called once it is done, before any
  // plaintext is delivered; the loop gives the slot its HTTP/2 protocol
  // and Rebinds it here.
  void set_on_h2(std::function<void(uint32_t slot)> on_h2) { on_h2_ = std::move(on_h2); }
  // The slot's protocol is `conn` from now on (its bytes and completions
  // go there).
  void Rebind(uint32_t slot, conn::Protocol* conn) { links_[slot].conn = conn; }

  // ---- the kernel's completions for an attached slot
  // A receive completion with bytes (more: IORING_CQE_F_MORE); the buffer
  // is the loop's again after the call.
  void OnRecv(uint32_t slot, const char* data, size_t len, bool more);
  // The receive ended without bytes (res <= 0).
  void OnRecvEnd(uint32_t slot, int res);
  void OnBuffersAvailable(uint32_t slot);
  void OnSend(uint32_t slot, int res);
  void OnShutdownDone(uint32_t slot);
  void OnClosed(uint32_t slot);
  void OnDeadline(uint32_t slot);
  void OnBatchEnd(uint32_t slot);
  // The worker finished the handshake step it was given (MSG_RING).
  void OnJobDone(uint32_t slot);
  // Completions the connections are owed (a send encrypted, a send that
  // cannot go, room to write), which arose inside their own calls: the
  // loop delivers them after each batch of completions, as the kernel's
  // would arrive, with no system call of their own. DeliverOwed returns
  // the slot it served (the loop may free it).
  bool has_owed() const { return owed_count_ > 0; }
  uint32_t DeliverOwed();
  // A handshake step ran on the ring during the last event: its flight
  // should go to the kernel at once (once; the loop submits).
  bool TakeSubmitNow() {
    const bool s = submit_now_;
    submit_now_ = false;
    return s;
  }
  // Nothing of the slot is with the kernel any more (and the connection
  // agrees: Connection::Freeable).
  bool Freeable(uint32_t slot) const;
  // Frees the slot's SSL and buffers.
  void Release(uint32_t slot);

  // ---- conn::Transport, for the protocols (plain slots pass through)
  void ArmRecv(uint32_t slot, bool bulk, bool once) override;
  void CancelRecv(uint32_t slot) override;
  void Send(uint32_t slot, const iovec* iov, unsigned count, bool zero_copy, msghdr* msg,
            bool dont_wait) override;
  void SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count, msghdr* msg) override;
  void CancelSend(uint32_t slot) override;
  void ShutdownWrite(uint32_t slot) override;
  void Close(uint32_t slot, bool recv_armed, bool send_inflight) override;
  void SetDeadline(uint32_t slot, uint64_t tick) override;
  // Room in the output, not the socket (see ConnSend).
  void PollWritable(uint32_t slot) override;
  void AfterBatch(uint32_t slot) override;
  // A file's bytes must pass through the encryption: never spliced.
  bool AcquirePipe(Pipe* pipe) override;
  void ReleasePipe(const Pipe& pipe, bool empty) override { below_->ReleasePipe(pipe, empty); }
  void SpliceToSocket(uint32_t slot, int pipe_read, uint32_t len, bool more) override;

 private:
  enum class Phase : uint8_t { kHandshake, kOpen, kFailed };
  enum class Recv : uint8_t { kOff, kArmed, kCancelling };
  // Why the layer closes a connection itself.
  enum class Failure : uint8_t { kTimeout, kPlainHttp, kProtocol, kPeerClosed, kProxyHeader };

  // The connection's send as the layer carries it. Its plaintext is the
  // connection's until it is encrypted; from then on the records are the
  // layer's, and the send is complete for the connection (its buffers free:
  // a file's go back to the loop's pool whatever the peer does), the
  // records leaving at the kernel's pace. What the connection is owed is
  // delivered after the event that caused it (DeliverOwed), never inside
  // the connection's own call.
  enum class ConnSend : uint8_t {
    kNone,
    kWaiting,    // no room in the output: encrypted when a kernel send frees some
    kEncrypted,  // conn_taken bytes encrypted: OnSend(conn_taken) owed (a last
                 // send: with the final kernel send, which carries the close)
    kAgain,      // a don't-wait send that found no room: -EAGAIN owed
    kFailed,     // nothing can carry it: -EPIPE owed
  };
  // The connection's wait for room to write (PollWritable) is answered by
  // the layer, for room in its output is what the connection writes into.
  enum class Poll : uint8_t { kNone, kWaiting, kOwed };

  // One connection's layer state (reset by assignment; its
  // TlsSession lives in sessions_[slot]).
  struct Link {
    conn::Protocol* conn = nullptr;
    Phase phase = Phase::kHandshake;
    // The kernel's receive, and the connection's.
    Recv real = Recv::kOff;
    Recv virt = Recv::kOff;
    bool virt_once = false;
    bool bulk = false;
    bool peer_done = false;     // EOF, reset or close_notify: no more reading
    int peer_res = 0;           // ... what the connection's receive ends with
    bool starved = false;       // ENOBUFS: re-armed on OnBuffersAvailable
    bool batch_asked = false;   // the loop's AfterBatch is asked for this slot
    bool owed_queued = false;   // in owed_ (DeliverOwed)
    bool conn_batch = false;    // ... and the connection asked for it too
    bool seen_bytes = false;
    // --proxy-protocol: the PROXY header, in clear before the ClientHello,
    // is still to come; a part of it that came alone waits in proxy_buf.
    bool proxy_pending = false;
    char* proxy_buf = nullptr;
    uint16_t proxy_len = 0;
    bool delivered = false;     // plaintext went to the connection before
    // Output: out[sent..session.output_len()) is still to go.
    char* out = nullptr;
    size_t sent = 0;
    iovec send_iov{};           // the kernel's send in flight
    bool send_inflight = false;
    bool write_dead = false;    // a send failed: nothing more goes out
    // No progress on the kernel's send by this tick: it is cancelled (the
    // send timeout, measured per kernel send, not per connection send).
    uint64_t send_deadline = 0;
    // The connection's send: its iovecs and the plaintext taken.
    ConnSend csend = ConnSend::kNone;
    bool conn_last = false;       // SendLastAndClose
    bool conn_dont_wait = false;  // a full output refuses it (-EAGAIN)
    const iovec* conn_iov = nullptr;
    unsigned conn_count = 0;
    size_t conn_taken = 0;
    // The connection's wait for room (PollWritable).
    Poll poll = Poll::kNone;
    int poll_res = 0;
    // Closing.
    bool shutdown_asked = false;     // ShutdownWrite once the output is out
    bool shutdown_inflight = false;
    bool close_asked = false;        // the connection closed
    bool close_issued = false;       // the kernel has the close
    bool final_send = false;         // ... linked behind a last send
    bool closed = false;
    uint64_t conn_deadline = 0;
    uint64_t handshake_deadline = 0;
    uint64_t armed_deadline = 0;     // what the loop was last given
    // A worker runs the handshake step: the session and its output are
    // the worker's until OnJobDone; bytes arriving meanwhile wait in stash.
    bool offloaded = false;
    char* stash = nullptr;
    size_t stash_len = 0;
    // The job is with the pool until OnJobDone, even once the ring took the
    // step back (offloaded false again): its memory is the slot's.
    bool job_out = false;
    uint64_t queue_deadline = 0;  // no worker by then: the step runs here
  };

  // One per slot: the worker's job, and the gate its SSL consults.
  struct HandshakeJob : worker::WorkerJob {
    TlsSession* session = nullptr;
    HandshakeGate gate;
    TlsSession::Status result = TlsSession::Status::kNeedMore;
  };
  static void RunHandshake(worker::WorkerJob* job);
  // A suspended handshake: to a worker, or (no worker, the queue full,
  // input left over) on with it here. True when it went to a worker.
  bool Offload(uint32_t slot);
  // The queued step's time is up (queue_deadline): it runs here unless a
  // worker has it already. True when it ran here.
  bool TakeBackStep(uint32_t slot);
  // The connection closes with its step still queued: no worker will run
  // it. False if a worker runs it already (OnJobDone comes later).
  bool AbandonStep(uint32_t slot);
  // What follows a handshake step, wherever it ran.
  void AfterStep(uint32_t slot, TlsSession::Status result);

  void Fail(uint32_t slot, Failure why);
  // A handshake OpenSSL failed: over a client certificate (by reason), or
  // another protocol failure.
  void CountProtocolFailure(uint32_t slot);
  void Feed(uint32_t slot, const char* data, size_t len);
  // Reads the PROXY header from what has come (a part staged before, then
  // data[0..len)). True once it is read: its last *used bytes were at the
  // start of data. False while more is needed (data is staged), or when
  // the connection failed.
  bool ReadProxyHeader(uint32_t slot, const char* data, size_t len, size_t* used);
  void ReleaseProxyBuffer(Link& l);
  void Deliver(uint32_t slot, size_t len);
  void HandshakeDone(uint32_t slot);
  void EnsureOutput(uint32_t slot);
  void MaybeReleaseOutput(uint32_t slot);
  void EncryptConn(uint32_t slot);
  void Flush(uint32_t slot);
  // The kernel's send is in flight: no progress by --send-timeout cancels it.
  void StartSendClock(uint32_t slot);
  void SyncRecv(uint32_t slot);
  void FinishClose(uint32_t slot);
  // Gives the loop the earliest of the link's deadlines (the handshake's or
  // the connection's, and the kernel send's).
  void SyncDeadline(uint32_t slot);
  // Encrypt() would take plaintext now.
  bool OutputHasRoom(uint32_t slot) const;
  void MaybeShutdown(uint32_t slot);
  uint64_t HandshakeDeadline(const Link& l) const;
  void AskBatch(uint32_t slot);
  // Queues the slot for DeliverOwed (once at a time).
  void Owe(uint32_t slot);
  void DeliverOwedTo(uint32_t slot);
  void EndVirtual(uint32_t slot, int res);
  size_t pending_output(uint32_t slot) const {
    const Link& l = links_[slot];
    return l.out == nullptr || l.write_dead ? 0 : sessions_[slot].output_len() - l.sent;
  }

  conn::Transport* const below_;
  const uint32_t capacity_;
  io::ChunkPool* const buffers_;
  const conn::TransportConfig config_;
  const conn::LoopState* const loop_;
  conn::TransportStats* const conn_stats_;
  TlsStats* const stats_;
  const uint32_t handshake_timeout_ms_;
  std::unique_ptr<Link[]> links_;
  std::unique_ptr<TlsSession[]> sessions_;
  std::unique_ptr<HandshakeJob[]> jobs_;
  const HandshakeGate::Mode gate_mode_;
  const SubmitJob submit_;
  std::function<void(uint32_t slot)> on_h2_;
  const bool adaptive_;
  bool submit_now_ = false;
  // The last tick a connection was reused (adaptive offload), and for how
  // long that counts.
  static constexpr uint64_t kReuseWindowTicks = 10;
  uint64_t last_reuse_tick_ = 0;
  std::unique_ptr<uint32_t[]> owed_;  // slots with completions owed (each once)
  uint32_t owed_count_ = 0;
  std::unique_ptr<char[]> scratch_;  // decrypted bytes, handed to a connection
  size_t scratch_bytes_ = 0;
  // Small sends of several pieces (a head and a body) are gathered into
  // one record rather than one record per piece.
  static constexpr size_t kGatherBytes = 16 * 1024;
  std::unique_ptr<char[]> gather_;
  msghdr msg_{};                     // unused by single-iovec sends
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_LAYER_H_
