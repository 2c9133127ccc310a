// io_uring constants newer than the installed headers (liburing 2.3, uapi at
// Linux 6.1). The running kernel may be far newer; every optional feature
// named here is probed at start-up and used only when the probe succeeds.
#ifndef URING_HTTP_SRC_IO_URING_COMPAT_H_
#define URING_HTTP_SRC_IO_URING_COMPAT_H_

#include <liburing.h>

// Linux 6.13: IORING_OP_MSG_RING without a source ring, as a synchronous
// io_uring_register(-1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1).
#ifndef IORING_REGISTER_SEND_MSG_RING
#define IORING_REGISTER_SEND_MSG_RING 31
#endif

// Linux 6.0: cancel requests by fixed descriptor.
#ifndef IORING_ASYNC_CANCEL_FD_FIXED
#define IORING_ASYNC_CANCEL_FD_FIXED (1U << 3)
#endif

// Linux 6.7: socket commands through IORING_OP_URING_CMD (cmd_op in sqe->off).
#ifndef SOCKET_URING_OP_GETSOCKOPT
#define SOCKET_URING_OP_GETSOCKOPT 2
#endif

// Linux 6.2: a zero-copy send's notification reports whether the kernel
// copied after all (sqe->ioprio flag; bit in the notification's res).
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

// Linux 6.10: an accept that returns -EAGAIN at once instead of waiting
// (sqe->ioprio flag); older kernels refuse it with -EINVAL.
#ifndef IORING_ACCEPT_DONTWAIT
#define IORING_ACCEPT_DONTWAIT (1U << 1)
#endif

#endif  // URING_HTTP_SRC_IO_URING_COMPAT_H_
