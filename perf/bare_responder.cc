/*
 * bare_responder: the "speed of light" reference for perf/compare.
 *
 * A single-threaded io_uring HTTP responder that does the least work a server
 * on this kernel can do: one listening socket, one multishot accept into the
 * fixed-file table, one multishot receive per connection on a provided-buffer
 * ring, and for every receive completion one send of a fixed static
 * "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n". It does not parse requests
 * (one receive = one response, which holds for clients that wait for each
 * answer, as wrk and ab do), and closes a connection on EOF or error.
 *
 * With --close it answers "Connection: close" and shuts the connection down
 * (send linked to shutdown(SHUT_WR)) after each response, which is what ab
 * without -k (HTTP/1.0, one connection per request) waits for.
 *
 * With --delay-ms=N every answer waits N ms on a ring timeout first: the
 * reference for the slow load (a server that takes exactly N ms per request
 * with no threads, queue or wake-ups), so perf/compare can show how much of
 * the ideal 100 / N ms a load tool reaches on this machine at all.
 *
 * With --delay-ms=N --pool-threads=T the N ms are spent on a thread of a pool
 * instead, doing per request exactly the minimum our server's worker model
 * does for a SLOW request and nothing more: the ring thread pushes the
 * connection's index onto a bounded queue and posts one semaphore token (a
 * futex wake when a thread sleeps); the woken thread pops it, sleeps N ms
 * (standing in for a blocking handler) and posts one IORING_OP_MSG_RING
 * completion naming the connection back to the ring (one syscall); the ring
 * thread then sends the answer. What our server costs above this on the slow
 * path is parsing, routing, the handler's response and bookkeeping.
 *
 * With --pipelined it counts the request heads ("\r\n\r\n") in what it
 * receives, across receives, and answers each: the reference for pipelining
 * clients (h2load -m 16), which send several requests before reading.
 *
 * Whatever our real server costs above this program per request is the price
 * of parsing, routing, the worker pool and bookkeeping.
 *
 * Run:
 *   bazel build -c opt //perf:bare_responder
 *   bazel-bin/perf/bare_responder 8090            # keep-alive
 *   bazel-bin/perf/bare_responder 8091 --close    # connection per request
 *   bazel-bin/perf/bare_responder 8092 --close --delay-ms=30   # slow reference
 *   bazel-bin/perf/bare_responder 8093 --close --delay-ms=30 --pool-threads=300
 *   bazel-bin/perf/bare_responder 8094 --pipelined   # keep-alive, pipelined requests
 *   wrk -t1 -c100 -d10s http://127.0.0.1:8090/test/fast
 *   ab -n 20000 -c 10 http://127.0.0.1:8091/test/fast
 * PORT 0 lets the kernel pick a port. It prints "ready: ... listening on port N"
 * when it listens and exits 0 on SIGINT/SIGTERM (after the pool's threads have
 * finished the sleeps they are in and been joined).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// Constants newer than the 6.1-level headers, in one place.
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_FEAT_CQE_SKIP
#define IORING_FEAT_CQE_SKIP (1U << 11)
#endif
// MSG_RING without a source ring: io_uring_register(-1, this, &sqe, 1), 6.13+.
#ifndef IORING_REGISTER_SEND_MSG_RING
#define IORING_REGISTER_SEND_MSG_RING 31
#endif

namespace {

constexpr char kKeepAliveResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
constexpr char kCloseResponse[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
// The pool's queue was full: the request is refused at once, as our server
// answers 503 when its worker queue is full. Never seen with ab -c 100.
constexpr char kUnavailableResponse[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

constexpr unsigned kSqEntries = 4096;
// Multishot accept and receive post CQEs without SQEs: size the CQ for a few
// thousand connections each completing at once, so it never overflows.
constexpr unsigned kCqEntries = 32768;
// Provided-buffer ring: a power of two. Buffers are handed back at the end of
// every completion batch, so this only has to cover one batch.
constexpr unsigned kBufferCount = 4096;
constexpr unsigned kBufferSize = 2048;
constexpr unsigned short kBufferGroup = 0;
constexpr unsigned kMaxFixedFiles = 32768;
// --pipelined: up to this many answers go out in one send.
constexpr unsigned kMaxAnswersPerSend = 64;
// The pool's queue: more than one entry per connection the fixed-file table
// can hold, so a client that waits for each answer never finds it full.
constexpr size_t kPoolQueueCapacity = 65536;
constexpr int kMaxPoolThreads = 4096;

enum Op : uint64_t {
  kAccept = 1, kRecv = 2, kSend = 3, kClose = 4, kSignal = 5, kDelay = 6,
  kPoolDone = 7,  // a pool thread's MSG_RING: the connection's delay is over
  kShutdown = 8,  // the shutdown(SHUT_WR) after an answer that closes: it is done
};

uint64_t Encode(Op op, uint32_t index) { return (uint64_t{op} << 32) | index; }
Op OpOf(uint64_t user_data) { return static_cast<Op>(user_data >> 32); }
uint32_t IndexOf(uint64_t user_data) { return static_cast<uint32_t>(user_data); }

[[noreturn]] void Die(const char* what, int err) {
  fprintf(stderr, "bare_responder: %s: %s\n", what, strerror(err));
  exit(1);
}

// A bounded queue of connection indexes with one producer (the ring thread)
// and many consumers (the pool's threads): Vyukov's bounded MPMC queue with
// the producer's compare-and-swap left out, since only one thread pushes.
// Each cell's sequence number says whose turn it is: pos when it is free for
// the push at position pos, pos + 1 once that push has stored its value, and
// pos + capacity once it has been popped (free for the next lap).
class IndexQueue {
 public:
  explicit IndexQueue(size_t capacity) : cells_(capacity), mask_(capacity - 1) {
    for (size_t i = 0; i < capacity; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }

  // The ring thread only. False when the queue is full.
  bool TryPush(uint32_t value) {
    Cell& cell = cells_[tail_ & mask_];
    if (cell.sequence.load(std::memory_order_acquire) != tail_) return false;  // not popped yet
    cell.value = value;
    cell.sequence.store(tail_ + 1, std::memory_order_release);
    ++tail_;
    return true;
  }

  // Any thread. False when the queue is empty.
  bool TryPop(uint32_t* value) {
    size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const size_t sequence = cell.sequence.load(std::memory_order_acquire);
      const intptr_t lag = static_cast<intptr_t>(sequence) - static_cast<intptr_t>(pos + 1);
      if (lag == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *value = cell.value;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }  // another thread took it: pos now holds the new head
      } else if (lag < 0) {
        return false;  // the cell at the head has not been pushed yet
      } else {
        pos = head_.load(std::memory_order_relaxed);  // our head was stale
      }
    }
  }

 private:
  struct Cell {  // not padded to a cache line, like our server's queue cells
    std::atomic<size_t> sequence{0};
    uint32_t value = 0;
  };
  std::vector<Cell> cells_;
  const size_t mask_;  // capacity - 1; the capacity is a power of two
  size_t tail_ = 0;    // the ring thread's alone
  alignas(64) std::atomic<size_t> head_{0};
};

// Whether this kernel sends MSG_RING without a source ring (6.13+): one
// message into a throw-away ring, as our server probes it.
bool RinglessMsgRingWorks() {
  io_uring probe;
  if (io_uring_queue_init(2, &probe, 0) < 0) return false;
  io_uring_sqe sqe{};
  io_uring_prep_msg_ring(&sqe, probe.ring_fd, 7, 0x5eed, 0);
  bool ok = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1) >= 0;
  io_uring_cqe* cqe = nullptr;
  ok = ok && io_uring_peek_cqe(&probe, &cqe) == 0 && cqe->user_data == 0x5eed && cqe->res == 7;
  io_uring_queue_exit(&probe);
  return ok;
}

// --pool-threads: the worker-pool reference for the slow path. Each request
// costs what our server's worker model costs per SLOW request and no more:
// a queue push and a semaphore post on the ring thread; a futex wake, a pop,
// the sleep and one MSG_RING on a pool thread. Our server sends MSG_RING the
// same way (ringless where the kernel can, else a private ring per thread).
class SleepPool {
 public:
  SleepPool(int threads, int delay_ms, int target_ring_fd)
      : threads_(threads), target_ring_fd_(target_ring_fd), queue_(kPoolQueueCapacity) {
    delay_.tv_sec = delay_ms / 1000;
    delay_.tv_nsec = static_cast<long>(delay_ms % 1000) * 1000000;
    ringless_ = RinglessMsgRingWorks();
    sem_init(&tokens_, /*pshared=*/0, 0);
  }
  ~SleepPool() { sem_destroy(&tokens_); }

  void Start() {
    running_.reserve(static_cast<size_t>(threads_));
    for (int i = 0; i < threads_; ++i) running_.emplace_back([this] { ThreadMain(); });
  }

  const char* msg_ring_kind() const { return ringless_ ? "ringless" : "private ring per thread"; }

  // The ring thread: hands the request of connection `index` to a thread.
  // False when the queue is full (the caller refuses the request).
  bool Submit(uint32_t index) {
    if (!queue_.TryPush(index)) return false;
    sem_post(&tokens_);  // one token per task: wakes at most one sleeping thread
    return true;
  }

  // After the ring thread has stopped submitting: one extra token per thread,
  // so each wakes, finds the queue empty and leaves (tasks already queued run
  // first; a thread in its sleep finishes it), then joins them.
  void Stop() {
    stopping_.store(true, std::memory_order_release);
    for (int i = 0; i < threads_; ++i) sem_post(&tokens_);
    for (std::thread& thread : running_) thread.join();
    running_.clear();
  }

 private:
  void ThreadMain() {
    pthread_setname_np(pthread_self(), "bare-worker");
    io_uring private_ring{};  // only without ringless MSG_RING, made on first use
    bool have_private_ring = false;
    for (;;) {
      while (sem_wait(&tokens_) != 0) {
        // EINTR: sleep again.
      }
      uint32_t index;
      // A token follows its push, so the pop finds it; only Stop's tokens
      // outnumber the tasks (and a thread woken by one may take a task that
      // a task's token woke another thread for): leave then.
      bool got;
      while (!(got = queue_.TryPop(&index)) && !stopping_.load(std::memory_order_acquire)) {
        std::this_thread::yield();
      }
      if (!got) break;
      Sleep();
      PostDone(index, &private_ring, &have_private_ring);
    }
    if (have_private_ring) io_uring_queue_exit(&private_ring);
  }

  // The stand-in for a blocking handler: the thread sleeps, the CPU is free.
  void Sleep() {
    if (delay_.tv_sec == 0 && delay_.tv_nsec == 0) return;
    timespec left = delay_;
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &left, &left) == EINTR) {
    }
  }

  // One MSG_RING to the responder's ring: a CQE whose user_data names the
  // connection. A full target CQ is retried (the answer must not be lost)
  // unless the ring thread has stopped reaping.
  void PostDone(uint32_t index, io_uring* private_ring, bool* have_private_ring) {
    const uint64_t user_data = Encode(kPoolDone, index);
    for (;;) {
      int ret;
      if (ringless_) {
        io_uring_sqe sqe{};
        io_uring_prep_msg_ring(&sqe, target_ring_fd_, 0, user_data, 0);
        ret = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1) < 0
                  ? -errno : 0;
      } else {
        if (!*have_private_ring) {
          ret = io_uring_queue_init(2, private_ring, 0);
          if (ret < 0) Die("io_uring_queue_init (pool thread)", -ret);
          *have_private_ring = true;
        }
        io_uring_sqe* sqe = io_uring_get_sqe(private_ring);
        io_uring_prep_msg_ring(sqe, target_ring_fd_, 0, user_data, 0);
        // MSG_RING completes inline: the one io_uring_enter returns with its CQE.
        ret = io_uring_submit_and_wait(private_ring, 1);
        io_uring_cqe* cqe = nullptr;
        if (ret >= 0) ret = io_uring_peek_cqe(private_ring, &cqe);
        if (ret >= 0) {
          ret = cqe->res;
          io_uring_cqe_seen(private_ring, cqe);
        }
      }
      if (ret >= 0) return;
      if ((ret == -EOVERFLOW || ret == -EAGAIN || ret == -EINTR) &&
          !stopping_.load(std::memory_order_acquire)) {
        usleep(50);
        continue;
      }
      if (!stopping_.load(std::memory_order_acquire)) {
        fprintf(stderr, "bare_responder: msg_ring: %s\n", strerror(-ret));
      }
      return;
    }
  }

  const int threads_;
  const int target_ring_fd_;
  timespec delay_{};
  bool ringless_ = false;
  IndexQueue queue_;
  sem_t tokens_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> running_;
};

struct Options {
  bool close_after_response = false;  // --close
  int delay_ms = -1;                  // --delay-ms (-1: not given)
  int pool_threads = 0;               // --pool-threads (0: the delay is a ring timeout)
  bool pipelined = false;             // --pipelined
};

class Responder {
 public:
  Responder(int listen_fd, int signal_fd, const Options& options)
      : listen_fd_(listen_fd),
        signal_fd_(signal_fd),
        close_(options.close_after_response),
        pipelined_(options.pipelined),
        delay_ms_(options.delay_ms),
        pool_threads_(options.pool_threads) {
    delay_.tv_sec = delay_ms_ > 0 ? delay_ms_ / 1000 : 0;
    delay_.tv_nsec = delay_ms_ > 0 ? static_cast<long long>(delay_ms_ % 1000) * 1000000 : 0;
    delayed_ = delay_ms_ > 0 && pool_threads_ == 0;
    // An answer that is not sent in the batch its request arrived in (delayed,
    // or followed by a shutdown) is owed until it is done: see Slot.
    track_answers_ = close_ || delay_ms_ >= 0;
    if (track_answers_) slots_.assign(kMaxFixedFiles, Slot{});
    if (pipelined_) {
      // Every count of answers up to kMaxAnswersPerSend is a prefix of this.
      for (unsigned i = 0; i < kMaxAnswersPerSend; ++i) answers_ += kKeepAliveResponse;
      heads_matched_.assign(kMaxFixedFiles, 0);
    }
  }

  void SetUp() {
    io_uring_params params{};
    // CQSIZE: see kCqEntries. SINGLE_ISSUER: only this thread submits, which
    // lets the kernel skip its submission locking. DEFER_TASKRUN: completion
    // work runs when we call io_uring_enter to wait, in one batch, instead of
    // interrupting us whenever a packet arrives.
    params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    params.cq_entries = kCqEntries;
    int ret = io_uring_queue_init_params(kSqEntries, &ring_, &params);
    if (ret == -EINVAL) {
      // Kernels before 6.1 lack DEFER_TASKRUN; still run, and say so.
      fprintf(stderr, "bare_responder: no DEFER_TASKRUN/SINGLE_ISSUER, running without\n");
      params = io_uring_params{};
      params.flags = IORING_SETUP_CQSIZE;
      params.cq_entries = kCqEntries;
      ret = io_uring_queue_init_params(kSqEntries, &ring_, &params);
    }
    if (ret < 0) Die("io_uring_queue_init_params", -ret);
    // Without CQE_SKIP every successful send posts a CQE we would just drop.
    skip_success_ = (params.features & IORING_FEAT_CQE_SKIP) != 0;

    // The registered ring fd saves an fdget/fdput on every io_uring_enter.
    io_uring_register_ring_fd(&ring_);  // optional: fine if it fails

    // Direct descriptors: accepted sockets live only in the ring's file table,
    // so no per-request fdget and no file-table lock. The table size may not
    // exceed RLIMIT_NOFILE: raise the soft limit to the hard one first.
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    unsigned files = limit.rlim_cur < kMaxFixedFiles ? static_cast<unsigned>(limit.rlim_cur)
                                                     : kMaxFixedFiles;
    ret = io_uring_register_files_sparse(&ring_, files);
    if (ret < 0) Die("io_uring_register_files_sparse", -ret);

    SetUpBufferRing();

    if (pool_threads_ > 0) {
      // The pool's threads post to this ring by its real descriptor (the
      // registered index means nothing to another thread).
      pool_ = std::make_unique<SleepPool>(pool_threads_, delay_ms_, ring_.ring_fd);
      pool_->Start();
    }
  }

  void Run(int port) {
    ArmAccept();
    ArmSignalRead();
    std::string pool;
    if (pool_ != nullptr) {
      pool = " (worker pool: " + std::to_string(pool_threads_) + " threads, " +
             std::to_string(delay_ms_) + " ms each, MSG_RING " + pool_->msg_ring_kind() + ")";
    }
    printf("ready: bare_responder listening on port %d%s%s%s%s\n", port,
           close_ ? " (close after each response)" : "", delayed_ ? " (delayed answers)" : "",
           pool.c_str(), pipelined_ ? " (pipelined requests counted)" : "");
    fflush(stdout);
    while (!stop_) {
      int ret = io_uring_submit_and_wait(&ring_, 1);
      if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
        Die("io_uring_submit_and_wait", -ret);
      }
      unsigned head;
      unsigned seen = 0;
      io_uring_cqe* cqe;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        Handle(cqe);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
      // Hand this batch's buffers back before re-arming anything that ran dry.
      if (returned_ > 0) {
        io_uring_buf_ring_advance(buf_ring_, returned_);
        returned_ = 0;
      }
      for (uint32_t index : rearm_) ArmRecv(index);
      rearm_.clear();
    }
    if (pool_ != nullptr) pool_->Stop();
  }

 private:
  void SetUpBufferRing() {
    // liburing 2.3 has no io_uring_setup_buf_ring: map page-aligned memory
    // for the ring entries ourselves and register it.
    size_t ring_bytes = kBufferCount * sizeof(io_uring_buf);
    void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) Die("mmap buffer ring", errno);
    buf_ring_ = static_cast<io_uring_buf_ring*>(mem);

    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(buf_ring_);
    reg.ring_entries = kBufferCount;
    reg.bgid = kBufferGroup;
    int ret = io_uring_register_buf_ring(&ring_, &reg, 0);
    if (ret < 0) Die("io_uring_register_buf_ring (kernel >= 5.19 needed)", -ret);

    buffers_ = static_cast<char*>(
        mmap(nullptr, size_t{kBufferCount} * kBufferSize, PROT_READ | PROT_WRITE,
             MAP_ANONYMOUS | MAP_PRIVATE, -1, 0));
    if (buffers_ == MAP_FAILED) Die("mmap buffers", errno);
    io_uring_buf_ring_init(buf_ring_);
    for (unsigned i = 0; i < kBufferCount; ++i) {
      io_uring_buf_ring_add(buf_ring_, buffers_ + size_t{i} * kBufferSize, kBufferSize,
                            static_cast<unsigned short>(i), io_uring_buf_ring_mask(kBufferCount),
                            static_cast<int>(i));
    }
    io_uring_buf_ring_advance(buf_ring_, kBufferCount);
  }

  io_uring_sqe* Sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // SQ full: push what we have and try again
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  // SIGINT/SIGTERM are blocked and read from a signalfd through the ring, so a
  // signal is just another completion: no race between a check of a flag and
  // the wait in io_uring_enter (liburing re-enters after an interrupted wait
  // that had also submitted, which would miss a flag set by a handler).
  void ArmSignalRead() {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_read(sqe, signal_fd_, &signal_info_, sizeof(signal_info_), 0);
    io_uring_sqe_set_data64(sqe, Encode(kSignal, 0));
  }

  void ArmAccept() {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_multishot_accept_direct(sqe, listen_fd_, nullptr, nullptr, 0);
    io_uring_sqe_set_data64(sqe, Encode(kAccept, 0));
  }

  void ArmRecv(uint32_t index) {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_recv_multishot(sqe, static_cast<int>(index), nullptr, 0, 0);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
    sqe->buf_group = kBufferGroup;
    io_uring_sqe_set_data64(sqe, Encode(kRecv, index));
  }

  void Respond(uint32_t index, bool unavailable = false) {
    const unsigned skip = skip_success_ ? IOSQE_CQE_SKIP_SUCCESS : 0;
    io_uring_sqe* sqe = Sqe();
    if (!close_ && !unavailable) {
      io_uring_prep_send(sqe, static_cast<int>(index), kKeepAliveResponse,
                         sizeof(kKeepAliveResponse) - 1, MSG_NOSIGNAL);
      sqe->flags |= IOSQE_FIXED_FILE | skip;
      io_uring_sqe_set_data64(sqe, Encode(kSend, index));
      return;
    }
    // Connection per request: send, then shutdown(SHUT_WR) so the client sees
    // FIN; its close then ends our receive with EOF and we close the slot. The
    // shutdown always completes (-ECANCELED if the send failed) and says so:
    // until then the answer is owed (see Slot).
    const char* response = unavailable ? kUnavailableResponse : kCloseResponse;
    const unsigned length =
        unavailable ? sizeof(kUnavailableResponse) - 1 : sizeof(kCloseResponse) - 1;
    io_uring_prep_send(sqe, static_cast<int>(index), response, length, MSG_NOSIGNAL);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK | skip;
    io_uring_sqe_set_data64(sqe, Encode(kSend, index));
    sqe = Sqe();
    io_uring_prep_shutdown(sqe, static_cast<int>(index), SHUT_WR);
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, Encode(kShutdown, index));
  }

  // An owed answer is done: sent (a kept-alive delayed one, whose send was
  // issued before any close of the slot can be), or shut down after. The
  // slot closes now if its peer has gone meanwhile.
  void Answered(uint32_t index) {
    Slot& slot = slots_[index];
    if (--slot.owed == 0 && slot.peer_gone) Close(index);
  }

  // --pipelined: `count` answers, at most kMaxAnswersPerSend per send. The
  // sends are not linked: their bytes are the same, so their order is not.
  void RespondMany(uint32_t index, unsigned count) {
    const unsigned skip = skip_success_ ? IOSQE_CQE_SKIP_SUCCESS : 0;
    while (count > 0) {
      const unsigned n = count < kMaxAnswersPerSend ? count : kMaxAnswersPerSend;
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_send(sqe, static_cast<int>(index), answers_.data(),
                         n * (sizeof(kKeepAliveResponse) - 1), MSG_NOSIGNAL);
      sqe->flags |= IOSQE_FIXED_FILE | skip;
      io_uring_sqe_set_data64(sqe, Encode(kSend, index));
      count -= n;
    }
  }

  // --pipelined: the request heads that end in these bytes. A head's
  // "\r\n\r\n" may be split over two receives: how much of it the last
  // receive ended with is kept per connection. Bodies are not looked for
  // (the loads send GETs).
  unsigned CountHeads(uint32_t index, const char* data, size_t size) {
    static constexpr char kEnd[] = "\r\n\r\n";
    unsigned heads = 0;
    uint8_t matched = heads_matched_[index];
    for (size_t i = 0; i < size; ++i) {
      if (data[i] == kEnd[matched]) {
        if (++matched == 4) {
          ++heads;
          matched = 0;
        }
      } else {
        matched = data[i] == '\r' ? 1 : 0;  // a '\r' may start the next end
      }
    }
    heads_matched_[index] = matched;
    return heads;
  }

  // One relative timeout per request. The kernel copies the timespec when
  // it takes the SQE, so every request can point at the same constant.
  void Delay(uint32_t index) {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_timeout(sqe, &delay_, 0, 0);
    io_uring_sqe_set_data64(sqe, Encode(kDelay, index));
  }

  void Close(uint32_t index) {
    // The receive has ended (no F_MORE) and no answer is owed, so nothing
    // else holds this slot's socket except sends still in flight, which keep
    // their own reference.
    if (track_answers_) slots_[index] = Slot{};
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_close_direct(sqe, index);
    sqe->flags |= skip_success_ ? IOSQE_CQE_SKIP_SUCCESS : 0;
    io_uring_sqe_set_data64(sqe, Encode(kClose, index));
  }

  void Handle(io_uring_cqe* cqe) {
    const uint64_t data = io_uring_cqe_get_data64(cqe);
    const bool more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    switch (OpOf(data)) {
      case kAccept:
        if (cqe->res >= 0) {
          if (pipelined_) heads_matched_[static_cast<uint32_t>(cqe->res)] = 0;
          ArmRecv(static_cast<uint32_t>(cqe->res));
        } else if (cqe->res != -ENFILE) {
          fprintf(stderr, "bare_responder: accept: %s\n", strerror(-cqe->res));
        }
        // A multishot ends on any CQE without F_MORE: re-arm then, only then.
        if (!more) ArmAccept();
        return;
      case kRecv: {
        const uint32_t index = IndexOf(data);
        unsigned heads = 1;  // one receive is one request, unless --pipelined
        if (cqe->flags & IORING_CQE_F_BUFFER) {
          // Only --pipelined looks at the bytes; the buffer goes straight back.
          const unsigned short bid = static_cast<unsigned short>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
          char* buffer = buffers_ + size_t{bid} * kBufferSize;
          if (pipelined_ && cqe->res > 0) {
            heads = CountHeads(index, buffer, static_cast<size_t>(cqe->res));
          }
          io_uring_buf_ring_add(buf_ring_, buffer, kBufferSize, bid,
                                io_uring_buf_ring_mask(kBufferCount), returned_);
          ++returned_;
        }
        if (cqe->res > 0) {
          if (track_answers_) ++slots_[index].owed;
          if (pipelined_) {
            RespondMany(index, heads);
          } else if (pool_ != nullptr) {
            if (!pool_->Submit(index)) Respond(index, /*unavailable=*/true);
          } else if (delayed_) {
            Delay(index);
          } else {
            Respond(index);
          }
          if (!more) rearm_.push_back(index);  // e.g. the CQ was full
        } else if (cqe->res == -ENOBUFS) {
          // Ring ran dry: not fatal. Re-arm once this batch's buffers are back.
          if (!more) rearm_.push_back(index);
        } else if (!more) {
          // EOF (0) or a real error. With an answer still owed the slot stays
          // (a half-closed peer may still read it): closed once it is done.
          if (track_answers_ && slots_[index].owed > 0) {
            slots_[index].peer_gone = true;
          } else {
            Close(index);
          }
        }
        return;
      }
      case kSignal:
        if (cqe->res == sizeof(signal_info_)) {
          stop_ = true;  // SIGINT or SIGTERM: finish this batch and exit 0
        } else {
          ArmSignalRead();  // interrupted read: try again
        }
        return;
      case kDelay:     // -ETIME: the delay has passed (the peer may be gone:
      case kPoolDone:  // then the send fails, and the slot closes once answered)
        Respond(IndexOf(data));
        if (!close_) Answered(IndexOf(data));  // kept alive: no shutdown to wait for
        return;
      case kShutdown:  // whatever its result: nothing of the answer is left in flight
        Answered(IndexOf(data));
        return;
      case kSend:   // only failures arrive here (CQE_SKIP_SUCCESS); the
      case kClose:  // receive sees the same error and closes.
        return;
    }
  }

  io_uring ring_{};
  io_uring_buf_ring* buf_ring_ = nullptr;
  char* buffers_ = nullptr;
  int returned_ = 0;
  std::vector<uint32_t> rearm_;  // receives to re-arm after this batch
  signalfd_siginfo signal_info_{};
  bool stop_ = false;
  const int listen_fd_;
  const int signal_fd_;
  const bool close_;
  const bool pipelined_;
  const int delay_ms_;
  const int pool_threads_;
  bool skip_success_ = false;
  __kernel_timespec delay_{};
  bool delayed_ = false;            // a ring timeout before each answer
  // A connection slot whose answers may outlive the batch of their request.
  // Its fixed-file index is not closed, hence not handed to a new connection
  // by the multishot accept, while an answer is owed: else a late answer, or
  // the shutdown linked to one, would reach that new connection (seen with
  // curl, which closes as soon as it has read an empty 200, before our
  // shutdown had run). The index names the connection, without a generation.
  struct Slot {
    uint32_t owed = 0;       // requests received whose answer is not done
    bool peer_gone = false;  // the receive has ended (EOF or error)
  };
  bool track_answers_ = false;  // --close or --delay-ms
  std::vector<Slot> slots_;
  std::unique_ptr<SleepPool> pool_;  // --pool-threads: the delay on a pool thread
  std::string answers_;              // --pipelined: kMaxAnswersPerSend answers in a row
  std::vector<uint8_t> heads_matched_;  // --pipelined: per connection, see CountHeads
};

int Listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Die("socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) Die("SO_REUSEPORT", errno);
  // Accepted sockets inherit TCP_NODELAY from the listener: no per-connection
  // setsockopt, which direct descriptors could not do anyway.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) Die("bind", errno);
  if (listen(fd, 4096) < 0) Die("listen", errno);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) Die("getsockname", errno);
  return ntohs(addr.sin_port);
}

// A whole decimal number in [lo, hi] after `prefix`, or -1.
long FlagValue(const char* arg, size_t prefix, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long value = strtol(arg + prefix, &end, 10);
  if (end == arg + prefix || *end != '\0' || errno != 0 || value < lo || value > hi) return -1;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool usage = argc < 2;
  const char* why = "";
  for (int i = 2; i < argc && !usage; ++i) {
    if (strcmp(argv[i], "--close") == 0) {
      options.close_after_response = true;
    } else if (strcmp(argv[i], "--pipelined") == 0) {
      options.pipelined = true;
    } else if (strncmp(argv[i], "--delay-ms=", 11) == 0) {
      options.delay_ms = static_cast<int>(FlagValue(argv[i], 11, 0, 60000));
      usage = options.delay_ms < 0;
    } else if (strncmp(argv[i], "--pool-threads=", 15) == 0) {
      options.pool_threads = static_cast<int>(FlagValue(argv[i], 15, 1, kMaxPoolThreads));
      usage = options.pool_threads < 0;
    } else {
      usage = true;
    }
  }
  // The pool only ever spends the delay; pipelining only makes sense on a
  // kept-alive connection answered at once.
  if (!usage && options.pool_threads > 0 && options.delay_ms < 0) {
    usage = true;
    why = "--pool-threads needs --delay-ms\n";
  }
  if (!usage && options.pipelined && (options.close_after_response || options.delay_ms >= 0)) {
    usage = true;
    why = "--pipelined goes with neither --close nor --delay-ms\n";
  }
  if (usage) {
    fprintf(stderr,
            "%susage: %s PORT [--close] [--delay-ms=0..60000 [--pool-threads=1..%d]] [--pipelined]\n",
            why, argv[0], kMaxPoolThreads);
    return 2;
  }
  const int port = atoi(argv[1]);  // 0: the kernel picks one (the ready line says which)
  if (port < 0 || port > 65535 || (port == 0 && strcmp(argv[1], "0") != 0)) {
    fprintf(stderr, "bare_responder: bad port '%s'\n", argv[1]);
    return 2;
  }
  sigset_t stop_signals;  // read through the ring: see Responder::ArmSignalRead
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (signal_fd < 0) Die("signalfd", errno);
  signal(SIGPIPE, SIG_IGN);

  const int listen_fd = Listen(port);
  Responder responder(listen_fd, signal_fd, options);
  responder.SetUp();
  responder.Run(BoundPort(listen_fd));
  return 0;
}
