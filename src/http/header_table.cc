#include "src/http/header_table.h"

#include <cstring>

namespace uring_http::http {

bool FieldNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + ('a' - 'A'));
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + ('a' - 'A'));
    if (x != y) return false;
  }
  return true;
}

void HeaderTable::Add(std::string_view name, std::string_view value) {
  const size_t offset = bytes_.size();
  char* p = bytes_.Extend(name.size() + value.size());
  if (!name.empty()) std::memcpy(p, name.data(), name.size());
  if (!value.empty()) std::memcpy(p + name.size(), value.data(), value.size());
  *entries_.Extend(1) = Entry{static_cast<uint32_t>(offset), static_cast<uint32_t>(name.size()),
                              static_cast<uint32_t>(value.size())};
}

size_t HeaderTable::Remove(std::string_view name) {
  size_t removed = 0;
  size_t i = 0;
  while (i < entries_.size()) {
    const Entry e = entries_.data()[i];
    if (!FieldNameEquals(std::string_view(bytes_.data() + e.offset, e.name_len), name)) {
      ++i;
      continue;
    }
    const uint32_t n = e.name_len + e.value_len;
    bytes_.Erase(e.offset, n);
    entries_.Erase(i, 1);
    Entry* entries = entries_.data();
    for (size_t j = i; j < entries_.size(); ++j) entries[j].offset -= n;
    ++removed;
  }
  return removed;
}

std::optional<std::string_view> HeaderTable::Find(std::string_view name) const {
  for (const Field f : *this) {
    if (FieldNameEquals(f.name, name)) return f.value;
  }
  return std::nullopt;
}

}  // namespace uring_http::http
