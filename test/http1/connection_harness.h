// A kernel-less stand-in for a connection's loop: FakeHost records what the
// connection asks (receives, sends, shutdown, close, deadlines, tasks) and a
// test completes each by hand, in whatever order it wants to try.
//
// Static files: the host records the one file operation in flight (statx,
// openat2, read); CompleteFileOp() carries it out for real on the test's
// directory (regular descriptors stand in for direct ones) or fails it, so a
// test can change or delete the file between any two steps.
//
// It also plays the kernel's part for buffers: the bytes of every send are
// copied when the send is submitted and compared with the memory again when
// it completes (and, for a zero-copy send, at its notification). A buffer
// released and reused while "the kernel" still reads it shows up as changed
// bytes: Harness::Check() fails.
#ifndef URING_HTTP_TEST_HTTP1_CONNECTION_HARNESS_H_
#define URING_HTTP_TEST_HTTP1_CONNECTION_HARNESS_H_

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/http1/connection.h"
#include "src/exchange/connection_env.h"
#include "src/http1/stream_state.h"
#include "src/io/arena.h"
#include "src/router/router.h"
#include "src/worker/worker_pool.h"

namespace uring_http::http1::testing {

class FakeHost : public conn::Transport, public exchange::ConnectionHost {
 public:
  struct SendCall {
    std::vector<iovec> iov;
    std::string bytes;  // what the iovecs held at submission
    bool zero_copy = false;
    bool dont_wait = false;  // MSG_DONTWAIT: a full socket is -EAGAIN
    bool close_linked = false;  // SendLastAndClose: the close runs when it ends
  };
  struct Done {
    uint32_t route_id;
    int status;
    std::string request_line;
    uint64_t body_bytes;
    std::string client;  // the client address the access log would show
  };

  void ArmRecv(uint32_t, bool bulk, bool once) override {
    ++recv_arms;
    recv_bulk = bulk;
    recv_once = once;
    if (once) ++recv_once_arms;
    if (recv_armed) violations.push_back("a second receive armed while one is live");
    recv_armed = true;
  }
  void CancelRecv(uint32_t) override {
    ++recv_cancels;
    if (!recv_armed) violations.push_back("cancel of a receive that is not armed");
    cancel_pending = true;
  }
  void Send(uint32_t, const iovec* iov, unsigned count, bool zero_copy, msghdr*,
            bool dont_wait) override {
    if (send.has_value()) violations.push_back("a second send while one is in flight");
    if (closed) violations.push_back("send after close");
    SendCall s;
    s.iov.assign(iov, iov + count);
    for (unsigned i = 0; i < count; ++i) {
      s.bytes.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    }
    s.zero_copy = zero_copy;
    s.dont_wait = dont_wait;
    if (zero_copy && zc_held.has_value()) {
      violations.push_back("a second zero-copy send before the first one's notification");
    }
    send = std::move(s);
    ++sends;
  }
  void SendLastAndClose(uint32_t slot, const iovec* iov, unsigned count, msghdr* msg) override {
    if (recv_armed) violations.push_back("a send linked to its close with a receive armed");
    // A splice to the socket or a wait for its room would outlive the
    // linked close (only a cancel ends them). A statx, open or read of a
    // file does not touch the socket: it completes by itself, and the slot
    // waits for it (Freeable).
    if (file_op.has_value() &&
        (file_op->kind == FileOp::kDrain || file_op->kind == FileOp::kPoll)) {
      violations.push_back("a send linked to its close with a socket file op");
    }
    if (shutdown_pending) violations.push_back("close before the shutdown completed");
    Send(slot, iov, count, /*zero_copy=*/false, msg, /*dont_wait=*/false);
    send->close_linked = true;
    if (closed) violations.push_back("a second close");
    closed = true;
  }
  void CancelSend(uint32_t) override {
    if (!send.has_value()) violations.push_back("cancel of a send that is not in flight");
    send_cancel_pending = true;
  }
  void ShutdownWrite(uint32_t) override {
    if (shutdown_pending || shutdown_done) violations.push_back("a second shutdown");
    shutdown_pending = true;
  }
  void Close(uint32_t, bool recv_armed_said, bool send_inflight_said) override {
    if (closed) violations.push_back("a second close");
    if (shutdown_pending) violations.push_back("close before the shutdown completed");
    if (recv_armed_said != recv_armed) violations.push_back("close: receive state disagrees");
    // A splice to the socket, or the poll for its room, is cancelled like a send.
    const bool socket_op = file_op.has_value() && (file_op->kind == FileOp::kDrain ||
                                                   file_op->kind == FileOp::kPoll);
    if (send_inflight_said != (send.has_value() || socket_op)) {
      violations.push_back("close: send state disagrees");
    }
    closed = true;
  }
  void SetDeadline(uint32_t, uint64_t tick) override { deadline = tick; }
  bool Dispatch(uint32_t, worker::TaskBuffer* task, const router::Route& route,
                int64_t) override {
    if (refuse_tasks) return false;
    task->ring.ring_fd = -1;  // the worker's messages go nowhere: the test delivers them
    tasks.push_back({task, &route});
    return true;
  }
  void StopTask(uint32_t, worker::TaskBuffer* task, http::StopReason why) override {
    stops.push_back({task, why});
    if (http::StopReasonOutranks(why, static_cast<http::StopReason>(task->stop.load()))) {
      task->stop.store(static_cast<uint8_t>(why));
    }
  }
  void StatFile(uint32_t, int dir_fd, const char* path, struct statx* out) override {
    NewFileOp({FileOp::kStat, dir_fd, path, out});
  }
  void OpenFile(uint32_t, int dir_fd, const char* path, bool check_only) override {
    FileOp op{FileOp::kOpen, dir_fd, path};
    op.check_only = check_only;
    NewFileOp(op);
  }
  void ReadFile(uint32_t, int file_index, char* buf, uint32_t len, uint64_t offset) override {
    FileOp op;
    op.kind = FileOp::kRead;
    op.file_index = file_index;
    op.buf = buf;
    op.len = len;
    op.offset = offset;
    NewFileOp(op);
  }
  bool AcquirePipe(Pipe* pipe) override {
    if (pipes_out >= max_pipes) return false;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    pipe->read_fd = fds[0];
    pipe->write_fd = fds[1];
    pipe->capacity = static_cast<uint32_t>(fcntl(fds[1], F_SETPIPE_SZ, pipe_bytes));
    ++pipes_out;
    return true;
  }
  void ReleasePipe(const Pipe& pipe, bool empty) override {
    --pipes_out;
    int queued = 0;
    ioctl(pipe.read_fd, FIONREAD, &queued);
    if (empty != (queued == 0)) violations.push_back("a pipe released with the wrong emptiness");
    ::close(pipe.read_fd);
    ::close(pipe.write_fd);
  }
  void SpliceToPipe(uint32_t, int file_index, uint64_t offset, int pipe_write,
                    uint32_t len) override {
    FileOp op;
    op.kind = FileOp::kFill;
    op.file_index = file_index;
    op.offset = offset;
    op.pipe_fd = pipe_write;
    op.len = len;
    NewFileOp(op);
  }
  void SpliceToSocket(uint32_t, int pipe_read, uint32_t len, bool) override {
    if (send.has_value()) violations.push_back("a splice to the socket while a send is in flight");
    FileOp op;
    op.kind = FileOp::kDrain;
    op.pipe_fd = pipe_read;
    op.len = len;
    NewFileOp(op);
  }
  void PollWritable(uint32_t) override {
    FileOp op;
    op.kind = FileOp::kPoll;
    NewFileOp(op);
  }
  void AfterBatch(uint32_t) override { batch_end_due = true; }
  void ExchangeDone(uint32_t, const Exchange& e) override {
    char client[http::ClientAddress::kMaxText] = "-";
    if (e.client != nullptr) e.client->Format(client);
    done.push_back({e.route_id, e.status, std::string(e.request_line), e.body_bytes, client});
  }

  void HandOff(uint32_t, conn::ProtocolId next, const conn::Handoff& h) override {
    if (send.has_value() || closed) violations.push_back("a handoff with the socket busy");
    HandoffCall call;
    call.next = next;
    call.bytes = std::string(h.bytes);
    call.recv_armed = h.recv_armed;
    call.peer_eof = h.peer_eof;
    if (h.upgrade != nullptr) {
      call.upgraded = true;
      call.upgrade_target = std::string(h.upgrade->target);
      call.upgrade_settings = std::string(h.upgrade->settings);
      call.upgrade_fields = h.upgrade->num_headers;
    }
    handoffs.push_back(std::move(call));
  }
  struct HandoffCall {
    conn::ProtocolId next = conn::ProtocolId::kHttp1;
    std::string bytes;  // copied during the call, as the next protocol must
    bool recv_armed = false;
    bool peer_eof = false;
    // An Upgrade: h2c request the next protocol is to answer (copied).
    bool upgraded = false;
    std::string upgrade_target;
    std::string upgrade_settings;
    size_t upgrade_fields = 0;
  };
  std::vector<HandoffCall> handoffs;

  // Checks that the memory behind `s` still holds what was submitted.
  bool Intact(const SendCall& s) const {
    std::string now;
    for (const iovec& v : s.iov) now.append(static_cast<const char*>(v.iov_base), v.iov_len);
    return now == s.bytes;
  }

  int recv_arms = 0;
  int recv_cancels = 0;
  bool recv_armed = false;
  bool send_cancel_pending = false;
  bool recv_once = false;     // the armed receive is single-shot: ends after one completion
  int recv_once_arms = 0;
  bool recv_bulk = false;
  bool cancel_pending = false;
  std::optional<SendCall> send;
  std::optional<SendCall> zc_held;
  int sends = 0;
  bool shutdown_pending = false;
  bool shutdown_done = false;
  bool closed = false;
  bool refuse_tasks = false;
  bool batch_end_due = false;
  uint64_t deadline = 0;
  struct Task {
    worker::TaskBuffer* buffer;
    const router::Route* route;
  };
  struct FileOp {
    enum Kind { kStat, kOpen, kRead, kFill, kDrain, kPoll } kind = kStat;
    int dir_fd = -1;
    std::string path;
    struct statx* stx = nullptr;
    int file_index = -1;
    char* buf = nullptr;
    uint32_t len = 0;
    uint64_t offset = 0;
    int pipe_fd = -1;
    bool check_only = false;
  };
  void NewFileOp(const FileOp& op) {
    if (file_op.has_value()) violations.push_back("a second file operation in flight");
    file_op = op;
    ++file_ops;
  }
  std::optional<FileOp> file_op;
  int file_ops = 0;
  int pipes_out = 0;
  int max_pipes = 4;
  int pipe_bytes = 64 * 1024;
  // The peer's socket takes at most this much per splice (then -EAGAIN).
  size_t socket_room = SIZE_MAX;
  std::deque<Task> tasks;
  // StopTask's calls, in order.
  std::vector<std::pair<worker::TaskBuffer*, http::StopReason>> stops;
  std::vector<Done> done;
  std::vector<std::string> violations;
};

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool chunked = false;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Parses the responses in `wire` (Content-Length, chunked, or a final
// close-delimited one); `heads` lists which requests were HEAD, in order.
inline std::vector<Reply> ParseReplies(std::string wire, const std::vector<bool>& heads = {},
                                       bool closed = false) {
  std::vector<Reply> out;
  size_t index = 0;
  while (!wire.empty()) {
    const size_t end = wire.find("\r\n\r\n");
    if (end == std::string::npos) break;
    Reply r;
    r.status = std::atoi(wire.c_str() + 9);
    size_t pos = wire.find("\r\n") + 2;
    while (pos < end) {
      const size_t eol = wire.find("\r\n", pos);
      const std::string line = wire.substr(pos, eol - pos);
      const size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value[0] == ' ') value.erase(0, 1);
      r.headers[name] = value;
      pos = eol + 2;
    }
    wire.erase(0, end + 4);
    if (r.status == 100) {
      out.push_back(r);
      continue;
    }
    const bool head = index < heads.size() && heads[index];
    ++index;
    if (head || r.status == 204 || r.status == 304) {
      out.push_back(r);
      continue;
    }
    if (r.Header("transfer-encoding") == "chunked") {
      r.chunked = true;
      for (;;) {
        const size_t eol = wire.find("\r\n");
        if (eol == std::string::npos) return out;
        const size_t n = std::strtoull(wire.c_str(), nullptr, 16);
        if (n == 0) {
          const size_t trailer_end = wire.find("\r\n\r\n");
          if (trailer_end == std::string::npos) return out;
          wire.erase(0, trailer_end + 4);
          break;
        }
        if (wire.size() < eol + 2 + n + 2) return out;
        r.body += wire.substr(eol + 2, n);
        wire.erase(0, eol + 2 + n + 2);
      }
    } else if (!r.Header("content-length").empty()) {
      const size_t n = std::stoull(r.Header("content-length"));
      if (wire.size() < n) return out;
      r.body = wire.substr(0, n);
      wire.erase(0, n);
    } else if (closed) {
      r.body = wire;
      wire.clear();
    } else {
      return out;
    }
    out.push_back(r);
  }
  return out;
}

// Closes the stand-in descriptors and keeps count, so that a test can
// check that every file opened is closed exactly once.
class FdCloser final : public files::FileCloser {
 public:
  void CloseFile(int fd) override {
    if (open.erase(fd) != 1) errors.push_back("close of a descriptor not open: " + std::to_string(fd));
    ::close(fd);
  }
  std::set<int> open;
  std::vector<std::string> errors;
};

// Carries out a statx, openat2 or read the way the ring would (`force_res`:
// fails it instead; a descriptor it opens joins closer.open) and delivers
// its completion to `conn`. False for the other kinds (splices and polls,
// which touch the socket: the caller's to play).
inline bool CompleteFileAccess(const FakeHost::FileOp& op, Connection& conn, FdCloser& closer,
                               std::optional<int> force_res,
                               std::vector<std::string>* violations) {
  int res = 0;
  switch (op.kind) {
    case FakeHost::FileOp::kStat:
      res = force_res ? *force_res
            : ::statx(op.dir_fd, op.path.c_str(), 0,
                      STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_CTIME |
                          STATX_INO,
                      op.stx) == 0 ? 0 : -errno;
      conn.OnFileStat(res);
      return true;
    case FakeHost::FileOp::kOpen: {
      if (force_res) {
        res = *force_res;
      } else {
        open_how how{};
        how.flags = op.check_only ? O_PATH : O_RDONLY | O_NOCTTY;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        const long fd = syscall(SYS_openat2, op.dir_fd, op.path.c_str(), &how, sizeof(how));
        res = fd >= 0 ? static_cast<int>(fd) : -errno;
        if (res >= 0) closer.open.insert(res);
      }
      conn.OnFileOpen(res);
      return true;
    }
    case FakeHost::FileOp::kRead: {
      if (closer.open.count(op.file_index) == 0) {
        violations->push_back("read of a descriptor that is not open");
      }
      const ssize_t n = ::pread(op.file_index, op.buf, op.len, static_cast<off_t>(op.offset));
      res = force_res ? *force_res : n >= 0 ? static_cast<int>(n) : -errno;
      conn.OnFileRead(res);
      return true;
    }
    default:
      return false;
  }
}

class Harness {
  // Declared first, destroyed last: the connection gives its memory back
  // to this pool when it goes.
  router::Router router_;
  FdCloser closer_;
  io::Arena file_arena_;
  io::ChunkPool file_buffers_;
  std::optional<files::OpenFileCache> file_cache_;
  exchange::ConnectionConfig config_;
  io::Arena arena_;
  io::ChunkPool chunks_;
  std::unique_ptr<http::Header[]> headers_;
  std::unique_ptr<StreamStatePool> streams_;
  exchange::ConnectionEnv env_;

 public:
  explicit Harness(router::Router router, exchange::ConnectionConfig config = {}, size_t chunks = 256)
      : router_(std::move(router)), config_(config) {
    auto arena = io::Arena::Create(chunks * 4096 + 8192);
    arena_ = *std::move(arena);
    (void)chunks_.Init(arena_, 4096, chunks);
    headers_ = std::make_unique<http::Header[]>(std::max<size_t>(config_.limits.max_headers, 1));
    streams_ = std::make_unique<StreamStatePool>(config_.chunked, 4);
    env_.streams = streams_.get();
    env_.config = &config_;
    env_.router = &router_;
    env_.chunks = &chunks_;
    env_.transport = &host;
    env_.host = &host;
    env_.stats = &stats;
    env_.headers = headers_.get();
    env_.headers_capacity = std::max<size_t>(config_.limits.max_headers, 1);
    env_.unmatched_route = static_cast<uint32_t>(router_.size());
    env_.access_log = true;
    env_.now_tick = 1000;
    env_.send_zc = config_.send_zc_min_bytes > 0;
  }
  ~Harness() {
    JoinTaskThread();
    // Tasks still queued were never run: give their memory back.
    while (!host.tasks.empty()) RunTask();
  }

  void Open() { conn.Open(&env_, 0); }

  // Static files: `buffers` file buffers of `buffer_size` bytes, and the
  // open-file cache (max_entries 0: none).
  void EnableFiles(files::OpenFileCacheLimits limits = {}, size_t buffers = 8,
                   size_t buffer_size = 4096) {
    file_arena_ = *io::Arena::Create(buffers * buffer_size + 4096);
    (void)file_buffers_.Init(file_arena_, buffer_size, buffers);
    file_cache_.emplace(&closer_, limits);
    env_.file_cache = &*file_cache_;
    env_.file_closer = &closer_;
    env_.file_buffers = &file_buffers_;
  }
  files::OpenFileCache* file_cache() { return file_cache_ ? &*file_cache_ : nullptr; }
  const FdCloser& closer() const { return closer_; }
  size_t file_buffers_available() const { return file_buffers_.available(); }

  // Carries out the file operation in flight the way the ring would (or
  // fails it with `force_res`) and delivers its completion. False if none.
  bool CompleteFileOp(std::optional<int> force_res = std::nullopt) {
    if (!host.file_op.has_value()) return false;
    FakeHost::FileOp op = std::move(*host.file_op);
    host.file_op.reset();
    if (CompleteFileAccess(op, conn, closer_, force_res, &host.violations)) return true;
    int res = 0;
    switch (op.kind) {
      case FakeHost::FileOp::kFill: {
        loff_t off = static_cast<loff_t>(op.offset);
        const ssize_t n = ::splice(op.file_index, &off, op.pipe_fd, nullptr, op.len, 0);
        res = force_res ? *force_res : n >= 0 ? static_cast<int>(n) : -errno;
        conn.OnFileSplice(res);
        break;
      }
      case FakeHost::FileOp::kDrain: {
        // The socket is the wire: what the pipe gives, up to the room.
        const size_t room = std::min<size_t>(op.len, host.socket_room);
        if (force_res) {
          res = *force_res;
        } else if (room == 0) {
          res = -EAGAIN;
        } else {
          std::string bytes(room, '\0');
          const ssize_t n = ::read(op.pipe_fd, bytes.data(), room);
          res = n >= 0 ? static_cast<int>(n) : -errno;
          if (n > 0) wire.append(bytes.data(), static_cast<size_t>(n));
        }
        conn.OnFileSplice(res);
        break;
      }
      case FakeHost::FileOp::kPoll:
        conn.OnWritable(force_res ? *force_res : POLLOUT);
        break;
      default:
        break;
    }
    return true;
  }
  // File operations and sends until neither is pending.
  void Drive() {
    for (int i = 0; i < 1000000 && (host.file_op.has_value() || host.send.has_value() ||
                                    host.zc_held.has_value());
         ++i) {
      CompleteFileOp();
      CompleteSend();
      Notify();
    }
  }

  // The kernel delivers `bytes` to the armed receive (in pieces of at most
  // `piece` bytes, like provided buffers of that size). Returns how many it
  // took: all, unless a single-shot receive ended and the connection armed
  // no other (the rest stays in the socket).
  size_t Recv(std::string_view bytes, size_t piece = 2048) {
    const size_t total = bytes.size();
    bool after_once = false;
    while (!bytes.empty()) {
      if (!host.recv_armed) {
        if (after_once) break;
        host.violations.push_back("bytes delivered with no receive armed");
      }
      after_once = host.recv_once;
      const size_t n = std::min(piece, bytes.size());
      std::string copy(bytes.substr(0, n));  // the provided buffer
      // A single-shot receive completes once, without F_MORE: its end
      // comes with the bytes.
      const bool once = host.recv_once;
      if (once) {
        host.recv_armed = false;
        host.cancel_pending = false;
      }
      conn.OnRecv(copy.data(), copy.size(), /*ended=*/once);
      std::fill(copy.begin(), copy.end(), '#');  // recycled: anything kept must have been copied
      bytes.remove_prefix(n);
    }
    EndBatch();
    return total - bytes.size();
  }
  // The loop's batch of completions is over.
  void EndBatch() {
    if (!host.batch_end_due) return;
    host.batch_end_due = false;
    conn.OnBatchEnd();
  }
  // The multishot receive's final completion (a cancel lands, EOF, error).
  void RecvEnd(int res) {
    host.recv_armed = false;
    host.cancel_pending = false;
    conn.OnRecvEnd(res);
  }
  // Lands a pending cancel, if any.
  void LandCancel() {
    if (host.cancel_pending) RecvEnd(-ECANCELED);
  }

  // Completes the send in flight with up to `n` bytes. A zero-copy send
  // keeps its bytes until Notify().
  size_t CompleteSend(size_t n = SIZE_MAX) {
    if (!host.send.has_value()) return 0;
    // A send linked to its close is MSG_WAITALL: the kernel takes the rest
    // itself, and it completes whole or not yet.
    if (host.send->close_linked && n < host.send->bytes.size()) return 0;
    if (host.send->close_linked) host.send_cancel_pending = false;
    FakeHost::SendCall s = std::move(*host.send);
    host.send.reset();
    if (!host.Intact(s)) host.violations.push_back("send buffer changed before completion");
    n = std::min(n, s.bytes.size());
    wire += s.bytes.substr(0, n);
    const bool zc = s.zero_copy;
    if (zc) host.zc_held = s;
    conn.OnSend(static_cast<int>(n), zc);
    return n;
  }
  void FailSend(int error) {
    if (!host.send.has_value()) return;
    host.send.reset();
    host.send_cancel_pending = false;
    conn.OnSend(error, false);
  }
  void Notify() {
    if (!host.zc_held.has_value()) return;
    if (!host.Intact(*host.zc_held)) {
      host.violations.push_back("zero-copy buffer changed before its notification");
    }
    host.zc_held.reset();
    conn.OnSendNotification(false);
  }
  // Completes sends (and notifications) until nothing is in flight.
  void Flush() {
    for (int i = 0; i < 100000 && (host.send.has_value() || host.zc_held.has_value()); ++i) {
      CompleteSend();
      Notify();
    }
  }
  void ShutdownDone() {
    if (!host.shutdown_pending) return;
    host.shutdown_pending = false;
    host.shutdown_done = true;
    conn.OnShutdownDone();
  }
  // The close completes; a live receive ends with -ECANCELED, a send too.
  void CloseDone() {
    // A close linked to a send runs only once the send has ended.
    if (host.send.has_value() && host.send->close_linked) {
      if (host.send_cancel_pending) {
        FailSend(-ECANCELED);
      } else {
        CompleteSend();
      }
    }
    host.send_cancel_pending = false;
    conn.OnClosed();
    if (host.send.has_value()) FailSend(-ECANCELED);
    if (host.recv_armed) RecvEnd(-ECANCELED);
  }

  // Runs the oldest dispatched task on this thread, then its completion.
  void RunTask() {
    if (host.tasks.empty()) return;
    FakeHost::Task t = host.tasks.front();
    host.tasks.pop_front();
    worker::SlowTask task;
    task.route = t.route;
    task.buffer = t.buffer;
    worker::WorkerPool::RunTask(task, config_.limits);
    conn.OnTaskDone(0);
  }

  // Runs the oldest task on a thread of its own (it may block on a pipe);
  // Pump() plays the ring meanwhile.
  void StartTaskThread() {
    FakeHost::Task t = host.tasks.front();
    host.tasks.pop_front();
    task_done_ = false;
    worker_ = std::thread([this, t] {
      worker::SlowTask task;
      task.route = t.route;
      task.buffer = t.buffer;
      worker::WorkerPool::RunTask(task, config_.limits);
      task_done_.store(true, std::memory_order_release);
    });
  }
  bool TaskThreadDone() const { return task_done_.load(std::memory_order_acquire); }
  // One round of the ring: stream progress, sends; the task's completion
  // once its thread is done. Returns whether the task finished.
  bool Pump(size_t send_bytes = SIZE_MAX) {
    if (worker_.joinable() && TaskThreadDone()) {
      worker_.join();
      conn.OnTaskDone(0);
      return true;
    }
    conn.OnStreamNotify(0);
    CompleteSend(send_bytes);
    Notify();
    return false;
  }
  // Pump() until the task finishes, for at most `limit` of wall time (a
  // count of rounds would assume how fast the worker thread gets a CPU).
  bool PumpUntilDone(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 1000; ++i) {
        if (Pump()) return true;
      }
      std::this_thread::yield();
    }
    return false;
  }
  void JoinTaskThread() {
    if (worker_.joinable()) worker_.join();
  }

  // Time passes; the deadline fires if it came due.
  void Tick(uint64_t ticks) {
    env_.now_tick += ticks;
    if (host.deadline != 0 && env_.now_tick >= host.deadline) {
      host.deadline = 0;
      conn.OnDeadline();
    }
  }
  uint64_t now() const { return env_.now_tick; }
  void SetDraining() {
    env_.draining = true;
    conn.OnDrain();
  }

  std::vector<Reply> Replies(const std::vector<bool>& heads = {}) const {
    return ParseReplies(wire, heads, host.closed || host.shutdown_pending || host.shutdown_done);
  }
  size_t chunks_available() const { return chunks_.available(); }
  exchange::ConnectionEnv& env() { return env_; }

  FakeHost host;
  exchange::ConnectionStats stats;
  std::string wire;  // what the peer received

 private:
  std::thread worker_;
  std::atomic<bool> task_done_{false};

 public:
  Connection conn;  // last: destroyed first
};

}  // namespace uring_http::http1::testing

#endif  // URING_HTTP_TEST_HTTP1_CONNECTION_HARNESS_H_
