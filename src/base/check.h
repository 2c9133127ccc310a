// URING_CHECK: states what must hold, and stops the process loudly when it
// does not. For invariants of our own state (a slot freed while the kernel
// still reads its buffer, a count gone negative), never for what a peer's
// bytes can cause: that is handled and answered. Always on: the conditions are
// a compare or two on data already in cache, and a server that carries on
// past a broken invariant corrupts other connections' bytes.
#ifndef URING_HTTP_SRC_BASE_CHECK_H_
#define URING_HTTP_SRC_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define URING_CHECK(cond)                                                          \
  do {                                                                             \
    if (!(cond)) [[unlikely]] {                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                \
    }                                                                              \
  } while (0)

#endif  // URING_HTTP_SRC_BASE_CHECK_H_
