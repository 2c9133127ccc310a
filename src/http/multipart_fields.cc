// multipart/form-data header fields (see multipart_fields.h).
//
// The parameter grammar shared by Content-Disposition and Content-Type
// (RFC 9110 5.6.6, no whitespace around '='):
//   params    = *( OWS ";" OWS [ name "=" value ] )
//   value     = token / quoted-string
// A trailing ';' is tolerated (as Go's mime.ParseMediaType does).
#include "src/http/multipart_fields.h"

#include <cstdint>
#include <cstring>

#include "src/http/multipart.h"
#include "src/http/percent.h"

namespace uring_http::http::multipart_internal {
namespace {

bool IsOws(char c) { return c == ' ' || c == '\t'; }

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

// quoted-string text: HTAB, SP, VCHAR but '"' (a '\' is handled apart), obs-text.
bool IsQuotedByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u != 0x7f && c != '"');
}

// RFC 8187 attr-char.
bool IsAttrChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != '\0' && std::strchr("!#$&+-.^_`|~", c) != nullptr);
}

// Calls on_param(name, value, quoted) for each parameter of `s` (what
// follows the disposition type or the media type). False if malformed or
// on_param said so.
template <typename F>
bool ForEachParam(std::string_view s, F on_param) {
  size_t i = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && IsOws(s[i])) ++i;
    if (i == n) return true;
    if (s[i] != ';') return false;
    ++i;
    while (i < n && IsOws(s[i])) ++i;
    if (i == n) return true;
    const size_t name_at = i;
    while (i < n && IsTchar(s[i])) ++i;
    if (i == name_at || i == n || s[i] != '=') return false;
    const std::string_view name = s.substr(name_at, i - name_at);
    ++i;
    if (i < n && s[i] == '"') {
      const size_t value_at = ++i;
      while (true) {
        if (i == n) return false;  // no closing quote
        if (s[i] == '"') break;
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '"' || s[i + 1] == '\\')) {
          i += 2;
          continue;
        }
        if (!IsQuotedByte(s[i])) return false;
        ++i;
      }
      if (!on_param(name, s.substr(value_at, i - value_at), true)) return false;
      ++i;
    } else {
      const size_t value_at = i;
      while (i < n && IsTchar(s[i])) ++i;
      if (i == value_at) return false;
      if (!on_param(name, s.substr(value_at, i - value_at), false)) return false;
    }
  }
}

// One parameter's value as given, and whether it was seen.
struct RawParamValue {
  bool seen = false;
  bool quoted = false;
  std::string_view raw;
  // False if seen twice.
  bool Take(std::string_view value, bool is_quoted) {
    if (seen) return false;
    seen = true;
    quoted = is_quoted;
    raw = value;
    return true;
  }
  std::string_view Value(std::string* storage) const {
    return quoted ? Unescape(raw, storage) : raw;
  }
};

const char* ParseDisposition(std::string_view value, std::string* name_storage,
                             std::string* filename_storage, PartFields* out) {
  size_t i = 0;
  while (i < value.size() && IsTchar(value[i])) ++i;
  if (i == 0) return "malformed Content-Disposition in a part";
  const bool form_data = EqualsIgnoreCase(value.substr(0, i), "form-data");
  RawParamValue name, filename, filename_ext;
  bool duplicate = false;
  const bool ok = ForEachParam(value.substr(i), [&](std::string_view param, std::string_view v,
                                                    bool quoted) {
    if (EqualsIgnoreCase(param, "name")) {
      duplicate = !name.Take(v, quoted);
    } else if (EqualsIgnoreCase(param, "filename")) {
      duplicate = !filename.Take(v, quoted);
    } else if (EqualsIgnoreCase(param, "filename*")) {
      duplicate = !filename_ext.Take(v, quoted);
    }
    return !duplicate;
  });
  if (duplicate) return "a Content-Disposition parameter given twice in a part";
  if (!ok) return "malformed Content-Disposition in a part";
  if (form_data && name.seen) out->name = name.Value(name_storage);
  if (filename_ext.seen && DecodeExtValue(filename_ext.raw, filename_storage)) {
    out->filename = *filename_storage;
    out->has_filename = true;
  } else if (filename.seen) {
    out->filename = filename.Value(filename_storage);
    out->has_filename = true;
  }
  return nullptr;
}

}  // namespace

bool IsTchar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsFieldValueByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u != 0x7f);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view Unescape(std::string_view raw, std::string* storage) {
  if (raw.find('\\') == std::string_view::npos) return raw;
  storage->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && (raw[i + 1] == '"' || raw[i + 1] == '\\')) ++i;
    storage->push_back(raw[i]);
  }
  return *storage;
}

bool DecodeExtValue(std::string_view raw, std::string* out) {
  const size_t q1 = raw.find('\'');
  if (q1 == std::string_view::npos) return false;
  const size_t q2 = raw.find('\'', q1 + 1);
  if (q2 == std::string_view::npos) return false;
  const std::string_view charset = raw.substr(0, q1);
  const bool utf8 = EqualsIgnoreCase(charset, "utf-8");
  if (!utf8 && !EqualsIgnoreCase(charset, "iso-8859-1")) return false;
  const std::string_view text = raw.substr(q2 + 1);
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (!DecodeEscape(text, i, &c)) return false;
      i += 2;
    } else if (!IsAttrChar(c)) {
      return false;
    }
    const auto u = static_cast<unsigned char>(c);
    if (!utf8 && u >= 0x80) {
      // ISO-8859-1 is the first 256 code points: two bytes of UTF-8.
      out->push_back(static_cast<char>(0xc0 | (u >> 6)));
      out->push_back(static_cast<char>(0x80 | (u & 0x3f)));
    } else {
      out->push_back(c);
    }
  }
  return true;
}

const char* ParsePartHeaders(std::string_view lines, std::string* name_storage,
                             std::string* filename_storage, PartFields* out) {
  *out = PartFields();
  bool seen_disposition = false;
  bool seen_type = false;
  while (!lines.empty()) {
    const size_t eol = lines.find("\r\n");
    const std::string_view line = lines.substr(0, eol);
    lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return "malformed part header line";
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = TrimOws(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "content-disposition")) {
      if (seen_disposition) return "two Content-Disposition headers in a part";
      seen_disposition = true;
      if (const char* error = ParseDisposition(value, name_storage, filename_storage, out)) {
        return error;
      }
    } else if (EqualsIgnoreCase(name, "content-type")) {
      if (seen_type) return "two Content-Type headers in a part";
      seen_type = true;
      out->content_type = value;
    }
  }
  return nullptr;
}

const char* ParseBoundaryParam(std::string_view content_type, int* status,
                               std::string* boundary) {
  *status = 415;
  const std::string_view value = TrimOws(content_type);
  constexpr std::string_view kType = "multipart/form-data";
  if (value.size() < kType.size() || !EqualsIgnoreCase(value.substr(0, kType.size()), kType) ||
      (value.size() > kType.size() && !IsOws(value[kType.size()]) && value[kType.size()] != ';')) {
    return "Content-Type is not multipart/form-data";
  }
  *status = 400;
  RawParamValue found;
  bool duplicate = false;
  const bool ok = ForEachParam(value.substr(kType.size()),
                               [&](std::string_view name, std::string_view v, bool quoted) {
                                 if (EqualsIgnoreCase(name, "boundary")) {
                                   duplicate = !found.Take(v, quoted);
                                 }
                                 return !duplicate;
                               });
  if (duplicate) return "two boundary parameters in Content-Type";
  if (!ok) return "malformed Content-Type parameters";
  if (!found.seen) return "no boundary parameter in a multipart/form-data Content-Type";
  std::string storage;
  const std::string_view b = found.Value(&storage);
  if (!IsValidBoundary(b)) return "invalid multipart boundary in Content-Type";
  boundary->assign(b);
  *status = 0;
  return nullptr;
}

}  // namespace uring_http::http::multipart_internal
