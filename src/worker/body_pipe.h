// BodyPipe: a bounded byte FIFO between a connection's ring thread and the
// worker running that connection's SLOW handler. It carries a streamed
// request body (the ring writes what it receives, the handler reads) or a
// streamed response (the handler writes, the ring sends straight from the
// pipe's memory and frees the space once the kernel is done with it).
//
// The bound is the backpressure: a worker writing into a full pipe sleeps
// until the peer has taken bytes; a ring whose request pipe is full stops
// receiving until the handler has read. The ring thread never blocks here.
// The worker blocks on a futex, saying first what it waits for (so many
// bytes to read, so much room to write), and the ring's side wakes it only
// once that holds: a receive of 2 KiB does not cost a context switch, a
// batch of them does (WakeReader() at the end of the ring's batch hands over
// whatever arrived). The ring is told of the worker's progress by a MSG_RING
// message that the worker posts only when the ring asked for one
// (ArmReadNotify/ArmWriteNotify), so a stream costs about one message per
// send round trip, not one per write.
//
// Either side may Abort(): every later or blocked Write/Read on the other
// side then fails at once (the peer left, or the handler gave up). An abort
// may carry a reason (the ring's http::BodyError for a request body), which
// the other side reads after it has seen the abort; the first reason given
// stays.
//
// A pipe whose two ends are one thread (Ends::kOneThread: a ring's ASYNC
// stream, written by its runner and sent by its connection) holds its
// buffer only while it has bytes: taken from that thread's shelf by the
// write that finds it empty, and shelved again by the Consume that empties
// it (the kernel is done with every byte by then: the ring consumes only
// what has been sent). An open event stream that is idle between events
// then holds no buffer at all, and a long one never touches more than the
// pages its largest burst needs (each use starts at the buffer's front),
// where a kept buffer would, byte by byte, touch all of its capacity.
//
// Thread-safety: one producer thread and one consumer thread, plus Abort()
// from either (kOneThread: one thread for all). ArmNotify() is the ring
// thread's; TakeNotify() the worker's.
#ifndef URING_HTTP_SRC_WORKER_BODY_PIPE_H_
#define URING_HTTP_SRC_WORKER_BODY_PIPE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace uring_http::worker {

class BodyPipe {
 public:
  enum class Ends : uint8_t {
    kTwoThreads,  // a worker and a ring: the buffer is the pipe's for its life
    kOneThread,   // both on one thread: the buffer is held only while in use
  };
  // `capacity` is rounded up to a power of two.
  explicit BodyPipe(size_t capacity, Ends ends = Ends::kTwoThreads);
  ~BodyPipe();
  BodyPipe(const BodyPipe&) = delete;
  BodyPipe& operator=(const BodyPipe&) = delete;

  size_t capacity() const { return mask_ + 1; }
  // kOneThread: whether it holds a buffer now (it has unconsumed bytes).
  bool holds_buffer() const { return buffer_ != nullptr; }

  // ---- producer
  // Copies as much of data[0..n) as fits; returns how much (never blocks).
  size_t Write(const char* data, size_t n);
  size_t writable() const { return capacity() - readable(); }
  // No more bytes will be written.
  void Finish();

  // ---- consumer
  size_t readable() const {
    return static_cast<size_t>(write_pos_.load(std::memory_order_acquire) -
                               read_pos_.load(std::memory_order_relaxed));
  }
  // The contiguous readable bytes starting `offset` bytes past the front
  // (shorter than readable() - offset where they wrap around the buffer).
  std::string_view PeekAt(size_t offset) const;
  // Copies up to n bytes out and consumes them; returns how many.
  size_t Read(char* out, size_t n);
  // Frees the first n readable bytes for the producer.
  void Consume(size_t n);
  // The producer called Finish() (readable bytes may remain).
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  // ---- either side
  void Abort(uint8_t reason = 0);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // The first non-zero reason an Abort() gave; 0 if none. Stored before
  // the abort is published, so a side that saw aborted() sees it too.
  uint8_t abort_reason() const { return abort_reason_.load(std::memory_order_acquire); }

  // ---- blocking, for the worker side
  // Until readable() >= min(n, capacity()) (and > 0), finished() or
  // aborted(). A reader that takes whatever there is still asks for a
  // sizable n: WakeReader() gives it less at the end of a ring's batch.
  void WaitReadable(size_t n = 1);
  // Until writable() >= min(n, capacity()) or aborted().
  void WaitWritable(size_t n);
  // The ring, after a batch of writes: a reader waiting for more than has
  // arrived gets what there is now rather than wait for the next batch.
  void WakeReader();

  // ---- telling the ring
  // The ring asks to be messaged when the worker has made progress. As the
  // reader: once more than `have` bytes are readable (the ring has the rest
  // queued for sending already), or the stream finished or was aborted. As
  // the writer: once at least `min_writable` bytes are free. Each returns
  // false, asking nothing, when that already holds: the ring goes on at once.
  bool ArmReadNotify(size_t have);
  bool ArmWriteNotify(size_t min_writable);
  // The worker, after writing, consuming or finishing: true when the ring
  // asked and the progress is what it waits for; the caller then posts the
  // message (exactly once per ArmNotify).
  bool TakeNotify();

 private:
  bool Readable() const {
    return readable() > 0 || finished() || aborted();
  }
  // What the ring's request in ring_wants_ waits for.
  bool NotifyReady(uint64_t wants) const;
  bool Arm(uint64_t wants);
  // Wakes a worker sleeping in WaitReadable/WaitWritable if what it waits
  // for now holds (or `any`: if anything at all changed for it).
  void Wake(bool any = false);
  bool WaiterReady(uint64_t need, bool any) const;
  void Wait(uint64_t need);

  // kOneThread: a buffer for the write that finds the pipe empty (the
  // positions move to the front of it), and back to the shelf.
  void TakeBuffer();
  void ShelveBuffer();

  // Packed, not a cache line per side: a pipe is held by every open
  // stream (10,000 event streams: 10,000 pipes), and the two sides meet at
  // a futex or a MSG_RING per batch anyway, so the line shared by the two
  // positions costs a stream nothing that it would see, while a line apiece
  // cost 192 bytes per stream.
  const size_t mask_;
  std::unique_ptr<char[]> buffer_;
  // Monotonic byte counts; the buffer index is pos & mask_.
  std::atomic<uint64_t> write_pos_{0};
  std::atomic<uint64_t> read_pos_{0};
  const Ends ends_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<uint8_t> abort_reason_{0};
  // Futex word: bumped when a sleeper is woken.
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> waiting_{0};
  // What the sleeper waits for: kReadNotify | bytes, or kWriteNotify | room.
  std::atomic<uint64_t> need_{0};
  // The ring's request for a message: 0 none; kReadNotify | have; or
  // kWriteNotify | min_writable.
  static constexpr uint64_t kReadNotify = uint64_t{1} << 63;
  static constexpr uint64_t kWriteNotify = uint64_t{1} << 62;
  static constexpr uint64_t kNotifyValue = kWriteNotify - 1;
  std::atomic<uint64_t> ring_wants_{0};
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_BODY_PIPE_H_
