// What it costs a worker to hand a result to a ring thread with
// IORING_OP_MSG_RING (src/io/msg_ring_sender.h), and how many such results
// one ring can absorb.
//
// Every benchmark runs twice, once per way of sending:
//   <Ringless>       io::MsgRingSender, the server's own sender. On Linux
//                    6.13+ it sends without any source ring
//                    (IORING_REGISTER_SEND_MSG_RING); on an older kernel it
//                    falls back to a private ring, and the label says so.
//   <PerThreadRing>  written out here: a tiny SINGLE_ISSUER ring per sender
//                    thread, io_uring_prep_msg_ring + io_uring_submit_and_wait
//                    + reap our own CQE. This is what MsgRingSender does
//                    before 6.13, so the pair shows what the ringless path
//                    saves.
//
// The target ring is an io::Ring (SINGLE_ISSUER|DEFER_TASKRUN where the kernel
// has them), created on the benchmark thread, which owns it. With
// DEFER_TASKRUN the kernel queues each message as task work on the target and
// posts the CQE when the owner next enters the kernel, so a sender never sees
// -EOVERFLOW from such a target; the throughput benchmark still bounds the
// messages in flight to the CQ size, so that the CQ never overflows and the
// kernel's task-work list stays short.
//
// BM_MsgRingSendCost         one thread sends a batch to its own ring, then
//                            drains it: the syscall cost of one message with
//                            no other thread and no wakeup.
// BM_MsgRingRoundTrip        ping-pong with one worker thread. One iteration:
//                            the benchmark thread bumps an atomic `go`; the
//                            worker sees it, publishes a result word (release
//                            store, as a real worker publishes its response),
//                            posts one MSG_RING; the benchmark thread, asleep
//                            in io_uring_submit_and_wait(ring, 1), wakes, reaps
//                            the CQE and checks the result word (acquire).
//                            /worker_sleeps:0  the worker spins on `go` (a
//                              bounded spin, then yields): the time is mostly
//                              the worker-to-ring half, MSG_RING plus the
//                              owner's wakeup.
//                            /worker_sleeps:1  the worker sleeps on `go` with
//                              std::atomic::wait (a futex), like a worker of
//                              the pool on its semaphore: a full round trip
//                              with two wakeups.
// BM_MsgRingThroughput       /threads:N sender threads blast messages at one
//                            ring; the owner drains whatever has arrived in
//                            batches (io_uring_for_each_cqe + io_uring_cq_advance)
//                            and enters the kernel only when the CQ is empty.
//                            One iteration is one message absorbed, so
//                            items_per_second is results per second per ring
//                            (wall-clock time). Counters: overflow_retries (sum
//                            of the senders' -EOVERFLOW retries; expected 0)
//                            and cqes_per_drain (average drain batch).
//
// Run: bazel run //perf:msg_ring_benchmark
// The machine has 2 cores: with 2 and 4 senders plus the owner the threads
// share them, and the numbers say how the ring copes with that, not how it
// scales on a bigger machine.
#include <benchmark/benchmark.h>
#include <liburing.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/io/msg_ring_sender.h"
#include "src/io/ring.h"

namespace uring_http::io {
namespace {

// Crash on what cannot happen, saying why: a lost message would otherwise
// leave the owner asleep in io_uring_enter forever.
[[noreturn]] void Die(const char* what, int err) {
  std::fprintf(stderr, "msg_ring_benchmark: %s: %s\n", what, std::strerror(err));
  std::abort();
}

// ---------------------------------------------------------------------------
// The two senders. Both: one instance per thread, constructed on it, Init()
// before the timed part, Send() retries a full target CQ like MsgRingSender.

class Ringless {
 public:
  static std::string Label() {
    return MsgRingSender::RinglessSupported() ? "ringless (IORING_REGISTER_SEND_MSG_RING)"
                                              : "kernel < 6.13: MsgRingSender fell back to a "
                                                "private ring";
  }
  void Init() { MsgRingSender::RinglessSupported(); }  // the probe runs once, here
  void Send(int target_ring_fd, uint64_t user_data) {
    if (sender_.Send(target_ring_fd, user_data, 0) != MsgRingSender::Result::kSent) {
      Die("MsgRingSender::Send gave up (target gone or failed)", EIO);
    }
  }
  uint64_t overflow_retries() const { return sender_.overflow_retries(); }

 private:
  MsgRingSender sender_;
};

class PerThreadRing {
 public:
  static std::string Label() { return "private 4-entry ring per sender thread"; }

  // Creates the ring on the calling thread (SINGLE_ISSUER binds it there).
  void Init() {
    RingOptions options;
    options.sq_entries = 4;
    options.cq_entries = 8;
    auto ring = Ring::Create(options);
    if (!ring.ok()) {
      std::fprintf(stderr, "msg_ring_benchmark: %s\n", ring.status().ToString().c_str());
      std::abort();
    }
    ring_ = *std::move(ring);
  }

  void Send(int target_ring_fd, uint64_t user_data) {
    for (;;) {
      int ret = SendOnce(target_ring_fd, user_data);
      if (ret >= 0) return;
      if (ret == -EOVERFLOW || ret == -EAGAIN || ret == -EINTR) {
        // Same policy as MsgRingSender: wait for the target to drain.
        ++overflow_retries_;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      Die("MSG_RING from a private ring", -ret);
    }
  }
  uint64_t overflow_retries() const { return overflow_retries_; }

 private:
  int SendOnce(int target_ring_fd, uint64_t user_data) {
    io_uring* ring = ring_->raw();
    io_uring_sqe* sqe = ring_->GetSqe();
    io_uring_prep_msg_ring(sqe, target_ring_fd, 0, user_data, 0);
    sqe->user_data = 0;
    int ret = io_uring_submit_and_wait(ring, 1);
    if (ret < 0) return ret;
    io_uring_cqe* cqe = nullptr;
    ret = io_uring_wait_cqe(ring, &cqe);  // already there: only a peek
    if (ret < 0) return ret;
    int result = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    return result;
  }

  std::unique_ptr<Ring> ring_;
  uint64_t overflow_retries_ = 0;
};

// ---------------------------------------------------------------------------
// The target ring, owned by the benchmark thread.

std::unique_ptr<Ring> CreateTargetRing(benchmark::State& state, unsigned cq_entries) {
  RingOptions options;
  options.sq_entries = 8;  // the owner submits nothing; MSG_RING needs no SQE here
  options.cq_entries = cq_entries;
  auto ring = Ring::Create(options);
  if (!ring.ok()) {
    state.SkipWithError(std::string(ring.status().message()).c_str());
    return nullptr;
  }
  return *std::move(ring);
}

// Blocks until the owner's CQ has a CQE and returns it (not yet seen).
io_uring_cqe* WaitOne(io_uring* ring) {
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(ring, &cqe) != 0) {
    // Nothing to submit: this only waits, and runs the deferred task work
    // that posts the messages' CQEs.
    int ret = io_uring_submit_and_wait(ring, 1);
    if (ret < 0 && ret != -EINTR) Die("io_uring_submit_and_wait", -ret);
  }
  return cqe;
}

// ---------------------------------------------------------------------------

template <typename Sender>
void BM_MsgRingSendCost(benchmark::State& state) {
  constexpr unsigned kBatch = 64;
  std::unique_ptr<Ring> target = CreateTargetRing(state, 2 * kBatch);
  if (target == nullptr) return;
  io_uring* ring = target->raw();
  Sender sender;
  sender.Init();
  state.SetLabel(Sender::Label());
  while (state.KeepRunningBatch(kBatch)) {
    for (unsigned i = 0; i < kBatch; ++i) sender.Send(target->fd(), i);
    unsigned got = 0;
    while (got < kBatch) {
      WaitOne(ring);
      unsigned head;
      io_uring_cqe* cqe;
      unsigned n = 0;
      io_uring_for_each_cqe(ring, head, cqe) { ++n; }
      io_uring_cq_advance(ring, n);
      got += n;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename Sender>
void BM_MsgRingRoundTrip(benchmark::State& state) {
  const bool worker_sleeps = state.range(0) != 0;
  std::unique_ptr<Ring> target = CreateTargetRing(state, 64);
  if (target == nullptr) return;
  io_uring* ring = target->raw();
  const int target_fd = target->fd();

  // Everything the two threads share is atomic: the kernel orders the
  // MSG_RING against our reap, but neither C++ nor TSan can see that.
  std::atomic<uint32_t> go{0};      // bumped by the owner: "send result N"
  std::atomic<uint32_t> result{0};  // the worker's "response", published before sending
  std::atomic<bool> stop{false};

  std::thread worker([&, target_fd, worker_sleeps] {
    Sender sender;
    sender.Init();
    uint32_t last = 0;
    for (;;) {
      if (worker_sleeps) {
        go.wait(last, std::memory_order_acquire);
      } else {
        for (int spins = 0; go.load(std::memory_order_acquire) == last; ++spins) {
          if (spins >= 1000) std::this_thread::yield();  // the owner may need this core
        }
      }
      last = go.load(std::memory_order_acquire);
      if (stop.load(std::memory_order_acquire)) break;
      result.store(last, std::memory_order_release);
      sender.Send(target_fd, last);
    }
  });

  uint32_t seq = 0;
  bool failed = false;
  auto round_trip = [&] {
    ++seq;
    go.store(seq, std::memory_order_release);
    if (worker_sleeps) go.notify_one();
    io_uring_cqe* cqe = WaitOne(ring);
    failed |= cqe->user_data != seq || result.load(std::memory_order_acquire) != seq;
    io_uring_cqe_seen(ring, cqe);
  };
  round_trip();  // warm-up, untimed: the worker's sender is set up and running
  for (auto _ : state) round_trip();

  stop.store(true, std::memory_order_release);
  go.store(seq + 1, std::memory_order_release);
  go.notify_one();
  worker.join();
  if (failed) state.SkipWithError("a CQE carried the wrong sequence number");
  state.SetLabel(Sender::Label());
  state.SetItemsProcessed(state.iterations());
}

// One cache line per sender, written only by the owner.
struct alignas(64) DrainedCount {
  std::atomic<uint64_t> value{0};
};

template <typename Sender>
void BM_MsgRingThroughput(benchmark::State& state) {
  constexpr unsigned kCqEntries = 4096;
  constexpr int kMaxSenders = 4;
  const int senders = static_cast<int>(state.range(0));
  if (senders < 1 || senders > kMaxSenders) {
    state.SkipWithError("1 to 4 senders");
    return;
  }
  std::unique_ptr<Ring> target = CreateTargetRing(state, kCqEntries);
  if (target == nullptr) return;
  io_uring* ring = target->raw();
  const int target_fd = target->fd();

  // Flow control: a sender may be at most `window` messages ahead of what the
  // owner has drained from it, so all in flight together fit the CQ.
  const uint64_t window = kCqEntries / senders;
  std::array<DrainedCount, kMaxSenders> drained;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> overflow_retries{0};

  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&, s, target_fd, window] {
      Sender sender;
      sender.Init();
      uint64_t sent = 0;
      // The sender's index rides in the top byte of user_data.
      const uint64_t tag = static_cast<uint64_t>(s) << 56;
      while (!stop.load(std::memory_order_relaxed)) {
        if (sent - drained[s].value.load(std::memory_order_acquire) >= window) {
          std::this_thread::yield();  // let the owner (or another sender) run
          continue;
        }
        sender.Send(target_fd, tag | sent);
        ++sent;
      }
      overflow_retries.fetch_add(sender.overflow_retries(), std::memory_order_relaxed);
    });
  }

  constexpr unsigned kBatch = 256;  // messages per KeepRunningBatch step
  std::array<uint64_t, kMaxSenders> mine{};  // the owner's copy of `drained`
  uint64_t drains = 0;
  uint64_t total = 0;
  bool bad_tag = false;
  while (state.KeepRunningBatch(kBatch)) {
    unsigned remaining = kBatch;
    while (remaining > 0) {
      WaitOne(ring);
      unsigned head;
      io_uring_cqe* cqe;
      unsigned n = 0;
      io_uring_for_each_cqe(ring, head, cqe) {
        const uint64_t s = cqe->user_data >> 56;
        if (s < static_cast<uint64_t>(senders)) {
          ++mine[s];
        } else {
          bad_tag = true;
        }
        if (++n == remaining) break;
      }
      io_uring_cq_advance(ring, n);
      remaining -= n;
      ++drains;
      for (int s = 0; s < senders; ++s) {
        drained[s].value.store(mine[s], std::memory_order_release);
      }
    }
    total += kBatch;
  }

  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();
  if (bad_tag) state.SkipWithError("a CQE carried an unknown sender index");
  state.SetLabel(Sender::Label());
  state.SetItemsProcessed(state.iterations());
  state.counters["overflow_retries"] =
      static_cast<double>(overflow_retries.load(std::memory_order_relaxed));
  state.counters["cqes_per_drain"] =
      drains == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(drains);
}

BENCHMARK_TEMPLATE(BM_MsgRingSendCost, Ringless);
BENCHMARK_TEMPLATE(BM_MsgRingSendCost, PerThreadRing);

// Real time: the benchmark thread sleeps in the kernel for most of a round
// trip, so its CPU time says little.
BENCHMARK_TEMPLATE(BM_MsgRingRoundTrip, Ringless)
    ->ArgName("worker_sleeps")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_MsgRingRoundTrip, PerThreadRing)
    ->ArgName("worker_sleeps")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime();

BENCHMARK_TEMPLATE(BM_MsgRingThroughput, Ringless)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_MsgRingThroughput, PerThreadRing)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

}  // namespace
}  // namespace uring_http::io

BENCHMARK_MAIN();
