// Small pieces of the HTTP/2 codec kept apart from nghttp2 (and from
// session.cc's length): the field list of a response or trailers as HTTP/2
// wants it, and base64url for the HTTP2-Settings header of an h2c upgrade.
//
// Private to src/http2. Thread-safety: none; a Session's.
#ifndef URING_HTTP_SRC_HTTP2_FIELD_LIST_H_
#define URING_HTTP_SRC_HTTP2_FIELD_LIST_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/header_table.h"
#include "src/http2/session.h"

namespace uring_http::http2::internal {

// RFC 9113 8.2.2's connection-specific fields (any case), which an HTTP/2
// message must not carry.
bool IsConnectionSpecific(std::string_view name);

// Builds the fields of one HEADERS frame: an optional :status first, then
// the table's fields with names lowercased (RFC 9113 8.2.1), leaving out
// connection-specific fields and any name starting with ':' (only we write
// pseudo-headers), then the server's. Only the lowercased names are copied
// (into the builder): values, and the server's fields, are viewed where
// they are, since nghttp2 copies a field list when it is submitted. The
// views stay valid until the next Build, or until what they view changes;
// the buffers are reused, so a warm builder allocates nothing.
class FieldList {
 public:
  struct Field {
    std::string_view name, value;
  };
  const std::vector<Field>& Build(std::string_view status, const http::HeaderTable* fields,
                                  std::span<const ServerField> server_fields = {});

 private:
  std::string bytes_;
  std::vector<Field> fields_;
};

// RFC 4648 5 (base64url); trailing '=' padding accepted, as clients differ.
bool DecodeBase64Url(std::string_view in, std::string* out);

}  // namespace uring_http::http2::internal

#endif  // URING_HTTP_SRC_HTTP2_FIELD_LIST_H_
