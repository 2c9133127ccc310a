// Probes of optional kernel features, in one place, each run once at
// start-up: what a feature needs beyond its opcode is checked here too, so
// the server uses a feature only where it behaves as the code expects, and
// the ready line can say which it uses.
//
// Thread-safety: any thread (each probe runs on the calling thread's ring or
// a private one).
#ifndef URING_HTTP_SRC_IO_KERNEL_FEATURES_H_
#define URING_HTTP_SRC_IO_KERNEL_FEATURES_H_

#include <liburing.h>

namespace uring_http::io {

// IORING_OP_SEND_ZC with usage reports: the opcode is 6.0, but the report
// (which the server relies on) is 6.2 and has no feature bit of its own, so
// both the probe and the version count.
bool SendZcSupported(io_uring* ring);

// IORING_OP_MSG_RING without a source ring (IORING_REGISTER_SEND_MSG_RING,
// Linux 6.13): a worker can post to a ring with one syscall and no ring of
// its own.
bool RinglessMsgRingSupported();

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_KERNEL_FEATURES_H_
