// Every value of a header sent on several lines, and the elements of
// comma-separated list headers (Accept-Encoding, Cache-Control, ...) across
// all of them, as views into the request: nothing is copied or allocated.
//
//   for (std::string_view v : HeaderValueRange(headers, n, "x-forwarded-for")) ...
//   for (std::string_view e : HeaderElementRange(headers, n, "cache-control")) ...
//   for (std::string_view e : ListElementRange("gzip, br;q=0.5")) ...
//
// Header names are compared case-insensitively (ASCII). A list (RFC 9110
// 5.6.1) is split at commas outside quoted strings (`no-cache="a, b"` is one
// element; a backslash escapes the byte after it inside quotes, and an
// unterminated quote runs to the end of the line); each element has the
// whitespace around it removed, and empty elements ("a, , b", a leading or
// trailing comma) are skipped. Elements are returned as sent: parameters
// (";q=0.5") and quotes are the caller's to read.
//
// Thread-safety: views; any thread.
#ifndef URING_HTTP_SRC_HTTP_HEADER_VALUES_H_
#define URING_HTTP_SRC_HTTP_HEADER_VALUES_H_

#include <cstddef>
#include <iterator>
#include <string_view>

#include "src/http/header.h"

namespace uring_http::http {

// Whether two header names are equal, ignoring ASCII case.
bool HeaderNameEquals(std::string_view a, std::string_view b);

// The values of every header line named `name`, in the order sent.
class HeaderValueRange {
 public:
  class iterator {
   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    iterator() = default;
    const std::string_view& operator*() const { return pos_->value; }
    const std::string_view* operator->() const { return &pos_->value; }
    iterator& operator++() {
      ++pos_;
      Skip();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return pos_ == other.pos_; }

   private:
    friend class HeaderValueRange;
    iterator(const Header* pos, const Header* end, std::string_view name)
        : pos_(pos), end_(end), name_(name) {
      Skip();
    }
    void Skip() {
      while (pos_ != end_ && !HeaderNameEquals(pos_->name, name_)) ++pos_;
    }

    const Header* pos_ = nullptr;
    const Header* end_ = nullptr;
    std::string_view name_;
  };

  HeaderValueRange() = default;
  HeaderValueRange(const Header* headers, size_t count, std::string_view name)
      : headers_(headers), count_(count), name_(name) {}

  iterator begin() const { return iterator(headers_, headers_ + count_, name_); }
  iterator end() const { return iterator(headers_ + count_, headers_ + count_, name_); }
  bool empty() const { return begin() == end(); }

 private:
  const Header* headers_ = nullptr;
  size_t count_ = 0;
  std::string_view name_;
};

// The elements of one comma-separated field value.
class ListElementRange {
 public:
  class iterator {
   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // references are into the iterator
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    iterator() = default;
    const std::string_view& operator*() const { return current_; }
    const std::string_view* operator->() const { return &current_; }
    iterator& operator++() {
      Load();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    // Positions compare by where the unread rest starts (end: null).
    bool operator==(const iterator& other) const { return pos_ == other.pos_; }

   private:
    friend class ListElementRange;
    iterator(const char* pos, const char* end) : next_(pos), end_(end) { Load(); }
    void Load();  // reads the next non-empty element from next_ on

    const char* pos_ = nullptr;   // start of the piece current_ came from; null at the end
    const char* next_ = nullptr;  // where the next piece starts
    const char* end_ = nullptr;
    std::string_view current_;
  };

  ListElementRange() = default;
  explicit ListElementRange(std::string_view value) : value_(value) {}

  iterator begin() const { return iterator(value_.data(), value_.data() + value_.size()); }
  iterator end() const { return iterator(); }
  bool empty() const { return begin() == end(); }

 private:
  std::string_view value_;
};

// The elements of the lists in every header line named `name`, in order:
// "Accept-Encoding: gzip" and "Accept-Encoding: br, zstd" give gzip, br,
// zstd (RFC 9110 5.3: the lines are one list joined by commas).
class HeaderElementRange {
 public:
  class iterator {
   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    iterator() = default;
    const std::string_view& operator*() const { return *element_; }
    const std::string_view* operator->() const { return &*element_; }
    iterator& operator++() {
      ++element_;
      Settle();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const {
      return line_ == other.line_ && element_ == other.element_;
    }

   private:
    friend class HeaderElementRange;
    iterator(HeaderValueRange::iterator line, HeaderValueRange::iterator end)
        : line_(line), end_(end) {
      if (line_ != end_) element_ = ListElementRange(*line_).begin();
      Settle();
    }
    // Moves past lines whose elements are used up (or that have none).
    void Settle() {
      while (line_ != end_ && element_ == ListElementRange::iterator()) {
        ++line_;
        if (line_ != end_) element_ = ListElementRange(*line_).begin();
      }
    }

    HeaderValueRange::iterator line_;
    HeaderValueRange::iterator end_;
    ListElementRange::iterator element_;  // within *line_; end once line_ is
  };

  HeaderElementRange() = default;
  HeaderElementRange(const Header* headers, size_t count, std::string_view name)
      : lines_(headers, count, name) {}

  iterator begin() const { return iterator(lines_.begin(), lines_.end()); }
  iterator end() const { return iterator(lines_.end(), lines_.end()); }
  bool empty() const { return begin() == end(); }

 private:
  HeaderValueRange lines_;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_HEADER_VALUES_H_
