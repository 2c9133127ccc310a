#include "src/http2/field_list.h"

#include <cstring>

namespace uring_http::http2::internal {

bool IsConnectionSpecific(std::string_view name) {
  // By length first: most names are none of these lengths (every response
  // goes through here, field by field).
  switch (name.size()) {
    case 7:
      return http::FieldNameEquals(name, "upgrade");
    case 10:
      return http::FieldNameEquals(name, "connection") || http::FieldNameEquals(name, "keep-alive");
    case 16:
      return http::FieldNameEquals(name, "proxy-connection");
    case 17:
      return http::FieldNameEquals(name, "transfer-encoding");
    default:
      return false;
  }
}

const std::vector<FieldList::Field>& FieldList::Build(std::string_view status, const http::HeaderTable* fields,
                                                      std::span<const ServerField> server_fields) {
  size_t name_bytes = 0;
  if (fields != nullptr) {
    for (const auto f : *fields) name_bytes += f.name.size();
  }
  // Sized once before any view is taken: nothing below moves the bytes.
  if (bytes_.size() < name_bytes) bytes_.resize(name_bytes);
  fields_.clear();
  char* p = bytes_.data();
  if (!status.empty()) fields_.push_back({":status", status});
  if (fields != nullptr) {
    for (const auto f : *fields) {
      if (f.name.empty() || f.name[0] == ':' || IsConnectionSpecific(f.name)) continue;
      for (size_t i = 0; i < f.name.size(); ++i) {
        const char c = f.name[i];
        p[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
      }
      fields_.push_back({std::string_view(p, f.name.size()), f.value});
      p += f.name.size();
    }
  }
  for (const ServerField& f : server_fields) fields_.push_back({f.name, f.value});
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
