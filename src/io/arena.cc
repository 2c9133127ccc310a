#include "src/io/arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uring_http::io {

absl::StatusOr<Arena> Arena::Create(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of a ", bytes, "-byte arena: ", strerror(errno)));
  }
  Arena arena;
  arena.base_ = static_cast<char*>(p);
  arena.size_ = bytes;
  return arena;
}

Arena::Arena(Arena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      used_(std::exchange(other.used_, 0)) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    used_ = std::exchange(other.used_, 0);
  }
  return *this;
}

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, size_);
}

char* Arena::Carve(size_t bytes, size_t align) {
  // The address is aligned, not just the offset: the base is only page aligned.
  const uintptr_t base = reinterpret_cast<uintptr_t>(base_);
  const size_t start = ((base + used_ + align - 1) & ~(uintptr_t{align} - 1)) - base;
  // Compared without start + bytes, which wraps for a huge request.
  if (start > size_ || bytes > size_ - start) return nullptr;
  used_ = start + bytes;
  return base_ + start;
}

absl::Status ChunkPool::Init(Arena& arena, size_t chunk_size, size_t count) {
  // chunk_size * count must not wrap, and chunk indices are 32-bit.
  if (count > UINT32_MAX || (chunk_size != 0 && count > SIZE_MAX / chunk_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat(count, " chunks of ", chunk_size, " bytes do not fit an address space"));
  }
  base_ = arena.Carve(chunk_size * count, 4096);
  if (base_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("arena too small for ", count, " chunks of ", chunk_size, " bytes"));
  }
  chunk_size_ = chunk_size;
  count_ = static_cast<uint32_t>(count);
  free_ = std::make_unique<uint32_t[]>(count);
  // Hand out low addresses first so that a lightly loaded thread keeps
  // touching the same few pages.
  for (uint32_t i = 0; i < count_; ++i) free_[i] = count_ - 1 - i;
  free_count_ = count_;
  return absl::OkStatus();
}

ChunkPool::~ChunkPool() {
  for (char* chunk : spare_) std::free(chunk);
}

char* ChunkPool::AcquireFromHeap() {
  ++heap_fallbacks_;
  heap_used_ = true;
  if (!spare_.empty()) {
    char* chunk = spare_.back();
    spare_.pop_back();
    return chunk;
  }
  return static_cast<char*>(std::malloc(chunk_size_));
}

void ChunkPool::ReleaseToHeap(char* chunk) {
  if (spare_.size() < count_) {
    // (Its capacity grows once, to at most count() pointers.)
    spare_.push_back(chunk);
    return;
  }
  std::free(chunk);
}

void ChunkPool::Trim() {
  if (heap_used_) {
    heap_used_ = false;
    return;
  }
  const size_t keep = spare_.size() / 2;
  for (size_t i = keep; i < spare_.size(); ++i) std::free(spare_[i]);
  spare_.resize(keep);
  if (spare_.empty()) std::vector<char*>().swap(spare_);
}

}  // namespace uring_http::io
