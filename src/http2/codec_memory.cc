#include "src/http2/codec_memory.h"

#include <sanitizer/asan_interface.h>

#include <bit>
#include <cstdlib>
#include <cstring>

namespace uring_http::http2::internal {
namespace {

constexpr uint32_t kDirect = UINT32_MAX;  // malloc's alone: freed, never kept

// Before every block, so that Free (which nghttp2 calls without a size)
// knows the block's class. 16 bytes keep the payload as aligned as
// malloc's. A kept block's link lives here too, not in the payload, so that
// under ASan the whole payload stays poisoned while the block waits.
struct alignas(16) Header {
  uint32_t size_class;
  void* next;  // the next spare block's header, while on a list
};
static_assert(sizeof(Header) == 16);

constexpr size_t ClassBytes(uint32_t c) { return size_t{64} << c; }

uint32_t ClassOf(size_t size) {
  if (size <= 64) return 0;
  return static_cast<uint32_t>(std::bit_width(size - 1)) - 6;
}

Header* HeaderOf(void* p) { return static_cast<Header*>(p) - 1; }
void* PayloadOf(Header* h) { return h + 1; }

struct Lists {
  Header* head[CodecMemory::kClasses] = {};
  size_t count[CodecMemory::kClasses] = {};
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
  for (Header*& h : head) {
    while (h != nullptr) {
      Header* next = static_cast<Header*>(h->next);
      std::free(h);
      h = next;
    }
  }
}

Lists* ThisThreadsLists() {
  if (t_state == kGone) [[unlikely]] return nullptr;
  return &t_lists;  // constructs them on the thread's first use
}

void* NewBlock(uint32_t size_class, size_t bytes, uint64_t* heap_allocations) {
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + bytes));
  if (h == nullptr) return nullptr;
  if (heap_allocations != nullptr) ++*heap_allocations;
  h->size_class = size_class;
  h->next = nullptr;
  return PayloadOf(h);
}

}  // namespace

void* CodecMemory::Allocate(size_t size, uint64_t* heap_allocations) {
  if (size > kLargestClass) return NewBlock(kDirect, size, heap_allocations);
  const uint32_t c = ClassOf(size);
  Lists* lists = ThisThreadsLists();
  if (lists == nullptr) return NewBlock(kDirect, size, heap_allocations);
  Header* h = lists->head[c];
  if (h == nullptr) return NewBlock(c, ClassBytes(c), heap_allocations);
  lists->head[c] = static_cast<Header*>(h->next);
  --lists->count[c];
  h->next = nullptr;
  ASAN_UNPOISON_MEMORY_REGION(PayloadOf(h), ClassBytes(c));
  return PayloadOf(h);
}

void* CodecMemory::AllocateZeroed(size_t count, size_t size, uint64_t* heap_allocations) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) return nullptr;
  if (bytes > kLargestClass) {
    // calloc knows when its memory is fresh and need not be cleared (the
    // session's large tables): no memset here.
    auto* h = static_cast<Header*>(std::calloc(1, sizeof(Header) + bytes));
    if (h == nullptr) return nullptr;
    if (heap_allocations != nullptr) ++*heap_allocations;
    h->size_class = kDirect;
    return PayloadOf(h);
  }
  void* p = Allocate(bytes, heap_allocations);
  if (p != nullptr) std::memset(p, 0, bytes);
  return p;
}

void* CodecMemory::Reallocate(void* p, size_t size, uint64_t* heap_allocations) {
  if (p == nullptr) return Allocate(size, heap_allocations);
  if (size == 0) {  // as glibc's realloc: freed, and null returned
    Free(p);
    return nullptr;
  }
  Header* h = HeaderOf(p);
  if (h->size_class == kDirect) {
    auto* moved = static_cast<Header*>(std::realloc(h, sizeof(Header) + size));
    if (moved == nullptr) return nullptr;
    if (heap_allocations != nullptr) ++*heap_allocations;
    return PayloadOf(moved);
  }
  const size_t have = ClassBytes(h->size_class);
  if (size <= have) return p;
  void* q = Allocate(size, heap_allocations);
  if (q == nullptr) return nullptr;  // p stays valid, as realloc leaves it
  std::memcpy(q, p, have);
  Free(p);
  return q;
}

void CodecMemory::Free(void* p) {
  if (p == nullptr) return;
  Header* h = HeaderOf(p);
  const uint32_t c = h->size_class;
  if (c == kDirect || t_state != kAlive) {
    std::free(h);
    return;
  }
  Lists& lists = t_lists;
  if (lists.count[c] * ClassBytes(c) >= kKeepBytes) {
    std::free(h);
    return;
  }
  ASAN_POISON_MEMORY_REGION(p, ClassBytes(c));
  h->next = lists.head[c];
  lists.head[c] = h;
  ++lists.count[c];
}

size_t CodecMemory::SpareBlocks(size_t size) {
  if (size > kLargestClass) return 0;
  Lists* lists = ThisThreadsLists();
  return lists == nullptr ? 0 : lists->count[ClassOf(size)];
}

}  // namespace uring_http::http2::internal
