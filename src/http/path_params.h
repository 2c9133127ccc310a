// A matched route's path parameters ("/users/{id}" -> id). Names are views
// into the router's route table; each value comes percent-decoded (as Go's
// PathValue: "/items/%31" gives "1", "a%2Fb" gives "a/b", "caf%C3%A9"
// gives the UTF-8 bytes of "café"; '+' stays '+', which is a query-string
// rule) and raw, as sent (raw(), RawGet()).
//
// Two types. PathParams holds them: the router pushes the raw values into
// it and decodes them there (a value without '%' is a view into the
// request's path; a decoded one lives in the object: an inline area of
// kInlineDecodedBytes for all of them together, the heap past it; copies
// and moves take the decoded bytes with them). PathParamsView is what a
// Request carries: the parameters of whoever holds them (the connection
// for an inline handler, the worker for a SLOW one, an ASYNC exchange's
// task: a compact copy, CompactInto, of the entries it has and no more),
// so a Request is not 488 bytes larger for the capacity of a PathParams,
// which an open ASYNC stream would hold for its whole life. A view is
// valid while its request is; a handler that keeps a value past that
// copies it.
//
// The capacity is fixed (the router refuses a pattern with more parameters
// at registration).
//
// Thread-safety: plain values; owned by one Request.
#ifndef URING_HTTP_SRC_HTTP_PATH_PARAMS_H_
#define URING_HTTP_SRC_HTTP_PATH_PARAMS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uring_http::http {

struct PathParamEntry {
  std::string_view name;
  std::string_view value;  // percent-decoded
  std::string_view raw;    // as in the path
};

class PathParamsView {
 public:
  PathParamsView() = default;
  PathParamsView(const PathParamEntry* items, size_t size) : items_(items), size_(size) {}

  // The decoded value of parameter `name`; empty if the route has no such
  // parameter (a "{name}" parameter is never empty; a "{name...}" catch-all
  // may be).
  std::string_view Get(std::string_view name) const {
    for (size_t i = 0; i < size_; ++i) {
      if (items_[i].name == name) return items_[i].value;
    }
    return {};
  }
  // The same, as sent (not percent-decoded).
  std::string_view RawGet(std::string_view name) const {
    for (size_t i = 0; i < size_; ++i) {
      if (items_[i].name == name) return items_[i].raw;
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
  const PathParamEntry* begin() const { return items_; }
  const PathParamEntry* end() const { return items_ + size_; }
  const PathParamEntry& operator[](size_t i) const { return items_[i]; }

 private:
  const PathParamEntry* items_ = nullptr;
  size_t size_ = 0;
};

class PathParams {
 public:
  static constexpr size_t kCapacity = 8;
  // Decoded bytes (of the values holding a '%') kept in the object itself.
  static constexpr size_t kInlineDecodedBytes = 64;

  PathParams() = default;
  PathParams(const PathParams& other) { CopyFrom(other); }
  PathParams& operator=(const PathParams& other) {
    if (this != &other) CopyFrom(other);
    return *this;
  }

  // What a Request carries: valid while this object is, and unchanged.
  PathParamsView view() const { return PathParamsView(items_.data(), size_); }

  std::string_view Get(std::string_view name) const { return view().Get(name); }
  std::string_view RawGet(std::string_view name) const { return view().RawGet(name); }
  bool Has(std::string_view name) const { return view().Has(name); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const PathParamEntry* begin() const { return items_.data(); }
  const PathParamEntry* end() const { return items_.data() + size_; }
  const PathParamEntry& operator[](size_t i) const { return items_[i]; }

  // For the router: a raw value (its decoded one is the same until
  // Decode()); false when full.
  bool Push(std::string_view name, std::string_view raw) {
    if (size_ == kCapacity) return false;
    items_[size_++] = PathParamEntry{name, raw, raw};
    return true;
  }
  void Truncate(size_t size) {
    if (size < size_) size_ = static_cast<uint8_t>(size);
  }
  void Clear() { size_ = 0; }
  // For the router, once a route matched: decodes every value from its raw
  // form (again, if called twice). A '%' that does not start a whole
  // escape is kept as it is (the server refuses such a path with 400
  // before routing it).
  void Decode();

  // A copy of just what there is, for a request that outlives this object
  // (an ASYNC exchange's, kept in its task): CompactBytes() of room at `at`
  // (aligned for PathParamEntry) take the entries and the decoded bytes;
  // the view returned reads them there. (Raw values, and values without a
  // '%', stay views of the request's path, as here.)
  size_t CompactBytes() const;
  PathParamsView CompactInto(void* at) const;

 private:
  void CopyFrom(const PathParams& other);

  std::array<PathParamEntry, kCapacity> items_{};
  uint8_t size_ = 0;
  // Decoded bytes: inline_ while they fit, else all of them in overflow_.
  char inline_[kInlineDecodedBytes];
  std::string overflow_;
};

// Percent-decodes `raw` (a path parameter) into out[0..capacity) and returns
// the decoded bytes, or `raw` itself when it holds no '%' (nothing copied).
// nullopt if a '%' is not followed by two hex digits, or the result does not
// fit. '+' is not a space in a path. (PathParams hands its values decoded
// already: this is for other text, e.g. a value's raw form.)
std::optional<std::string_view> DecodePathParam(std::string_view raw, char* out, size_t capacity);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_PATH_PARAMS_H_
