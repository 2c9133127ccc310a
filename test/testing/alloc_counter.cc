#include "test/testing/alloc_counter.h"

#include <cstdlib>
#include <new>

namespace uring_http::testing {
std::atomic<uint64_t> g_allocations{0};
std::atomic<bool> g_counting{false};
}  // namespace uring_http::testing

namespace {
using uring_http::testing::g_allocations;
using uring_http::testing::g_counting;

void Count() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}
}  // namespace

// Every C++ allocation in the process goes through these.
void* operator new(size_t size) {
  Count();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
// The nothrow forms too (std::stable_sort's temporary buffer uses one): a
// sanitizer's own nothrow new freed by the free() below is a mismatch.
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  Count();
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

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

