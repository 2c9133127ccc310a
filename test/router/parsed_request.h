// A request parsed from its text, for tests that drive handlers and
// middleware without a server.
#ifndef URING_HTTP_TEST_ROUTER_PARSED_REQUEST_H_
#define URING_HTTP_TEST_ROUTER_PARSED_REQUEST_H_

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/http/parser.h"

namespace uring_http::testing {

class ParsedRequest {
 public:
  explicit ParsedRequest(std::string_view head) : bytes_(head), headers_(32) {
    const http::ParseResult result = http::ParseRequestHead(bytes_, http::ParseLimits{}, &request,
                                                            headers_.data(), headers_.size());
    EXPECT_EQ(result.status, http::ParseStatus::kComplete) << head;
  }
  ParsedRequest(const ParsedRequest&) = delete;
  ParsedRequest& operator=(const ParsedRequest&) = delete;

  http::Request request;
  // What routing it fills (its path_params is a view of them).
  http::PathParams params;

 private:
  std::string bytes_;
  std::vector<http::Header> headers_;
};

// The value of the first header field `name` in the response, or
// "(none)"; how many fields have that name in *count.
inline std::string HeaderOf(const http::Response& response, std::string_view name,
                            int* count = nullptr) {
  std::string found = "(none)";
  int n = 0;
  for (const http::HeaderTable::Field f : response.headers()) {
    if (!http::FieldNameEquals(f.name, name)) continue;
    if (n++ == 0) found = std::string(f.value);
  }
  if (count != nullptr) *count = n;
  return found;
}

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_ROUTER_PARSED_REQUEST_H_
