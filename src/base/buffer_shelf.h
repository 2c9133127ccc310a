// BufferShelf: spare byte buffers of one size, kept by the thread that
// gave them back for the next that needs one, up to `keep` of them; a
// buffer of another size is freed, not kept. A buffer is not zeroed when
// made: its pages become resident only as far as its user writes, and a
// kept one holds only those (users write each use from the front).
//
// One per thread (thread_local), for what a ring thread takes and gives
// back many times a second (HTTP/2 output, ASYNC stream pipes): a thread's
// steady state allocates nothing, and what it keeps is what its busiest
// moment needed, not one buffer per connection or stream.
//
// Thread-safety: none; a shelf belongs to its thread.
#ifndef URING_HTTP_SRC_BASE_BUFFER_SHELF_H_
#define URING_HTTP_SRC_BASE_BUFFER_SHELF_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace uring_http::base {

class BufferShelf {
 public:
  explicit BufferShelf(size_t keep) : keep_(keep) {}
  BufferShelf(const BufferShelf&) = delete;
  BufferShelf& operator=(const BufferShelf&) = delete;

  std::unique_ptr<char[]> Take(size_t size) {
    if (size != size_ || buffers_.empty()) return std::unique_ptr<char[]>(new char[size]);
    std::unique_ptr<char[]> b = std::move(buffers_.back());
    buffers_.pop_back();
    return b;
  }
  // Keeps `b` (of `size` bytes) if there is room; frees it otherwise.
  void Put(std::unique_ptr<char[]> b, size_t size) {
    if (size != size_) {
      if (!buffers_.empty()) return;  // another size's are kept: freed
      size_ = size;
    }
    if (buffers_.size() < keep_) buffers_.push_back(std::move(b));
  }
  size_t kept() const { return buffers_.size(); }

 private:
  const size_t keep_;
  size_t size_ = 0;
  std::vector<std::unique_ptr<char[]>> buffers_;
};

}  // namespace uring_http::base

#endif  // URING_HTTP_SRC_BASE_BUFFER_SHELF_H_
