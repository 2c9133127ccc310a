#include "src/http2/field_list.h"

#include <cstring>

namespace uring_http::http2::internal {

bool IsConnectionSpecific(std::string_view name) {
  for (std::string_view bad : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}) {
    if (http::FieldNameEquals(name, bad)) return true;
  }
  return false;
}

const std::vector<FieldList::Field>& FieldList::Build(std::string_view status, const http::HeaderTable* fields) {
  size_t total = status.size();
  if (fields != nullptr) {
    for (const auto f : *fields) total += f.name.size() + f.value.size();
  }
  // Sized once before any view is taken: nothing below moves the bytes.
  bytes_.resize(total);
  fields_.clear();
  char* p = bytes_.data();
  auto add = [&](std::string_view name, std::string_view value, bool copy_name) {
    std::string_view stored_name = name;  // ":status" is a literal: kept as is
    if (copy_name) {
      for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        p[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
      }
      stored_name = std::string_view(p, name.size());
      p += name.size();
    }
    if (!value.empty()) std::memcpy(p, value.data(), value.size());
    fields_.push_back({stored_name, std::string_view(p, value.size())});
    p += value.size();
  };
  if (!status.empty()) add(":status", status, false);
  if (fields == nullptr) return fields_;
  for (const auto f : *fields) {
    if (f.name.empty() || f.name[0] == ':' || IsConnectionSpecific(f.name)) continue;
    add(f.name, f.value, true);
  }
  return fields_;
}

namespace {

int Base64UrlValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

bool DecodeBase64Url(std::string_view in, std::string* out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;  // no whole byte in the last group
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = Base64UrlValue(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

}  // namespace uring_http::http2::internal
