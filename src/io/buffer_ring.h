// BufferRing: a provided-buffer ring (IORING_REGISTER_PBUF_RING) whose
// buffers are carved from the thread's arena. Multishot receive picks a buffer
// from it for every completion, so receive memory is shared by all of the
// thread's connections and an idle connection holds none.
//
// Buffers go back with Recycle() as soon as their bytes are consumed (or
// copied): the kernel sees them again after the tail store in Recycle().
//
// Thread-safety: owned by the ring's thread.
#ifndef URING_HTTP_SRC_IO_BUFFER_RING_H_
#define URING_HTTP_SRC_IO_BUFFER_RING_H_

#include <liburing.h>

#include <cstdint>

#include "absl/status/status.h"
#include "src/io/arena.h"

namespace uring_http::io {

class BufferRing {
 public:
  BufferRing() = default;
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;
  ~BufferRing();

  // `count` must be a power of two (kernel limit 32768).
  absl::Status Init(io_uring* ring, Arena& arena, uint16_t group_id, uint32_t count,
                    uint32_t buffer_size);

  char* Buffer(uint16_t id) const { return buffers_ + size_t{id} * buffer_size_; }
  uint32_t buffer_size() const { return buffer_size_; }
  uint32_t count() const { return count_; }
  uint16_t group_id() const { return group_id_; }

  // Hands buffer `id` back to the kernel.
  void Recycle(uint16_t id) {
    io_uring_buf_ring_add(ring_entries_, Buffer(id), buffer_size_, id, mask_, 0);
    // Publishes the entry: a release store of the tail the kernel reads.
    io_uring_buf_ring_advance(ring_entries_, 1);
  }

 private:
  io_uring* ring_ = nullptr;
  io_uring_buf_ring* ring_entries_ = nullptr;
  char* buffers_ = nullptr;
  uint32_t count_ = 0;
  uint32_t buffer_size_ = 0;
  int mask_ = 0;
  uint16_t group_id_ = 0;
  bool registered_ = false;
};

}  // namespace uring_http::io

#endif  // URING_HTTP_SRC_IO_BUFFER_RING_H_
