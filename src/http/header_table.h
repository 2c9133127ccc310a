// HeaderTable: the header (or trailer) fields of a response as (name, value)
// pairs, in the order they were added. Each codec serializes them its own
// way (HTTP/1 as "Name: value\r\n" lines, HPACK for HTTP/2); nothing here
// knows a wire format. A table checks nothing: Response::AddHeader decides
// what may enter.
//
// Memory: the names and values lie back to back in an inline area of
// kInlineBytes and the fields' offsets in an inline array of kInlineFields,
// so an ordinary response allocates nothing; past either, that part moves
// to a block of the thread's size classes (base/size_class_memory.h, at
// least doubling), which a warm thread has at hand without malloc. The
// inline areas are small on purpose: a Response holds a table, and a task
// holds a Response for as long as its handler runs (an open event stream:
// for hours), so every inline byte is held by every open stream. Views
// returned by the table point into it and are valid until it changes.
//
// Thread-safety: none; a table belongs to one thread at a time.
#ifndef URING_HTTP_SRC_HTTP_HEADER_TABLE_H_
#define URING_HTTP_SRC_HTTP_HEADER_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>

#include "src/base/size_class_memory.h"

namespace uring_http::http {

namespace internal {

// Bytes: an inline area first, a size-class block past it. Copies copy the
// bytes; a move takes a block over. Not zeroed: only [0, size()) is ever
// read.
template <typename T, size_t kInline>
class InlineArray {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 16);

 public:
  InlineArray() = default;
  ~InlineArray() { base::SizeClassMemory::Free(heap_); }
  InlineArray(const InlineArray& other) { Append(other.data(), other.len_); }
  InlineArray& operator=(const InlineArray& other) {
    if (this != &other) {
      len_ = 0;
      Append(other.data(), other.len_);
    }
    return *this;
  }
  InlineArray(InlineArray&& other) noexcept { TakeFrom(other); }
  InlineArray& operator=(InlineArray&& other) noexcept {
    if (this != &other) {
      base::SizeClassMemory::Free(heap_);
      heap_ = nullptr;
      cap_ = kInline;
      len_ = 0;
      TakeFrom(other);
    }
    return *this;
  }

  const T* data() const { return heap_ != nullptr ? heap_ : inline_; }
  T* data() { return heap_ != nullptr ? heap_ : inline_; }
  size_t size() const { return len_; }
  bool on_heap() const { return heap_ != nullptr; }
  void clear() { len_ = 0; }

  // n more elements at the end, for the caller to fill.
  T* Extend(size_t n) {
    if (len_ + n > cap_) Grow(len_ + n);
    T* at = data() + len_;
    len_ += static_cast<uint32_t>(n);
    return at;
  }
  void Append(const T* from, size_t n) {
    if (n == 0) return;
    std::copy_n(from, n, Extend(n));
  }
  // Removes [at, at + n).
  void Erase(size_t at, size_t n) {
    T* d = data();
    std::copy(d + at + n, d + len_, d + at);
    len_ -= static_cast<uint32_t>(n);
  }

 private:
  void Grow(size_t need) {
    // Past the inline area: a block of at least twice the room, all of
    // which is used (its class may hold more than was asked).
    if (need > UINT32_MAX / sizeof(T) / 2) throw std::bad_alloc();
    const size_t want = (need > 2 * size_t{cap_} ? need : 2 * size_t{cap_}) * sizeof(T);
    T* grown = static_cast<T*>(base::SizeClassMemory::Allocate(want, nullptr));
    if (grown == nullptr) throw std::bad_alloc();
    std::copy_n(data(), len_, grown);
    base::SizeClassMemory::Free(heap_);
    heap_ = grown;
    cap_ = static_cast<uint32_t>(base::SizeClassMemory::BlockBytes(want) / sizeof(T));
  }
  void TakeFrom(InlineArray& other) {
    if (other.heap_ != nullptr) {
      heap_ = other.heap_;
      other.heap_ = nullptr;
      cap_ = other.cap_;
    } else {
      std::copy_n(other.inline_, other.len_, inline_);
    }
    len_ = other.len_;
    other.cap_ = kInline;
    other.len_ = 0;
  }

  T* heap_ = nullptr;  // a SizeClassMemory block, or null: inline_
  // 32 bits (a table's bytes are bounded by the response header limit):
  // every open stream holds two of these.
  uint32_t len_ = 0;
  uint32_t cap_ = kInline;
  T inline_[kInline];
};

}  // namespace internal

// ASCII case-insensitive comparison of two field names.
bool FieldNameEquals(std::string_view a, std::string_view b);

class HeaderTable {
 public:
  // A plain answer's fields (a Content-Type, an event stream's three)
  // fit; a response with more (middleware that adds CORS fields, say)
  // takes a size-class block, which a warm thread has without malloc.
  static constexpr size_t kInlineBytes = 96;
  static constexpr size_t kInlineFields = 4;

  struct Field {
    std::string_view name;
    std::string_view value;
  };

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Field;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Field;

    Iterator() = default;
    Field operator*() const { return (*table_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    friend class HeaderTable;
    Iterator(const HeaderTable* table, size_t i) : table_(table), i_(i) {}
    const HeaderTable* table_ = nullptr;
    size_t i_ = 0;
  };

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.size() == 0; }
  Field operator[](size_t i) const {
    const Entry& e = entries_.data()[i];
    const char* base = bytes_.data() + e.offset;
    return {std::string_view(base, e.name_len), std::string_view(base + e.name_len, e.value_len)};
  }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }

  // What the fields take as HTTP/1 lines ("Name: value\r\n" each): the
  // measure the response header limit is stated in, whatever the codec.
  size_t line_bytes() const { return bytes_.size() + 4 * entries_.size(); }
  // The line one more field would add.
  static size_t LineBytes(std::string_view name, std::string_view value) {
    return name.size() + value.size() + 4;
  }

  void Add(std::string_view name, std::string_view value);
  // Removes every field named `name` (case-insensitive); returns how many.
  size_t Remove(std::string_view name);
  // The value of the first field named `name` (case-insensitive), if any.
  std::optional<std::string_view> Find(std::string_view name) const;
  void Clear() {
    bytes_.clear();
    entries_.clear();
  }
  // Whether either part has left its inline area.
  bool on_heap() const { return bytes_.on_heap() || entries_.on_heap(); }

 private:
  struct Entry {
    uint32_t offset;  // of the name in bytes_; the value follows it
    uint32_t name_len;
    uint32_t value_len;
  };

  internal::InlineArray<char, kInlineBytes> bytes_;
  internal::InlineArray<Entry, kInlineFields> entries_;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_HEADER_TABLE_H_
