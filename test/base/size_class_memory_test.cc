#include "src/base/size_class_memory.h"

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::base {
namespace {

// Each case on a thread of its own: its lists start empty, so the heap
// counts below are exact, and they are freed at its exit (LSan sees any
// block that was not).
template <typename F>
void OnAFreshThread(F f) {
  std::thread(f).join();
}

TEST(SizeClassMemoryTest, AFreedBlockServesTheNextAllocationOfItsClassWithoutTheHeap) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    void* a = SizeClassMemory::Allocate(200, &heap);  // the 208-byte class
    ASSERT_NE(a, nullptr);
    // The dry list took kRefill blocks: one is a, the rest wait.
    EXPECT_EQ(heap, SizeClassMemory::kRefill);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(200), SizeClassMemory::kRefill - 1);
    std::memset(a, 0xab, 200);
    SizeClassMemory::Free(a);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(200), SizeClassMemory::kRefill);
    void* b = SizeClassMemory::Allocate(193, &heap);  // same class
    EXPECT_EQ(b, a);
    EXPECT_EQ(heap, SizeClassMemory::kRefill);
    // The spares serve as many more without the heap.
    std::vector<void*> more;
    for (uint32_t i = 1; i < SizeClassMemory::kRefill; ++i) {
      more.push_back(SizeClassMemory::Allocate(200, &heap));
      std::memset(more.back(), 0xcd, 200);  // ASan: each is a whole block, unpoisoned
    }
    EXPECT_EQ(heap, SizeClassMemory::kRefill);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(200), 0u);
    for (void* m : more) SizeClassMemory::Free(m);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
    // Another class is not served from this one's list.
    void* c = SizeClassMemory::Allocate(192, &heap);
    EXPECT_NE(c, a);
    SizeClassMemory::Free(b);
    SizeClassMemory::Free(c);
    SizeClassMemory::Free(nullptr);
  });
}

// Every size gets a block that holds it (under ASan a class too small for
// its size is a heap overflow: a block is exactly its class's bytes), and
// sizes of one class share its list.
TEST(SizeClassMemoryTest, EverySizeFitsItsClass) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    for (size_t size = 0; size <= SizeClassMemory::kLargestClass + 16; ++size) {
      void* p = SizeClassMemory::Allocate(size, &heap);
      ASSERT_NE(p, nullptr) << size;
      std::memset(p, 0x5a, size);
      SizeClassMemory::Free(p);
    }
    // 16-byte steps to 256, 64-byte steps to 1,024, then 128-byte steps to
    // 4,096: 52 classes, one refill each, and one heap block for each size
    // past the largest.
    EXPECT_EQ(heap, 52u * SizeClassMemory::kRefill + 16u);
    // A block is its class's bytes: 64-byte steps between 256 and 1,024.
    EXPECT_EQ(SizeClassMemory::BlockBytes(257), 320u);
    EXPECT_EQ(SizeClassMemory::BlockBytes(800), 832u);
    EXPECT_EQ(SizeClassMemory::BlockBytes(1024), 1024u);
    EXPECT_EQ(SizeClassMemory::BlockBytes(1025), 1152u);
  });
}

TEST(SizeClassMemoryTest, LargeBlocksAreMallocsAndAreNeverKept) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    const size_t big = SizeClassMemory::kLargestClass + 1;
    void* a = SizeClassMemory::Allocate(big, &heap);
    ASSERT_NE(a, nullptr);
    std::memset(a, 1, big);
    SizeClassMemory::Free(a);
    void* b = SizeClassMemory::Allocate(big, &heap);
    EXPECT_EQ(heap, 2u);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(big), 0u);
    SizeClassMemory::Free(b);
  });
}

TEST(SizeClassMemoryTest, ZeroedAllocationsAreCallocsEvenWithASpareBlockAtHand) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    void* dirty = SizeClassMemory::Allocate(1024, &heap);
    std::memset(dirty, 0xff, 1024);
    SizeClassMemory::Free(dirty);
    ASSERT_EQ(SizeClassMemory::SpareBlocks(1024), SizeClassMemory::kRefill);
    auto* z = static_cast<unsigned char*>(SizeClassMemory::AllocateZeroed(8, 128, &heap));
    ASSERT_NE(z, nullptr);
    EXPECT_EQ(heap, SizeClassMemory::kRefill + 1);
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(z[i], 0) << i;
    // Freed, a calloc'd block joins the list of the largest class it holds,
    // and serves what fits in it.
    SizeClassMemory::Free(z);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(1024), SizeClassMemory::kRefill + 1);
    void* a = SizeClassMemory::Allocate(1000, &heap);
    void* b = SizeClassMemory::Allocate(1000, &heap);
    EXPECT_EQ(heap, SizeClassMemory::kRefill + 1);
    std::memset(a, 1, 1000);
    std::memset(b, 1, 1000);
    SizeClassMemory::Free(a);
    SizeClassMemory::Free(b);
    // count * size overflowing is refused, as calloc refuses it.
    EXPECT_EQ(SizeClassMemory::AllocateZeroed(SIZE_MAX / 2, 3, &heap), nullptr);
  });
}

TEST(SizeClassMemoryTest, ReallocateKeepsTheBytesWithinAClassAndAcrossClasses) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    auto* p = static_cast<char*>(SizeClassMemory::Reallocate(nullptr, 50, &heap));
    ASSERT_NE(p, nullptr);
    std::memcpy(p, "0123456789", 10);
    // Within its 64-byte class: the same block.
    EXPECT_EQ(SizeClassMemory::Reallocate(p, 64, &heap), p);
    // Into a larger class, then past the largest: the bytes move with it.
    auto* q = static_cast<char*>(SizeClassMemory::Reallocate(p, 3000, &heap));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(std::memcmp(q, "0123456789", 10), 0);
    q[2999] = 'x';
    auto* r = static_cast<char*>(SizeClassMemory::Reallocate(q, 100000, &heap));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(std::memcmp(r, "0123456789", 10), 0);
    EXPECT_EQ(r[2999], 'x');
    r[99999] = 'y';
    auto* s = static_cast<char*>(SizeClassMemory::Reallocate(r, 200000, &heap));
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s[99999], 'y');
    // A zero size frees, as glibc's realloc does.
    EXPECT_EQ(SizeClassMemory::Reallocate(s, 0, &heap), nullptr);
  });
}

TEST(SizeClassMemoryTest, AThreadKeepsABoundedNumberOfSpareBytesPerClass) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    constexpr size_t kSize = 1024;
    constexpr size_t kBound = SizeClassMemory::kKeepBytes / kSize;
    std::vector<void*> blocks;
    static_assert(kBound % SizeClassMemory::kRefill == 0);  // refills end with the loop
    for (size_t i = 0; i < 2 * kBound; ++i) blocks.push_back(SizeClassMemory::Allocate(kSize, &heap));
    EXPECT_EQ(heap, 2 * kBound);
    for (void* b : blocks) SizeClassMemory::Free(b);
    EXPECT_EQ(SizeClassMemory::SpareBlocks(kSize), kBound);
    // Warm: as many again reach the heap only past what was kept.
    blocks.clear();
    heap = 0;
    for (size_t i = 0; i < 2 * kBound; ++i) blocks.push_back(SizeClassMemory::Allocate(kSize, &heap));
    EXPECT_EQ(heap, kBound);
    for (void* b : blocks) SizeClassMemory::Free(b);
  });
}

TEST(SizeClassMemoryTest, ABlockMayBeFreedOnAnotherThread) {
  uint64_t heap = 0;
  void* a = SizeClassMemory::Allocate(300, &heap);
  std::thread([a] {
    const size_t before = SizeClassMemory::SpareBlocks(300);
    SizeClassMemory::Free(a);  // joins this thread's list, freed at its exit
    EXPECT_EQ(SizeClassMemory::SpareBlocks(300), before + 1);
  }).join();
  void* big = SizeClassMemory::Allocate(SizeClassMemory::kLargestClass * 2, &heap);
  std::thread([big] { SizeClassMemory::Free(big); }).join();
}

}  // namespace
}  // namespace uring_http::base
