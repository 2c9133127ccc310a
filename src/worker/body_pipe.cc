#include "src/worker/body_pipe.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "src/base/buffer_shelf.h"

namespace uring_http::worker {
namespace {

// A raw futex rather than std::atomic::wait: libstdc++ 12 spins and yields
// before it sleeps, which on a 2-core machine takes CPU from the ring thread
// the worker is waiting for.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

// One-thread pipes' idle buffers (a ring's streams all have the one size
// its runner gives them): what the streams with unsent bytes at one moment
// need, not one per stream.
thread_local base::BufferShelf shelf(1024);

}  // namespace

BodyPipe::BodyPipe(size_t capacity, Ends ends)
    : mask_(std::bit_ceil(std::max<size_t>(capacity, 64)) - 1),
      // Not zeroed (make_unique would write every byte): a pipe's pages
      // become resident only as far as its stream has used them.
      buffer_(ends == Ends::kTwoThreads ? new char[mask_ + 1] : nullptr),
      ends_(ends) {}

// (A one-thread pipe's buffer, if it still has one, is freed, not shelved:
// a pipe may outlive its thread's shelf at exit.)
BodyPipe::~BodyPipe() = default;

void BodyPipe::TakeBuffer() {
  buffer_ = shelf.Take(capacity());
  // Empty (nothing is read from the old positions): both move on to the
  // next multiple of the capacity, the buffer's front, so that a stream of
  // small pieces touches only the buffer's first page.
  const uint64_t at = (write_pos_.load(std::memory_order_relaxed) + mask_) & ~uint64_t{mask_};
  write_pos_.store(at, std::memory_order_relaxed);
  read_pos_.store(at, std::memory_order_relaxed);
}

void BodyPipe::ShelveBuffer() { shelf.Put(std::move(buffer_), capacity()); }

size_t BodyPipe::Write(const char* data, size_t n) {
  if (buffer_ == nullptr) {
    if (n == 0) return 0;
    TakeBuffer();
  }
  const uint64_t w = write_pos_.load(std::memory_order_relaxed);
  // Acquire: the consumer is done with the bytes it freed before we reuse them.
  const uint64_t r = read_pos_.load(std::memory_order_acquire);
  const size_t room = capacity() - static_cast<size_t>(w - r);
  n = std::min(n, room);
  if (n == 0) return 0;
  const size_t at = static_cast<size_t>(w & mask_);
  const size_t first = std::min(n, capacity() - at);
  std::memcpy(buffer_.get() + at, data, first);
  if (n > first) std::memcpy(buffer_.get(), data + first, n - first);
  // seq_cst: pairs with ArmNotify()'s store-then-load on the other side and
  // with a sleeper's check (see Wake()).
  write_pos_.store(w + n, std::memory_order_seq_cst);
  Wake();
  return n;
}

void BodyPipe::Finish() {
  finished_.store(true, std::memory_order_seq_cst);
  Wake();
}

std::string_view BodyPipe::PeekAt(size_t offset) const {
  const uint64_t r = read_pos_.load(std::memory_order_relaxed) + offset;
  const uint64_t w = write_pos_.load(std::memory_order_acquire);
  if (w <= r) return {};
  const size_t at = static_cast<size_t>(r & mask_);
  const size_t n = std::min(static_cast<size_t>(w - r), capacity() - at);
  return {buffer_.get() + at, n};
}

size_t BodyPipe::Read(char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const std::string_view piece = PeekAt(0);
    if (piece.empty()) break;
    const size_t take = std::min(piece.size(), n - done);
    std::memcpy(out + done, piece.data(), take);
    Consume(take);
    done += take;
  }
  return done;
}

void BodyPipe::Consume(size_t n) {
  if (n == 0) return;
  const uint64_t r = read_pos_.load(std::memory_order_relaxed);
  // Release: our reads of the freed bytes happen before the producer's
  // writes into them. seq_cst for the same reason as in Write().
  read_pos_.store(r + n, std::memory_order_seq_cst);
  if (ends_ == Ends::kOneThread && readable() == 0) {
    ShelveBuffer();
    return;  // (no other thread waits on a one-thread pipe)
  }
  Wake();
}

void BodyPipe::Abort(uint8_t reason) {
  uint8_t none = 0;
  if (reason != 0) {
    // Before the abort's own (seq_cst) store: whoever sees that sees this.
    abort_reason_.compare_exchange_strong(none, reason, std::memory_order_acq_rel);
  }
  aborted_.store(true, std::memory_order_seq_cst);
  Wake();
}

bool BodyPipe::WaiterReady(uint64_t need, bool any) const {
  if (aborted()) return true;
  const uint64_t value = need & kNotifyValue;
  if (need & kReadNotify) {
    return finished() || (readable() > 0 && (any || readable() >= value));
  }
  return writable() >= value;
}

void BodyPipe::Wake(bool any) {
  // The change before this call is ordered before this load (seq_cst on
  // both sides): a sleeper either sees the change when it re-checks after
  // setting waiting_, or is seen waiting here. It is woken only if what it
  // waits for holds: anything less would wake it just to sleep again.
  if (waiting_.load(std::memory_order_seq_cst) == 0) return;
  if (!WaiterReady(need_.load(std::memory_order_seq_cst), any)) return;
  seq_.fetch_add(1, std::memory_order_seq_cst);
  FutexWake(&seq_);
}

void BodyPipe::Wait(uint64_t need) {
  for (;;) {
    const uint32_t seq = seq_.load(std::memory_order_seq_cst);
    if (WaiterReady(need, false)) return;
    need_.store(need, std::memory_order_seq_cst);
    waiting_.store(1, std::memory_order_seq_cst);
    if (WaiterReady(need, false)) {
      waiting_.store(0, std::memory_order_relaxed);
      return;
    }
    FutexWait(&seq_, seq);
    waiting_.store(0, std::memory_order_relaxed);
    // Woken by WakeReader() with less than asked: that is the answer.
    if (WaiterReady(need, true)) return;
  }
}

void BodyPipe::WaitReadable(size_t n) {
  Wait(kReadNotify | std::clamp<size_t>(n, 1, capacity()));
}

void BodyPipe::WaitWritable(size_t n) { Wait(kWriteNotify | std::min(n, capacity())); }

void BodyPipe::WakeReader() { Wake(/*any=*/true); }

bool BodyPipe::NotifyReady(uint64_t wants) const {
  if (aborted()) return true;
  const uint64_t value = wants & kNotifyValue;
  if (wants & kReadNotify) return readable() > value || finished();
  return writable() >= value;
}

bool BodyPipe::Arm(uint64_t wants) {
  // seq_cst store, then the check: the worker stores its progress, then
  // loads this. One of us sees the other (see TakeNotify()).
  ring_wants_.store(wants, std::memory_order_seq_cst);
  if (!NotifyReady(wants)) return true;
  // Already there. If the worker took the request meanwhile it posts a
  // message anyway, which the ring finds harmless (it re-checks the pipe).
  ring_wants_.store(0, std::memory_order_relaxed);
  return false;
}

bool BodyPipe::ArmReadNotify(size_t have) { return Arm(kReadNotify | have); }

bool BodyPipe::ArmWriteNotify(size_t min_writable) {
  return Arm(kWriteNotify | std::min(min_writable, capacity()));
}

bool BodyPipe::TakeNotify() {
  uint64_t wants = ring_wants_.load(std::memory_order_seq_cst);
  if (wants == 0 || !NotifyReady(wants)) return false;
  return ring_wants_.compare_exchange_strong(wants, 0, std::memory_order_seq_cst);
}

}  // namespace uring_http::worker
