// FileService: what one loop needs to serve static files: the open-file
// cache, the buffers file bytes are read into, and the SQEs for statx,
// openat2, read and close. It exists only when the router has Static()
// mounts; otherwise a loop holds none of it.
//
// Buffers: a fixed count carved from their own arena and registered with
// the ring as one fixed buffer, so a read is IORING_OP_READ_FIXED (no page
// pinning or user-copy checks per read). Where registering fails (the
// RLIMIT_MEMLOCK of a user without CAP_IPC_LOCK) plain reads are used.
//
// Splicing (large bodies): pipes made on first use and reused, each a pair
// of ordinary descriptors (splice needs a real pipe), at most max_pipes;
// when none is to be had the body is read instead.
//
// Descriptors: every file is opened into the ring's fixed-file table
// (IORING_FILE_INDEX_ALLOC), which the loop sized for the cache plus one
// file per connection; none of them counts against RLIMIT_NOFILE.
//
// Thread-safety: the loop's ring thread.
#ifndef URING_HTTP_SRC_SERVING_FILE_SERVICE_H_
#define URING_HTTP_SRC_SERVING_FILE_SERVICE_H_

#include <liburing.h>
#include <linux/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "src/files/open_file_cache.h"
#include "src/exchange/connection_env.h"
#include "src/io/arena.h"
#include "src/io/ring.h"

namespace uring_http::serving {

struct FileServiceConfig {
  files::OpenFileCacheLimits cache;
  uint32_t buffer_count = 256;
  uint32_t buffer_size = 64 * 1024;
  // Splicing: pipes of this size (F_SETPIPE_SZ; the kernel may give less),
  // at most max_pipes of them at once.
  uint32_t pipe_bytes = 1u << 20;
  uint32_t max_pipes = 256;
};

class FileService final : public files::FileCloser {
 public:
  FileService() = default;
  FileService(const FileService&) = delete;
  FileService& operator=(const FileService&) = delete;

  // `close_user_data`: what a close's completion carries (nobody waits).
  absl::Status Init(io::Ring* ring, const FileServiceConfig& config, uint64_t close_user_data);

  void PrepStat(int dir_fd, const char* path, struct statx* out, uint64_t user_data);
  void PrepOpen(int dir_fd, const char* path, bool check_only, uint64_t user_data);
  void PrepRead(int file_index, char* buf, uint32_t len, uint64_t offset, uint64_t user_data);
  // files::FileCloser: IORING_OP_CLOSE of the table entry.
  void CloseFile(int file_index) override;

  // Pipes for splicing, made on first use and kept for the next body.
  bool AcquirePipe(conn::Transport::Pipe* pipe);
  void ReleasePipe(const conn::Transport::Pipe& pipe, bool empty);
  void PrepSpliceToPipe(int file_index, uint64_t offset, int pipe_write, uint32_t len,
                        uint64_t user_data);
  void PrepSpliceToSocket(int pipe_read, uint32_t socket_index, uint32_t len, bool more,
                          uint64_t user_data);
  void PrepPollWritable(uint32_t socket_index, uint64_t user_data);
  ~FileService();

  files::OpenFileCache* cache() { return cache_ ? &*cache_ : nullptr; }
  io::ChunkPool* buffers() { return &buffers_; }
  bool fixed_buffers() const { return fixed_buffers_; }

  // The ring is going away (and with it the file table): closes are no
  // longer submitted.
  void Shutdown() { ring_ = nullptr; }

 private:
  io::Ring* ring_ = nullptr;
  io::Arena arena_;
  io::ChunkPool buffers_;
  bool fixed_buffers_ = false;
  uint64_t close_user_data_ = 0;
  uint32_t pipe_bytes_ = 0;
  uint32_t max_pipes_ = 0;
  uint32_t pipes_out_ = 0;  // given to connections
  std::vector<conn::Transport::Pipe> free_pipes_;
  std::optional<files::OpenFileCache> cache_;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_FILE_SERVICE_H_
