// OutputQueue: the bytes a connection has to send, in order, and the one
// owner of every buffer they live in until the kernel is done with it.
//
// Output is a FIFO of segments: arena chunks that responses are serialized
// into (appended to while earlier bytes of the same chunk are being sent: the
// kernel reads only the range it was given, so a chunk is never moved or
// compacted), heap buffers for what does not fit a chunk, response bodies
// moved in whole (a std::string, sent from its own memory), and external
// regions (a worker's streamed response in its pipe), released through their
// owner.
//
// The segment table itself lives at the start of the first chunk, whose rest
// is the first data segment: an idle connection holds nothing, and a request
// answered from one chunk costs one chunk, as it did before there was a queue.
//
// One rule decides when a segment's memory may be reused: every byte of it
// has been sent, no send in flight covers it, and no zero-copy send that read
// it is still waiting for its notification. A short send, a zero-copy send
// followed by plain sends of the same buffer, a notification arriving before
// or after the send's own completion: all are the same rule, applied from the
// front of the queue.
//
// Thread-safety: owned by the connection's ring thread.
#ifndef URING_HTTP_SRC_HTTP1_OUTPUT_QUEUE_H_
#define URING_HTTP_SRC_HTTP1_OUTPUT_QUEUE_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/io/arena.h"

namespace uring_http::http1 {

// Where an external segment's bytes go back when the kernel is done with
// them (a worker's pipe: the space is free for the worker again).
class ExternalOwner {
 public:
  virtual void ReleaseOutput(size_t bytes) = 0;
  // OutputQueue::TakeBack() removed the last `bytes` of the newest segment
  // appended (unsent), newest first; a segment left with no bytes is
  // neither released nor seen again. Only owners that call TakeBack().
  virtual void TakeBackOutput(size_t bytes);

 protected:
  ~ExternalOwner() = default;
};

class OutputQueue {
 public:
  // Segments at most: a connection whose queue is this deep stops producing
  // output (it reads no further requests) until sends drain it.
  static constexpr unsigned kMaxSegments = 16;
  // A send gathers at most this many segments (IORING_OP_SENDMSG).
  static constexpr unsigned kMaxIov = 8;

  OutputQueue() = default;
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;
  ~OutputQueue();

  void Init(io::ChunkPool* chunks) { chunks_ = chunks; }

  // Appending. Each returns false (appending nothing) when the queue has no
  // segment left; callers check room() first where that can happen.
  //
  // At least `n` contiguous writable bytes at the tail: the free end of the
  // last chunk, or a new chunk or heap buffer. Commit() says how many were
  // written.
  char* Reserve(size_t n);
  void Commit(size_t n);
  // Reserve(min), and how much room there really is (at least min).
  char* ReserveRoom(size_t min, size_t* room) {
    char* p = Reserve(min);
    if (p == nullptr) {
      *room = 0;
      return nullptr;
    }
    const Segment& tail = At(count_ - 1);
    *room = tail.cap - tail.len;
    return p;
  }
  bool Append(std::string_view data);
  // A body sent from its own memory (no copy); freed when sent.
  bool AppendOwned(std::string&& data);
  // Bytes the queue does not own: `owner->ReleaseOutput(n)` is called, in
  // order, as they become free.
  bool AppendExternal(const char* data, size_t n, ExternalOwner* owner);

  // Bytes appended and not yet sent.
  size_t pending() const { return pending_; }
  bool empty() const { return pending_ == 0; }
  // Segments free for appending.
  unsigned room() const { return kMaxSegments - count_; }
  // Bytes Reserve() can give without a new segment (the free end of the
  // last chunk or heap buffer).
  size_t tail_room() const {
    if (table_ == nullptr || count_ == 0) return 0;
    const Segment& tail = At(count_ - 1);
    if (tail.kind != Kind::kChunk && tail.kind != Kind::kHeap && tail.kind != Kind::kTable) {
      return 0;
    }
    return tail.cap - tail.len;
  }

  // Sending: at most one send in flight. Describes the next unsent bytes
  // (up to kMaxIov segments) in send_iov() and marks them in flight. A
  // segment of at least `zc_min_bytes` (0: never) goes alone, as a zero-copy
  // send (*zero_copy set), unless a zero-copy notification is still
  // outstanding. Returns the iovec count (0: nothing to send).
  unsigned PrepareSend(size_t zc_min_bytes, bool* zero_copy);
  // The iovecs PrepareSend() filled, and room for a msghdr for a gathered
  // send: both in the queue's table chunk, valid until the send completes.
  const iovec* send_iov() const { return space()->iov; }
  msghdr* send_msghdr() { return &space()->msg; }
  // The send completed with `sent` bytes (a short send leaves the rest
  // unsent; a failed one passes 0). `notification_follows`: a zero-copy send
  // whose buffer the kernel still holds until OnNotification().
  void OnSent(size_t sent, bool notification_follows);
  void OnNotification();
  bool send_inflight() const { return inflight_count_ > 0; }
  bool notification_pending() const { return zc_index_ != kNoIndex; }

  // Takes back `owner`'s unsent bytes at the tail of the queue (external
  // segments, newest first, down to the first byte sent or another
  // owner's): they will not be sent, and the owner is told through
  // TakeBackOutput() so that it can free their memory now and produce them
  // again later (a file's bytes, re-read when the socket has room). No send
  // may be in flight. Returns the bytes taken back.
  size_t TakeBack(ExternalOwner* owner);
  // What the send in flight was given.
  size_t inflight_bytes() const { return inflight_bytes_; }

  // Drops every byte not yet sent (the connection is closing) and frees
  // what the kernel no longer holds; the rest is freed by OnSent() and
  // OnNotification() as they arrive.
  void DiscardUnsent();
  // True when nothing is held at all (for the slot's reuse).
  bool idle() const { return table_ == nullptr; }

 private:
  static constexpr uint8_t kNoIndex = 0xFF;
  enum class Kind : uint8_t { kChunk, kHeap, kString, kExternal, kTable };
  struct Segment {
    char* data = nullptr;
    void* holder = nullptr;  // kString: the std::string; kExternal: its ExternalOwner
    uint32_t cap = 0;        // writable capacity (chunks and heap buffers)
    uint32_t len = 0;        // bytes appended
    uint32_t sent = 0;       // bytes sent (or discarded)
    Kind kind = Kind::kChunk;
    bool inflight = false;   // covered by the send in flight
    bool zc_hold = false;    // read by a zero-copy send awaiting its notification
  };
  static_assert(sizeof(Segment) == 32);
  // After the table, in the same chunk: what a send in flight needs.
  struct SendSpace {
    iovec iov[kMaxIov];
    msghdr msg;
  };
  static constexpr size_t kTableBytes = (sizeof(Segment) * kMaxSegments + sizeof(SendSpace) + 63) & ~size_t{63};
  SendSpace* space() const {
    return reinterpret_cast<SendSpace*>(reinterpret_cast<char*>(table_) + sizeof(Segment) * kMaxSegments);
  }

  Segment& At(unsigned i) { return table_[(head_ + i) % kMaxSegments]; }
  const Segment& At(unsigned i) const { return table_[(head_ + i) % kMaxSegments]; }
  // A new segment at the tail (the table is created on first use); null
  // when the table is full.
  Segment* PushBack();
  // Frees segments at the front that the rule above lets go, and the table
  // with the last of them.
  void ReleaseFront();
  void Free(Segment& s);

  io::ChunkPool* chunks_ = nullptr;
  Segment* table_ = nullptr;  // kMaxSegments entries at the start of a chunk
  uint8_t head_ = 0;
  uint8_t count_ = 0;
  uint8_t inflight_count_ = 0;       // segments covered by the send in flight
  uint8_t zc_index_ = kNoIndex;      // table index of the zero-copy-held segment
  bool discarded_ = false;           // DiscardUnsent(): nothing more will be sent
  bool zc_inflight_ = false;         // the send in flight is the zero-copy one
  size_t pending_ = 0;
  size_t inflight_bytes_ = 0;        // bytes the send in flight was given
};

}  // namespace uring_http::http1

#endif  // URING_HTTP_SRC_HTTP1_OUTPUT_QUEUE_H_
