// One header line of a request, as the parser gives it: views into the
// received bytes. Apart from parser.h so that the request helpers
// (header_values.h) can walk header lines without depending on the parser.
//
// Thread-safety: a plain value; any thread.
#ifndef URING_HTTP_SRC_HTTP_HEADER_H_
#define URING_HTTP_SRC_HTTP_HEADER_H_

#include <string_view>

namespace uring_http::http {

struct Header {
  std::string_view name;   // as sent (case preserved)
  std::string_view value;  // leading and trailing whitespace removed
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_HEADER_H_
