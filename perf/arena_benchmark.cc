// The per-thread memory of the io layer (src/io/arena.h, src/io/buffer_ring.h)
// against what it replaces.
//
// BM_ChunkPool / BM_Malloc / BM_OperatorNew  /burst:N
//     Take N chunks of 4096 bytes (the size of a staging or response chunk),
//     then give them all back, LIFO. One iteration is one acquire plus one
//     release. burst:1 is the steady state of a lightly loaded thread (the
//     pool hands out the chunk it just got back; glibc splits and re-merges
//     the top chunk, since 4096 bytes is above its tcache limit); burst:64 is
//     64 requests in flight at once. With glibc's defaults burst:64 frees
//     256 KiB at the top of the heap, above M_TRIM_THRESHOLD (128 KiB), so
//     every burst shrinks the heap with brk() and the next one grows it again
//     and faults the pages back in: microseconds per chunk. Run with
//     MALLOC_TRIM_THRESHOLD_=67108864 to see malloc without that cliff.
//     The pool never falls back to the heap here (heap_fallbacks is reported
//     and should be 0).
// BM_ArenaCarve/bytes:N
//     One Carve() of N bytes, 64-byte aligned. Carving is start-up work, not
//     the data path; this is here to show it is a bump of an offset. The arena
//     is replaced, untimed, whenever it runs out.
// BM_BufferRingRecycle
//     Handing one receive buffer back to the kernel: an entry written into the
//     provided-buffer ring and a release store of its tail. The buffer ring is
//     registered on a real io_uring, but nothing receives into it, so the
//     kernel never reads the entries and no syscall is involved.
//
// Run: bazel run //perf:arena_benchmark
// Under --config=asan the heap variants measure ASan's allocator, not glibc's.
#include <benchmark/benchmark.h>
#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "src/io/arena.h"
#include "src/io/buffer_ring.h"
#include "src/io/ring.h"

namespace uring_http::io {
namespace {

constexpr size_t kChunkSize = 4096;
constexpr size_t kPoolChunks = 1024;  // comfortably more than the largest burst

void BM_ChunkPool(benchmark::State& state) {
  const size_t burst = static_cast<size_t>(state.range(0));
  auto arena = Arena::Create(kChunkSize * kPoolChunks);
  if (!arena.ok()) {
    state.SkipWithError(std::string(arena.status().message()).c_str());
    return;
  }
  ChunkPool pool;
  if (auto status = pool.Init(*arena, kChunkSize, kPoolChunks); !status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  std::vector<char*> held(burst);
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(burst))) {
    for (size_t i = 0; i < burst; ++i) {
      held[i] = pool.Acquire();
      benchmark::DoNotOptimize(held[i]);
    }
    for (size_t i = burst; i-- > 0;) pool.Release(held[i]);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["heap_fallbacks"] = static_cast<double>(pool.heap_fallbacks());
}

void BM_Malloc(benchmark::State& state) {
  const size_t burst = static_cast<size_t>(state.range(0));
  std::vector<char*> held(burst);
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(burst))) {
    for (size_t i = 0; i < burst; ++i) {
      held[i] = static_cast<char*>(std::malloc(kChunkSize));
      benchmark::DoNotOptimize(held[i]);  // escapes, so the pair is not elided
    }
    for (size_t i = burst; i-- > 0;) std::free(held[i]);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_OperatorNew(benchmark::State& state) {
  const size_t burst = static_cast<size_t>(state.range(0));
  std::vector<char*> held(burst);
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(burst))) {
    for (size_t i = 0; i < burst; ++i) {
      held[i] = static_cast<char*>(::operator new(kChunkSize));
      benchmark::DoNotOptimize(held[i]);
    }
    for (size_t i = burst; i-- > 0;) ::operator delete(held[i], kChunkSize);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_ChunkPool)->ArgName("burst")->Arg(1)->Arg(64);
BENCHMARK(BM_Malloc)->ArgName("burst")->Arg(1)->Arg(64);
BENCHMARK(BM_OperatorNew)->ArgName("burst")->Arg(1)->Arg(64);

void BM_ArenaCarve(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  // Address space only: Carve() never touches the memory, so no page is faulted in.
  constexpr size_t kArenaBytes = size_t{64} << 20;
  auto arena = Arena::Create(kArenaBytes);
  if (!arena.ok()) {
    state.SkipWithError(std::string(arena.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    char* piece = arena->Carve(bytes, 64);
    if (piece == nullptr) [[unlikely]] {
      state.PauseTiming();
      *arena = *Arena::Create(kArenaBytes);
      state.ResumeTiming();
      piece = arena->Carve(bytes, 64);
    }
    benchmark::DoNotOptimize(piece);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ArenaCarve)->ArgName("bytes")->Arg(64)->Arg(4096);

void BM_BufferRingRecycle(benchmark::State& state) {
  constexpr uint32_t kBuffers = 256;
  constexpr uint32_t kBufferSize = 4096;
  // Declared in this order so that they go in reverse: the buffer ring is
  // unregistered before its memory is unmapped and before the ring closes.
  RingOptions options;
  options.sq_entries = 8;
  options.cq_entries = 16;
  auto ring = Ring::Create(options);
  if (!ring.ok()) {
    state.SkipWithError(std::string(ring.status().message()).c_str());
    return;
  }
  auto arena = Arena::Create(size_t{kBuffers} * kBufferSize + (size_t{1} << 20));
  if (!arena.ok()) {
    state.SkipWithError(std::string(arena.status().message()).c_str());
    return;
  }
  BufferRing buffers;
  if (auto status = buffers.Init((*ring)->raw(), *arena, /*group_id=*/0, kBuffers, kBufferSize);
      !status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  uint16_t id = 0;
  for (auto _ : state) {
    buffers.Recycle(id);
    id = static_cast<uint16_t>((id + 1) & (kBuffers - 1));
    // In the server other work sits between two recycles; keep the compiler
    // from merging the entry stores of consecutive iterations.
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BufferRingRecycle);

}  // namespace
}  // namespace uring_http::io

BENCHMARK_MAIN();
