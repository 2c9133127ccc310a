// EventLoop: one accept thread. It owns one io_uring ring, its listening
// socket (SO_REUSEPORT), a preallocated pool of connection slots, and one
// arena from which its provided receive buffers and chunks are carved. Every
// socket operation of its connections and every timer is an SQE on its ring.
//
// The loop itself does little: it dispatches completions (to its Acceptor, to
// the connection a completion names, to the timer wheel, to stop), and
// carries out what connections ask of it through ConnectionHost (SQEs for
// receives, sends, shutdowns and closes; wheel entries; worker tasks). What a
// connection does with its bytes is src/http1/connection.h.
//
// Bytes flow one way: a multishot receive fills a provided buffer; the
// connection turns it into requests; a FAST handler runs here and its
// response joins the connection's output; a SLOW one goes to the worker pool
// and comes back as a MSG_RING completion; the output leaves with a send on
// the same ring.
//
// Thread-safety: Init() and Run() on the loop's own thread (the ring is
// single-issuer); ring_fd(), stats() and the Stop message from anywhere.
#ifndef URING_HTTP_SRC_SERVING_EVENT_LOOP_H_
#define URING_HTTP_SRC_SERVING_EVENT_LOOP_H_

#include <liburing.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "src/async/runner.h"
#include "src/conn/protocol.h"
#include "src/conn/transport.h"
#include "src/http/request.h"
#include "src/http1/connection.h"
#include "src/exchange/connection_env.h"
#include "src/http1/stream_state.h"
#include "src/http2/connection.h"
#include "src/ws/connection.h"
#include "src/io/arena.h"
#include "src/io/buffer_ring.h"
#include "src/io/ring.h"
#include "src/router/router.h"
#include "src/serving/acceptor.h"
#include "src/serving/access_log.h"
#include "src/serving/config.h"
#include "src/serving/file_service.h"
#include "src/serving/loop_stats.h"
#include "src/serving/timer_wheel.h"
#include "src/serving/user_data.h"
#include "src/tls/tls_context.h"
#include "src/tls/tls_layer.h"
#include "src/worker/mailbox.h"
#include "src/worker/worker_pool.h"

namespace uring_http::serving {

class EventLoop final : private conn::Transport,
                        private exchange::ConnectionHost,
                        private async::Runner::Ring {
 public:
  // `listen_fds`: the loop's listeners (TCP or Unix-domain; each accepted
  // from with a multishot accept while the table has room).
  // `signal_fd` >= 0: this loop reads it and calls on_signal with the
  // signal's number (one loop only). `tls`: the listener speaks TLS, with
  // the context this source has when a connection arrives.
  // `keep_listeners`, read when the loop stops: true leaves the listeners
  // listening (their sockets are another process's too), see Acceptor::Stop.
  EventLoop(int index, const ServerConfig& config, const router::Router& router,
            worker::WorkerPool* workers, std::vector<int> listen_fds, int signal_fd,
            std::function<void(int)> on_signal, int access_log_fd = -1,
            const tls::TlsContextSource* tls = nullptr, std::vector<int> plain_listen_fds = {},
            worker::WorkerPool* tls_workers = nullptr,
            const std::atomic<bool>* keep_listeners = nullptr);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Creates the ring and everything preallocated. On the loop's thread.
  absl::Status Init();
  // Serves until stopped and drained. On the loop's thread, after Init().
  void Run();

  // The ring fd other threads post MSG_RING completions to (valid after
  // Init), and the mailbox for messages MSG_RING cannot deliver.
  int ring_fd() const { return ring_fd_.load(std::memory_order_acquire); }
  worker::Mailbox* mailbox() const { return mailbox_.get(); }
  const LoopStats& stats() const { return stats_; }
  // Index Route::id; router.size() counts requests that matched no route.
  const RouteStats& route_stats(size_t id) const { return route_stats_[id]; }
  // "single-issuer,defer-taskrun,..." for the ready line.
  std::string Features() const;
  uint32_t capacity() const { return capacity_; }
  // The server's limits (null: none), before Init().
  void set_limits(limits::RequestLimits* limits) { limits_ = limits; }
  uint32_t file_table_size() const { return file_table_size_; }
  // Run() returned with connections still waiting for handlers that never
  // returned (after --shutdown-timeout): their memory must outlive any
  // worker still running them, so the loop must not be destroyed.
  bool abandoned() const { return abandoned_; }

 private:
  // One slot of the connection pool. Reused only after every operation
  // that names it has completed (see Connection::Freeable): a completion
  // always finds the slot it was issued for, and the generation in its
  // user_data is checked all the same.
  struct Slot {
    uint32_t generation = 0;
    uint32_t file_index = 0;  // io_uring direct descriptor
    uint32_t next_free = 0;   // free-list link while unused
    bool in_use = false;
    bool recv_bulk = false;   // its receive uses the bulk group
    bool after_batch = false; // in after_batch_ (at most once)
    // The protocol the slot speaks (while in use): every socket and
    // exchange completion goes to it. Each slot keeps its HTTP/1
    // connection preallocated; every connection starts with it.
    conn::Protocol* protocol = nullptr;
    http1::Connection http1;
    // Made on the slot's first HTTP/2 connection and kept for the next.
    std::unique_ptr<http2::Connection> http2;
    // Made on the slot's first WebSocket and kept for the next.
    std::unique_ptr<ws::Connection> ws;
    // The HTTP/1 connection handed its socket on during the event being
    // handled: it is released after it (MaybeFree), not under its own call.
    bool http1_handed_off = false;
  };

  // ---- conn::Transport (the TLS layer's, beneath a TLS connection)
  void ArmRecv(uint32_t slot, bool bulk, bool once) override;
  void CancelRecv(uint32_t slot) override;
  void Send(uint32_t slot, const iovec* iov, unsigned count, bool zero_copy, msghdr* msg,
            bool dont_wait) override;
  void SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count, msghdr* msg) override;
  void CancelSend(uint32_t slot) override;
  void ShutdownWrite(uint32_t slot) override;
  void Close(uint32_t slot, bool recv_armed, bool send_inflight) override;
  void SetDeadline(uint32_t slot, uint64_t tick) override;
  bool AcquirePipe(Pipe* pipe) override { return files_->AcquirePipe(pipe); }
  void ReleasePipe(const Pipe& pipe, bool empty) override { files_->ReleasePipe(pipe, empty); }
  void SpliceToSocket(uint32_t slot, int pipe_read, uint32_t len, bool more) override {
    files_->PrepSpliceToSocket(pipe_read, slots_[slot].file_index, len, more,
                               UserData(Op::kFileSplice, slot));
  }
  void PollWritable(uint32_t slot) override {
    files_->PrepPollWritable(slots_[slot].file_index, UserData(Op::kFileWritable, slot));
  }
  void AfterBatch(uint32_t slot) override {
    // Once per slot at a time, so the list never holds more than capacity_
    // entries (a slot freed and reused with its entry still there shares it).
    if (slots_[slot].after_batch) return;
    slots_[slot].after_batch = true;
    after_batch_[after_batch_count_++] = slot;
  }
  // ---- exchange::ConnectionHost
  bool Dispatch(uint32_t slot, worker::TaskBuffer* task, const router::Route& route,
                int64_t started_ns) override;
  void StopTask(uint32_t slot, worker::TaskBuffer* task, http::StopReason why) override;
  void ExchangeDone(uint32_t slot, const Exchange& exchange) override;
  void HandOff(uint32_t slot, conn::ProtocolId next, const conn::Handoff& handoff) override;
  // The slot speaks HTTP/2 from now on (an h2c preface, or ALPN h2).
  void StartWebSocket(uint32_t slot, const conn::Handoff& handoff);
  std::shared_ptr<ws::Sender> MakeSender(uint32_t slot, size_t bound,
                                         int deflate_window) override;
  // The inbox's message: WebSocket senders have sends for their sockets.
  void OnWsInbox();
  bool Offload(std::function<void()> work) override;
  void OnWsJobDone(uint32_t index, uint32_t generation);
  // A WebSocket's offloaded work (ws::WebSocket::Offload): kept for reuse,
  // named in its completion by index and generation.
  struct WsJob : worker::WorkerJob {
    std::function<void()> work;
    uint32_t generation = 0;
    bool busy = false;
  };
  static void RunWsJob(worker::WorkerJob* job);
  void StartHttp2(uint32_t slot, const conn::Handoff& handoff);
  void OnAlpnH2(uint32_t slot);
  void StatFile(uint32_t slot, int dir_fd, const char* path, struct statx* out) override {
    files_->PrepStat(dir_fd, path, out, UserData(Op::kFileStat, slot));
  }
  void OpenFile(uint32_t slot, int dir_fd, const char* path, bool check_only) override {
    files_->PrepOpen(dir_fd, path, check_only, UserData(Op::kFileOpen, slot));
  }
  void ReadFile(uint32_t slot, int file_index, char* buf, uint32_t len,
                uint64_t offset) override {
    files_->PrepRead(file_index, buf, len, offset, UserData(Op::kFileRead, slot));
  }
  void SpliceToPipe(uint32_t slot, int file_index, uint64_t offset, int pipe_write,
                    uint32_t len) override {
    files_->PrepSpliceToPipe(file_index, offset, pipe_write, len, UserData(Op::kFileSplice, slot));
  }

  // ---- async::Runner::Ring (ASYNC handlers' awaits, event_loop_host.cc)
  uint64_t OpUserData(uint32_t exchange, uint32_t generation) const override {
    return PackUserData(Op::kAsync, exchange, generation);
  }
  void PrepTimeout(uint64_t user_data, const __kernel_timespec* ts) override;
  void PrepCancel(uint64_t user_data) override;
  void PrepIo(uint64_t user_data, const async::IoOp& op, const __kernel_timespec* ts) override;
  bool SubmitJob(worker::WorkerJob* job, uint64_t user_data) override;
  bool has_workers() const override { return workers_ != nullptr; }
  void TaskDone(uint64_t user_data, uint32_t stream) override {
    OnWorkerMessage(Op::kTaskDone, UserDataSlot(user_data), UserDataGeneration(user_data), stream);
  }
  worker::RingAddress address() const override { return {ring_->fd(), mailbox_.get()}; }
  uint64_t InboxUserData() const override { return PackUserData(Op::kAsyncInbox, 0, 0); }
  void StreamNotify(uint64_t user_data, uint32_t stream) override {
    OnWorkerMessage(Op::kStreamNotify, UserDataSlot(user_data), UserDataGeneration(user_data),
                    stream);
  }
  // ASYNC answers ready: delivered before the loop may sleep.
  bool AsyncReady() const { return async_ != nullptr && async_->has_ready(); }
  void RunAsyncReady() {
    if (async_ == nullptr) return;
    async_->OnBatchEnd();
    while (async_->has_ready()) async_->RunReady();
  }

  // Completions.
  void OnAccept(const io_uring_cqe* cqe);
  // A fixed-file entry came free: every acceptor may accept again.
  void OnEntryClosed();
  bool AcceptorsIdle() const;
  void OnConnectionEvent(Op op, uint32_t slot, const io_uring_cqe* cqe);
  // The completion to the slot's protocol `conn` (its concrete type when
  // known: no virtual call).
  template <typename P>
  void Deliver(P& conn, Op op, uint32_t slot, const io_uring_cqe* cqe);
  // `stream`: the CQE's res (MSG_RING's len), or the mailbox's.
  void OnWorkerMessage(Op op, uint32_t slot, uint32_t generation, uint32_t stream);
  void OnTimerTick();
  void OnSignal(int res);
  void OnStop();
  void RunAfterBatch();
  void DeliverTlsOwed();
  // Frees the slot once its connection holds nothing the kernel or a worker
  // may still use.
  void MaybeFree(uint32_t slot);

  // Arming.
  void ArmTimerTick();
  void ArmSignalRead();
  void FetchPeerAddress(uint32_t slot, uint32_t file_index, uint32_t peer_length);

  uint64_t NowTick() const;
  io_uring_sqe* Sqe() { return ring_->GetSqe(); }
  // ---- TLS (event_loop_tls.cc)
  absl::Status InitTls();
  void SetRingSlice();
  // A socket completion of a TLS connection, given to the layer; false
  // for the connection's own (file) completions.
  bool OnTlsSocketEvent(Op op, uint32_t slot, const io_uring_cqe* cqe);
  // The slot's connection speaks TLS: its socket's events go to the layer.
  bool Tls(uint32_t slot) const { return tls_ != nullptr && tls_->attached(slot); }
  // A new connection's SSL, from the newest context (null: out of memory).
  SSL* NewSsl();
  uint64_t RecvUserData(uint32_t slot) const {
    return UserData(slots_[slot].recv_bulk ? Op::kRecvBulk : Op::kRecv, slot);
  }
  uint64_t UserData(Op op, uint32_t slot) const {
    return PackUserData(op, slot, slots_[slot].generation);
  }

  const int index_;
  const ServerConfig& config_;
  const router::Router& router_;
  worker::WorkerPool* const workers_;
  const int signal_fd_;
  std::function<void(int)> on_signal_;

  std::unique_ptr<io::Ring> ring_;
  std::atomic<int> ring_fd_{-1};
  io::Arena arena_;
  io::BufferRing buffers_;       // small receive buffers (heads, small bodies)
  io::BufferRing bulk_buffers_;  // large ones, for large bodies (may be absent)
  io::ChunkPool chunks_;
  // Static files; only with Static() mounts. Before the slots: connections
  // give their file references back before it goes.
  std::unique_ptr<FileService> files_;
  std::unique_ptr<Slot[]> slots_;
  // ASYNC handlers' exchanges (only with ASYNC routes). After the slots:
  // destroyed first, its coroutines may view their connections' tasks.
  std::unique_ptr<async::Runner> async_;
  // Where WebSocket senders post (ws/sender.h): one MSG_RING per burst.
  std::unique_ptr<async::RingInbox> ws_inbox_;
  std::vector<uint64_t> ws_inbox_taken_;
  std::vector<std::unique_ptr<WsJob>> ws_jobs_;
  std::vector<uint32_t> ws_jobs_free_;
  // SLOW tasks of routes with a RouteOptions::timeout, while a worker has
  // them: past `at_ns` (checked at the tick) the task is stopped
  // (kDeadline), which wakes a handler in Request::WaitForStop and makes
  // the worker answer 503 (or cut the stream) when the handler returns.
  // An entry goes at its task's kTaskDone, before the connection may free
  // or reuse the task.
  struct SlowDeadline {
    int64_t at_ns;
    uint32_t slot;
    uint32_t generation;
    uint32_t stream;
    worker::TaskBuffer* task;
  };
  std::vector<SlowDeadline> slow_deadlines_;
  void CheckSlowDeadlines(int64_t now_ns);
  void ForgetSlowDeadline(uint32_t slot, uint32_t generation, uint32_t stream);
  uint32_t capacity_ = 0;
  uint32_t file_table_size_ = 0;
  uint32_t free_head_ = 0;
  uint32_t free_count_ = 0;
  std::unique_ptr<http::Header[]> headers_;
  exchange::ConnectionConfig conn_config_;
  std::unique_ptr<http1::StreamStatePool> streams_;
  exchange::ConnectionEnv env_;
  std::unique_ptr<worker::Mailbox> mailbox_;
  // One acceptor per listener, numbered as Acceptor::Listener() says: the
  // loop's listeners first, then, with TLS, the plain-HTTP ones beside them
  // (--plain-port) from plain_begin_ on: their connections are never
  // attached to the TLS layer.
  const std::vector<int> listen_fds_;
  const std::vector<int> plain_listen_fds_;
  std::vector<Acceptor> acceptors_;
  std::vector<uint32_t> peer_lengths_;  // per acceptor: its clients' sockaddr
  uint32_t plain_begin_ = 0;
  worker::WorkerPool* const tls_workers_;  // handshake steps (null: on the ring)
  const std::atomic<bool>* const keep_listeners_;
  uint32_t table_used_ = 0;  // fixed-file entries holding a socket (all acceptors)
  TimerWheel timers_;
  __kernel_timespec tick_interval_{};
  std::unique_ptr<uint32_t[]> starved_;  // slots whose receive hit ENOBUFS
  uint32_t starved_count_ = 0;
  std::unique_ptr<uint32_t[]> after_batch_;  // slots to call OnBatchEnd() on
  // RunAfterBatch's list while it runs: slots that ask again meanwhile go to
  // after_batch_, for the next round.
  std::unique_ptr<uint32_t[]> after_batch_running_;
  uint32_t after_batch_count_ = 0;

  bool stopping_ = false;
  // The drain's time and its grace are up with connections still held by
  // handlers that have not returned: the loop leaves them (see Run).
  bool abandoned_ = false;
  bool send_zc_ = false;  // --send-zc asked for it and the kernel has it
  bool ring_slice_ = false;  // the ring thread has its short scheduler slice
  uint64_t stop_deadline_tick_ = 0;
  char signal_buf_[128];  // a signalfd_siginfo

  // TLS (null without): the context source, this loop's copy of its
  // current context, the output chunks and the layer itself.
  const tls::TlsContextSource* const tls_source_;
  std::shared_ptr<const tls::TlsContext> tls_context_;
  uint64_t tls_generation_ = 0;
  io::Arena tls_arena_;
  io::ChunkPool tls_buffers_;
  std::unique_ptr<tls::TlsLayer> tls_;

  LoopStats stats_;
  limits::RequestLimits* limits_ = nullptr;
  const int access_log_fd_;
  AccessLog access_log_;
  std::unique_ptr<RouteStats[]> route_stats_;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_EVENT_LOOP_H_
