// LoopPlan: how one event loop's resources are sized, decided once at
// start-up from the configuration and the process's descriptor limit, so
// that the arithmetic can be read and tested apart from the ring.
//
// The fixed-file table bounds everything: it holds at most the hard
// RLIMIT_NOFILE entries (a larger sparse registration fails with EMFILE),
// and it must hold every connection, the acceptor's reserve for refusing
// at capacity, and, with static files, the open-file cache and files open
// outside it. Connections get what is left.
#ifndef URING_HTTP_SRC_SERVING_LOOP_PLAN_H_
#define URING_HTTP_SRC_SERVING_LOOP_PLAN_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "src/exchange/connection_env.h"
#include "src/serving/config.h"
#include "src/serving/file_service.h"

namespace uring_http::serving {

inline constexpr size_t kChunkSize = 4096;   // output and stream chunks
inline constexpr uint32_t kTickMs = 100;     // the loop's clock and timer granularity
// After --shutdown-timeout, the ticks a loop waits for its aborted
// connections' closes before it leaves those a handler still holds.
inline constexpr uint32_t kAbandonGraceTicks = 5;
// Fixed-file entries for files open outside the open-file cache.
inline constexpr uint32_t kUncachedFiles = 1024;

struct LoopPlan {
  uint32_t capacity = 0;          // connections at once
  uint32_t file_table_size = 0;   // fixed-file table entries
  uint32_t sq_entries = 0;
  uint32_t cq_entries = 0;
  uint32_t recv_buffers = 0;      // provided receive buffers (a power of two)
  uint32_t recv_buffer_size = 0;
  uint32_t bulk_buffers = 0;      // the large-body group (0: none)
  uint32_t bulk_buffer_size = 0;
  uint32_t chunks = 0;            // kChunkSize output chunks
  size_t arena_bytes = 0;         // all of the above, in one arena
  bool files = false;             // static mounts exist: file_service applies
  FileServiceConfig file_service;
};

// `file_table_limit`: the most entries a fixed-file table may have here
// (io::FileTableLimit()); `nofile_soft`/`nofile_hard` only name the limit in
// the error when it leaves no room for connections.
absl::StatusOr<LoopPlan> PlanLoop(const ServerConfig& config, bool files,
                                  uint64_t file_table_limit, uint64_t nofile_soft,
                                  uint64_t nofile_hard);

// What every connection of the loop is configured with.
exchange::ConnectionConfig ConnectionConfigFor(const ServerConfig& config, const LoopPlan& plan);

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_LOOP_PLAN_H_
