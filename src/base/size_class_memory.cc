#include "src/base/size_class_memory.h"

#include <sanitizer/asan_interface.h>

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace uring_http::base {
namespace {

// Classes of 16-byte steps up to 256 bytes, 64-byte steps up to 1 KiB,
// then 128-byte steps: a block kept for a long time (nghttp2's settings
// and HPACK rings for a session's life, a task for an open stream's: about
// 800 bytes) costs little more than malloc would give it, and a request's
// blocks (about 100 to 400 bytes for nghttp2, 1 to 3 KiB for a task) find
// their class's list.
constexpr size_t ClassBytes(uint32_t c) {
  if (c < 16) return size_t{c + 1} * 16;
  if (c < 28) return 256 + size_t{c - 15} * 64;
  return 1024 + size_t{c - 27} * 128;
}
static_assert(ClassBytes(SizeClassMemory::kClasses - 1) == SizeClassMemory::kLargestClass);

// The class that serves an allocation of `size` (at most kLargestClass).
uint32_t ClassFor(size_t size) {
  if (size <= 256) return size == 0 ? 0 : static_cast<uint32_t>((size - 1) / 16);
  if (size <= 1024) return static_cast<uint32_t>((size - 257) / 64) + 16;
  return static_cast<uint32_t>((size - 1025) / 128) + 28;
}

// A block carries no header: Free (which nghttp2 calls without a size)
// reads what the block holds back from malloc_usable_size, and the block
// joins the largest class it can hold. That is its own class for a block
// made here (malloc gives at least what was asked), and some class for one
// that came from AllocateZeroed's calloc; either way, whoever takes it from
// that list gets no more than it holds. Blocks past the largest class are
// made at least kDirectBytes long, which no class block's usable size
// reaches (glibc adds at most 24 bytes; ASan's is exact), and are freed.
constexpr size_t kDirectBytes = SizeClassMemory::kLargestClass + 64;

uint32_t LargestClassWithin(size_t usable) {
  if (usable < 256) return static_cast<uint32_t>(usable / 16) - 1;  // usable >= 16
  if (usable < 1152) {  // 256 .. 1,024
    return std::min<uint32_t>(static_cast<uint32_t>((usable - 256) / 64) + 15, 27);
  }
  return std::min<uint32_t>(static_cast<uint32_t>((usable - 1024) / 128) + 27,
                            SizeClassMemory::kClasses - 1);
}

// A spare block's link to the next, in its first bytes; the rest of it is
// poisoned under ASan while it waits.
struct Spare {
  Spare* next;
};

struct Lists {
  Spare* head[SizeClassMemory::kClasses] = {};
  size_t count[SizeClassMemory::kClasses] = {};
  Lists();
  ~Lists();
};

// What this thread's Lists are: not made yet, alive, or destroyed (thread
// exit). A plain byte, so it can be read through the thread's exit, when a
// late Free may still come (a session destroyed by another thread-local's
// destructor).
enum : uint8_t { kNotYet = 0, kAlive = 1, kGone = 2 };
thread_local uint8_t t_state = kNotYet;
thread_local Lists t_lists;

Lists::Lists() { t_state = kAlive; }
Lists::~Lists() {
  t_state = kGone;
  for (uint32_t c = 0; c < SizeClassMemory::kClasses; ++c) {
    while (Spare* b = head[c]) {
      ASAN_UNPOISON_MEMORY_REGION(b, ClassBytes(c));
      head[c] = b->next;
      std::free(b);
    }
  }
}

Lists* ThisThreadsLists() {
  if (t_state == kGone) [[unlikely]] return nullptr;
  return &t_lists;  // constructs them on the thread's first use
}

void* FromHeap(size_t bytes, uint64_t* heap_allocations) {
  void* p = std::malloc(bytes);
  if (p != nullptr && heap_allocations != nullptr) ++*heap_allocations;
  return p;
}

void Push(Lists& lists, uint32_t c, void* p) {
  auto* b = static_cast<Spare*>(p);
  b->next = lists.head[c];
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(b) + sizeof(Spare), ClassBytes(c) - sizeof(Spare));
  lists.head[c] = b;
  ++lists.count[c];
}

}  // namespace

void* SizeClassMemory::Allocate(size_t size, uint64_t* heap_allocations) {
  if (size > kLargestClass) return FromHeap(std::max(size, kDirectBytes), heap_allocations);
  const uint32_t c = ClassFor(size);
  Lists* lists = ThisThreadsLists();
  Spare* b = lists == nullptr ? nullptr : lists->head[c];
  if (b == nullptr) {
    // A dry list takes a few blocks at once: how many a thread has out at
    // a time creeps up (one more task alive for a moment than ever before,
    // when completions happen to come together), and each step up would
    // otherwise be a malloc in what is by then the steady state.
    for (uint32_t i = 1; lists != nullptr && i < kRefill; ++i) {
      void* spare = FromHeap(ClassBytes(c), heap_allocations);
      if (spare == nullptr) break;
      Push(*lists, c, spare);
    }
    return FromHeap(ClassBytes(c), heap_allocations);
  }
  ASAN_UNPOISON_MEMORY_REGION(b, ClassBytes(c));
  lists->head[c] = b->next;
  --lists->count[c];
  return b;
}

void* SizeClassMemory::AllocateZeroed(size_t count, size_t size, uint64_t* heap_allocations) {
  // Always calloc's: nghttp2 asks for zeroed memory only when a session is
  // made (its state, its stream map's 4 KiB of buckets), never per request,
  // and calloc knows when its memory is fresh and need not be cleared: the
  // map's untouched buckets stay out of an idle connection's resident
  // memory, which a memset here would bring in.
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) return nullptr;
  void* p = std::calloc(1, bytes);
  if (p != nullptr && heap_allocations != nullptr) ++*heap_allocations;
  return p;
}

void* SizeClassMemory::Reallocate(void* p, size_t size, uint64_t* heap_allocations) {
  if (p == nullptr) return Allocate(size, heap_allocations);
  if (size == 0) {  // as glibc's realloc: freed, and null returned
    Free(p);
    return nullptr;
  }
  const size_t usable = malloc_usable_size(p);
  if (usable >= kDirectBytes) {
    void* moved = std::realloc(p, std::max(size, kDirectBytes));
    if (moved != nullptr && heap_allocations != nullptr) ++*heap_allocations;
    return moved;
  }
  if (size <= usable) return p;
  void* q = Allocate(size, heap_allocations);
  if (q == nullptr) return nullptr;  // p stays valid, as realloc leaves it
  std::memcpy(q, p, usable);
  Free(p);
  return q;
}

void SizeClassMemory::Free(void* p) {
  if (p == nullptr) return;
  const size_t usable = malloc_usable_size(p);
  if (usable < 16 || usable >= kDirectBytes || t_state != kAlive) {
    std::free(p);
    return;
  }
  const uint32_t c = LargestClassWithin(usable);
  Lists& lists = t_lists;
  if (lists.count[c] * ClassBytes(c) >= kKeepBytes) {
    std::free(p);
    return;
  }
  Push(lists, c, p);
}

size_t SizeClassMemory::BlockBytes(size_t size) {
  return size > kLargestClass ? std::max(size, kDirectBytes) : ClassBytes(ClassFor(size));
}

size_t SizeClassMemory::SpareBlocks(size_t size) {
  if (size > kLargestClass) return 0;
  Lists* lists = ThisThreadsLists();
  return lists == nullptr ? 0 : lists->count[ClassFor(size)];
}

}  // namespace uring_http::base
