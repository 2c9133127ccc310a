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
    void* a = CodecMemory::Allocate(200, &heap);  // the 256-byte class
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(heap, 1u);
    std::memset(a, 0xab, 200);
    const size_t spare = CodecMemory::SpareBlocks(200);
    CodecMemory::Free(a);
    EXPECT_EQ(CodecMemory::SpareBlocks(200), spare + 1);
    void* b = CodecMemory::Allocate(129, &heap);  // same class
    EXPECT_EQ(b, a);
    EXPECT_EQ(heap, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
    // Another class is not served from this one's list.
    void* c = CodecMemory::Allocate(100, &heap);
    EXPECT_NE(c, a);
    CodecMemory::Free(b);
    CodecMemory::Free(c);
    CodecMemory::Free(nullptr);
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

TEST(CodecMemoryTest, ZeroedAllocationsAreZeroEvenFromAReusedBlock) {
  OnAFreshThread([] {
    uint64_t heap = 0;
    void* a = CodecMemory::Allocate(1000, &heap);
    std::memset(a, 0xff, 1000);
    CodecMemory::Free(a);
    auto* z = static_cast<unsigned char*>(CodecMemory::AllocateZeroed(10, 100, &heap));
    ASSERT_EQ(static_cast<void*>(z), a);  // reused
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(z[i], 0) << i;
    CodecMemory::Free(z);
    auto* big = static_cast<unsigned char*>(CodecMemory::AllocateZeroed(2, CodecMemory::kLargestClass, &heap));
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(big[0], 0);
    EXPECT_EQ(big[2 * CodecMemory::kLargestClass - 1], 0);
    CodecMemory::Free(big);
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
