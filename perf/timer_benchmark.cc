// The cost of re-arming a connection's timeout once per keep-alive request:
// one hashed TimerWheel per ring (src/serving/timer_wheel.h, what the server
// does) against one io_uring IORING_OP_TIMEOUT per connection.
//
// The wheel (parameters as in src/serving/event_loop.cc: 100 ms ticks, 1024
// buckets, a 60 s idle timeout = 601 ticks):
// BM_WheelExtend/timers:N
//     TimerWheel::Extend(slot, later deadline) on a live timer: the keep-alive
//     hot path, a single store (every deadline is later than the one filed,
//     so no call falls back to Schedule()).
// BM_WheelSchedule/timers:N
//     TimerWheel::Schedule(slot, now + 601): unlink from one bucket, link into
//     another (the path when the timer kind changes, e.g. idle -> header).
// BM_WheelAdvance/timers:N
//     One tick of TimerWheel::Advance() with N live timers spread evenly over
//     the 601-tick horizon, so each tick finds ~N/601 due and re-files them
//     (what a keep-alive timer that was Extend()ed costs when its old bucket
//     comes due). Time is per tick; `per_timer_tick` is that time divided by
//     N, the amortized cost each live timer adds to every tick.
// All wheel benchmarks touch connection slots in a pseudo-random order.
//
// Per-connection timeout SQEs, on a real ring (io::Ring::Create, i.e.
// SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them), with N timeouts of
// one hour outstanding (they never fire):
// BM_SqeRemoveAdd/timers:N/random:R
//     Per re-arm an IORING_OP_TIMEOUT_REMOVE of the old timeout plus a new
//     IORING_OP_TIMEOUT: two SQEs and two CQEs (the remove's result and the
//     old timeout's -ECANCELED).
// BM_SqeUpdate/timers:N/random:R
//     Per re-arm one io_uring_prep_timeout_update(): one SQE, one CQE.
// Re-arms are queued kBatch (64) at a time, then submitted and reaped with one
// io_uring_submit_and_wait() (more if the CQEs are not all there yet). Time is
// per re-arm and includes the syscall; `cqes_per_rearm` and `enters_per_rearm`
// say what was reaped and how many io_uring_enter calls it took. The kernel
// finds the timeout to remove or update by walking the ring's timeout list from
// its oldest entry, and a re-armed timeout goes to the back: with random:0
// (round-robin, always the least recently re-armed slot) the match is at the
// front; with random:1 (slots in random order, closer to real keep-alive
// traffic) the walk is ~N/2 entries long.
//
// Run: bazel run //perf:timer_benchmark
// The rings are small (128 SQEs, 256 CQEs). If io_uring_setup fails with
// ENOMEM (ring memory is counted against RLIMIT_MEMLOCK, which the Bazel
// sandbox keeps low and shares among the tests running at the time), the
// benchmark retries and tries smaller rings (fewer re-arms per submit: see
// `batch`); if no ring fits at all, the SQE benchmarks are skipped with the
// error rather than failing the run.
#include <benchmark/benchmark.h>
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/io/ring.h"
#include "src/serving/timer_wheel.h"

namespace uring_http {
namespace {

using serving::TimerWheel;

constexpr uint32_t kBuckets = 1024;    // kTimerBuckets in event_loop.cc
constexpr uint64_t kIdleTicks = 601;   // 60 s idle timeout in 100 ms ticks, +1
constexpr size_t kSequence = 1 << 16;  // pre-drawn random slots

uint64_t SplitMix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Slots in [0, n) in the order they are re-armed, drawn before timing starts
// so the timed loops do not pay for the generator: random, kSequence of them;
// or round-robin 0, 1, ..., n-1 (exactly n, so that wrapping around keeps the
// order).
std::vector<uint32_t> SlotSequence(uint32_t n, bool random) {
  std::vector<uint32_t> seq(random ? kSequence : n);
  uint64_t seed = 42;
  for (size_t i = 0; i < seq.size(); ++i) {
    seq[i] = random ? static_cast<uint32_t>(SplitMix(seed) % n) : static_cast<uint32_t>(i);
  }
  return seq;
}

// N live timers, deadlines spread evenly (in random slot order) over the
// next kIdleTicks ticks.
void FillWheel(TimerWheel& wheel, uint32_t n) {
  wheel.Init(n, kBuckets, /*now_tick=*/0);
  uint64_t seed = 7;
  for (uint32_t slot = 0; slot < n; ++slot) {
    wheel.Schedule(slot, 1 + SplitMix(seed) % kIdleTicks);
  }
}

// ---------------------------------------------------------------------------
// The wheel.

void BM_WheelExtend(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  TimerWheel wheel;
  FillWheel(wheel, n);
  const std::vector<uint32_t> seq = SlotSequence(n, /*random=*/true);
  size_t pos = 0;
  uint64_t i = 0;
  for (auto _ : state) {
    const uint32_t slot = seq[pos];
    if (++pos == seq.size()) pos = 0;
    // "now" moves on by a tick every 4096 requests; never earlier than the
    // deadline already set (at most kIdleTicks), so every call stays on the
    // fast path.
    wheel.Extend(slot, kIdleTicks + 1 + (i >> 12));
    ++i;
  }
  benchmark::ClobberMemory();
  if (wheel.size() != n) state.SkipWithError("timer count changed");
  state.SetItemsProcessed(state.iterations());
}

void BM_WheelSchedule(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  TimerWheel wheel;
  FillWheel(wheel, n);
  const std::vector<uint32_t> seq = SlotSequence(n, /*random=*/true);
  size_t pos = 0;
  uint64_t i = 0;
  for (auto _ : state) {
    const uint32_t slot = seq[pos];
    if (++pos == seq.size()) pos = 0;
    wheel.Schedule(slot, kIdleTicks + 1 + (i >> 12));
    ++i;
  }
  if (wheel.size() != n) state.SkipWithError("timer count changed");
  state.SetItemsProcessed(state.iterations());
}

void BM_WheelAdvance(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  TimerWheel wheel;
  FillWheel(wheel, n);
  uint64_t now = 0;
  uint64_t due = 0;
  for (auto _ : state) {
    ++now;
    wheel.Advance(now, [&](uint32_t slot) {
      // Re-filed a full timeout ahead: the same unlink + link that a timer
      // pushed back by Extend() gets inside Advance().
      wheel.Schedule(slot, now + kIdleTicks);
      ++due;
    });
  }
  if (wheel.size() != n) state.SkipWithError("timer count changed");
  state.SetItemsProcessed(state.iterations());
  state.counters["due_per_tick"] =
      benchmark::Counter(static_cast<double>(due), benchmark::Counter::kAvgIterations);
  // Seconds per (live timer x tick): the tick's cost spread over all timers.
  state.counters["per_timer_tick"] = benchmark::Counter(
      static_cast<double>(n),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------
// One io_uring timeout per connection.

constexpr unsigned kBatch = 64;  // re-arms per submit

// user_data: timeouts carry slot | generation << 32; the remove and update
// SQEs carry a tag with the top bit set.
constexpr uint64_t kControlTag = uint64_t{1} << 63;
uint64_t TimeoutData(uint32_t slot, uint32_t gen) { return slot | (uint64_t{gen} << 32); }

// Ring::Create with a small ring, CQ twice the SQ. ENOMEM means the ring
// memory did not fit under RLIMIT_MEMLOCK (in the Bazel sandbox the limit is a
// few MB, shared by every test running at the time; a ring just closed is
// freed asynchronously). Then: one quick retry at the size asked for, then
// halving sizes down to `min_sq_entries`, and the whole descent again after a
// short sleep, twice. The size that worked is remembered, so later runs start
// there instead of paying for the descent again. Gives up (and the benchmark
// reports the error and is skipped) after about 150 ms.
unsigned g_sq_hint = 0;

absl::StatusOr<std::unique_ptr<io::Ring>> CreateSmallRing(unsigned sq_entries,
                                                          unsigned min_sq_entries) {
  auto create = [](unsigned sq) {
    io::RingOptions options;
    options.sq_entries = sq;
    options.cq_entries = 2 * sq;
    return io::Ring::Create(options);
  };
  if (g_sq_hint != 0 && g_sq_hint < sq_entries) sq_entries = g_sq_hint;
  absl::Status last;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 << round));
    for (unsigned sq = sq_entries; sq >= min_sq_entries; sq /= 2) {
      for (int attempt = 0; attempt < (sq == sq_entries ? 2 : 1); ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto ring = create(sq);
        if (ring.ok()) {
          g_sq_hint = sq;
          return ring;
        }
        last = ring.status();
        if (!absl::IsResourceExhausted(last)) return last;
      }
    }
  }
  return last;
}

struct SqeCounts {
  uint64_t cqes = 0;
  uint64_t enters = 0;
  uint64_t unexpected = 0;  // a CQE result that should not happen
  int first_unexpected = 0;
};

void CheckCqe(const io_uring_cqe* cqe, SqeCounts& counts) {
  bool ok;
  if (cqe->user_data & kControlTag) {
    ok = cqe->res == 0;  // remove or update found its timeout
  } else {
    ok = cqe->res == -ECANCELED;  // an old timeout taken out by a remove
  }
  if (!ok && counts.unexpected++ == 0) counts.first_unexpected = cqe->res;
}

// Submits what is queued and reaps `want` CQEs.
void SubmitAndReap(io_uring* ring, unsigned want, SqeCounts& counts) {
  unsigned got = 0;
  for (;;) {
    unsigned head;
    io_uring_cqe* cqe;
    unsigned n = 0;
    io_uring_for_each_cqe(ring, head, cqe) {
      CheckCqe(cqe, counts);
      ++n;
    }
    io_uring_cq_advance(ring, n);
    got += n;
    // Also the first pass when nothing is queued yet: submits the batch.
    if (got >= want && io_uring_sq_ready(ring) == 0) break;
    const int ret = io_uring_submit_and_wait(ring, got >= want ? 0 : want - got);
    ++counts.enters;
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      if (counts.unexpected++ == 0) counts.first_unexpected = ret;
      return;
    }
  }
  counts.cqes += got;
}

enum class Rearm { kRemoveAdd, kUpdate };

template <Rearm kind>
void BM_SqeRearm(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const bool random = state.range(1) != 0;
  auto created = CreateSmallRing(/*sq_entries=*/2 * kBatch, /*min_sq_entries=*/16);
  if (!created.ok()) {
    state.SkipWithError(std::string(created.status().message()).c_str());
    return;
  }
  std::unique_ptr<io::Ring> owner = *std::move(created);
  io_uring* ring = owner->raw();
  // Two SQEs per re-arm for remove+add; a smaller ring (after ENOMEM) takes
  // smaller batches.
  const unsigned sqes_per_rearm = kind == Rearm::kRemoveAdd ? 2 : 1;
  const unsigned batch = std::min(kBatch, owner->features().sq_entries / sqes_per_rearm);
  const unsigned cqes_per_rearm = kind == Rearm::kRemoveAdd ? 2 : 1;

  __kernel_timespec far{};
  far.tv_sec = 3600;  // an hour: never fires while the benchmark runs

  // N live timeouts.
  std::vector<uint32_t> gen(n, 0);
  for (uint32_t slot = 0; slot < n; ++slot) {
    io_uring_sqe* sqe = owner->GetSqe();  // submits on its own when the SQ is full
    io_uring_prep_timeout(sqe, &far, 0, 0);
    io_uring_sqe_set_data64(sqe, TimeoutData(slot, 0));
  }
  SqeCounts setup;
  SubmitAndReap(ring, 0, setup);
  if (setup.unexpected != 0) {
    state.SkipWithError(
        (std::string("arming the timeouts: ") + strerror(-setup.first_unexpected)).c_str());
    return;
  }

  const std::vector<uint32_t> seq = SlotSequence(n, random);
  size_t pos = 0;
  SqeCounts counts;
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(batch))) {
    for (unsigned b = 0; b < batch; ++b) {
      const uint32_t slot = seq[pos];
      if (++pos == seq.size()) pos = 0;
      if constexpr (kind == Rearm::kRemoveAdd) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        io_uring_prep_timeout_remove(sqe, TimeoutData(slot, gen[slot]), 0);
        io_uring_sqe_set_data64(sqe, kControlTag | slot);
        ++gen[slot];
        sqe = io_uring_get_sqe(ring);
        io_uring_prep_timeout(sqe, &far, 0, 0);
        io_uring_sqe_set_data64(sqe, TimeoutData(slot, gen[slot]));
      } else {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        io_uring_prep_timeout_update(sqe, &far, TimeoutData(slot, gen[slot]), 0);
        io_uring_sqe_set_data64(sqe, kControlTag | slot);
      }
    }
    SubmitAndReap(ring, batch * cqes_per_rearm, counts);
  }
  if (counts.unexpected != 0) {
    state.SkipWithError(
        (std::string("unexpected CQE result: ") + strerror(-counts.first_unexpected)).c_str());
    return;
  }
  state.SetItemsProcessed(state.iterations());
  const double rearms = static_cast<double>(state.iterations());
  state.counters["cqes_per_rearm"] = static_cast<double>(counts.cqes) / rearms;
  state.counters["enters_per_rearm"] = static_cast<double>(counts.enters) / rearms;
  state.counters["batch"] = batch;
  // The N timeouts are cancelled when the ring is torn down.
}

void BM_SqeRemoveAdd(benchmark::State& state) { BM_SqeRearm<Rearm::kRemoveAdd>(state); }
void BM_SqeUpdate(benchmark::State& state) { BM_SqeRearm<Rearm::kUpdate>(state); }

BENCHMARK(BM_WheelExtend)->ArgName("timers")->Arg(10'000)->Arg(100'000);
BENCHMARK(BM_WheelSchedule)->ArgName("timers")->Arg(10'000)->Arg(100'000);
BENCHMARK(BM_WheelAdvance)->ArgName("timers")->Arg(10'000)->Arg(100'000);
BENCHMARK(BM_SqeRemoveAdd)
    ->ArgNames({"timers", "random"})
    ->ArgsProduct({{1'000, 10'000}, {0, 1}});
BENCHMARK(BM_SqeUpdate)->ArgNames({"timers", "random"})->ArgsProduct({{1'000, 10'000}, {0, 1}});

}  // namespace
}  // namespace uring_http
// main() comes from @system//:benchmark_main.
