#include "src/http/parser.h"

#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

using namespace std::string_literals;

// Parses a private heap copy of exactly `input.size()` bytes, so that
// AddressSanitizer catches any read past the span.
class Parsed {
 public:
  explicit Parsed(std::string_view input, const ParseLimits& limits = {},
                  size_t capacity = 64)
      : buffer_(new char[input.size()]),
        size_(input.size()),
        headers_(capacity) {
    if (!input.empty()) std::memcpy(buffer_.get(), input.data(), input.size());
    result = ParseRequestHead(data(), limits, &request, headers_.data(), capacity);
  }
  Parsed(const Parsed&) = delete;
  Parsed& operator=(const Parsed&) = delete;

  std::string_view data() const { return {buffer_.get(), size_}; }

  // True if `view` is empty or lies inside the input buffer.
  bool Inside(std::string_view view) const {
    if (view.empty()) return true;
    return view.data() >= buffer_.get() &&
           view.data() + view.size() <= buffer_.get() + size_;
  }

  bool AllViewsInside() const {
    bool inside = Inside(request.method) && Inside(request.target) &&
                  Inside(request.path) && Inside(request.query) &&
                  Inside(request.host) && Inside(request.body);
    for (size_t i = 0; i < request.num_headers; ++i) {
      inside = inside && Inside(request.headers[i].name) &&
               Inside(request.headers[i].value);
    }
    return inside;
  }

  ParseResult result;
  Request request;

 private:
  std::unique_ptr<char[]> buffer_;
  size_t size_;
  std::vector<Header> headers_;
};

std::string Repeat(char c, size_t n) { return std::string(n, c); }

// Keeps test names readable and gtest parameter names valid.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 ||
               static_cast<unsigned char>(c) >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Valid requests.

struct ValidCase {
  const char* name;
  std::string input;
  std::string_view method = "GET";
  Method method_id = Method::kGet;
  std::string_view target = "/";
  std::string_view path = "/";
  std::string_view query = "";
  Version version = Version::kHttp11;
  std::string_view host = "h";
  uint64_t content_length = 0;
  bool keep_alive = true;
  bool expect_continue = false;
  size_t num_headers = 1;
  std::string_view body = "";  // the body bytes after the head (not parsed)
  BodyFraming framing = BodyFraming::kNone;  // kContentLength implied by content_length
  size_t trailing = 0;  // bytes after the request that belong to the next one

  friend std::ostream& operator<<(std::ostream& os, const ValidCase& c) {
    return os << Printable(c.input);
  }
};

const std::vector<ValidCase>& ValidCases() {
  static const auto* cases = new std::vector<ValidCase>{
      {.name = "wrk",
       .input = "GET /test/fast HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n",
       .target = "/test/fast",
       .path = "/test/fast",
       .host = "127.0.0.1:9000"},
      {.name = "ab",
       .input = "GET /test/fast HTTP/1.0\r\nHost: 127.0.0.1:9000\r\n"
                "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n",
       .target = "/test/fast",
       .path = "/test/fast",
       .version = Version::kHttp10,
       .host = "127.0.0.1:9000",
       .keep_alive = false,
       .num_headers = 3},
      {.name = "ab_keepalive",
       .input = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: h\r\n"
                "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n",
       .version = Version::kHttp10,
       .keep_alive = true,
       .num_headers = 4},
      {.name = "curl",
       .input = "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: localhost:8080\r\n"
                "User-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
       .target = "/a/b?x=1&y=2",
       .path = "/a/b",
       .query = "x=1&y=2",
       .host = "localhost:8080",
       .num_headers = 3},
      {.name = "empty_query",
       .input = "GET /a? HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "/a?",
       .path = "/a"},
      {.name = "second_question_mark_in_query",
       .input = "GET /a?b?c HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "/a?b?c",
       .path = "/a",
       .query = "b?c"},
      {.name = "post_body",
       .input = "POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                "\r\nhello",
       .method = "POST",
       .method_id = Method::kPost,
       .target = "/submit",
       .path = "/submit",
       .content_length = 5,
       .num_headers = 2,
       .body = "hello"},
      {.name = "post_body_then_next_request",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
                "GET / HTTP/1.1\r\n",
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 3,
       .num_headers = 2,
       .body = "abc",
       .trailing = 16},
      {.name = "content_length_zero",
       .input = "PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
       .method = "PUT",
       .method_id = Method::kPut,
       .target = "/x",
       .path = "/x",
       .num_headers = 2},
      {.name = "content_length_leading_zeros",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 003\r\n\r\nabc",
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 3,
       .num_headers = 2,
       .body = "abc"},
      {.name = "content_length_repeated_same",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n"
                "Content-Length: 2\r\n\r\nab",
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 2,
       .num_headers = 3,
       .body = "ab"},
      {.name = "content_length_list_same",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2 , 2,2\r\n"
                "\r\nab",
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 2,
       .num_headers = 2,
       .body = "ab"},
      {.name = "content_length_at_limit",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1048576\r\n"
                "\r\n" + Repeat('b', 1048576),
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 1048576,
       .num_headers = 2,
       .body = ""},  // checked by size below
      {.name = "all_methods_head",
       .input = "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "HEAD",
       .method_id = Method::kHead},
      {.name = "delete",
       .input = "DELETE / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "DELETE",
       .method_id = Method::kDelete},
      {.name = "patch",
       .input = "PATCH / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "PATCH",
       .method_id = Method::kPatch},
      {.name = "trace",
       .input = "TRACE / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "TRACE",
       .method_id = Method::kTrace},
      {.name = "connect_origin_form",
       .input = "CONNECT / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "CONNECT",
       .method_id = Method::kConnect},
      {.name = "options_asterisk",
       .input = "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "OPTIONS",
       .method_id = Method::kOptions,
       .target = "*",
       .path = "*"},
      {.name = "lowercase_method_is_other",
       .input = "get / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "get",
       .method_id = Method::kOther},
      {.name = "token_method_is_other",
       .input = "M-SEARCH! / HTTP/1.1\r\nHost: h\r\n\r\n",
       .method = "M-SEARCH!",
       .method_id = Method::kOther},
      {.name = "absolute_form",
       .input = "GET http://example.com:8080/p/q?x=1 HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "http://example.com:8080/p/q?x=1",
       .path = "/p/q",
       .query = "x=1"},
      {.name = "absolute_form_https_upper",
       .input = "GET HTTPS://e/ HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "HTTPS://e/",
       .path = "/"},
      {.name = "absolute_form_empty_path",
       .input = "GET http://example.com HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "http://example.com",
       .path = "/"},
      {.name = "absolute_form_empty_path_query",
       .input = "GET http://e?a=b HTTP/1.1\r\nHost: h\r\n\r\n",
       .target = "http://e?a=b",
       .path = "/",
       .query = "a=b"},
      {.name = "bare_request_line",
       .input = "GET /test/fast\r\n\r\n",
       .target = "/test/fast",
       .path = "/test/fast",
       .version = Version::kBare,
       .host = "",
       .keep_alive = false,
       .num_headers = 0},
      {.name = "bare_request_line_with_headers",
       .input = "GET /x\r\nConnection: keep-alive\r\n\r\n",
       .target = "/x",
       .path = "/x",
       .version = Version::kBare,
       .host = "",
       .keep_alive = false},
      {.name = "http10_without_host",
       .input = "GET / HTTP/1.0\r\n\r\n",
       .version = Version::kHttp10,
       .host = "",
       .keep_alive = false,
       .num_headers = 0},
      {.name = "http10_keep_alive_and_close",
       .input = "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
       .version = Version::kHttp10,
       .host = "",
       .keep_alive = false},
      {.name = "http10_keep_alive_in_list",
       .input = "GET / HTTP/1.0\r\nConnection: Upgrade ,\tKEEP-ALIVE \r\n\r\n",
       .version = Version::kHttp10,
       .host = "",
       .keep_alive = true},
      {.name = "http11_close",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
       .keep_alive = false,
       .num_headers = 2},
      {.name = "http11_close_uppercase_in_list",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nConnection: TE, CLOSE\r\n\r\n",
       .keep_alive = false,
       .num_headers = 2},
      {.name = "http11_close_in_second_connection_header",
       .input = "GET / HTTP/1.1\r\nConnection: keep-alive\r\nHost: h\r\n"
                "Connection: close\r\n\r\n",
       .keep_alive = false,
       .num_headers = 3},
      {.name = "http11_closed_is_not_close",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n",
       .keep_alive = true,
       .num_headers = 2},
      {.name = "expect_continue",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n"
                "Content-Length: 1\r\n\r\nx",
       .method = "POST",
       .method_id = Method::kPost,
       .content_length = 1,
       .expect_continue = true,
       .num_headers = 3,
       .body = "x"},
      {.name = "expect_continue_ignored_in_http10",
       .input = "POST / HTTP/1.0\r\nExpect: 100-continue\r\n"
                "Content-Length: 1\r\n\r\nx",
       .method = "POST",
       .method_id = Method::kPost,
       .version = Version::kHttp10,
       .host = "",
       .content_length = 1,
       .keep_alive = false,
       .num_headers = 2,
       .body = "x"},
      {.name = "expect_other",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n",
       .num_headers = 2},
      {.name = "bare_lf_line_endings",
       .input = "GET /lf HTTP/1.1\nHost: h\nX: y\n\n",
       .target = "/lf",
       .path = "/lf",
       .num_headers = 2},
      {.name = "mixed_line_endings",
       .input = "GET / HTTP/1.1\nHost: h\r\nX: y\n\r\n",
       .num_headers = 2},
      {.name = "leading_crlf_skipped",
       .input = "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"},
      {.name = "leading_lf_skipped",
       .input = "\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"},
      {.name = "value_whitespace_trimmed",
       .input = "GET / HTTP/1.1\r\nHost:  \t h \t \r\n\r\n"},
      {.name = "value_empty",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nY:   \r\n\r\n",
       .num_headers = 3},
      {.name = "value_obs_text_and_inner_space",
       .input = "GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9 au\tlait\r\n\r\n",
       .num_headers = 2},
      {.name = "host_case_insensitive",
       .input = "GET / HTTP/1.1\r\nhOsT: example\r\n\r\n",
       .host = "example"},
      {.name = "host_empty_value",
       .input = "GET / HTTP/1.1\r\nHost:\r\n\r\n",
       .host = ""},
      {.name = "header_name_all_tchars",
       .input = "GET / HTTP/1.1\r\nHost: h\r\n!#$%&'*+-.^_`|~09azAZ: v\r\n\r\n",
       .num_headers = 2},
      {.name = "target_all_vchars",
       .input = "GET /!\"#$%&'()*+,-./09:;<=>@AZ[\\]^_`az{|}~ HTTP/1.1\r\n"
                "Host: h\r\n\r\n",
       .target = "/!\"#$%&'()*+,-./09:;<=>@AZ[\\]^_`az{|}~",
       .path = "/!\"#$%&'()*+,-./09:;<=>@AZ[\\]^_`az{|}~"},
      {.name = "transfer_encoding_chunked",
       .input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                "3\r\nabc\r\n0\r\n\r\n",
       .method = "POST",
       .method_id = Method::kPost,
       .num_headers = 2,
       .framing = BodyFraming::kChunked,
       .trailing = 13},
      {.name = "transfer_encoding_chunked_any_case_and_ows",
       .input = "POST / HTTP/1.1\r\nHost: h\r\ntransfer-ENCODING: \t CHUNKED \r\n\r\n",
       .method = "POST",
       .method_id = Method::kPost,
       .num_headers = 2,
       .framing = BodyFraming::kChunked},
      {.name = "followed_by_pipelined_request",
       .input = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\n",
       .target = "/1",
       .path = "/1",
       .trailing = 17},
      {.name = "followed_by_garbage",
       .input = "GET / HTTP/1.1\r\nHost: h\r\n\r\n\x01\x02 garbage",
       .trailing = 10},
  };
  return *cases;
}

class ValidRequestTest : public ::testing::TestWithParam<ValidCase> {};

void ExpectFields(const ValidCase& c, const Parsed& p) {
  const Request& r = p.request;
  EXPECT_EQ(r.method, c.method);
  EXPECT_EQ(r.method_id, c.method_id);
  EXPECT_EQ(r.target, c.target);
  EXPECT_EQ(r.path, c.path);
  EXPECT_EQ(r.query, c.query);
  EXPECT_EQ(r.version, c.version);
  EXPECT_EQ(r.host, c.host);
  EXPECT_EQ(r.content_length, c.content_length);
  EXPECT_EQ(r.keep_alive, c.keep_alive);
  EXPECT_EQ(r.expect_continue, c.expect_continue);
  EXPECT_EQ(r.num_headers, c.num_headers);
  // The parser reads the head only: the body is the caller's.
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.body_reader, nullptr);
  const BodyFraming framing =
      c.content_length > 0 ? BodyFraming::kContentLength : c.framing;
  EXPECT_EQ(r.framing, framing);
  EXPECT_EQ(r.head_bytes + r.content_length, c.input.size() - c.trailing);
  if (c.content_length > 0 && c.content_length <= c.body.size()) {
    EXPECT_EQ(std::string_view(p.data().data() + r.head_bytes, r.content_length), c.body);
  }
  EXPECT_TRUE(p.AllViewsInside());
}

TEST_P(ValidRequestTest, ParsesCompletely) {
  const ValidCase& c = GetParam();
  Parsed p(c.input);
  ASSERT_EQ(p.result.status, ParseStatus::kComplete)
      << "error_status=" << p.result.error_status;
  EXPECT_EQ(p.result.consumed, p.request.head_bytes);
  EXPECT_EQ(p.result.error_status, 0);
  ExpectFields(c, p);
}

// Every prefix of a valid head is "need more", never an error; FindHeadEnd
// finds the end exactly when the whole head is there, fed at once or a byte
// at a time.
TEST_P(ValidRequestTest, EveryPrefixIsIncomplete) {
  const ValidCase& c = GetParam();
  Parsed full(c.input);
  ASSERT_EQ(full.result.status, ParseStatus::kComplete);
  const size_t head_bytes = full.request.head_bytes;
  size_t scanned = 0;
  for (size_t k = 0; k < head_bytes; ++k) {
    const std::string_view prefix = std::string_view(c.input).substr(0, k);
    Parsed p(prefix);
    ASSERT_EQ(p.result.status, ParseStatus::kIncomplete)
        << "prefix " << k << ": " << Printable(c.input.substr(0, k))
        << " error_status=" << p.result.error_status;
    EXPECT_EQ(p.result.consumed, 0u);
    EXPECT_EQ(FindHeadEnd(prefix, &scanned), 0u) << "prefix " << k;
    size_t fresh = 0;
    EXPECT_EQ(FindHeadEnd(prefix, &fresh), 0u) << "prefix " << k;
  }
  EXPECT_EQ(FindHeadEnd(std::string_view(c.input).substr(0, head_bytes), &scanned),
            head_bytes);
  size_t fresh = 0;
  EXPECT_EQ(FindHeadEnd(c.input, &fresh), head_bytes);
}

// The bytes after the request do not change how it parses.
TEST_P(ValidRequestTest, ExactInputParsesTheSame) {
  const ValidCase& c = GetParam();
  Parsed p(std::string_view(c.input).substr(0, c.input.size() - c.trailing));
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  ExpectFields(c, p);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ValidRequestTest, ::testing::ValuesIn(ValidCases()),
    [](const ::testing::TestParamInfo<ValidCase>& info) {
      return std::string(info.param.name);
    });

// ---------------------------------------------------------------------------
// Invalid requests.

struct ErrorCase {
  const char* name;
  std::string input;
  int status;
  ParseLimits limits = {};
  size_t capacity = 64;

  friend std::ostream& operator<<(std::ostream& os, const ErrorCase& c) {
    return os << Printable(c.input);
  }
};

ParseLimits Limits(size_t line, size_t header_bytes, size_t headers,
                   uint64_t body) {
  ParseLimits l;
  l.max_request_line = line;
  l.max_header_bytes = header_bytes;
  l.max_headers = headers;
  l.max_body_bytes = body;
  return l;
}

const std::vector<ErrorCase>& ErrorCases() {
  static const auto* cases = new std::vector<ErrorCase>{
      // Request line.
      {"empty_request_line", "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"only_method", "GET\r\n\r\n", 400},
      {"method_then_space", "GET \r\n\r\n", 400},
      {"leading_space", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bad_method_char", "GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"method_with_nul", "GE\0T / HTTP/1.1\r\nHost: h\r\n\r\n"s, 400},
      {"double_space_after_method", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"double_space_before_version", "GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"tab_separator", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"trailing_space", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
      {"empty_version", "GET / \r\nHost: h\r\n\r\n", 400},
      {"relative_target", "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"authority_form", "CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"asterisk_with_more", "OPTIONS *x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"absolute_form_other_scheme", "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
       400},
      {"absolute_form_no_host", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n",
       400},
      {"absolute_form_scheme_only", "GET http:// HTTP/1.1\r\nHost: h\r\n\r\n",
       400},
      {"target_with_del", "GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"target_with_obs_text", "GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"target_with_tab", "GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bare_cr_in_request_line", "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bare_cr_ends_request_line", "GET / HTTP/1.1\rHost: h\r\n\r\n", 400},
      {"cr_cr_lf", "GET / HTTP/1.1\r\r\nHost: h\r\n\r\n", 400},
      {"leading_bare_cr", "\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"lowercase_http", "GET / http/1.1\r\nHost: h\r\n\r\n", 400},
      {"version_without_minor", "GET / HTTP/1\r\nHost: h\r\n\r\n", 400},
      {"version_two_digit_minor", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400},
      {"version_letter", "GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400},
      {"version_http2_short", "GET / HTTP/2\r\nHost: h\r\n\r\n", 400},
      {"version_garbage", "GET / FOO\r\nHost: h\r\n\r\n", 400},
      {"version_extra_part", "GET / HTTP/1.1 x\r\nHost: h\r\n\r\n", 400},
      {"version_2_0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"version_0_9", "GET / HTTP/0.9\r\n\r\n", 505},
      {"version_1_2", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505},
      {"version_3_0_no_headers_needed", "GET / HTTP/3.0\r\n", 505},
      // Header lines.
      {"space_before_colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},
      {"tab_before_colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400},
      {"empty_name", "GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400},
      {"no_colon", "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
      {"name_with_slash", "GET / HTTP/1.1\r\nHost: h\r\nA/B: v\r\n\r\n", 400},
      {"name_with_obs_text", "GET / HTTP/1.1\r\nHost: h\r\nA\xc3\xa9: v\r\n\r\n",
       400},
      {"obs_fold_space", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400},
      {"obs_fold_tab", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", 400},
      {"space_first_header", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400},
      {"whitespace_only_line", "GET / HTTP/1.1\r\nHost: h\r\n \r\n\r\n", 400},
      {"nul_in_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"s, 400},
      {"del_in_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400},
      {"escape_in_value", "GET / HTTP/1.1\r\nHost: h\r\nX: \x1b[0m\r\n\r\n", 400},
      {"bare_cr_in_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400},
      {"bare_cr_ends_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\r\n\r\n", 400},
      {"bare_cr_in_name", "GET / HTTP/1.1\r\nHo\rst: h\r\n\r\n", 400},
      {"bare_cr_blank_line", "GET / HTTP/1.1\r\nHost: h\r\n\r\r\n", 400},
      {"bare_cr_as_line_end", "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400},
      // Host.
      {"http11_missing_host", "GET / HTTP/1.1\r\n\r\n", 400},
      {"http11_duplicate_host", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
       400},
      {"http10_duplicate_host", "GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n",
       400},
      {"host_name_with_space_is_not_host",
       "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
      // Content-Length.
      {"content_length_empty", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n"
                               "\r\n", 400},
      {"content_length_sign_plus",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx", 400},
      {"content_length_sign_minus",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\nx", 400},
      {"content_length_inner_space",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", 400},
      {"content_length_hex", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x1"
                             "\r\n\r\nx", 400},
      {"content_length_trailing_letter",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1a\r\n\r\nx", 400},
      {"content_length_overflow",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n"
       "\r\n",
       400},
      {"content_length_huge_overflow",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999"
       "\r\n\r\n",
       400},
      {"content_length_differing",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2"
       "\r\n\r\nxx",
       400},
      {"content_length_list_differing",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 2\r\n\r\nxx", 400},
      {"content_length_list_empty_item",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1,,1\r\n\r\nx", 400},
      {"content_length_list_trailing_comma",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1,\r\n\r\nx", 400},
      {"content_length_and_transfer_encoding",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n"
       "Transfer-Encoding: chunked\r\n\r\n",
       400},
      {"transfer_encoding_then_content_length",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
       "Content-Length: 1\r\n\r\n",
       400},
      // Transfer-Encoding (RFC 9112 6.1, 6.3): only a list whose one and
      // final coding is chunked frames a body; a coding we lack before it
      // is a 501; anything else is a 400.
      {"transfer_encoding_gzip_alone",
       "POST / HTTP/1.1\r\nHost: h\r\ntransfer-ENCODING: gzip\r\n\r\n", 400},
      {"transfer_encoding_identity",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 400},
      {"transfer_encoding_gzip_then_chunked",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"transfer_encoding_gzip_then_chunked_two_lines",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
       "Transfer-Encoding: chunked\r\n\r\n",
       501},
      {"transfer_encoding_chunked_then_gzip",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
      {"transfer_encoding_chunked_twice",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
       400},
      {"transfer_encoding_chunked_twice_two_lines",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
       "Transfer-Encoding: chunked\r\n\r\n",
       400},
      {"transfer_encoding_in_http10",
       "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"transfer_encoding_in_bare_request",
       "POST /\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"transfer_encoding_empty",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400},
      {"transfer_encoding_empty_element",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , chunked\r\n\r\n", 400},
      {"transfer_encoding_chunked_with_parameter",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400},
      {"transfer_encoding_not_a_token",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400},
      {"transfer_encoding_inner_space",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chun ked\r\n\r\n", 400},
      {"transfer_encoding_chunked_suffix",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunkedx\r\n\r\n", 400},
      {"transfer_encoding_obs_fold",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", 400},
      {"transfer_encoding_space_before_colon",
       "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400},
      {"transfer_encoding_and_content_length_zero",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
       "Transfer-Encoding: chunked\r\n\r\n",
       400},
      // Limits.
      {"request_line_over_limit", "GET /" + Repeat('a', 8192) + " HTTP/1.1\r\n",
       414},
      {"request_line_over_small_limit", "GET /abcdefgh HTTP/1.1\r\n\r\n", 414,
       Limits(21, 16384, 100, 1024)},
      {"request_line_over_limit_without_lf", "GET /" + Repeat('a', 40), 414,
       Limits(32, 16384, 100, 1024)},
      {"request_line_over_limit_without_cr", "GET /" + Repeat('a', 28) + "\r",
       414, Limits(32, 16384, 100, 1024)},
      {"long_bad_request_line_is_414", Repeat('(', 40) + "\r\n", 414,
       Limits(32, 16384, 100, 1024)},
      {"header_bytes_over_limit",
       "GET / HTTP/1.1\r\nHost: h\r\nX: " + Repeat('v', 16384) + "\r\n\r\n",
       431},
      {"header_bytes_over_limit_without_lf",
       "GET / HTTP/1.1\r\nHost: h\r\nX: " + Repeat('v', 64), 431,
       Limits(8192, 64, 100, 1024)},
      {"blank_line_counts_toward_header_bytes",
       "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 431, Limits(8192, 10, 100, 1024)},
      {"too_many_headers_limit",
       "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431,
       Limits(8192, 16384, 3, 1024)},
      {"too_many_headers_capacity",
       "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431,
       ParseLimits{}, 3},
      {"zero_capacity_one_header", "GET / HTTP/1.0\r\nA: 1\r\n\r\n", 431,
       ParseLimits{}, 0},
      {"too_many_headers_before_end",
       "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n", 431,
       Limits(8192, 16384, 2, 1024)},
  };
  return *cases;
}

class ErrorRequestTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ErrorRequestTest, ReturnsStatus) {
  const ErrorCase& c = GetParam();
  Parsed p(c.input, c.limits, c.capacity);
  ASSERT_EQ(p.result.status, ParseStatus::kError);
  EXPECT_EQ(p.result.error_status, c.status);
  EXPECT_EQ(p.result.consumed, 0u);
}

// A prefix of a bad request is "need more" or the same error, never another
// one: a caller that re-parses after each receive sees one consistent answer.
TEST_P(ErrorRequestTest, EveryPrefixIsIncompleteOrTheSameError) {
  const ErrorCase& c = GetParam();
  if (c.input.size() > 4096) GTEST_SKIP() << "long input";
  for (size_t k = 0; k < c.input.size(); ++k) {
    Parsed p(std::string_view(c.input).substr(0, k), c.limits, c.capacity);
    if (p.result.status == ParseStatus::kError) {
      EXPECT_EQ(p.result.error_status, c.status) << "prefix " << k;
    } else {
      EXPECT_EQ(p.result.status, ParseStatus::kIncomplete) << "prefix " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ErrorRequestTest, ::testing::ValuesIn(ErrorCases()),
    [](const ::testing::TestParamInfo<ErrorCase>& info) {
      return std::string(info.param.name);
    });

// ---------------------------------------------------------------------------
// Byte classes: every byte value in every position of a word, so that the
// word-at-a-time screening of header values agrees with the table.

bool IsVchar(int b) { return b >= 0x21 && b <= 0x7e; }

bool IsTchar(int b) {
  return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') ||
         (b >= 'A' && b <= 'Z') ||
         (b != 0 && std::strchr("!#$%&'*+-.^_`|~", b) != nullptr);
}

TEST(ParserByteClassTest, FieldValueBytes) {
  for (int b = 0; b < 256; ++b) {
    const bool allowed = b == '\t' || b == ' ' || IsVchar(b) || b >= 0x80;
    for (size_t pos = 1; pos < 19; ++pos) {
      std::string value(20, 'a');
      value[pos] = static_cast<char>(b);
      const std::string input =
          "GET / HTTP/1.1\r\nHost: h\r\nX: " + value + "\r\n\r\n";
      Parsed p(input);
      if (allowed) {
        ASSERT_EQ(p.result.status, ParseStatus::kComplete)
            << "byte " << b << " at " << pos;
        EXPECT_EQ(p.request.FindHeader("x"), value);
      } else {
        ASSERT_EQ(p.result.status, ParseStatus::kError)
            << "byte " << b << " at " << pos;
        EXPECT_EQ(p.result.error_status, 400);
      }
    }
  }
}

TEST(ParserByteClassTest, HeaderNameBytes) {
  for (int b = 0; b < 256; ++b) {
    if (b == ':') continue;
    const std::string input =
        std::string("GET / HTTP/1.1\r\nHost: h\r\nX") + static_cast<char>(b) +
        "Y: v\r\n\r\n";
    Parsed p(input);
    if (IsTchar(b)) {
      EXPECT_EQ(p.result.status, ParseStatus::kComplete) << "byte " << b;
    } else {
      ASSERT_EQ(p.result.status, ParseStatus::kError) << "byte " << b;
      EXPECT_EQ(p.result.error_status, 400) << "byte " << b;
    }
  }
}

TEST(ParserByteClassTest, MethodBytes) {
  for (int b = 0; b < 256; ++b) {
    const std::string input = std::string("G") + static_cast<char>(b) +
                              "T / HTTP/1.1\r\nHost: h\r\n\r\n";
    Parsed p(input);
    if (IsTchar(b)) {
      EXPECT_EQ(p.result.status, ParseStatus::kComplete) << "byte " << b;
    } else {
      ASSERT_EQ(p.result.status, ParseStatus::kError) << "byte " << b;
      EXPECT_EQ(p.result.error_status, 400) << "byte " << b;
    }
  }
}

TEST(ParserByteClassTest, TargetBytes) {
  for (int b = 0; b < 256; ++b) {
    if (b == ' ') continue;  // ends the target: covered by the error table
    const std::string input = std::string("GET /a") + static_cast<char>(b) +
                              "b HTTP/1.1\r\nHost: h\r\n\r\n";
    Parsed p(input);
    if (IsVchar(b)) {
      EXPECT_EQ(p.result.status, ParseStatus::kComplete) << "byte " << b;
    } else {
      ASSERT_EQ(p.result.status, ParseStatus::kError) << "byte " << b;
      EXPECT_EQ(p.result.error_status, 400) << "byte " << b;
    }
  }
}

// ---------------------------------------------------------------------------
// Pipelining, limits and the remaining API.

TEST(ParserTest, PipelinedRequestsParseOneAfterAnother) {
  const std::string input =
      "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
      "GET /3?q HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
      "\r\n"  // a stray CRLF after a body is tolerated
      "GET /4 HTTP/1.0\r\n\r\n"
      "GET /5 HTTP/1.1\r\nHost: h\r\n";  // incomplete
  struct Expected {
    std::string_view path;
    std::string_view body;
    bool keep_alive;
  };
  const Expected expected[] = {
      {"/1", "", true}, {"/2", "body", true}, {"/3", "", false},
      {"/4", "", false}};
  std::string_view rest = input;
  for (const Expected& e : expected) {
    Parsed p(rest);
    ASSERT_EQ(p.result.status, ParseStatus::kComplete) << e.path;
    EXPECT_EQ(p.request.path, e.path);
    EXPECT_EQ(rest.substr(p.result.consumed, p.request.content_length), e.body);
    EXPECT_EQ(p.request.keep_alive, e.keep_alive);
    rest.remove_prefix(p.result.consumed + p.request.content_length);
  }
  Parsed last(rest);
  EXPECT_EQ(last.result.status, ParseStatus::kIncomplete);
  EXPECT_EQ(rest, "GET /5 HTTP/1.1\r\nHost: h\r\n");
}

TEST(ParserTest, SixteenWrkRequestsPipelined) {
  const std::string one = "GET /test/fast HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n";
  std::string input;
  for (int i = 0; i < 16; ++i) input += one;
  std::string_view rest = input;
  int count = 0;
  while (!rest.empty()) {
    Parsed p(rest);
    ASSERT_EQ(p.result.status, ParseStatus::kComplete);
    ASSERT_EQ(p.result.consumed, one.size());
    rest.remove_prefix(p.result.consumed);
    ++count;
  }
  EXPECT_EQ(count, 16);
}

TEST(ParserTest, EmptyInputIsIncomplete) {
  Parsed p("");
  EXPECT_EQ(p.result.status, ParseStatus::kIncomplete);
  size_t scanned = 0;
  EXPECT_EQ(FindHeadEnd("", &scanned), 0u);
  ParseLimits zero = Limits(0, 0, 0, 0);
  Parsed q("", zero, 0);
  EXPECT_EQ(q.result.status, ParseStatus::kIncomplete);
}

TEST(ParserTest, NullDataIsIncomplete) {
  Request request;
  const ParseResult r =
      ParseRequestHead(std::string_view(), ParseLimits{}, &request, nullptr, 0);
  EXPECT_EQ(r.status, ParseStatus::kIncomplete);
}

TEST(ParserTest, RequestLineExactlyAtLimit) {
  const std::string line = "GET /" + Repeat('a', 10) + " HTTP/1.1";  // 24 bytes
  ASSERT_EQ(line.size(), 24u);
  const ParseLimits at = Limits(24, 16384, 100, 1024);
  const ParseLimits below = Limits(23, 16384, 100, 1024);
  const std::string input = line + "\r\nHost: h\r\n\r\n";
  EXPECT_EQ(Parsed(input, at).result.status, ParseStatus::kComplete);
  Parsed over(input, below);
  EXPECT_EQ(over.result.status, ParseStatus::kError);
  EXPECT_EQ(over.result.error_status, 414);
  // Incomplete: the line at the limit waits, one byte more is a 414.
  EXPECT_EQ(Parsed(line, at).result.status, ParseStatus::kIncomplete);
  EXPECT_EQ(Parsed(line + "\r", at).result.status, ParseStatus::kIncomplete);
  EXPECT_EQ(Parsed(line + "x", at).result.error_status, 414);
  EXPECT_EQ(Parsed(line, below).result.error_status, 414);
}

TEST(ParserTest, EarlyRequestLine414OnDefaultLimit) {
  // A client streaming a huge target is stopped before its line ends.
  const std::string input = "GET /" + Repeat('a', 8 * 1024);
  Parsed p(input);
  ASSERT_EQ(p.result.status, ParseStatus::kError);
  EXPECT_EQ(p.result.error_status, 414);
  Parsed shorter(std::string_view(input).substr(0, 8 * 1024));
  EXPECT_EQ(shorter.result.status, ParseStatus::kIncomplete);
}

TEST(ParserTest, HeaderBytesExactlyAtLimit) {
  const std::string head = "GET / HTTP/1.1\r\n";
  const std::string section = "Host: h\r\nX: 12345\r\n\r\n";  // 21 bytes
  ASSERT_EQ(section.size(), 21u);
  const ParseLimits at = Limits(8192, 21, 100, 1024);
  const ParseLimits below = Limits(8192, 20, 100, 1024);
  EXPECT_EQ(Parsed(head + section, at).result.status, ParseStatus::kComplete);
  EXPECT_EQ(Parsed(head + section, below).result.error_status, 431);
  // Early: 21 bytes without the blank line may still end well at 21 ...
  const std::string partial = head + "Host: h\r\nX: 123456789";  // 21 bytes
  EXPECT_EQ(Parsed(partial, at).result.status, ParseStatus::kIncomplete);
  // ... 22 cannot.
  EXPECT_EQ(Parsed(partial + "3", at).result.error_status, 431);
}

TEST(ParserTest, EarlyHeader431OnDefaultLimit) {
  std::string input = "GET / HTTP/1.1\r\nHost: h\r\n";
  while (input.size() < 17 * 1024) input += "X-Filler: 0123456789abcdef\r\n";
  Parsed p(input);
  ASSERT_EQ(p.result.status, ParseStatus::kError);
  EXPECT_EQ(p.result.error_status, 431);
}

TEST(ParserTest, HeaderCountExactlyAtLimit) {
  const std::string input =
      "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n";  // 3 headers
  EXPECT_EQ(Parsed(input, ParseLimits{}, 3).result.status,
            ParseStatus::kComplete);
  EXPECT_EQ(Parsed(input, Limits(8192, 16384, 3, 1024), 64).result.status,
            ParseStatus::kComplete);
  EXPECT_EQ(Parsed(input, ParseLimits{}, 2).result.error_status, 431);
  EXPECT_EQ(Parsed(input, Limits(8192, 16384, 2, 1024), 64).result.error_status,
            431);
  // No headers at all fit in a zero-sized array.
  EXPECT_EQ(Parsed("GET / HTTP/1.0\r\n\r\n", ParseLimits{}, 0).result.status,
            ParseStatus::kComplete);
}

// Body sizes are the connection's to judge (per route): the parser reports
// any Content-Length that fits in 64 bits, and nothing past the head.
TEST(ParserTest, BodySizeIsNotTheParsersToJudge) {
  const std::string head =
      "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n";
  Parsed p(head);
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  EXPECT_EQ(p.request.content_length, UINT64_MAX);
  EXPECT_EQ(p.request.framing, BodyFraming::kContentLength);
  EXPECT_EQ(p.result.consumed, head.size());
  Parsed over(std::string_view(
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n"));
  EXPECT_EQ(over.result.error_status, 400);
}

TEST(ParserTest, ExpectContinueHeadWithoutBody) {
  const std::string head =
      "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
      "Content-Length: 10\r\n\r\n";
  Parsed p(head + "01234");
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  EXPECT_TRUE(p.request.expect_continue);
  EXPECT_EQ(p.request.head_bytes, head.size());
  EXPECT_EQ(p.result.consumed, head.size());
  EXPECT_EQ(p.request.content_length, 10u);
  EXPECT_TRUE(p.request.body.empty());
}

TEST(ParserTest, ReadBodyReadsTheBufferedBody) {
  Request request;
  request.body = "hello world";
  char buf[4];
  std::string got;
  long n;
  while ((n = request.ReadBody(buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(n, 0);
  EXPECT_EQ(got, "hello world");
}

TEST(ParserTest, FindHeadEndResumesAndSkipsOneLeadingEmptyLine) {
  const std::string input = "\r\nGET / HTTP/1.1\r\nHost: h\n\r\nnext";
  const size_t end = input.size() - 4;
  for (size_t split = 0; split <= end; ++split) {
    size_t scanned = 0;
    EXPECT_EQ(FindHeadEnd(std::string_view(input).substr(0, split), &scanned),
              split == end ? end : 0u)
        << split;
    EXPECT_EQ(FindHeadEnd(input, &scanned), end) << split;
  }
  size_t scanned = 0;
  // An empty request line after the skipped one: the parser's 400 to give.
  EXPECT_EQ(FindHeadEnd("\r\n\r\nGET", &scanned), 4u);
  scanned = 0;
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nA: b\r\r\n", &scanned), 0u);
  scanned = 0;
  EXPECT_EQ(FindHeadEnd("GET /\n\n", &scanned), 7u);
}

TEST(ParserTest, HeadersKeepOrderAndCase) {
  Parsed p("GET / HTTP/1.1\r\nHost: h\r\nX-One: 1\r\nx-two:2\r\n\r\n");
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  ASSERT_EQ(p.request.num_headers, 3u);
  EXPECT_EQ(p.request.headers[0].name, "Host");
  EXPECT_EQ(p.request.headers[1].name, "X-One");
  EXPECT_EQ(p.request.headers[1].value, "1");
  EXPECT_EQ(p.request.headers[2].name, "x-two");
  EXPECT_EQ(p.request.headers[2].value, "2");
}

TEST(ParserTest, FindHeaderIsCaseInsensitive) {
  Parsed p(
      "GET / HTTP/1.1\r\nHost: h\r\nX-Custom: first\r\nx-custom: second\r\n"
      "Accept: */*\r\n\r\n");
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  EXPECT_EQ(p.request.FindHeader("X-CUSTOM"), "first");
  EXPECT_EQ(p.request.FindHeader("x-custom"), "first");
  EXPECT_EQ(p.request.FindHeader("accept"), "*/*");
  EXPECT_EQ(p.request.FindHeader("HOST"), "h");
  EXPECT_TRUE(p.request.FindHeader("X-Custo").empty());
  EXPECT_TRUE(p.request.FindHeader("X-Customs").empty());
  EXPECT_TRUE(p.request.FindHeader("").empty());
  // Not a plain |0x20 compare: '^' and '~' differ.
  Parsed q("GET / HTTP/1.0\r\nA^: v\r\n\r\n");
  ASSERT_EQ(q.result.status, ParseStatus::kComplete);
  EXPECT_TRUE(q.request.FindHeader("a~").empty());
  EXPECT_EQ(q.request.FindHeader("a^"), "v");
}

TEST(ParserTest, AbsoluteFormEmptyPathPointsIntoInput) {
  Parsed p("GET http://h HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p.result.status, ParseStatus::kComplete);
  EXPECT_EQ(p.request.path, "/");
  EXPECT_TRUE(p.AllViewsInside());
}

TEST(ParserTest, OverwritesPreviousRequest) {
  Request request;
  Header headers[8];
  ParseRequestHead("POST /a?b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx",
                   ParseLimits{}, &request, headers, 8);
  const ParseResult r = ParseRequestHead("GET /c HTTP/1.0\r\n\r\n", ParseLimits{},
                                         &request, headers, 8);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(request.query, "");
  EXPECT_EQ(request.host, "");
  EXPECT_EQ(request.content_length, 0u);
  EXPECT_EQ(request.framing, BodyFraming::kNone);
  EXPECT_EQ(request.num_headers, 0u);
  EXPECT_TRUE(request.body.empty());
}

TEST(ParserTest, LongValuesAcrossManyWords) {
  // Values of every length from 0 to 40 exercise the word loop and its tail.
  for (size_t n = 0; n <= 40; ++n) {
    const std::string value = Repeat('v', n);
    Parsed ok("GET / HTTP/1.1\r\nHost: h\r\nX: " + value + "\r\n\r\n");
    ASSERT_EQ(ok.result.status, ParseStatus::kComplete) << n;
    EXPECT_EQ(ok.request.FindHeader("X"), value);
    if (n == 0) continue;
    std::string bad = value;
    bad[n - 1] = '\x01';
    Parsed p("GET / HTTP/1.1\r\nHost: h\r\nX: " + bad + "\r\n\r\n");
    EXPECT_EQ(p.result.error_status, 400) << n;
  }
}

}  // namespace
}  // namespace uring_http::http
