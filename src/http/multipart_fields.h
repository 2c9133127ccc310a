// The header fields of multipart/form-data (internal to multipart.cc and
// its tests): a part's Content-Disposition (name, filename, filename*) and
// Content-Type, and the boundary parameter of the request's Content-Type.
// Pure functions over complete header text; the rules are listed at the top
// of multipart.h.
//
// Thread-safety: stateless; any thread.
#ifndef URING_HTTP_SRC_HTTP_MULTIPART_FIELDS_H_
#define URING_HTTP_SRC_HTTP_MULTIPART_FIELDS_H_

#include <string>
#include <string_view>

namespace uring_http::http::multipart_internal {

bool IsTchar(char c);
// HTAB, SP, VCHAR, obs-text: what a field value may hold.
bool IsFieldValueByte(char c);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string_view TrimOws(std::string_view s);

// What a part's header lines say. Views into the header text, or into the
// storage strings when a value had to be unescaped or decoded.
struct PartFields {
  std::string_view name;
  std::string_view filename;
  bool has_filename = false;
  std::string_view content_type;
};

// Reads "Name: value\r\n" lines (already checked line by line by the
// parser). Returns nullptr, or why the headers are malformed (400).
const char* ParsePartHeaders(std::string_view lines, std::string* name_storage,
                             std::string* filename_storage, PartFields* out);

// `raw`, a quoted-string's inside: a backslash before '"' or '\' escapes
// it, any other backslash is itself. A view of `raw` when it holds no
// backslash, else written into *storage.
std::string_view Unescape(std::string_view raw, std::string* storage);

// An RFC 8187 ext-value (charset'language'pct-encoded) decoded to UTF-8
// into *out: false for a charset other than UTF-8 or ISO-8859-1, or a
// malformed value.
bool DecodeExtValue(std::string_view raw, std::string* out);

// The boundary of a multipart/form-data Content-Type. Returns nullptr, or
// why not, with *status 415 (another media type) or 400.
const char* ParseBoundaryParam(std::string_view content_type, int* status,
                               std::string* boundary);

}  // namespace uring_http::http::multipart_internal

#endif  // URING_HTTP_SRC_HTTP_MULTIPART_FIELDS_H_
