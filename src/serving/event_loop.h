// EventLoop: one accept thread. It owns one io_uring ring, its listening
// socket (SO_REUSEPORT), a preallocated pool of connection slots, and one
// arena from which its provided receive buffers and staging/response chunks
// are carved. Every socket operation of its connections and every timer is an
// SQE on its ring.
//
// Bytes flow one way: a multishot receive fills a provided buffer; the parser
// turns it into a request; the router picks a handler; a FAST handler runs
// here and its response is appended to the connection's output; a SLOW one
// goes to the worker pool and comes back as a MSG_RING completion; the output
// leaves with a send on the same ring.
//
// Thread-safety: Init() and Run() on the loop's own thread (the ring is
// single-issuer); ring_fd(), stats() and the Stop message from anywhere.
#ifndef URING_HTTP_SRC_SERVING_EVENT_LOOP_H_
#define URING_HTTP_SRC_SERVING_EVENT_LOOP_H_

#include <liburing.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "src/http/parser.h"
#include "src/http/response.h"
#include "src/io/arena.h"
#include "src/io/buffer_ring.h"
#include "src/io/ring.h"
#include "src/router/router.h"
#include "src/serving/access_log.h"
#include "src/serving/config.h"
#include "src/serving/connection.h"
#include "src/serving/loop_stats.h"
#include "src/serving/timer_wheel.h"
#include "src/worker/worker_pool.h"

namespace uring_http::serving {

class EventLoop {
 public:
  // `signal_fd` >= 0: this loop reads it and calls on_signal (one loop only).
  EventLoop(int index, const ServerConfig& config, const router::Router& router,
            worker::WorkerPool* workers, int listen_fd, int signal_fd,
            std::function<void()> on_signal, int access_log_fd = -1);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Creates the ring and everything preallocated. On the loop's thread.
  absl::Status Init();
  // Serves until stopped and drained. On the loop's thread, after Init().
  void Run();

  // The ring fd other threads post MSG_RING completions to (valid after Init).
  int ring_fd() const { return ring_fd_.load(std::memory_order_acquire); }
  const LoopStats& stats() const { return stats_; }
  // Index Route::id; router.size() counts requests that matched no route.
  const RouteStats& route_stats(size_t id) const { return route_stats_[id]; }
  // "single-issuer,defer-taskrun,..." for the ready line.
  std::string Features() const;
  uint32_t capacity() const { return capacity_; }
  uint32_t file_table_size() const { return file_table_size_; }

 private:
  // Completion handlers.
  void OnAccept(const io_uring_cqe* cqe);
  void OnRecv(Connection& c, uint32_t slot, const io_uring_cqe* cqe);
  void OnSend(Connection& c, uint32_t slot, const io_uring_cqe* cqe);
  void OnSendNotification(Connection& c, uint32_t slot, const io_uring_cqe* cqe);
  void OnTaskDone(uint32_t slot, uint32_t generation);
  void OnTimerTick();
  void OnSignal(int res);
  void OnStop();

  // Arming.
  void EnsureAccepts();
  void ArmRecv(Connection& c, uint32_t slot);
  void ArmTimerTick();
  void ArmSignalRead();

  // Request processing.
  void HandleInput(Connection& c, uint32_t slot, const char* data, size_t len);
  size_t ProcessRequests(Connection& c, uint32_t slot, const char* data, size_t len);
  void ProcessStaged(Connection& c, uint32_t slot);
  bool CanProcess(const Connection& c) const;
  // Whether `data` starts with a whole request (or a bad one): draining uses
  // it to find the last request already received.
  bool CompleteRequestAt(const char* data, size_t len);
  void RunInline(Connection& c, const http::Request& request, const router::Route& route,
                 const http::SerializeOptions& options, int64_t started_ns);
  bool DispatchSlow(Connection& c, uint32_t slot, const char* raw, size_t raw_len,
                    const router::Route& route, const http::SerializeOptions& options,
                    int64_t started_ns);
  void AppendError(Connection& c, int status, const http::SerializeOptions& options,
                   uint32_t route_id, int64_t started_ns, std::string_view allow = {});
  void CountStatus(uint32_t route_id, int status, int64_t started_ns);
  // Access log: the peer's address (fetched at accept) and one line per response.
  void FetchPeerAddress(uint32_t slot, uint32_t file_index);
  void LogResponse(uint32_t slot, std::string_view request_line, int status,
                   const char* response, size_t len, bool head_only);

  // Buffers.
  char* ReserveOutput(Connection& c, size_t bytes);
  // Whether `out` is the buffer of a zero-copy send the kernel still reads.
  static bool OutPinned(const Connection& c) { return c.zc_notif_pending && c.zc_hold == nullptr; }
  // Frees an output buffer, or hands it to zc_hold if the kernel still has it.
  void ReleaseOutputBuffer(Connection& c, char* buffer);
  void AppendOutput(Connection& c, const char* data, size_t len);
  bool StageInput(Connection& c, const char* data, size_t len);
  void ReleaseInput(Connection& c);

  // Output and closing.
  void Flush(Connection& c, uint32_t slot);
  void AfterProgress(Connection& c, uint32_t slot);
  void StartGracefulClose(Connection& c, uint32_t slot);
  void Abort(Connection& c, uint32_t slot);
  void SubmitClose(Connection& c, uint32_t slot);
  void IssueClose(Connection& c, uint32_t slot);
  void MaybeFree(Connection& c, uint32_t slot);
  void Refuse(int file_index);

  // Timers.
  enum TimerKind : uint8_t { kTimerNone, kTimerIdle, kTimerHeader, kTimerSend, kTimerLinger };
  void SetTimer(Connection& c, uint32_t slot, TimerKind kind);
  void OnTimerExpired(uint32_t slot);
  uint64_t NowTick() const;

  io_uring_sqe* Sqe() { return ring_->GetSqe(); }
  uint32_t SlotOf(const Connection& c) const {
    return static_cast<uint32_t>(&c - connections_.get());
  }
  static std::string_view RequestLine(const http::Request& request);

  const int index_;
  const ServerConfig& config_;
  const router::Router& router_;
  worker::WorkerPool* const workers_;
  const int listen_fd_;
  const int signal_fd_;
  std::function<void()> on_signal_;

  std::unique_ptr<io::Ring> ring_;
  std::atomic<int> ring_fd_{-1};
  io::Arena arena_;
  io::BufferRing buffers_;
  io::ChunkPool chunks_;
  std::unique_ptr<Connection[]> connections_;
  uint32_t capacity_ = 0;
  uint32_t file_table_size_ = 0;
  uint32_t free_head_ = 0;
  uint32_t free_count_ = 0;
  std::unique_ptr<http::Header[]> headers_;
  size_t headers_capacity_ = 0;
  TimerWheel timers_;
  uint64_t now_tick_ = 0;  // read once per batch of completions
  __kernel_timespec tick_interval_{};
  __kernel_timespec accept_backoff_{};
  std::unique_ptr<uint32_t[]> starved_;  // slots whose receive hit ENOBUFS
  uint32_t starved_count_ = 0;

  bool multishot_armed_ = false;
  bool multishot_cancelling_ = false;
  bool accept_backoff_pending_ = false;
  uint32_t single_accepts_ = 0;     // single-shot accepts in flight
  uint32_t table_used_ = 0;         // fixed-file entries holding a socket
  uint32_t multishot_headroom_ = 0; // free entries below which accepts go single-shot
  bool accept_error_logged_ = false;
  bool stopping_ = false;
  bool send_zc_ = false;  // --send-zc asked for it and the kernel has it
  uint64_t zc_paused_until_tick_ = 0;  // after ENOMEM (memlock limit): plain sends
  uint64_t stop_deadline_tick_ = 0;
  char signal_buf_[128];  // a signalfd_siginfo

  LoopStats stats_;
  const int access_log_fd_;
  AccessLog access_log_;
  std::unique_ptr<sockaddr_in[]> peers_;  // per slot, only with an access log
  std::string_view current_request_line_;  // of the request being answered (logging)
  std::unique_ptr<RouteStats[]> route_stats_;
  uint32_t unmatched_route_ = 0;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_EVENT_LOOP_H_
