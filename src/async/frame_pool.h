// FramePool: where a ring thread's coroutine frames come from (task.h's
// promise allocates through it), so that a steady-state ASYNC request
// allocates nothing. A frame's size is fixed by its coroutine's code, so a
// few size classes with a free list each serve them all: 64-byte steps from
// 128 B to 1 KiB, where most frames are (a frame an open stream keeps is
// held as long as it is open: /test/events' 296 bytes took 512 when the
// classes were powers of two), then 2 and 4 KiB; a class that runs dry takes a slab of frames from the
// heap (counted: after warm-up that count stops moving), and a frame larger
// than the largest class goes to the heap each time (counted apart).
//
// Each frame carries a 16-byte prefix naming its pool and class, so it goes
// back where it came from whatever the thread's current pool is by then. A
// frame made on a thread without a pool (a unit test, a helper thread)
// comes from the heap.
//
// Thread-safety: a pool belongs to one thread (its ring's); frames are made
// and freed there.
#ifndef URING_HTTP_SRC_ASYNC_FRAME_POOL_H_
#define URING_HTTP_SRC_ASYNC_FRAME_POOL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace uring_http::async {

class FramePool {
 public:
  static constexpr size_t kMinFrame = 128;
  static constexpr size_t kFineStep = 64;
  static constexpr size_t kFineMax = 1024;
  static constexpr size_t kFineClasses = (kFineMax - kMinFrame) / kFineStep + 1;  // 128 ... 1024
  static constexpr size_t kClasses = kFineClasses + 2;                            // 2048, 4096
  static constexpr size_t kMaxFrame = 4096;

  // `preallocate`: frames of each class made now.
  explicit FramePool(size_t preallocate = 0);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // The calling thread's pool (null: none, frames come from the heap).
  static FramePool* Current() { return current_; }
  static void SetCurrent(FramePool* pool) { current_ = pool; }

  // From the current pool, or the heap.
  static void* Allocate(size_t n);
  static void Free(void* frame);

  struct Stats {
    uint64_t slabs = 0;        // heap allocations for slabs of frames
    uint64_t oversized = 0;    // frames above kMaxFrame, each from the heap
    uint64_t in_use = 0;       // frames out now
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Prefix;
  struct FreeFrame {
    FreeFrame* next;
  };
  static size_t ClassOf(size_t bytes);  // kClasses: past kMaxFrame
  static size_t ClassBytes(size_t cls);
  void* Take(size_t cls);
  void Give(size_t cls, void* block);
  void Grow(size_t cls, size_t frames);

  static constinit inline thread_local FramePool* current_ = nullptr;
  std::array<FreeFrame*, kClasses> free_{};
  std::vector<std::unique_ptr<std::byte[]>> slabs_;
  Stats stats_;
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_FRAME_POOL_H_
