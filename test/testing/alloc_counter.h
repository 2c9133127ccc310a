// Counts every allocation of the test process while g_counting is true:
// linking this library replaces global operator new (all forms) and, unless
// a sanitizer interposes it itself, malloc. A test sets g_allocations to 0,
// g_counting to true, runs what must not allocate, sets g_counting to false
// and expects g_allocations == 0 (and shows the counter works by also
// counting something that does allocate). Tests using it link statically
// (linkstatic = True): in a shared library the replacements would lose to
// a sanitizer runtime loaded before it.
#ifndef URING_HTTP_TEST_TESTING_ALLOC_COUNTER_H_
#define URING_HTTP_TEST_TESTING_ALLOC_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace uring_http::testing {

extern std::atomic<uint64_t> g_allocations;
extern std::atomic<bool> g_counting;
// The bytes operator new has handed out and operator delete not taken
// back (malloc_usable_size of each block), always kept: the difference
// between two moments is what the process came to hold in between.
// (Aligned new, and malloc itself, are not in it.)
extern std::atomic<int64_t> g_live_bytes;

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_TESTING_ALLOC_COUNTER_H_
