// A matched route's path parameters ("/users/{id}" -> id), as views: the
// names point into the router's route table, the values into the request's
// path, so filling them allocates nothing. The capacity is fixed (the router
// refuses a pattern with more parameters at registration).
//
// Values are the path's raw bytes, not percent-decoded: a view cannot hold
// decoded bytes, and a decoded "%2F" would be indistinguishable from a
// segment separator. DecodePathParam() decodes one into a caller's buffer
// ('+' stays '+': that rule belongs to query strings, not paths).
//
// Thread-safety: a plain value; owned by one Request.
#ifndef URING_HTTP_SRC_HTTP_PATH_PARAMS_H_
#define URING_HTTP_SRC_HTTP_PATH_PARAMS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace uring_http::http {

struct PathParamEntry {
  std::string_view name;
  std::string_view value;
};

class PathParams {
 public:
  static constexpr size_t kCapacity = 8;

  // The value of parameter `name`; empty if the route has no such parameter
  // (a "{name}" parameter is never empty; a "{name...}" catch-all may be).
  std::string_view Get(std::string_view name) const {
    for (size_t i = 0; i < size_; ++i) {
      if (items_[i].name == name) return items_[i].value;
    }
    return {};
  }
  bool Has(std::string_view name) const {
    for (size_t i = 0; i < size_; ++i) {
      if (items_[i].name == name) return true;
    }
    return false;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // In pattern order.
  const PathParamEntry* begin() const { return items_.data(); }
  const PathParamEntry* end() const { return items_.data() + size_; }
  const PathParamEntry& operator[](size_t i) const { return items_[i]; }

  // For the router: false when full.
  bool Push(std::string_view name, std::string_view value) {
    if (size_ == kCapacity) return false;
    items_[size_++] = PathParamEntry{name, value};
    return true;
  }
  void Truncate(size_t size) {
    if (size < size_) size_ = static_cast<uint8_t>(size);
  }
  void Clear() { size_ = 0; }

 private:
  std::array<PathParamEntry, kCapacity> items_{};
  uint8_t size_ = 0;
};

// Percent-decodes `raw` (a path parameter) into out[0..capacity) and returns
// the decoded bytes, or `raw` itself when it holds no '%' (nothing copied).
// nullopt if a '%' is not followed by two hex digits, or the result does not
// fit. '+' is not a space in a path.
std::optional<std::string_view> DecodePathParam(std::string_view raw, char* out, size_t capacity);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_PATH_PARAMS_H_
