// SizeClassMemory: per-thread free lists of size classes, for memory whose
// size varies but whose churn must not reach malloc on a warm ring thread:
//   - the HTTP/2 codec's (libnghttp2's, through the nghttp2_mem the Session
//     gives it). Every request costs nghttp2 four allocations and seven
//     frees (its stream, two outbound items, the response's copied header
//     list); through malloc those were about 740 instructions of a
//     12,700-instruction h2c request (callgrind);
//   - a SLOW or ASYNC request's TaskBuffer (worker/slow_task.h), made as
//     large as its request needs: a 4 KiB page each, as it was, made an
//     open event stream hold 5.4 KB.
// A block of up to 4 KiB comes from a free list of its size class and goes
// back to it, so a warm ring thread reaches the heap not at all.
//
// Per thread, not per owner: a ring thread's sessions and tasks share the
// lists, so an idle connection keeps no spare blocks of its own (idle
// memory is one of HTTP/2's targets), and what a thread keeps is what its
// busiest moment needed, up to kKeepBytes per class; past that, blocks go
// back to malloc.
// A block is plain malloc memory with no header (its class is read back
// from malloc_usable_size), so one freed on another thread than the one
// that made it joins that thread's lists, and one freed after its thread's
// lists are gone goes straight to free().
//
// Thread-safety: each thread has its own lists; the functions are safe to
// call from any thread.
#ifndef URING_HTTP_SRC_BASE_SIZE_CLASS_MEMORY_H_
#define URING_HTTP_SRC_BASE_SIZE_CLASS_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace uring_http::base {

struct SizeClassMemory {
  // Size classes of 16, 32, ... 256 bytes, then 320, 384, ... 1,024, then
  // 1,152, 1,280, ... 4,096; a larger block is malloc's alone.
  static constexpr int kClasses = 52;
  static constexpr size_t kLargestClass = 4096;
  // Spare bytes kept per class per thread.
  static constexpr size_t kKeepBytes = 128 * 1024;
  // Blocks a dry list takes from the heap at once (one of them returned).
  static constexpr uint32_t kRefill = 8;
  static_assert(kKeepBytes / 4096 >= kRefill);

  // As malloc, calloc, realloc and free (null and zero sizes as they have
  // them). `heap_allocations`, when given, counts the calls that reached
  // the heap rather than a list. AllocateZeroed always does (it is calloc,
  // for the session's own state).
  static void* Allocate(size_t size, uint64_t* heap_allocations);
  static void* AllocateZeroed(size_t count, size_t size, uint64_t* heap_allocations);
  static void* Reallocate(void* p, size_t size, uint64_t* heap_allocations);
  static void Free(void* p);

  // The bytes a block allocated for `size` holds: its class's, or at least
  // `size` past the largest class. (What a caller may use of it.)
  static size_t BlockBytes(size_t size);

  // This thread's spare blocks of the class that serves `size` (0 for a
  // size past the largest class), for tests.
  static size_t SpareBlocks(size_t size);
};

}  // namespace uring_http::base

#endif  // URING_HTTP_SRC_BASE_SIZE_CLASS_MEMORY_H_
