// Arena: one anonymous memory mapping reserved at start-up, carved into the
// pieces an accept thread needs (provided receive buffers, the buffer-ring
// entries, fixed-size chunks for staging and responses). Nothing is returned
// to the arena: pieces live as long as the thread.
//
// ChunkPool: fixed-size chunks carved from an arena, handed out and taken back
// through a free list. When the pool is empty it falls back to the heap and
// counts it, so an unusual burst degrades speed instead of failing requests.
//
// Thread-safety: both belong to one thread.
#ifndef URING_HTTP_SRC_IO_ARENA_H_
#define URING_HTTP_SRC_IO_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace uring_http::io {

class Arena {
 public:
  // Maps `bytes` (rounded up to pages). Pages are touched lazily, so an arena
  // sized for the configured capacity costs resident memory only as it is used.
  static absl::StatusOr<Arena> Create(size_t bytes);
  Arena() = default;
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  ~Arena();

  // A piece of `bytes` aligned to `align` (a power of two), or null when the
  // arena is exhausted (a sizing bug: the caller reports it at start-up).
  char* Carve(size_t bytes, size_t align = 64);

  char* base() const { return base_; }
  size_t size() const { return size_; }
  // Gives the mapping up without unmapping it (what was carved stays
  // valid for the process's life).
  void Leak() {
    base_ = nullptr;
    size_ = used_ = 0;
  }
  size_t used() const { return used_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

class ChunkPool {
 public:
  ChunkPool() = default;
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;
  ~ChunkPool();
  // Carves `count` chunks of `chunk_size` bytes from `arena`.
  absl::Status Init(Arena& arena, size_t chunk_size, size_t count);

  // A chunk of chunk_size() bytes; never null.
  char* Acquire() {
    if (free_count_ > 0) [[likely]] return base_ + size_t{free_[--free_count_]} * chunk_size_;
    return AcquireFromHeap();
  }
  void Release(char* chunk) {
    if (chunk >= base_ && chunk < base_ + size_t{count_} * chunk_size_) [[likely]] {
      free_[free_count_++] = static_cast<uint32_t>((chunk - base_) / chunk_size_);
      return;
    }
    ReleaseToHeap(chunk);
  }

  size_t chunk_size() const { return chunk_size_; }
  size_t count() const { return count_; }
  size_t available() const { return free_count_; }
  // How many times the pool was empty and the heap served instead.
  uint64_t heap_fallbacks() const { return heap_fallbacks_; }
  // Heap chunks given back and kept for the next fallback: a burst that
  // outgrows the pool (a publish to 10,000 subscribers, each with a frame
  // queued) comes again, and malloc would otherwise trim the memory and
  // fault it back in every time. At most count() are kept; Trim() frees
  // them once bursts stop.
  size_t spare() const { return spare_.size(); }
  // Called on a timer: frees half the spare chunks when the heap served
  // none since the last call, so memory a burst took goes back within a
  // few calls of its end.
  void Trim();
  // The pool's memory, for registering it as an io_uring fixed buffer.
  char* base() const { return base_; }
  size_t bytes() const { return size_t{count_} * chunk_size_; }

 private:
  char* AcquireFromHeap();
  void ReleaseToHeap(char* chunk);

  char* base_ = nullptr;
  size_t chunk_size_ = 0;
  uint32_t count_ = 0;
  uint32_t free_count_ = 0;
  std::unique_ptr<uint32_t[]> free_;
  uint64_t heap_fallbacks_ = 0;
  std::vector<char*> spare_;
  bool heap_used_ = false;  // since the last Trim()
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_ARENA_H_
