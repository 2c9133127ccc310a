// The client's response-head parser (src/client/response_parser.h), rule by
// rule: the status line (RFC 9112 4), field lines (RFC 9112 5), the framing
// of the body that follows (RFC 9112 6.3), the limits, and that a prefix of
// any input is either incomplete or parses as the whole does.
#include "src/client/response_parser.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::client {
namespace {

using http::ParseStatus;
using http::Version;
using namespace std::string_literals;

// Parses a private heap copy of exactly `input.size()` bytes, so that
// AddressSanitizer catches any read past the span.
class Parsed {
 public:
  explicit Parsed(std::string_view input, const ResponseLimits& limits = {},
                  bool head_request = false, size_t capacity = 64)
      : buffer_(new char[input.size()]), size_(input.size()), headers_(capacity) {
    if (!input.empty()) std::memcpy(buffer_.get(), input.data(), input.size());
    result = ParseResponseHead(data(), limits, head_request, &head, headers_.data(),
                               capacity);
  }
  Parsed(const Parsed&) = delete;
  Parsed& operator=(const Parsed&) = delete;

  std::string_view data() const { return {buffer_.get(), size_}; }

  bool complete() const { return result.status == ParseStatus::kComplete; }
  bool incomplete() const { return result.status == ParseStatus::kIncomplete; }
  bool error() const { return result.status == ParseStatus::kError; }
  std::string error_text() const { return result.error == nullptr ? "" : result.error; }

  std::string_view Header(std::string_view name) const {
    for (size_t i = 0; i < head.num_headers; ++i) {
      if (head.headers[i].name == name) return head.headers[i].value;
    }
    return "<absent>";
  }

  // True if every view of the head lies inside the input buffer.
  bool AllViewsInside() const {
    auto inside = [this](std::string_view v) {
      return v.empty() ||
             (v.data() >= buffer_.get() && v.data() + v.size() <= buffer_.get() + size_);
    };
    bool ok = inside(head.reason);
    for (size_t i = 0; i < head.num_headers; ++i) {
      ok = ok && inside(head.headers[i].name) && inside(head.headers[i].value);
    }
    return ok;
  }

  ResponseParseResult result;
  ResponseHead head;

 private:
  std::unique_ptr<char[]> buffer_;
  size_t size_;
  std::vector<http::Header> headers_;
};

// The head "HTTP/1.1 200 OK" with the given field lines (each ending CRLF).
std::string Ok(const std::string& fields) { return "HTTP/1.1 200 OK\r\n" + fields + "\r\n"; }

// An input that must be refused, with `why` in the error text.
void ExpectError(std::string_view input, std::string_view why, bool head_request = false) {
  Parsed p(input, {}, head_request);
  EXPECT_TRUE(p.error()) << "input: " << testing::PrintToString(std::string(input));
  EXPECT_NE(p.error_text().find(why), std::string::npos)
      << "input: " << testing::PrintToString(std::string(input)) << " error: " << p.error_text();
  EXPECT_EQ(p.result.consumed, 0u);
}

// ---------------------------------------------------------------------------
// Framing and keep-alive of valid heads (RFC 9112 6.3, 9.3).

TEST(ResponseParserTest, Valid200WithContentLength) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\n";
  Parsed p(head + "hello");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.result.error, nullptr);
  EXPECT_EQ(p.result.consumed, head.size());
  EXPECT_EQ(p.head.head_bytes, head.size());
  EXPECT_EQ(p.head.version, Version::kHttp11);
  EXPECT_EQ(p.head.status, 200);
  EXPECT_EQ(p.head.reason, "OK");
  EXPECT_FALSE(p.head.interim());
  ASSERT_EQ(p.head.num_headers, 2u);
  EXPECT_EQ(p.head.headers[0].name, "Content-Length");
  EXPECT_EQ(p.head.headers[0].value, "5");
  EXPECT_EQ(p.head.headers[1].name, "Server");
  EXPECT_EQ(p.head.headers[1].value, "x");
  EXPECT_EQ(p.head.framing, ResponseFraming::kContentLength);
  EXPECT_EQ(p.head.content_length, 5u);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_TRUE(p.AllViewsInside());
}

TEST(ResponseParserTest, ContentLengthLarge) {
  Parsed p(Ok("Content-Length: 18446744073709551615\r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.head.framing, ResponseFraming::kContentLength);
  EXPECT_EQ(p.head.content_length, UINT64_MAX);
}

TEST(ResponseParserTest, Chunked) {
  Parsed p(Ok("Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.result.consumed, Ok("Transfer-Encoding: chunked\r\n").size());
  EXPECT_EQ(p.head.framing, ResponseFraming::kChunked);
  EXPECT_EQ(p.head.content_length, 0u);
  EXPECT_TRUE(p.head.keep_alive);
}

TEST(ResponseParserTest, ChunkedCaseAndWhitespace) {
  for (const char* te : {"Transfer-Encoding: Chunked\r\n", "transfer-encoding:CHUNKED\r\n",
                         "Transfer-Encoding: \t chunked \t\r\n"}) {
    Parsed p(Ok(te));
    ASSERT_TRUE(p.complete()) << te << p.error_text();
    EXPECT_EQ(p.head.framing, ResponseFraming::kChunked) << te;
  }
}

TEST(ResponseParserTest, UntilCloseWithoutLengthOrCoding) {
  Parsed p(Ok("Server: x\r\n") + "the body runs to the close");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.result.consumed, Ok("Server: x\r\n").size());
  EXPECT_EQ(p.head.framing, ResponseFraming::kUntilClose);
  EXPECT_FALSE(p.head.keep_alive);
  EXPECT_EQ(p.head.content_length, 0u);
}

TEST(ResponseParserTest, UntilCloseIgnoresKeepAlive) {
  for (const char* input : {"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n",
                            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
                            "HTTP/1.0 200 OK\r\n\r\n"}) {
    Parsed p(input);
    ASSERT_TRUE(p.complete()) << input << p.error_text();
    EXPECT_EQ(p.head.framing, ResponseFraming::kUntilClose) << input;
    EXPECT_FALSE(p.head.keep_alive) << input;
  }
}

TEST(ResponseParserTest, Http10ClosesByDefault) {
  Parsed p("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.head.version, Version::kHttp10);
  EXPECT_EQ(p.head.framing, ResponseFraming::kContentLength);
  EXPECT_EQ(p.head.content_length, 2u);
  EXPECT_FALSE(p.head.keep_alive);
}

TEST(ResponseParserTest, Http10KeepAlive) {
  for (const char* conn : {"keep-alive", "Keep-Alive", "foo, keep-alive", " keep-alive ,bar"}) {
    Parsed p("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: "s + conn + "\r\n\r\nhi");
    ASSERT_TRUE(p.complete()) << conn << p.error_text();
    EXPECT_TRUE(p.head.keep_alive) << conn;
  }
  // close wins over keep-alive, in one line or two.
  for (const char* conn : {"Connection: keep-alive, close\r\n",
                           "Connection: keep-alive\r\nConnection: close\r\n",
                           "Connection: keep-alive-ish\r\n"}) {
    Parsed p("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n"s + conn + "\r\n");
    ASSERT_TRUE(p.complete()) << conn << p.error_text();
    EXPECT_FALSE(p.head.keep_alive) << conn;
  }
}

TEST(ResponseParserTest, Http11ConnectionClose) {
  for (const char* conn : {"close", "Close", "CLOSE", "foo, close", "close, keep-alive",
                           "\tclose\t"}) {
    Parsed p(Ok("Content-Length: 2\r\nConnection: "s + conn + "\r\n"));
    ASSERT_TRUE(p.complete()) << conn << p.error_text();
    EXPECT_FALSE(p.head.keep_alive) << conn;
    EXPECT_EQ(p.head.framing, ResponseFraming::kContentLength) << conn;
  }
  for (const char* conn : {"keep-alive", "upgrade", "closed", "clo se"}) {
    Parsed p(Ok("Content-Length: 2\r\nConnection: "s + conn + "\r\n"));
    ASSERT_TRUE(p.complete()) << conn << p.error_text();
    EXPECT_TRUE(p.head.keep_alive) << conn;
  }
}

TEST(ResponseParserTest, HeadRequestHasNoBody) {
  for (const char* fields : {"Content-Length: 1000\r\n", "Transfer-Encoding: chunked\r\n", "",
                             "Content-Length: 0\r\n"}) {
    Parsed p(Ok(fields), {}, /*head_request=*/true);
    ASSERT_TRUE(p.complete()) << fields << p.error_text();
    EXPECT_EQ(p.head.framing, ResponseFraming::kNone) << fields;
    EXPECT_EQ(p.head.content_length, 0u) << fields;
    // No body to read to the close: the connection stays usable.
    EXPECT_TRUE(p.head.keep_alive) << fields;
    EXPECT_EQ(p.result.consumed, Ok(fields).size());
  }
  Parsed closing(Ok("Content-Length: 10\r\nConnection: close\r\n"), {}, true);
  ASSERT_TRUE(closing.complete());
  EXPECT_FALSE(closing.head.keep_alive);
}

TEST(ResponseParserTest, InterimResponses) {
  const std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
  const std::string hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
  const std::string final_head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
  const std::string stream = cont + hints + final_head;

  Parsed first(stream);
  ASSERT_TRUE(first.complete()) << first.error_text();
  EXPECT_EQ(first.head.status, 100);
  EXPECT_EQ(first.head.reason, "Continue");
  EXPECT_TRUE(first.head.interim());
  EXPECT_EQ(first.head.framing, ResponseFraming::kNone);
  EXPECT_EQ(first.result.consumed, cont.size());

  Parsed second(std::string_view(stream).substr(cont.size()));
  ASSERT_TRUE(second.complete()) << second.error_text();
  EXPECT_EQ(second.head.status, 103);
  EXPECT_TRUE(second.head.interim());
  EXPECT_EQ(second.head.framing, ResponseFraming::kNone);
  EXPECT_EQ(second.Header("Link"), "</style.css>; rel=preload");
  EXPECT_EQ(second.result.consumed, hints.size());

  Parsed third(std::string_view(stream).substr(cont.size() + hints.size()));
  ASSERT_TRUE(third.complete()) << third.error_text();
  EXPECT_EQ(third.head.status, 200);
  EXPECT_FALSE(third.head.interim());
  EXPECT_EQ(third.head.framing, ResponseFraming::kContentLength);
}

TEST(ResponseParserTest, InterimIgnoresLengthFields) {
  for (const char* input : {"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n",
                            "HTTP/1.1 199 Whatever\r\nTransfer-Encoding: chunked\r\n\r\n",
                            "HTTP/1.0 102 Processing\r\n\r\n"}) {
    Parsed p(input);
    ASSERT_TRUE(p.complete()) << input << p.error_text();
    EXPECT_TRUE(p.head.interim()) << input;
    EXPECT_EQ(p.head.framing, ResponseFraming::kNone) << input;
    EXPECT_EQ(p.head.content_length, 0u) << input;
  }
}

TEST(ResponseParserTest, NoContentAndNotModifiedHaveNoBody) {
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    for (const char* fields : {"", "Content-Length: 10\r\n", "Transfer-Encoding: chunked\r\n"}) {
      Parsed p("HTTP/1.1 "s + status + "\r\n" + fields + "\r\nnext");
      ASSERT_TRUE(p.complete()) << status << fields << p.error_text();
      EXPECT_FALSE(p.head.interim());
      EXPECT_EQ(p.head.framing, ResponseFraming::kNone) << status << fields;
      EXPECT_EQ(p.head.content_length, 0u);
      // Not until-close: the connection is reusable.
      EXPECT_TRUE(p.head.keep_alive) << status << fields;
      EXPECT_EQ(p.result.consumed, p.data().size() - 4);
    }
  }
}

TEST(ResponseParserTest, ContentLengthZeroIsNoBody) {
  Parsed p(Ok("Content-Length: 0\r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.head.framing, ResponseFraming::kNone);
  EXPECT_EQ(p.head.content_length, 0u);
  EXPECT_TRUE(p.head.keep_alive);
  Parsed leading_zeros(Ok("Content-Length: 000\r\n"));
  ASSERT_TRUE(leading_zeros.complete());
  EXPECT_EQ(leading_zeros.head.framing, ResponseFraming::kNone);
}

TEST(ResponseParserTest, ContentLengthIdenticalValues) {
  for (const char* fields : {"Content-Length: 5, 5\r\n", "Content-Length: 5,5,5\r\n",
                             "Content-Length: 5\r\ncontent-length: 5\r\n",
                             "Content-Length:  5 \t\r\n", "CONTENT-LENGTH: 05\r\n"}) {
    Parsed p(Ok(fields));
    ASSERT_TRUE(p.complete()) << fields << p.error_text();
    EXPECT_EQ(p.head.framing, ResponseFraming::kContentLength) << fields;
    EXPECT_EQ(p.head.content_length, 5u) << fields;
  }
}

// ---------------------------------------------------------------------------
// Framing errors: the smuggling defences.

TEST(ResponseParserTest, ContentLengthAndTransferEncoding) {
  const char* why = "both Content-Length and Transfer-Encoding";
  ExpectError(Ok("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), why);
  ExpectError(Ok("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), why);
  ExpectError(Ok("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n"), why);
  // Even where the status or the request says there is no body.
  ExpectError("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
              why);
  ExpectError(
      "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      why);
  ExpectError("HTTP/1.1 100 Continue\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
              why);
  ExpectError(Ok("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), why,
              /*head_request=*/true);
}

TEST(ResponseParserTest, TransferEncodingInHttp10) {
  const char* why = "HTTP/1.0";
  ExpectError("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", why);
  ExpectError("HTTP/1.0 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", why);
  ExpectError("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", why, /*head_request=*/true);
}

TEST(ResponseParserTest, TransferEncodingOtherThanChunked) {
  const char* why = "Transfer-Encoding other than chunked";
  for (const char* te : {"gzip", "gzip, chunked", "deflate,chunked", "chunked, chunked",
                         "chunked, gzip", "identity", "chunked;ext=1", "chunked,", ",chunked",
                         "", "chunked, , chunked", "chu nked", "\"chunked\""}) {
    ExpectError(Ok("Transfer-Encoding: "s + te + "\r\n"), why);
  }
  // One list over several lines: chunked twice, or not last.
  ExpectError(Ok("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), why);
  ExpectError(Ok("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n"), why);
  ExpectError(Ok("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"), why);
  // Refused whatever the status: the header itself is not understood.
  ExpectError("HTTP/1.1 204 No Content\r\nTransfer-Encoding: gzip\r\n\r\n", why);
  ExpectError(Ok("Transfer-Encoding: gzip\r\n"), why, /*head_request=*/true);
}

TEST(ResponseParserTest, MalformedContentLength) {
  const char* why = "malformed Content-Length";
  for (const char* cl : {"12a", "-1", "+1", "1 2", "5, 6", "6,5", "", " ", "0x10", "1.0", "5,",
                         ",5", "5,,5", "18446744073709551616", "99999999999999999999999",
                         "\xd9\xa5"}) {
    ExpectError(Ok("Content-Length: "s + cl + "\r\n"), why);
  }
  ExpectError(Ok("Content-Length: 5\r\nContent-Length: 6\r\n"), why);
  ExpectError(Ok("Content-Length: 5\r\nContent-Length: 5, 6\r\n"), why);
  // Judged however the response is framed.
  ExpectError("HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n", why);
  ExpectError(Ok("Content-Length: x\r\n"), why, /*head_request=*/true);
}

TEST(ResponseParserTest, SwitchingProtocolsRefused) {
  ExpectError(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
      "101");
  ExpectError("HTTP/1.1 101 Switching Protocols\r\n\r\n", "101", /*head_request=*/true);
}

// ---------------------------------------------------------------------------
// Field lines (RFC 9112 5, RFC 9110 5.5).

TEST(ResponseParserTest, WhitespaceBeforeColon) {
  ExpectError(Ok("Content-Length : 5\r\n"), "malformed header field");
  ExpectError(Ok("Server\t: x\r\n"), "malformed header field");
}

TEST(ResponseParserTest, ObsoleteLineFolding) {
  ExpectError(Ok("Server: a\r\n b\r\n"), "malformed header field");
  ExpectError(Ok("Server: a\r\n\tb\r\n"), "malformed header field");
  // A first field line that starts with whitespace too.
  ExpectError(Ok(" Server: a\r\n"), "malformed header field");
}

TEST(ResponseParserTest, ControlCharactersInValues) {
  const char* why = "control character";
  ExpectError(Ok("Server: a\rb\r\n"), why);      // bare CR inside
  ExpectError(Ok("Server: ab\r\r\n"), why);      // bare CR before the CRLF
  ExpectError(Ok("Server: ab\r\n\r\r\n"), "malformed header field");  // CR alone on a line
  ExpectError(Ok("Server: a\0b\r\n"s), why);     // NUL
  ExpectError(Ok("Server: \0\r\n"s), why);
  ExpectError(Ok("Server: a\x01z\r\n"), why);
  ExpectError(Ok("Server: a\x7f\r\n"), why);
  ExpectError(Ok("Server: a\x1b[0m\r\n"), why);
  // HTAB and obs-text are allowed.
  Parsed p(Ok("Server: a\tb \x80\xff\r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.Header("Server"), "a\tb \x80\xff");
}

TEST(ResponseParserTest, MalformedFieldNames) {
  const char* why = "malformed header field";
  ExpectError(Ok(": value\r\n"), why);   // empty name
  ExpectError(Ok(":\r\n"), why);
  ExpectError(Ok("No colon\r\n"), why);
  ExpectError(Ok("NoColon\r\n"), why);
  ExpectError(Ok("Ser ver: x\r\n"), why);
  ExpectError(Ok("Ser(ver): x\r\n"), why);
  ExpectError(Ok("Ser\0ver: x\r\n"s), why);
  ExpectError(Ok("Serv\x80r: x\r\n"), why);
  ExpectError(Ok("Server\r: x\r\n"), why);
  // Every token character is a name character.
  Parsed p(Ok("!#$%&'*+-.^_`|~09AZaz: x\r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.head.headers[0].name, "!#$%&'*+-.^_`|~09AZaz");
}

TEST(ResponseParserTest, ValuesTrimmed) {
  Parsed p(Ok("A: \t value with  spaces \t \r\nB:x\r\nC:\r\nD:   \r\nE: \"q\" \r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  ASSERT_EQ(p.head.num_headers, 5u);
  EXPECT_EQ(p.Header("A"), "value with  spaces");
  EXPECT_EQ(p.Header("B"), "x");
  EXPECT_EQ(p.Header("C"), "");
  EXPECT_EQ(p.Header("D"), "");
  EXPECT_EQ(p.Header("E"), "\"q\"");
  EXPECT_TRUE(p.AllViewsInside());
}

TEST(ResponseParserTest, HeadersInOrderWithDuplicates) {
  Parsed p(Ok("Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nserver: S\r\n"));
  ASSERT_TRUE(p.complete()) << p.error_text();
  ASSERT_EQ(p.head.num_headers, 3u);
  EXPECT_EQ(p.head.headers[0].value, "a=1");
  EXPECT_EQ(p.head.headers[1].value, "b=2");
  EXPECT_EQ(p.head.headers[2].name, "server");  // as sent, not folded
}

TEST(ResponseParserTest, BareLfLineEndings) {
  const std::string head = "HTTP/1.1 200 OK\nContent-Length: 2\nServer: x\n\n";
  Parsed p(head + "hi");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.result.consumed, head.size());
  EXPECT_EQ(p.head.reason, "OK");
  EXPECT_EQ(p.Header("Content-Length"), "2");
  EXPECT_EQ(p.Header("Server"), "x");
  EXPECT_EQ(p.head.content_length, 2u);

  // Mixed endings.
  const std::string mixed = "HTTP/1.1 204 No Content\r\nA: 1\nB: 2\r\n\n";
  Parsed m(mixed + "x");
  ASSERT_TRUE(m.complete()) << m.error_text();
  EXPECT_EQ(m.result.consumed, mixed.size());
  EXPECT_EQ(m.Header("A"), "1");
  EXPECT_EQ(m.Header("B"), "2");
}

// ---------------------------------------------------------------------------
// The status line (RFC 9112 4).

TEST(ResponseParserTest, ReasonPhraseOptional) {
  for (const char* line : {"HTTP/1.1 200\r\n", "HTTP/1.1 200 \r\n", "HTTP/1.1 200\n"}) {
    Parsed p(std::string(line) + "Content-Length: 0\r\n\r\n");
    ASSERT_TRUE(p.complete()) << line << p.error_text();
    EXPECT_EQ(p.head.status, 200) << line;
    EXPECT_EQ(p.head.reason, "") << line;
  }
}

TEST(ResponseParserTest, ReasonPhraseText) {
  Parsed p("HTTP/1.1 404 Not  Found\there \x80\xfe \r\n\r\n");
  ASSERT_TRUE(p.complete()) << p.error_text();
  EXPECT_EQ(p.head.status, 404);
  EXPECT_EQ(p.head.reason, "Not  Found\there \x80\xfe ");
  EXPECT_TRUE(p.AllViewsInside());
  Parsed spaces("HTTP/1.1 500  \r\n\r\n");  // the reason is one SP
  ASSERT_TRUE(spaces.complete());
  EXPECT_EQ(spaces.head.reason, " ");
  // Control characters are not reason text.
  ExpectError("HTTP/1.1 200 O\0K\r\n\r\n"s, "malformed status line");
  ExpectError("HTTP/1.1 200 O\rK\r\n\r\n", "malformed status line");
  ExpectError("HTTP/1.1 200 OK\r\r\n\r\n", "malformed status line");
  ExpectError("HTTP/1.1 200 O\x7fK\r\n\r\n", "malformed status line");
}

TEST(ResponseParserTest, StatusCodeRange) {
  for (int status : {100, 199, 200, 299, 404, 500, 599}) {
    Parsed p("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 1\r\n\r\n");
    ASSERT_TRUE(p.complete()) << status << p.error_text();
    EXPECT_EQ(p.head.status, status);
    EXPECT_EQ(p.head.interim(), status < 200);
  }
}

TEST(ResponseParserTest, BadStatusCodes) {
  const char* why = "malformed status line";
  for (const char* line : {"HTTP/1.1 099 X", "HTTP/1.1 000 X", "HTTP/1.1 600 X", "HTTP/1.1 999 X",
                           "HTTP/1.1 2x0 X", "HTTP/1.1 20 X", "HTTP/1.1 20", "HTTP/1.1 2000",
                           "HTTP/1.1 2000 OK", "HTTP/1.1 -20 X", "HTTP/1.1 +20 X",
                           "HTTP/1.1 2 00", "HTTP/1.1  200 OK", "HTTP/1.1 200\tOK",
                           "HTTP/1.1 200-OK", "HTTP/1.1 \xd9\xa2\xd9\xa0\xd9\xa0 OK"}) {
    ExpectError(std::string(line) + "\r\n\r\n", why);
  }
}

TEST(ResponseParserTest, MissingSpace) {
  ExpectError("HTTP/1.1200 OK\r\n\r\n", "malformed status line");
  ExpectError("HTTP/1.1\t200 OK\r\n\r\n", "malformed status line");
}

TEST(ResponseParserTest, BadVersions) {
  const char* why = "malformed status line";
  for (const char* line : {"HTTP/2.0 200 OK", "HTTP/2 200 OK", "HTTP/1.2 200 OK",
                           "HTTP/1.9 200 OK", "HTTP/0.9 200 OK", "HTTP/1.1", "HTTP/1.1 ",
                           "HTTP/1.10 200 OK",
                           "HTTP/11 200 OK", "http/1.1 200 OK", "Http/1.1 200 OK",
                           "HTTPS/1.1 200 OK", "HTTP/1.1.1 200 OK", "HTTP/1. 200 OK",
                           " HTTP/1.1 200 OK", "ICY 200 OK", "200 OK", "", "GET / HTTP/1.1"}) {
    ExpectError(std::string(line) + "\r\n\r\n", why);
  }
  // No empty line is skipped before a status line (RFC 9112 2.2 is for requests).
  ExpectError("\r\nHTTP/1.1 200 OK\r\n\r\n", why);
  ExpectError("\nHTTP/1.1 200 OK\r\n\r\n", why);
}

// ---------------------------------------------------------------------------
// Limits.

TEST(ResponseParserTest, StatusLineTooLong) {
  ResponseLimits limits;
  limits.max_status_line = 20;
  const std::string line20 = "HTTP/1.1 200 " + std::string(7, 'r');
  ASSERT_EQ(line20.size(), 20u);
  Parsed fits(line20 + "\r\n\r\n", limits);
  ASSERT_TRUE(fits.complete()) << fits.error_text();
  EXPECT_EQ(fits.head.reason.size(), 7u);
  Parsed fits_lf(line20 + "\n\n", limits);
  EXPECT_TRUE(fits_lf.complete());

  const std::string line21 = line20 + "r";
  Parsed over(line21 + "\r\n\r\n", limits);
  ASSERT_TRUE(over.error());
  EXPECT_EQ(over.error_text(), "status line too long");

  // Detected before the line ends: 21 bytes without an LF are too many...
  Parsed early(line21, limits);
  ASSERT_TRUE(early.error());
  EXPECT_EQ(early.error_text(), "status line too long");
  // ...whatever they are.
  Parsed garbage(std::string(21, 'x'), limits);
  EXPECT_TRUE(garbage.error());
  // 20 bytes, or 20 and a CR that may be the CRLF's, are not yet.
  EXPECT_TRUE(Parsed(line20, limits).incomplete());
  EXPECT_TRUE(Parsed(line20 + "\r", limits).incomplete());
  EXPECT_TRUE(Parsed(line20 + "r\r", limits).error());

  // The default limit.
  const std::string long_reason(8 * 1024, 'r');
  EXPECT_TRUE(Parsed("HTTP/1.1 200 " + long_reason + "\r\n\r\n").error());
  EXPECT_TRUE(Parsed("HTTP/1.1 200 " + long_reason).error());
  EXPECT_TRUE(Parsed("HTTP/1.1 200 " + long_reason.substr(13) + "\r\n\r\n").complete());
}

TEST(ResponseParserTest, HeaderSectionTooLarge) {
  ResponseLimits limits;
  limits.max_header_bytes = 32;  // the field lines and the blank line
  const std::string status = "HTTP/1.1 200 OK\r\n";
  // 28 bytes of field line + 2 of blank line + 2 spare = 32.
  std::string fields = "Server: " + std::string(18, 'v') + "\r\n";
  ASSERT_EQ(fields.size(), 28u);
  fields += "A:\r\n";  // 32 with this line, 34 with the blank line
  EXPECT_TRUE(Parsed(status + fields + "\r\n", limits).error());
  const std::string fields30 = fields.substr(0, 28) + "\r\n";
  Parsed fits(status + fields30 + "XY", limits);  // 30 bytes; the body is not counted
  ASSERT_TRUE(fits.complete()) << fits.error_text();
  EXPECT_EQ(fits.result.consumed, status.size() + 30);

  limits.max_header_bytes = 30;
  EXPECT_TRUE(Parsed(status + fields30, limits).complete());
  limits.max_header_bytes = 29;
  Parsed over(status + fields30, limits);
  ASSERT_TRUE(over.error());
  EXPECT_EQ(over.error_text(), "header section too large");

  // Detected while incomplete: more than the limit without a blank line.
  limits.max_header_bytes = 32;
  const std::string long_line = status + "Server: " + std::string(40, 'v');
  Parsed early(long_line, limits);
  ASSERT_TRUE(early.error());
  EXPECT_EQ(early.error_text(), "header section too large");
  Parsed many_lines(status + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\n", limits);
  ASSERT_TRUE(many_lines.error());
  EXPECT_EQ(many_lines.error_text(), "header section too large");
  // Exactly at the limit, without its end: not yet.
  EXPECT_TRUE(Parsed(status + "Server: " + std::string(24, 'v'), limits).incomplete());
  EXPECT_TRUE(Parsed(status + "Server: " + std::string(25, 'v'), limits).error());

  // The default limit, 64 KiB.
  std::string big = status;
  for (int i = 0; i < 70; ++i) big += "X-Filler: " + std::string(1000, 'f') + "\r\n";
  EXPECT_TRUE(Parsed(big + "\r\n").error());
  EXPECT_TRUE(Parsed(big).error());
}

TEST(ResponseParserTest, TooManyHeadersByLimit) {
  ResponseLimits limits;
  limits.max_headers = 3;
  const std::string three = "A: 1\r\nB: 2\r\nC: 3\r\n";
  Parsed fits(Ok(three), limits);
  ASSERT_TRUE(fits.complete()) << fits.error_text();
  EXPECT_EQ(fits.head.num_headers, 3u);
  Parsed over(Ok(three + "D: 4\r\n"), limits);
  ASSERT_TRUE(over.error());
  EXPECT_EQ(over.error_text(), "too many header fields");
  // The fourth line is refused once complete, not before.
  EXPECT_TRUE(Parsed("HTTP/1.1 200 OK\r\n" + three + "D: 4", limits).incomplete());

  limits.max_headers = 0;
  EXPECT_TRUE(Parsed(Ok(""), limits).complete());
  EXPECT_TRUE(Parsed(Ok("A: 1\r\n"), limits).error());

  // The default limit, 100.
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_TRUE(Parsed(Ok(hundred), {}, false, 128).complete());
  EXPECT_TRUE(Parsed(Ok(hundred + "Z: z\r\n"), {}, false, 128).error());
}

TEST(ResponseParserTest, TooManyHeadersByCapacity) {
  const std::string two = "A: 1\r\nB: 2\r\n";
  Parsed fits(Ok(two), {}, false, /*capacity=*/2);
  ASSERT_TRUE(fits.complete()) << fits.error_text();
  EXPECT_EQ(fits.head.num_headers, 2u);
  Parsed over(Ok(two + "C: 3\r\n"), {}, false, 2);
  ASSERT_TRUE(over.error());
  EXPECT_EQ(over.error_text(), "too many header fields");

  // No array at all: a head without fields still parses.
  http::Header* none = nullptr;
  ResponseHead head;
  const std::string bare = "HTTP/1.1 204 No Content\r\n\r\n";
  ResponseParseResult r = ParseResponseHead(bare, {}, false, &head, none, 0);
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(head.num_headers, 0u);
  r = ParseResponseHead(Ok("A: 1\r\n"), {}, false, &head, none, 0);
  EXPECT_EQ(r.status, ParseStatus::kError);
}

// ---------------------------------------------------------------------------
// What the caller relies on.

TEST(ResponseParserTest, IncompleteHeads) {
  for (const char* input : {"", "H", "HTTP/1.1", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK\r",
                            "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nServer: x",
                            "HTTP/1.1 200 OK\r\nServer: x\r\n",
                            "HTTP/1.1 200 OK\r\nServer: x\r\n\r",
                            "HTTP/1.1 200 OK\n", "HTTP/1.1 200 OK\nA: b\n"}) {
    Parsed p(input);
    EXPECT_TRUE(p.incomplete()) << testing::PrintToString(std::string(input)) << p.error_text();
    EXPECT_EQ(p.result.consumed, 0u);
    EXPECT_EQ(p.result.error, nullptr);
  }
}

TEST(ResponseParserTest, ConsumedIsTheHeadExactly) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n";
  for (const std::string& after : {""s, "abc"s, "abcHTTP/1.1 200 OK\r\n\r\n"s, "\r\n\r\n"s,
                                   "\0\0\0"s}) {
    Parsed p(head + after);
    ASSERT_TRUE(p.complete()) << p.error_text();
    EXPECT_EQ(p.result.consumed, head.size());
    EXPECT_EQ(p.head.head_bytes, head.size());
  }
  // The smallest head.
  Parsed smallest("HTTP/1.0 200\n\n");
  ASSERT_TRUE(smallest.complete()) << smallest.error_text();
  EXPECT_EQ(smallest.result.consumed, 14u);
}

TEST(ResponseParserTest, OutputResetEachCall) {
  http::Header headers[8];
  ResponseHead head;
  const std::string first = Ok("Content-Length: 7\r\nA: 1\r\n");
  ResponseParseResult r = ParseResponseHead(first, {}, false, &head, headers, 8);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  ASSERT_EQ(head.content_length, 7u);
  const std::string second = "HTTP/1.0 204 No Content\r\n\r\n";
  r = ParseResponseHead(second, {}, false, &head, headers, 8);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(head.version, Version::kHttp10);
  EXPECT_EQ(head.status, 204);
  EXPECT_EQ(head.num_headers, 0u);
  EXPECT_EQ(head.content_length, 0u);
  EXPECT_EQ(head.framing, ResponseFraming::kNone);
  EXPECT_FALSE(head.keep_alive);
  EXPECT_EQ(head.headers, headers);
}

// ---------------------------------------------------------------------------
// Monotonicity: a response arrives in pieces, and the caller re-parses each
// time. Every prefix must be incomplete or give the whole input's answer.

struct Outcome {
  ParseStatus status;
  std::string error;
  size_t consumed;
  int code;
  ResponseFraming framing;
  uint64_t content_length;
  bool keep_alive;
  size_t num_headers;
};

Outcome ParseOutcome(std::string_view input, const ResponseLimits& limits, bool head_request) {
  Parsed p(input, limits, head_request, 16);
  return {p.result.status, p.error_text(), p.result.consumed, p.head.status, p.head.framing,
          p.head.content_length, p.head.keep_alive, p.head.num_headers};
}

void ExpectMonotone(const std::string& input, const ResponseLimits& limits, bool head_request,
                    size_t body_bytes) {
  SCOPED_TRACE(testing::PrintToString(input));
  const Outcome whole = ParseOutcome(input, limits, head_request);
  if (body_bytes > 0) {
    // A valid head with a body after it: consumed stops at the head's end.
    ASSERT_EQ(whole.status, ParseStatus::kComplete) << whole.error;
    ASSERT_EQ(whole.consumed, input.size() - body_bytes);
  }
  bool completed = false;
  for (size_t k = 0; k <= input.size(); ++k) {
    const Outcome part = ParseOutcome(std::string_view(input).substr(0, k), limits, head_request);
    if (part.status == ParseStatus::kIncomplete) {
      ASSERT_FALSE(completed) << "incomplete again at " << k;
      EXPECT_EQ(part.consumed, 0u);
      continue;
    }
    EXPECT_EQ(part.status, whole.status) << "prefix " << k;
    EXPECT_EQ(part.error, whole.error) << "prefix " << k;
    if (whole.status == ParseStatus::kComplete) {
      completed = true;
      EXPECT_EQ(part.consumed, whole.consumed) << "prefix " << k;
      EXPECT_GE(k, whole.consumed);
      EXPECT_EQ(part.code, whole.code);
      EXPECT_EQ(part.framing, whole.framing);
      EXPECT_EQ(part.content_length, whole.content_length);
      EXPECT_EQ(part.keep_alive, whole.keep_alive);
      EXPECT_EQ(part.num_headers, whole.num_headers);
    }
  }
  if (whole.status == ParseStatus::kComplete) {
    // Complete exactly from the head's last byte on.
    const std::string_view head = std::string_view(input).substr(0, whole.consumed);
    EXPECT_EQ(ParseOutcome(head, limits, head_request).status, ParseStatus::kComplete);
    EXPECT_EQ(ParseOutcome(head.substr(0, head.size() - 1), limits, head_request).status,
              ParseStatus::kIncomplete);
  }
}

TEST(ResponseParserTest, PrefixesAreIncompleteOrTheSame) {
  struct Case {
    std::string input;
    size_t body_bytes;  // valid heads: bytes after the head
  };
  const std::vector<Case> valid = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello", 5},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 15},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", 2},
      {"HTTP/1.1 200\nA:  b \nC:d\n\nbody", 4},
      {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", 19},
      {"HTTP/1.1 204 \r\nContent-Length: 9\r\n\r\n\r\n", 2},
      {"HTTP/1.1 200 OK\r\n\r\nuntil close", 11},
  };
  for (const Case& c : valid) {
    ExpectMonotone(c.input, {}, false, c.body_bytes);
    ExpectMonotone(c.input, {}, true, c.body_bytes);
  }
  const std::vector<std::string> invalid = {
      Ok("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + "hello",
      "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
      Ok("Transfer-Encoding: gzip, chunked\r\n"),
      Ok("Content-Length: 5, 6\r\n") + "hello",
      Ok("Content-Length: 12a\r\n"),
      Ok("Server : x\r\n"),
      Ok("Server: a\r\n b\r\n"),
      Ok("Server: a\rb\r\n"),
      Ok("Server: a\0b\r\n"s),
      Ok(": x\r\n"),
      "HTTP/2.0 200 OK\r\n\r\n",
      "HTTP/1.1\r\n\r\n",
      "HTTP/1.1 099 X\r\n\r\n",
      "HTTP/1.1 2000\r\n\r\n",
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
      "garbage without any line end at all",
  };
  for (const std::string& input : invalid) {
    ExpectMonotone(input, {}, false, 0);
    const Outcome whole = ParseOutcome(input, {}, false);
    EXPECT_NE(whole.status, ParseStatus::kComplete) << testing::PrintToString(input);
  }

  // Under tight limits, where the limit errors come before the line ends.
  ResponseLimits tight;
  tight.max_status_line = 16;
  tight.max_header_bytes = 24;
  tight.max_headers = 2;
  for (const std::string& input :
       {"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n"s,
        "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"s,
        "HTTP/1.1 200 OKAY\r\n\r\n"s, "HTTP/1.1 200 OK\r\nServer: 0123456789abcdef\r\n\r\n"s,
        "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\r\n"s, "HTTP/1.1 200 OK\r\r\r\n"s}) {
    ExpectMonotone(input, tight, false, 0);
  }
}

}  // namespace
}  // namespace uring_http::client
