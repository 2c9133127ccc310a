#include "test/testing/alloc_counter.h"

#include <malloc.h>

#include <cstdlib>
#include <new>

namespace uring_http::testing {
std::atomic<uint64_t> g_allocations{0};
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_live_bytes{0};
}  // namespace uring_http::testing

namespace {
using uring_http::testing::g_allocations;
using uring_http::testing::g_counting;

using uring_http::testing::g_live_bytes;

void Count() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}

void* Held(void* p) {
  if (p != nullptr) {
    g_live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  }
  return p;
}

void Free(void* p) {
  if (p == nullptr) return;
  g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

// Every C++ allocation in the process goes through these.
void* operator new(size_t size) {
  Count();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return Held(p);
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
// The nothrow forms too (std::stable_sort's temporary buffer uses one): a
// sanitizer's own nothrow new freed by the free() below is a mismatch.
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  Count();
  return Held(std::malloc(size == 0 ? 1 : size));
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, size_t) noexcept { Free(p); }
void operator delete[](void* p, size_t) noexcept { Free(p); }

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// And the C allocator too (the server's heap fallbacks use malloc). The
// sanitizers interpose malloc themselves, so under them only operator new
// is counted.
extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
#endif

