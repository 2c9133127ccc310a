// Listening sockets passed by systemd's socket activation (the sd_listen_fds
// protocol, read directly: no libsystemd). A .socket unit opens the sockets;
// systemd starts the service with them as descriptors 3, 4, ... and says so
// in LISTEN_FDS (how many) and LISTEN_PID (for which process: a variable
// inherited by a child is not for the child).
//
// Thread-safety: ParseListenFds is a pure function. TakeListenFds changes
// the environment: call it before any thread that may read the environment
// starts (Server::Run does, at its very beginning).
#ifndef URING_HTTP_SRC_IO_LISTEN_FDS_H_
#define URING_HTTP_SRC_IO_LISTEN_FDS_H_

#include <sys/types.h>

#include <vector>

#include "absl/status/statusor.h"

namespace uring_http::io {

// The first descriptor systemd passes (SD_LISTEN_FDS_START).
inline constexpr int kListenFdsStart = 3;

// How many descriptors are passed to process `self`, from the variables'
// values (null: unset). 0 when they are unset or LISTEN_PID names another
// process; InvalidArgument when they are set for us but malformed (not a
// plain decimal, zero, or more than `max` descriptors).
absl::StatusOr<int> ParseListenFds(const char* listen_pid, const char* listen_fds, pid_t self,
                                   int max = 256);

// The descriptors systemd passed to this process (empty: none). Unsets
// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES, so that a program this process
// starts does not take them too, and marks the descriptors close-on-exec.
// InvalidArgument when the variables are malformed or a descriptor is not
// open.
absl::StatusOr<std::vector<int>> TakeListenFds();

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_LISTEN_FDS_H_
