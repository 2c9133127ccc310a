// TimerWheel: every connection timeout of one ring thread in one hashed
// wheel, advanced by a single IORING_OP_TIMEOUT tick, instead of one timer SQE
// per connection. Scheduling, moving and cancelling a timer are a few index
// writes (intrusive lists over arrays indexed by connection slot); a tick
// visits only the bucket that came due.
//
// Thread-safety: owned by the ring thread.
#ifndef URING_HTTP_SRC_SERVING_TIMER_WHEEL_H_
#define URING_HTTP_SRC_SERVING_TIMER_WHEEL_H_

#include <cstdint>
#include <memory>

namespace uring_http::serving {

class TimerWheel {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // `slots` timers (one per connection slot), `buckets` a power of two.
  void Init(uint32_t slots, uint32_t buckets, uint64_t now_tick) {
    nodes_ = std::make_unique<Node[]>(slots);
    heads_ = std::make_unique<uint32_t[]>(buckets);
    for (uint32_t i = 0; i < buckets; ++i) heads_[i] = kNone;
    mask_ = buckets - 1;
    current_ = now_tick;
  }

  // (Re)schedules `slot` to expire at `deadline` (in ticks).
  void Schedule(uint32_t slot, uint64_t deadline) {
    Cancel(slot);
    if (deadline <= current_) deadline = current_ + 1;
    Node& n = nodes_[slot];
    n.deadline = deadline;
    n.extended = 0;
    n.linked = true;
    uint32_t& head = heads_[deadline & mask_];
    n.prev = kNone;
    n.next = head;
    if (head != kNone) nodes_[head].prev = slot;
    head = slot;
    ++size_;
  }

  // Moves `slot`'s deadline later without touching the wheel: the entry
  // stays where it is and, when it comes due, is re-filed at the new
  // deadline. Keep-alive traffic pushes the same timer forward on every
  // request; this makes that a single store. An earlier deadline, or a slot
  // not scheduled, is a plain Schedule().
  void Extend(uint32_t slot, uint64_t deadline) {
    Node& n = nodes_[slot];
    if (n.linked && deadline >= n.deadline) {
      n.extended = deadline;
      return;
    }
    Schedule(slot, deadline);
  }

  void Cancel(uint32_t slot) {
    Node& n = nodes_[slot];
    if (!n.linked) return;
    if (n.prev != kNone) {
      nodes_[n.prev].next = n.next;
    } else {
      heads_[n.deadline & mask_] = n.next;
    }
    if (n.next != kNone) nodes_[n.next].prev = n.prev;
    n.linked = false;
    --size_;
  }

  bool scheduled(uint32_t slot) const { return nodes_[slot].linked; }
  // The effective deadline (an Extend() included).
  uint64_t deadline(uint32_t slot) const {
    const Node& n = nodes_[slot];
    return n.extended > n.deadline ? n.extended : n.deadline;
  }
  uint32_t size() const { return size_; }

  // Expires every timer due at or before `now`, calling expire(slot) after
  // unlinking it (so expire may schedule it again).
  template <typename F>
  void Advance(uint64_t now, F&& expire) {
    uint64_t steps = now > current_ ? now - current_ : 0;
    if (steps > mask_ + 1) steps = mask_ + 1;  // one lap visits every bucket
    const uint64_t start = current_;
    for (uint64_t i = 1; i <= steps; ++i) {
      // Advanced bucket by bucket, so that a timer scheduled from expire()
      // lands in a bucket still ahead, never one this pass has left behind.
      current_ = start + i;
      uint32_t slot = heads_[current_ & mask_];
      while (slot != kNone) {
        const uint32_t next = nodes_[slot].next;
        if (nodes_[slot].deadline <= now) {
          const uint64_t extended = nodes_[slot].extended;
          Cancel(slot);
          if (extended > now) {
            Schedule(slot, extended);  // pushed back while it waited
          } else {
            expire(slot);
          }
        }
        slot = next;
      }
    }
    if (now > current_) current_ = now;
  }

 private:
  struct Node {
    uint64_t deadline = 0;  // the bucket it is filed under
    uint64_t extended = 0;  // a later deadline set by Extend(), or 0
    uint32_t prev = kNone;
    uint32_t next = kNone;
    bool linked = false;
  };
  std::unique_ptr<Node[]> nodes_;
  std::unique_ptr<uint32_t[]> heads_;
  uint64_t mask_ = 0;
  uint64_t current_ = 0;
  uint32_t size_ = 0;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_TIMER_WHEEL_H_
