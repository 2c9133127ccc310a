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

 private:
  std::string bytes_;
  std::vector<http::Header> headers_;
};

// The value of the first header line `name` in response.header_lines(), or
// "(none)"; how many lines have that name in *count.
inline std::string HeaderOf(const http::Response& response, std::string_view name,
                            int* count = nullptr) {
  std::string found = "(none)";
  int n = 0;
  std::string_view lines = response.header_lines();
  while (!lines.empty()) {
    const size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(end + 2);
    const size_t colon = line.find(':');
    std::string key(line.substr(0, colon));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string want(name);
    for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key != want) continue;
    if (n++ == 0) found = std::string(line.substr(colon + 2));
  }
  if (count != nullptr) *count = n;
  return found;
}

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_ROUTER_PARSED_REQUEST_H_
