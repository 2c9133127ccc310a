// Tests for Arena (page rounding, carving alignment and exhaustion, move
// semantics and unmapping) and ChunkPool (LIFO reuse from low addresses, no
// overlap, heap fallback when empty, available() accounting).
#include "src/io/arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::io {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Whether [p, p + len) is mapped in this process: mincore() fails with
// ENOMEM on an unmapped range.
bool IsMapped(const void* p, size_t len) {
  std::vector<unsigned char> vec((len + PageSize() - 1) / PageSize());
  return mincore(const_cast<void*>(p), len, vec.data()) == 0;
}

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(ArenaTest, CreateRoundsUpToWholePages) {
  auto arena = Arena::Create(1);
  ASSERT_TRUE(arena.ok()) << arena.status();
  EXPECT_EQ(arena->size(), PageSize());
  EXPECT_EQ(arena->used(), 0u);
  ASSERT_NE(arena->base(), nullptr);
  EXPECT_EQ(Addr(arena->base()) % PageSize(), 0u);

  auto exact = Arena::Create(3 * PageSize());
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 3 * PageSize());

  auto over = Arena::Create(3 * PageSize() + 1);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->size(), 4 * PageSize());
}

TEST(ArenaTest, CreateFailsWhenTheMappingIsImpossible) {
  // Larger than any address space: mmap must refuse it.
  auto arena = Arena::Create(size_t{1} << 62);
  ASSERT_FALSE(arena.ok());
  EXPECT_EQ(arena.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ArenaTest, CarveHonoursAlignment) {
  auto arena = Arena::Create(64 * 1024);
  ASSERT_TRUE(arena.ok());
  char* base = arena->base();

  char* a = arena->Carve(1, 1);
  EXPECT_EQ(a, base);
  EXPECT_EQ(arena->used(), 1u);

  char* b = arena->Carve(10);  // default alignment: a cache line
  EXPECT_EQ(b, base + 64);
  EXPECT_EQ(arena->used(), 74u);

  char* c = arena->Carve(3, 8);
  EXPECT_EQ(c, base + 80);
  EXPECT_EQ(Addr(c) % 8, 0u);

  char* d = arena->Carve(5, 4096);
  EXPECT_EQ(d, base + 4096);
  EXPECT_EQ(arena->used(), 4096u + 5);

  char* e = arena->Carve(7, 1);  // unaligned pieces pack tightly
  EXPECT_EQ(e, base + 4096 + 5);

  for (size_t align : {2, 16, 128, 256, 1024, 8192}) {
    char* p = arena->Carve(3, align);
    ASSERT_NE(p, nullptr) << align;
    EXPECT_EQ(Addr(p) % align, 0u) << align;
  }
}

TEST(ArenaTest, AlignmentBeyondAPageAlignsTheAddress) {
  // mmap only promises page alignment. Find an arena whose base is not
  // aligned to two pages (mappings of an odd number of pages placed next to
  // each other alternate), then ask for that alignment.
  const size_t align = 2 * PageSize();
  std::vector<Arena> arenas;
  arenas.reserve(16);
  Arena* odd = nullptr;
  for (int i = 0; i < 16 && odd == nullptr; ++i) {
    auto arena = Arena::Create(3 * PageSize());
    ASSERT_TRUE(arena.ok());
    arenas.push_back(*std::move(arena));
    if (Addr(arenas.back().base()) % align != 0) odd = &arenas.back();
  }
  if (odd == nullptr) GTEST_SKIP() << "every mapping happened to be 2-page aligned";
  char* p = odd->Carve(10, align);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Addr(p) % align, 0u);
  EXPECT_EQ(p, odd->base() + PageSize());
  EXPECT_EQ(odd->used(), PageSize() + 10);
}

TEST(ArenaTest, CarvedMemoryIsWritableAndZeroed) {
  auto arena = Arena::Create(3 * PageSize());
  ASSERT_TRUE(arena.ok());
  char* p = arena->Carve(arena->size(), 1);
  ASSERT_NE(p, nullptr);
  // Anonymous pages start zeroed; every byte can be written.
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[arena->size() - 1], 0);
  std::memset(p, 0xab, arena->size());
  EXPECT_EQ(static_cast<unsigned char>(p[arena->size() - 1]), 0xab);
}

TEST(ArenaTest, CarveFailsWhenExhaustedWithoutConsumingAnything) {
  auto arena = Arena::Create(PageSize());
  ASSERT_TRUE(arena.ok());
  char* all = arena->Carve(PageSize() - 64);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(arena->Carve(65), nullptr);
  EXPECT_EQ(arena->used(), PageSize() - 64);  // the failed carve took nothing
  char* last = arena->Carve(64);              // exactly what is left
  EXPECT_EQ(last, arena->base() + PageSize() - 64);
  EXPECT_EQ(arena->used(), PageSize());
  EXPECT_EQ(arena->Carve(1, 1), nullptr);
}

TEST(ArenaTest, AlignmentPaddingCountsTowardsExhaustion) {
  auto arena = Arena::Create(PageSize());
  ASSERT_TRUE(arena.ok());
  ASSERT_NE(arena->Carve(1, 1), nullptr);
  // Unpadded, PageSize() - 63 bytes would fit after the first byte; aligned
  // to 64 they start at offset 64 and do not.
  EXPECT_EQ(arena->Carve(PageSize() - 63), nullptr);
  EXPECT_EQ(arena->Carve(PageSize() - 1, 4096), nullptr);
  EXPECT_EQ(arena->used(), 1u);
  EXPECT_EQ(arena->Carve(PageSize() - 64), arena->base() + 64);
  EXPECT_EQ(arena->used(), PageSize());
}

TEST(ArenaTest, HugeRequestsDoNotWrapAround) {
  auto arena = Arena::Create(PageSize());
  ASSERT_TRUE(arena.ok());
  ASSERT_NE(arena->Carve(1, 1), nullptr);
  const size_t used = arena->used();
  // start + bytes would overflow size_t: must be refused, not wrap to a small
  // end offset and hand out memory the arena does not have.
  EXPECT_EQ(arena->Carve(std::numeric_limits<size_t>::max()), nullptr);
  EXPECT_EQ(arena->Carve(std::numeric_limits<size_t>::max() - 32), nullptr);
  EXPECT_EQ(arena->used(), used);
}

TEST(ArenaTest, DefaultConstructedArenaHasNothingToCarve) {
  Arena arena;
  EXPECT_EQ(arena.base(), nullptr);
  EXPECT_EQ(arena.size(), 0u);
  EXPECT_EQ(arena.Carve(1), nullptr);
}

TEST(ArenaTest, MoveConstructionTransfersTheMapping) {
  auto created = Arena::Create(2 * PageSize());
  ASSERT_TRUE(created.ok());
  Arena a = *std::move(created);
  char* base = a.base();
  ASSERT_NE(a.Carve(100), nullptr);

  Arena b(std::move(a));
  EXPECT_EQ(b.base(), base);
  EXPECT_EQ(b.size(), 2 * PageSize());
  EXPECT_EQ(b.used(), 100u);
  EXPECT_EQ(a.base(), nullptr);  // NOLINT(bugprone-use-after-move): testing it
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.Carve(1), nullptr);
  // Carving continues where the moved-from arena stopped.
  EXPECT_EQ(b.Carve(1, 64), base + 128);
  EXPECT_TRUE(IsMapped(base, b.size()));
}

TEST(ArenaTest, MoveAssignmentUnmapsTheOldMapping) {
  auto first = Arena::Create(PageSize());
  auto second = Arena::Create(2 * PageSize());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  Arena a = *std::move(first);
  Arena b = *std::move(second);
  char* old_base = a.base();
  char* new_base = b.base();
  ASSERT_NE(b.Carve(10), nullptr);
  ASSERT_TRUE(IsMapped(old_base, PageSize()));

  a = std::move(b);
  EXPECT_EQ(a.base(), new_base);
  EXPECT_EQ(a.size(), 2 * PageSize());
  EXPECT_EQ(a.used(), 10u);
  EXPECT_EQ(b.base(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(IsMapped(old_base, PageSize()));
  EXPECT_TRUE(IsMapped(new_base, 2 * PageSize()));
}

TEST(ArenaTest, SelfMoveAssignmentKeepsTheMapping) {
  auto created = Arena::Create(PageSize());
  ASSERT_TRUE(created.ok());
  Arena a = *std::move(created);
  char* base = a.base();
  Arena& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.base(), base);
  EXPECT_EQ(a.size(), PageSize());
  EXPECT_TRUE(IsMapped(base, PageSize()));
}

TEST(ArenaTest, DestructorUnmaps) {
  char* base = nullptr;
  {
    auto arena = Arena::Create(4 * PageSize());
    ASSERT_TRUE(arena.ok());
    base = arena->base();
    ASSERT_TRUE(IsMapped(base, 4 * PageSize()));
  }
  EXPECT_FALSE(IsMapped(base, 4 * PageSize()));
}

// ---------------------------------------------------------------- ChunkPool

class ChunkPoolTest : public testing::Test {
 protected:
  void SetUp() override {
    auto created = Arena::Create(1 << 20);
    ASSERT_TRUE(created.ok());
    arena_ = *std::move(created);
  }
  Arena arena_;
};

TEST_F(ChunkPoolTest, InitCarvesPageAlignedChunks) {
  ASSERT_NE(arena_.Carve(10, 1), nullptr);  // the pool must still be page aligned
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 256, 16).ok());
  EXPECT_EQ(pool.chunk_size(), 256u);
  EXPECT_EQ(pool.count(), 16u);
  EXPECT_EQ(pool.available(), 16u);
  EXPECT_EQ(pool.bytes(), 256u * 16);
  EXPECT_EQ(pool.heap_fallbacks(), 0u);
  EXPECT_EQ(pool.base(), arena_.base() + 4096);
  EXPECT_EQ(Addr(pool.base()) % 4096, 0u);
  EXPECT_EQ(arena_.used(), 4096u + 256 * 16);
}

TEST_F(ChunkPoolTest, InitFailsWhenTheArenaIsTooSmall) {
  ChunkPool pool;
  absl::Status status = pool.Init(arena_, 4096, 1000);  // 4 MB from a 1 MB arena
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(arena_.used(), 0u);
}

TEST_F(ChunkPoolTest, InitRejectsASizeThatOverflows) {
  ChunkPool pool;
  // 2^62 * 4 wraps to 0 bytes: carving that "succeeds" would hand out chunks
  // far outside the arena.
  absl::Status status = pool.Init(arena_, size_t{1} << 62, 4);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(arena_.used(), 0u);
}

TEST_F(ChunkPoolTest, HandsOutLowAddressesFirst) {
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 128, 8).ok());
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(pool.Acquire(), pool.base() + i * 128) << i;
    EXPECT_EQ(pool.available(), 8 - i - 1);
  }
}

TEST_F(ChunkPoolTest, ReleasedChunksAreReusedLastInFirstOut) {
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 128, 8).ok());
  char* a = pool.Acquire();
  char* b = pool.Acquire();
  char* c = pool.Acquire();
  EXPECT_EQ(pool.available(), 5u);

  pool.Release(b);
  EXPECT_EQ(pool.available(), 6u);
  EXPECT_EQ(pool.Acquire(), b);  // the most recently released comes back first

  pool.Release(a);
  pool.Release(c);
  EXPECT_EQ(pool.available(), 7u);
  EXPECT_EQ(pool.Acquire(), c);
  EXPECT_EQ(pool.Acquire(), a);
  EXPECT_EQ(pool.Acquire(), pool.base() + 3 * 128);  // then the untouched ones
  EXPECT_EQ(pool.heap_fallbacks(), 0u);
}

TEST_F(ChunkPoolTest, ChunksDoNotOverlap) {
  constexpr size_t kSize = 200;  // not a power of two: offsets are multiples of it
  constexpr size_t kCount = 50;
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, kSize, kCount).ok());
  std::vector<char*> chunks;
  for (size_t i = 0; i < kCount; ++i) {
    chunks.push_back(pool.Acquire());
    std::memset(chunks.back(), static_cast<int>(i), kSize);
  }
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_EQ(pool.heap_fallbacks(), 0u);
  // Every byte of every chunk still holds its own chunk's pattern.
  for (size_t i = 0; i < kCount; ++i) {
    for (size_t j = 0; j < kSize; ++j) {
      ASSERT_EQ(chunks[i][j], static_cast<char>(i)) << "chunk " << i << " byte " << j;
    }
  }
  std::vector<char*> sorted = chunks;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted.front(), pool.base());
  for (size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_EQ(sorted[i] - sorted[i - 1], static_cast<ptrdiff_t>(kSize));
  }
  EXPECT_LE(sorted.back() + kSize, pool.base() + pool.bytes());
}

TEST_F(ChunkPoolTest, TwoPoolsFromOneArenaDoNotOverlap) {
  ChunkPool first;
  ChunkPool second;
  ASSERT_TRUE(first.Init(arena_, 100, 10).ok());
  ASSERT_TRUE(second.Init(arena_, 100, 10).ok());
  EXPECT_GE(second.base(), first.base() + first.bytes());
}

TEST_F(ChunkPoolTest, EmptyPoolFallsBackToTheHeapAndCountsIt) {
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 512, 2).ok());
  char* a = pool.Acquire();
  char* b = pool.Acquire();
  ASSERT_EQ(pool.available(), 0u);

  char* h1 = pool.Acquire();
  char* h2 = pool.Acquire();
  ASSERT_NE(h1, nullptr);
  ASSERT_NE(h2, nullptr);
  EXPECT_NE(h1, h2);
  EXPECT_EQ(pool.heap_fallbacks(), 2u);
  EXPECT_EQ(pool.available(), 0u);
  for (char* h : {h1, h2}) {
    const bool inside = h >= pool.base() && h < pool.base() + pool.bytes();
    EXPECT_FALSE(inside);
    std::memset(h, 0x5a, 512);  // a whole chunk is usable (ASan checks the size)
  }

  // Heap chunks are kept as spares (up to the pool's count; freed by
  // Trim or the pool's end, else LeakSanitizer would report them), never
  // put on the free list.
  pool.Release(h1);
  pool.Release(h2);
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_EQ(pool.spare(), 2u);

  pool.Release(b);
  pool.Release(a);
  EXPECT_EQ(pool.available(), 2u);
  EXPECT_EQ(pool.Acquire(), a);
  EXPECT_EQ(pool.Acquire(), b);
  EXPECT_EQ(pool.heap_fallbacks(), 2u);  // the pool served these
}

TEST_F(ChunkPoolTest, HeapChunksAreReusedThenTrimmedOnceBurstsStop) {
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 512, 4).ok());
  std::vector<char*> burst;
  for (int i = 0; i < 10; ++i) burst.push_back(pool.Acquire());  // 6 from the heap
  std::vector<char*> heap(burst.begin() + 4, burst.end());
  for (char* c : burst) pool.Release(c);
  EXPECT_EQ(pool.available(), 4u);
  EXPECT_EQ(pool.spare(), 4u);  // at most the pool's count kept; 2 freed
  // The next burst takes the pool's chunks, then the spares: no malloc.
  std::vector<char*> again;
  for (int i = 0; i < 8; ++i) again.push_back(pool.Acquire());
  EXPECT_EQ(pool.spare(), 0u);
  for (int i = 4; i < 8; ++i) {
    EXPECT_NE(std::find(heap.begin(), heap.end(), again[i]), heap.end()) << i;
  }
  for (char* c : again) pool.Release(c);
  EXPECT_EQ(pool.spare(), 4u);
  pool.Trim();  // the heap served since the last trim: kept
  EXPECT_EQ(pool.spare(), 4u);
  pool.Trim();  // a quiet period: half go
  EXPECT_EQ(pool.spare(), 2u);
  pool.Trim();
  pool.Trim();
  EXPECT_EQ(pool.spare(), 0u);
  EXPECT_EQ(pool.available(), 4u);
}

TEST_F(ChunkPoolTest, SparesLeftAtTheEndAreFreedWithThePool) {
  // LeakSanitizer (the asan config) reports them otherwise.
  ChunkPool pool;
  ASSERT_TRUE(pool.Init(arena_, 512, 1).ok());
  char* a = pool.Acquire();
  char* b = pool.Acquire();
  pool.Release(b);
  pool.Release(a);
  EXPECT_EQ(pool.spare(), 1u);
}

}  // namespace
}  // namespace uring_http::io
