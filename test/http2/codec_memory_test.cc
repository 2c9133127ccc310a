#include "src/http2/codec_memory.h"

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http2::internal {
namespace {

// Each case on a thread of its own: its lists start empty, so the heap
// counts below are exact, and they are freed at its exit (LSan sees any
// block that was not).
template <typename F>
void OnAFreshThread(F f) {
  std::thread(f).join();
}

TEST(CodecMemoryTest, AFreedBlockServesTheNextAllocationOfItsClassWithoutTheHeap) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    void* a = CodecMemory::Allocate(200, &heap);  // the 208-byte class
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(heap, 1u);
    std::memset(a, 0xab, 200);
    const size_t spare = CodecMemory::SpareBlocks(200);
    CodecMemory::Free(a);
    EXPECT_EQ(CodecMemory::SpareBlocks(200), spare + 1);
    void* b = CodecMemory::Allocate(193, &heap);  // same class
    EXPECT_EQ(b, a);
    EXPECT_EQ(heap, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
    // Another class is not served from this one's list.
    void* c = CodecMemory::Allocate(192, &heap);
    EXPECT_NE(c, a);
    CodecMemory::Free(b);
    CodecMemory::Free(c);
    CodecMemory::Free(nullptr);
  });
}

// Every size gets a block that holds it (under ASan a class too small for
// its size is a heap overflow: a block is exactly its class's bytes), and
// sizes of one class share its list.
TEST(CodecMemoryTest, EverySizeFitsItsClass) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    for (size_t size = 0; size <= CodecMemory::kLargestClass + 16; ++size) {
      void* p = CodecMemory::Allocate(size, &heap);
      ASSERT_NE(p, nullptr) << size;
      std::memset(p, 0x5a, size);
      CodecMemory::Free(p);
    }
    // 16-byte steps to 256, then powers of two to 4,096: 20 classes, one
    // block each, and one heap block for each size past the largest.
    EXPECT_EQ(heap, 20u + 16u);
  });
}

TEST(CodecMemoryTest, LargeBlocksAreMallocsAndAreNeverKept) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    const size_t big = CodecMemory::kLargestClass + 1;
    void* a = CodecMemory::Allocate(big, &heap);
    ASSERT_NE(a, nullptr);
    std::memset(a, 1, big);
    CodecMemory::Free(a);
    void* b = CodecMemory::Allocate(big, &heap);
    EXPECT_EQ(heap, 2u);
    EXPECT_EQ(CodecMemory::SpareBlocks(big), 0u);
    CodecMemory::Free(b);
  });
}

TEST(CodecMemoryTest, ZeroedAllocationsAreCallocsEvenWithASpareBlockAtHand) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    void* dirty = CodecMemory::Allocate(1024, &heap);
    std::memset(dirty, 0xff, 1024);
    CodecMemory::Free(dirty);
    ASSERT_EQ(CodecMemory::SpareBlocks(1024), 1u);
    auto* z = static_cast<unsigned char*>(CodecMemory::AllocateZeroed(8, 128, &heap));
    ASSERT_NE(z, nullptr);
    EXPECT_EQ(heap, 2u);
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(z[i], 0) << i;
    // Freed, a calloc'd block joins the list of the largest class it holds,
    // and serves what fits in it.
    CodecMemory::Free(z);
    EXPECT_EQ(CodecMemory::SpareBlocks(1024), 2u);
    void* a = CodecMemory::Allocate(1000, &heap);
    void* b = CodecMemory::Allocate(1000, &heap);
    EXPECT_EQ(heap, 2u);
    std::memset(a, 1, 1000);
    std::memset(b, 1, 1000);
    CodecMemory::Free(a);
    CodecMemory::Free(b);
    // count * size overflowing is refused, as calloc refuses it.
    EXPECT_EQ(CodecMemory::AllocateZeroed(SIZE_MAX / 2, 3, &heap), nullptr);
  });
}

TEST(CodecMemoryTest, ReallocateKeepsTheBytesWithinAClassAndAcrossClasses) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    auto* p = static_cast<char*>(CodecMemory::Reallocate(nullptr, 50, &heap));
    ASSERT_NE(p, nullptr);
    std::memcpy(p, "0123456789", 10);
    // Within its 64-byte class: the same block.
    EXPECT_EQ(CodecMemory::Reallocate(p, 64, &heap), p);
    // Into a larger class, then past the largest: the bytes move with it.
    auto* q = static_cast<char*>(CodecMemory::Reallocate(p, 3000, &heap));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(std::memcmp(q, "0123456789", 10), 0);
    q[2999] = 'x';
    auto* r = static_cast<char*>(CodecMemory::Reallocate(q, 100000, &heap));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(std::memcmp(r, "0123456789", 10), 0);
    EXPECT_EQ(r[2999], 'x');
    r[99999] = 'y';
    auto* s = static_cast<char*>(CodecMemory::Reallocate(r, 200000, &heap));
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s[99999], 'y');
    // A zero size frees, as glibc's realloc does.
    EXPECT_EQ(CodecMemory::Reallocate(s, 0, &heap), nullptr);
  });
}

TEST(CodecMemoryTest, AThreadKeepsABoundedNumberOfSpareBytesPerClass) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    constexpr size_t kSize = 1024;
    constexpr size_t kBound = CodecMemory::kKeepBytes / kSize;
    std::vector<void*> blocks;
    for (size_t i = 0; i < 2 * kBound; ++i) blocks.push_back(CodecMemory::Allocate(kSize, &heap));
    EXPECT_EQ(heap, 2 * kBound);
    for (void* b : blocks) CodecMemory::Free(b);
    EXPECT_EQ(CodecMemory::SpareBlocks(kSize), kBound);
    // Warm: as many again reach the heap only past what was kept.
    blocks.clear();
    heap = 0;
    for (size_t i = 0; i < 2 * kBound; ++i) blocks.push_back(CodecMemory::Allocate(kSize, &heap));
    EXPECT_EQ(heap, kBound);
    for (void* b : blocks) CodecMemory::Free(b);
  });
}

TEST(CodecMemoryTest, ABlockMayBeFreedOnAnotherThread) {
  uint64_t heap = 0;
  void* a = CodecMemory::Allocate(300, &heap);
  std::thread([a] {
    const size_t before = CodecMemory::SpareBlocks(300);
    CodecMemory::Free(a);  // joins this thread's list, freed at its exit
    EXPECT_EQ(CodecMemory::SpareBlocks(300), before + 1);
  }).join();
  void* big = CodecMemory::Allocate(CodecMemory::kLargestClass * 2, &heap);
  std::thread([big] { CodecMemory::Free(big); }).join();
}

}  // namespace
}  // namespace uring_http::http2::internal
