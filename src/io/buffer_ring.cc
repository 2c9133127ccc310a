#include "src/io/buffer_ring.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace uring_http::io {

absl::Status BufferRing::Init(io_uring* ring, Arena& arena, uint16_t group_id, uint32_t count,
                              uint32_t buffer_size) {
  if (count == 0 || (count & (count - 1)) != 0 || count > 32768) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer ring size ", count, " is not a power of two <= 32768"));
  }
  // liburing 2.3 has no io_uring_setup_buf_ring(): the entries array is carved
  // from the arena (page aligned, as the kernel requires) and registered by hand.
  ring_entries_ = reinterpret_cast<io_uring_buf_ring*>(
      arena.Carve(sizeof(io_uring_buf) * count, 4096));
  buffers_ = arena.Carve(size_t{count} * buffer_size, 4096);
  if (ring_entries_ == nullptr || buffers_ == nullptr) {
    return absl::ResourceExhaustedError("arena too small for the receive buffers");
  }
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(ring_entries_);
  reg.ring_entries = count;
  reg.bgid = group_id;
  int ret = io_uring_register_buf_ring(ring, &reg, 0);
  // ENOMEM here is the locked-memory limit (RLIMIT_MEMLOCK, per user, for
  // a process without CAP_IPC_LOCK). The kernel gives a closed ring's
  // memory back asynchronously, so a server started right after another
  // one stopped (a restart, the next test case) can find the limit still
  // taken by rings that are already gone: wait for them, briefly (start-up
  // only).
  for (int tries = 0; ret == -ENOMEM && tries < 50; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ret = io_uring_register_buf_ring(ring, &reg, 0);
  }
  if (ret < 0) {
    return absl::UnavailableError(absl::StrCat(
        "provided-buffer ring (Linux 5.19+) could not be registered: ", strerror(-ret)));
  }
  ring_ = ring;
  registered_ = true;
  count_ = count;
  buffer_size_ = buffer_size;
  group_id_ = group_id;
  mask_ = io_uring_buf_ring_mask(count);
  io_uring_buf_ring_init(ring_entries_);
  for (uint32_t i = 0; i < count; ++i) {
    io_uring_buf_ring_add(ring_entries_, Buffer(static_cast<uint16_t>(i)), buffer_size,
                          static_cast<uint16_t>(i), mask_, static_cast<int>(i));
  }
  io_uring_buf_ring_advance(ring_entries_, static_cast<int>(count));
  return absl::OkStatus();
}

BufferRing::~BufferRing() {
  if (registered_) io_uring_unregister_buf_ring(ring_, group_id_);
}

}  // namespace uring_http::io
