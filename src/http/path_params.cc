#include "src/http/path_params.h"

#include <cstring>
#include <new>

#include "src/http/percent.h"

namespace uring_http::http {

std::optional<std::string_view> DecodePathParam(std::string_view raw, char* out, size_t capacity) {
  if (raw.find('%') == std::string_view::npos) return raw;
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%') {
      if (!DecodeEscape(raw, i, &c)) return std::nullopt;
      i += 2;
    }
    if (n == capacity) return std::nullopt;
    out[n++] = c;
  }
  return std::string_view(out, n);
}

void PathParams::Decode() {
  size_t need = 0;
  for (size_t i = 0; i < size_; ++i) {
    const std::string_view raw = items_[i].raw;
    items_[i].value = raw;
    if (raw.find('%') != std::string_view::npos) need += raw.size();
  }
  if (need == 0) return;
  char* out = inline_;
  if (need > sizeof(inline_)) {
    // Sized once, before any value points into it.
    overflow_.resize(need);
    out = overflow_.data();
  }
  for (size_t i = 0; i < size_; ++i) {
    const std::string_view raw = items_[i].raw;
    if (raw.find('%') == std::string_view::npos) continue;
    const size_t n = DecodeLenient(raw, out);
    items_[i].value = std::string_view(out, n);
    out += n;
  }
}

size_t PathParams::CompactBytes() const {
  size_t bytes = size_ * sizeof(PathParamEntry);
  for (size_t i = 0; i < size_; ++i) {
    // Decoded: its value is not its raw form's bytes.
    if (items_[i].value.data() != items_[i].raw.data()) bytes += items_[i].value.size();
  }
  return bytes;
}

PathParamsView PathParams::CompactInto(void* at) const {
  auto* entries = static_cast<PathParamEntry*>(at);
  char* decoded = reinterpret_cast<char*>(entries + size_);
  for (size_t i = 0; i < size_; ++i) {
    PathParamEntry e = items_[i];
    if (e.value.data() != e.raw.data()) {
      if (!e.value.empty()) std::memcpy(decoded, e.value.data(), e.value.size());
      e.value = std::string_view(decoded, e.value.size());
      decoded += e.value.size();
    }
    new (&entries[i]) PathParamEntry(e);
  }
  return PathParamsView(entries, size_);
}

void PathParams::CopyFrom(const PathParams& other) {
  items_ = other.items_;
  size_ = other.size_;
  overflow_ = other.overflow_;
  std::memcpy(inline_, other.inline_, sizeof(inline_));
  // Decoded values point into `other`: the same offsets here.
  const char* other_inline = other.inline_;
  const char* other_heap = other.overflow_.data();
  for (size_t i = 0; i < size_; ++i) {
    std::string_view& v = items_[i].value;
    if (v.empty()) continue;
    if (v.data() >= other_inline && v.data() < other_inline + sizeof(inline_)) {
      v = std::string_view(inline_ + (v.data() - other_inline), v.size());
    } else if (!other.overflow_.empty() && v.data() >= other_heap &&
               v.data() < other_heap + other.overflow_.size()) {
      v = std::string_view(overflow_.data() + (v.data() - other_heap), v.size());
    }
  }
}

}  // namespace uring_http::http
