#include "src/async/frame_pool.h"

#include <bit>
#include <new>


namespace uring_http::async {

// Before every frame: 16 bytes keep the frame itself max-aligned.
struct alignas(16) FramePool::Prefix {
  FramePool* pool;  // null: the heap's
  uint32_t cls;     // kClasses: oversized (the heap's, pool counts it)
};


namespace {
// Frames per slab: a slab is one heap allocation for many frames.
constexpr size_t kSlabFrames = 64;
}  // namespace

FramePool::FramePool(size_t preallocate) {
  if (preallocate == 0) return;
  for (size_t cls = 0; cls < kClasses; ++cls) Grow(cls, preallocate);
  stats_.slabs = 0;  // made at start-up: not the hot path's
}

// Every frame has come back by now: the loop destroys its exchanges (and
// their coroutines) before its pool.
FramePool::~FramePool() = default;

size_t FramePool::ClassBytes(size_t cls) {
  return cls < kFineClasses ? kMinFrame + kFineStep * cls : kFineMax << (cls - kFineClasses + 1);
}

size_t FramePool::ClassOf(size_t bytes) {
  if (bytes <= kMinFrame) return 0;
  if (bytes <= kFineMax) return (bytes - kMinFrame + kFineStep - 1) / kFineStep;  // 129..192 -> 1
  if (bytes > kMaxFrame) return kClasses;
  return static_cast<size_t>(std::bit_width(bytes - 1)) - 11 + kFineClasses;  // 1025..2048 -> 15
}

void FramePool::Grow(size_t cls, size_t frames) {
  const size_t block = sizeof(Prefix) + ClassBytes(cls);
  slabs_.push_back(std::make_unique<std::byte[]>(block * frames));
  std::byte* base = slabs_.back().get();
  for (size_t i = 0; i < frames; ++i) Give(cls, base + i * block);
  ++stats_.slabs;
}

void* FramePool::Take(size_t cls) {
  if (free_[cls] == nullptr) Grow(cls, kSlabFrames);
  FreeFrame* f = free_[cls];
  free_[cls] = f->next;
  return f;
}

void FramePool::Give(size_t cls, void* block) {
  auto* f = static_cast<FreeFrame*>(block);
  f->next = free_[cls];
  free_[cls] = f;
}

void* FramePool::Allocate(size_t n) {
  static_assert(sizeof(Prefix) == 16);
  FramePool* pool = current_;
  const size_t cls = ClassOf(n);
  void* block;
  if (pool != nullptr && cls < kClasses) {
    block = pool->Take(cls);
  } else {
    block = ::operator new(sizeof(Prefix) + n);
    if (pool != nullptr) ++pool->stats_.oversized;
  }
  if (pool != nullptr) ++pool->stats_.in_use;
  auto* prefix = new (block) Prefix{pool, static_cast<uint32_t>(cls < kClasses ? cls : kClasses)};
  return prefix + 1;
}

void FramePool::Free(void* frame) {
  Prefix* prefix = static_cast<Prefix*>(frame) - 1;
  FramePool* pool = prefix->pool;
  if (pool != nullptr) --pool->stats_.in_use;
  if (pool == nullptr || prefix->cls == kClasses) {
    ::operator delete(prefix);
  } else {
    pool->Give(prefix->cls, prefix);
  }
}

}  // namespace uring_http::async
