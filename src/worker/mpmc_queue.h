// Bounded lock-free multi-producer/multi-consumer queue that carries slow
// tasks from the io_uring accept threads to the worker threads. It is
// Dmitry Vyukov's bounded MPMC queue: every cell carries a sequence number
// that says whose turn it is (a producer's for lap N, or a consumer's), so a
// push or pop costs one CAS on a position plus one acquire load and one
// release store on the cell, and no thread ever waits for another.
//
// Full and empty are reported, never waited on: the caller decides whether to
// answer 503, run the task inline or retry. All memory is allocated by the
// constructor; TryPush and TryPop never allocate (beyond what T's own copy
// may do).
//
// Thread-safety: TryPush, TryPop, capacity and ApproxSize may be called from
// any number of threads at once. Construction and destruction must not race
// with anything.
#ifndef URING_HTTP_SRC_WORKER_MPMC_QUEUE_H_
#define URING_HTTP_SRC_WORKER_MPMC_QUEUE_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace uring_http::worker {

template <typename T>
class MpmcQueue {
  // A pop moves the element out and a push moves it in after the cell has
  // been claimed; an exception there would leave a claimed cell that is never
  // published, and every consumer behind it would see "empty" forever.
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "MpmcQueue<T> needs a noexcept move constructor");
  static_assert(std::is_nothrow_move_assignable_v<T>,
                "MpmcQueue<T> needs a noexcept move assignment");
  static_assert(std::is_nothrow_destructible_v<T>,
                "MpmcQueue<T> needs a noexcept destructor");

 public:
  // Rounds min_capacity up to a power of two, and to at least 2: with a
  // single cell, "full at lap N" and "empty at lap N+1" carry the same
  // sequence number and a producer would overwrite an unread element.
  explicit MpmcQueue(size_t min_capacity)
      : mask_(RoundUpCapacity(min_capacity) - 1),
        cells_(std::make_unique<Cell[]>(mask_ + 1)) {
    for (size_t i = 0; i <= mask_; ++i) {
      // Relaxed: whoever hands the queue to other threads (thread creation,
      // a mutex, a release store) publishes these along with the object.
      cells_[i].sequence.store(i, std::memory_order_relaxed);
    }
  }

  MpmcQueue(const MpmcQueue&) = delete;
  MpmcQueue& operator=(const MpmcQueue&) = delete;
  MpmcQueue(MpmcQueue&&) = delete;
  MpmcQueue& operator=(MpmcQueue&&) = delete;

  ~MpmcQueue() {
    // No other thread may be using the queue any more, so every claimed cell
    // between the two positions has been published and holds an element.
    const size_t end = enqueue_pos_.load(std::memory_order_relaxed);
    for (size_t pos = dequeue_pos_.load(std::memory_order_relaxed); pos != end;
         ++pos) {
      cells_[pos & mask_].element()->~T();
    }
  }

  // Returns false when the queue is full; `value` is then left untouched, so
  // the caller still owns it.
  bool TryPush(T&& value) {
    return Push([&value](void* storage) {
      ::new (storage) T(std::move(value));
    });
  }

  bool TryPush(const T& value)
    requires std::is_copy_constructible_v<T>
  {
    if constexpr (std::is_nothrow_copy_constructible_v<T>) {
      return Push([&value](void* storage) { ::new (storage) T(value); });
    } else {
      // Copy before claiming a cell: a throwing copy after the claim would
      // wedge the queue (see the static_asserts above).
      T copy(value);
      return TryPush(std::move(copy));
    }
  }

  // Returns false when the queue is empty, or when the oldest cell has been
  // claimed by a producer that has not finished writing it yet (the caller
  // simply tries again later).
  bool TryPop(T& out) {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      // Acquire: pairs with the producer's release store of pos + 1, so the
      // element it constructed is visible before we move from it.
      const size_t seq = cell->sequence.load(std::memory_order_acquire);
      const auto diff =
          static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        // Relaxed: the CAS only decides which consumer owns the cell; the
        // element itself is ordered by the cell's sequence, not by position.
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1,
                                               std::memory_order_relaxed)) {
          break;
        }
        // On failure `pos` now holds the current position; retry with it.
      } else if (diff < 0) {
        return false;
      } else {
        // Another consumer took this cell since we read the position.
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
    T* element = cell->element();
    out = std::move(*element);
    element->~T();
    // Release: our move-out and destruction happen before the producer of
    // the next lap (which acquires this value) constructs into the storage.
    cell->sequence.store(pos + mask_ + 1, std::memory_order_release);
    return true;
  }

  size_t capacity() const { return mask_ + 1; }

  // For metrics only: the two positions are read at different instants, so
  // the result may be stale; it is clamped to [0, capacity()].
  size_t ApproxSize() const {
    const size_t dequeued = dequeue_pos_.load(std::memory_order_relaxed);
    const size_t enqueued = enqueue_pos_.load(std::memory_order_relaxed);
    if (enqueued <= dequeued) return 0;
    const size_t size = enqueued - dequeued;
    return size < capacity() ? size : capacity();
  }

 private:
  // The sequence says whose turn the cell is. For position `pos` mapping to
  // this cell: seq == pos means a producer may claim it; seq == pos + 1 means
  // it holds an element a consumer may claim; after the pop, seq becomes
  // pos + capacity, i.e. the producer's turn one lap later.
  struct Cell {
    std::atomic<size_t> sequence;
    // Raw storage rather than a T member: T need not be default
    // constructible, and an empty cell holds no live object to destroy.
    alignas(T) std::byte storage[sizeof(T)];

    T* element() { return std::launder(reinterpret_cast<T*>(storage)); }
  };

  // Positions are compared as signed differences, which stays correct as
  // long as a capacity is far below half the size_t range.
  static constexpr size_t kMaxCapacity =
      size_t{1} << (std::numeric_limits<size_t>::digits - 2);
  // A typical x86-64/ARM64 cache line. Not
  // std::hardware_destructive_interference_size: g++ warns that its value may
  // differ between translation units, which matters for a header.
  static constexpr size_t kCacheLine = 64;

  static size_t RoundUpCapacity(size_t min_capacity) {
    if (min_capacity > kMaxCapacity) {
      // A capacity this large is a configuration bug, not a runtime state.
      std::fprintf(stderr, "MpmcQueue: capacity %zu exceeds the maximum %zu\n",
                   min_capacity, kMaxCapacity);
      std::abort();
    }
    return min_capacity < 2 ? 2 : std::bit_ceil(min_capacity);
  }

  // Claims the next free cell, lets `construct` build the element into it and
  // publishes it. `construct` must not throw.
  template <typename Construct>
  bool Push(Construct&& construct) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      // Acquire: pairs with the consumer's release store after it moved the
      // previous lap's element out, so we never construct over an element
      // that is still being read.
      const size_t seq = cell->sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        // Relaxed: the CAS only decides which producer owns the cell; the
        // element is published by the cell's sequence store below.
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1,
                                               std::memory_order_relaxed)) {
          break;
        }
      } else if (diff < 0) {
        // The cell still holds the element from one lap ago: full.
        return false;
      } else {
        // Another producer took this cell since we read the position.
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
    construct(static_cast<void*>(cell->storage));
    // Release: the constructed element happens-before the consumer's acquire
    // load that sees pos + 1.
    cell->sequence.store(pos + 1, std::memory_order_release);
    return true;
  }

  // Read-only after construction; shares no line with the positions, which
  // every push or pop writes.
  const size_t mask_;
  const std::unique_ptr<Cell[]> cells_;

  // Producers and consumers each hammer their own position; on one shared
  // line every push would invalidate every consumer's cache and vice versa.
  alignas(kCacheLine) std::atomic<size_t> enqueue_pos_{0};
  alignas(kCacheLine) std::atomic<size_t> dequeue_pos_{0};
  // The class alignment (64) pads the object to whole lines, so whatever
  // follows it in memory does not share dequeue_pos_'s line.
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_MPMC_QUEUE_H_
