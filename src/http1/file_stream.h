// FileStream: a connection's static-file answer in progress, from the path
// it looks up to the last body byte the kernel has sent.
//
// Step (what the file answer waits for):
//   kIdle   no file answer
//   kStat   a statx of the path (a cache miss, or an entry older than the
//           valid interval)
//   kOpen   its openat2 into a direct descriptor
//   kCheck  the statx found a directory (the answer is a redirect to
//           "dir/") or was refused (403): an openat2 (O_PATH) of the path
//           beneath the root first, because the statx follows symbolic
//           links anywhere and neither answer may tell what lies outside
//   kLoad   a read of a small file's whole content into the cache's memory
//   kBody   the body: reads into the loop's file buffers (or the cached
//           content), queued for sending as the output queue has room; or,
//           for a large one, spliced: file -> pipe (kFill), then, once the
//           head has gone, pipe -> socket (kDrain), a pipe's worth at a time
// Either way, a socket without room is waited for with a poll (kPoll)
// holding no buffer: read bytes the socket did not take are given back by
// the output queue (TakeBackOutput) and read again when it has room, so
// that stalled readers cannot starve the others of the loop's buffers.
//   kProbe  a statx of a precompressed sibling ("path.gz", ".br", ".zst"
//           in turn) whose presence the cache does not know (the mount
//           asked for them: StaticOptions::precompressed). A sibling chosen
//           is then looked up as the file itself is (kStat, kOpen), with
//           `encoding` set; should it fail, the original is looked up again.
//   kDone   every body byte is queued (or the answer was cut short):
//           waiting for the kernel to finish with them
// At most one ring operation is in flight (`inflight`): its completion
// comes back even after the connection closed, and writes into this state
// (the statx buffer, a file buffer), so the state lives until then.
//
// The stream owns what its queued bytes live in: file buffers go back to
// the pool, and the cache entry (or the descriptor it opened outside the
// cache) stays referenced, until the output queue releases them (it is the
// queue's ExternalOwner for those segments).
//
// Thread-safety: the connection's ring thread.
#ifndef URING_HTTP_SRC_HTTP1_FILE_STREAM_H_
#define URING_HTTP_SRC_HTTP1_FILE_STREAM_H_

#include <linux/stat.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/files/encodings.h"
#include "src/files/open_file_cache.h"
#include "src/files/url_path.h"
#include "src/files/validators.h"
#include "src/exchange/connection_env.h"
#include "src/http1/output_queue.h"
#include "src/io/arena.h"
#include "src/router/router.h"

namespace uring_http::http1 {

using files::VersionOf;  // a file's version from its statx (validators.h)

struct FileStream final : ExternalOwner {
  enum class Step : uint8_t { kIdle, kStat, kOpen, kCheck, kLoad, kProbe, kBody, kDone };

  // Room for a resolved path, the "/index.html" a directory adds and a
  // sibling's ".zst".
  static constexpr size_t kPathRoom = files::kMaxPathBytes + 24;

  // How far the choice of the encoded variant got (file_variants.cc).
  // kLoaded: decided, and the content was read in to be gzipped (once).
  enum class Variant : uint8_t { kUndecided, kProbed, kDecided, kLoaded };

  // The body's operation in flight, besides a read: a splice into the
  // pipe, out of it to the socket, or the poll for the socket's room.
  enum class Op : uint8_t { kNone, kFill, kDrain, kPoll };

  Step step = Step::kIdle;
  bool inflight = false;      // a stat, open, read, splice or poll is with the kernel
  bool splice = false;        // the body goes file -> pipe -> socket
  Op op = Op::kNone;
  bool yield_after_read = false;  // the socket filled while a read was in flight
  conn::Transport::Pipe pipe;  // while splicing
  uint32_t in_pipe = 0;       // bytes in the pipe, not yet on the socket
  bool index = false;         // `path` is a directory's index.html
  int stat_errno = 0;         // kCheck: the statx's error (0: a directory)
  bool aborted = false;       // the connection gave up on this answer
  const router::FileMount* mount = nullptr;
  uint32_t path_len = 0;
  char path[kPathRoom];       // NUL-terminated, relative to the mount's root
  struct statx stx;           // kStat's result
  files::FileVersion version;
  files::OpenFileCache::Entry* entry = nullptr;  // referenced while set
  int own_index = -1;         // a descriptor opened outside the cache
  Variant variant = Variant::kUndecided;
  uint8_t probe = 0;          // kProbe: index into files::kSiblingEncodings
  uint8_t siblings = 0;       // kProbed: the siblings found (EncodingBit)
  bool vary = false;          // the answer could differ by Accept-Encoding
  bool gzip = false;          // the body is the cache entry's gzip
  bool reload = false;        // kLoad: ServeFile again once loaded (for gzip)
  files::Encoding encoding = files::Encoding::kIdentity;  // a sibling's
  uint32_t base_len = 0;      // the original's path length (a sibling's is longer)
  files::FileVersion base_version;  // the original's (siblings must not be older)
  uint64_t next = 0;          // the next body byte to read (file offset)
  uint64_t end = 0;           // one past the last body byte
  char* read_buf = nullptr;   // the buffer the read in flight fills
  uint32_t read_len = 0;
  io::ChunkPool* buffers = nullptr;

  std::string_view path_view() const { return {path, path_len}; }
  // The file the request named (a sibling's path without its suffix).
  std::string_view base_path() const {
    return {path, encoding == files::Encoding::kIdentity ? path_len : base_len};
  }
  int file_index() const { return entry != nullptr ? entry->file_index() : own_index; }
  bool idle() const { return step == Step::kIdle; }
  // A splice to the socket or the wait for its room: the socket is ours
  // alone until it completes (no send may interleave).
  bool socket_busy() const { return op == Op::kDrain || op == Op::kPoll; }
  // Body bytes the output queue holds (appended, not yet released).
  size_t queued() const { return queued_bytes_; }

  // Bytes appended to the output queue, from `buffer` (a file buffer that
  // goes back to the pool once released) or null (the cache's content).
  void Queued(char* buffer, size_t n) {
    URING_CHECK(fifo_count_ < kFifo);
    fifo_[(fifo_head_ + fifo_count_) % kFifo] = {buffer, n};
    ++fifo_count_;
    queued_bytes_ += n;
  }
  // The output queue is done with the oldest segment (in order).
  void ReleaseOutput(size_t bytes) override {
    URING_CHECK(fifo_count_ > 0);
    Piece& p = fifo_[fifo_head_];
    URING_CHECK(p.len == bytes);
    if (p.buffer != nullptr) buffers->Release(p.buffer);
    fifo_head_ = static_cast<uint8_t>((fifo_head_ + 1) % kFifo);
    --fifo_count_;
    queued_bytes_ -= bytes;
  }
  // The output queue gave back the newest `bytes` unsent (the socket had
  // no room): a buffer left empty goes back to the pool at once.
  void TakeBackOutput(size_t bytes) override {
    URING_CHECK(fifo_count_ > 0);
    Piece& p = fifo_[(fifo_head_ + fifo_count_ - 1) % kFifo];
    URING_CHECK(bytes <= p.len);
    p.len -= bytes;
    queued_bytes_ -= bytes;
    if (p.len == 0) {
      if (p.buffer != nullptr) buffers->Release(p.buffer);
      --fifo_count_;
    }
  }

 private:
  static constexpr unsigned kFifo = OutputQueue::kMaxSegments;
  struct Piece {
    char* buffer;
    size_t len;
  };
  Piece fifo_[kFifo];
  uint8_t fifo_head_ = 0;
  uint8_t fifo_count_ = 0;
  size_t queued_bytes_ = 0;
};

}  // namespace uring_http::http1

#endif  // URING_HTTP_SRC_HTTP1_FILE_STREAM_H_
