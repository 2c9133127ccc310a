// Tests for Response as the HTTP/1 serializer (src/http1/response_writer.h)
// writes it: the status line, Server and Date
// headers, Content-Length and Connection, HEAD and the 1xx/204/304 rules,
// header injection defences, growth past the inline area, the limit and
// the refusals that fail a response, the size reported
// when the buffer is too small, error responses and reason phrases.
#include "src/http1/response_writer.h"

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <regex>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace uring_http::http1 {
namespace {

using http::ReasonPhrase;
using http::Response;

// The header fields as HTTP/1 lines, for comparing with text.
std::string HeaderLines(const Response& r) {
  std::string lines;
  AppendFieldLines(r.headers(), &lines);
  return lines;
}

std::string Serialize(const Response& response, const SerializeOptions& options = {}) {
  std::string out(SerializedSize(response, options), '\0');
  const size_t n = SerializeResponse(response, options, out.data(), out.size());
  EXPECT_EQ(n, out.size());
  return out;
}

std::string Error(int status, const SerializeOptions& options = {}, std::string_view allow = {}) {
  char buffer[1024];
  const size_t n = SerializeError(status, options, allow, buffer, sizeof(buffer));
  EXPECT_LE(n, sizeof(buffer));
  return std::string(buffer, n);
}

// The part after the blank line.
std::string BodyOf(const std::string& wire) {
  const size_t end = wire.find("\r\n\r\n");
  return end == std::string::npos ? "<no head end>" : wire.substr(end + 4);
}

std::string HeadOf(const std::string& wire) {
  const size_t end = wire.find("\r\n\r\n");
  return end == std::string::npos ? wire : wire.substr(0, end + 4);
}

bool HasLine(const std::string& wire, const std::string& line) {
  return HeadOf(wire).find("\r\n" + line + "\r\n") != std::string::npos;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(ResponseTest, DefaultResponseSerializesCompletely) {
  Response response;
  const std::string wire = Serialize(response);
  EXPECT_EQ(wire.rfind("HTTP/1.1 200 OK\r\nServer: uring-http\r\nDate: ", 0), 0u) << wire;
  EXPECT_TRUE(HasLine(wire, "Content-Length: 0")) << wire;
  EXPECT_EQ(wire.find("Connection:"), std::string::npos) << wire;  // keep-alive is implicit
  EXPECT_EQ(BodyOf(wire), "");
  EXPECT_EQ(wire.substr(wire.size() - 4), "\r\n\r\n");
  // Every line ends in CRLF; no bare LF.
  EXPECT_EQ(Count(wire, "\n"), Count(wire, "\r\n"));
}

TEST(ResponseTest, DateHeaderHasTheImfFixdateFormat) {
  Response response;
  const std::string wire = Serialize(response);
  static const std::regex kDate(
      "\r\nDate: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} "
      "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} "
      "[0-2][0-9]:[0-5][0-9]:[0-6][0-9] GMT\r\n");
  EXPECT_TRUE(std::regex_search(wire, kDate)) << wire;
  EXPECT_EQ(Count(wire, "Date: "), 1u);
}

TEST(ResponseTest, DateHeaderIsCurrent) {
  Response response;
  const std::string wire = Serialize(response);
  const size_t at = wire.find("Date: ");
  ASSERT_NE(at, std::string::npos);
  const std::string value = wire.substr(at + 6, 29);
  tm parts{};
  ASSERT_NE(strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts), nullptr) << value;
  const time_t stamped = timegm(&parts);
  const time_t now = time(nullptr);
  // CLOCK_REALTIME_COARSE lags by at most a tick; allow generous slack for a
  // slow machine, but not hours (a local-time or stale-cache bug).
  EXPECT_LE(std::abs(static_cast<long>(now - stamped)), 60) << value;
}

TEST(ResponseTest, BodyAndContentLength) {
  Response response;
  response.set_status(201);
  response.set_body("hello, world");
  const std::string wire = Serialize(response);
  EXPECT_EQ(wire.rfind("HTTP/1.1 201 Created\r\n", 0), 0u);
  EXPECT_TRUE(HasLine(wire, "Content-Length: 12")) << wire;
  EXPECT_EQ(BodyOf(wire), "hello, world");
}

TEST(ResponseTest, LargeBodyLength) {
  Response response;
  response.body().assign(123456, 'x');
  const std::string wire = Serialize(response);
  EXPECT_TRUE(HasLine(wire, "Content-Length: 123456"));
  EXPECT_EQ(BodyOf(wire).size(), 123456u);
}

TEST(ResponseTest, StaticBodyIsSentAndReplacesTheOwnedBody) {
  static constexpr std::string_view kStatic = "static text\n";
  Response response;
  response.set_body("owned");
  response.set_static_body(kStatic);
  EXPECT_EQ(response.body_view().data(), kStatic.data());  // not copied
  std::string wire = Serialize(response);
  EXPECT_TRUE(HasLine(wire, "Content-Length: 12"));
  EXPECT_EQ(BodyOf(wire), kStatic);

  // Writing the owned body again drops the static one.
  response.body() += "new";
  EXPECT_EQ(response.body_view(), "new");
  wire = Serialize(response);
  EXPECT_EQ(BodyOf(wire), "new");
}

TEST(ResponseTest, ConnectionHeaders) {
  Response response;
  SerializeOptions close;
  close.keep_alive = false;
  std::string wire = Serialize(response, close);
  EXPECT_TRUE(HasLine(wire, "Connection: close")) << wire;
  EXPECT_EQ(Count(wire, "Connection:"), 1u);

  SerializeOptions http10;
  http10.keep_alive_header = true;
  wire = Serialize(response, http10);
  EXPECT_TRUE(HasLine(wire, "Connection: keep-alive")) << wire;
  EXPECT_EQ(Count(wire, "Connection:"), 1u);

  // Closing wins over the HTTP/1.0 keep-alive header.
  close.keep_alive_header = true;
  wire = Serialize(response, close);
  EXPECT_TRUE(HasLine(wire, "Connection: close"));
  EXPECT_EQ(Count(wire, "Connection:"), 1u);
}

TEST(ResponseTest, HeadOmitsTheBodyButKeepsItsLength) {
  Response response;
  response.set_body("twelve bytes");
  SerializeOptions head;
  head.head_only = true;
  const std::string wire = Serialize(response, head);
  EXPECT_TRUE(HasLine(wire, "Content-Length: 12")) << wire;
  EXPECT_EQ(BodyOf(wire), "");
  EXPECT_EQ(wire.substr(wire.size() - 4), "\r\n\r\n");
  // The head is byte for byte what GET would send before the body.
  const std::string get = Serialize(response);
  EXPECT_EQ(get.substr(0, get.size() - 12), wire);
}

TEST(ResponseTest, NoContentHasNoLengthAndNoBody) {
  Response response;
  response.set_status(204);
  response.set_body("ignored");
  const std::string wire = Serialize(response);
  EXPECT_EQ(wire.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u);
  EXPECT_EQ(wire.find("Content-Length"), std::string::npos) << wire;
  EXPECT_EQ(BodyOf(wire), "");
}

TEST(ResponseTest, NotModifiedHasNoBody) {
  Response response;
  response.set_status(304);
  response.set_body("abc");  // what a 200 would have carried
  const std::string wire = Serialize(response);
  EXPECT_EQ(wire.rfind("HTTP/1.1 304 Not Modified\r\n", 0), 0u);
  // RFC 9110 8.6: a 304 may state the length the 200 would have had.
  EXPECT_TRUE(HasLine(wire, "Content-Length: 3")) << wire;
  EXPECT_EQ(BodyOf(wire), "");
  // Without that body it says nothing: "Content-Length: 0" would be false.
  Response bare;
  bare.set_status(304);
  const std::string bare_wire = Serialize(bare);
  EXPECT_EQ(bare_wire.find("Content-Length"), std::string::npos) << bare_wire;
}

// 1xx belong to the server (100 Continue is its to send), and a status
// outside 200-599 would break the framing: both are sent as 500.
TEST(ResponseTest, StatusOutsideTheHandlersRangeIsServerError) {
  for (int status : {100, 101, 199, 600, 0, -1, 1000}) {
    Response response;
    response.set_status(status);
    EXPECT_EQ(response.status(), 500) << status;
    const std::string wire = Serialize(response);
    EXPECT_EQ(wire.rfind("HTTP/1.1 500 Internal Server Error\r\n", 0), 0u) << status;
  }
  for (int status : {200, 299, 404, 599}) {
    Response response;
    response.set_status(status);
    EXPECT_EQ(response.status(), status);
  }
}

// Framing and connection headers are the server's: a handler's copy would
// contradict the Content-Length or chunked framing the server writes.
TEST(ResponseTest, AddHeaderRefusesTheServersFramingHeaders) {
  Response response;
  for (const char* name : {"Content-Length", "content-length", "Transfer-Encoding",
                           "TRANSFER-ENCODING", "Connection", "Keep-Alive", "Upgrade", "Trailer",
                           "TE", "Proxy-Connection"}) {
    EXPECT_FALSE(response.AddHeader(name, "1")) << name;
    EXPECT_FALSE(response.AddTrailer(name, "1")) << name;
  }
  EXPECT_TRUE(HeaderLines(response).empty());
  EXPECT_TRUE(response.AddHeader("Content-Type", "text/plain"));
  EXPECT_TRUE(response.AddHeader("Content-Length-Hint", "3"));  // not the same field
  const std::string wire = Serialize(response);
  EXPECT_EQ(Count(wire, "Content-Length:"), 1u) << wire;
}

TEST(ResponseTest, WriteWithoutAStreamBuildsTheBufferedBody) {
  Response response;
  response.set_static_body("abc");
  EXPECT_TRUE(response.Write("def"));
  EXPECT_TRUE(response.Write(""));
  EXPECT_TRUE(response.Write("g"));
  EXPECT_EQ(response.body_view(), "abcdefg");
  EXPECT_TRUE(HasLine(Serialize(response), "Content-Length: 7"));
}

std::string StreamHead(const Response& response, StreamFraming framing, uint64_t length,
                       const SerializeOptions& options = {}) {
  char buffer[2048];
  const size_t n = SerializeStreamHead(response, options, framing, length, buffer, sizeof(buffer));
  EXPECT_LE(n, sizeof(buffer));
  return std::string(buffer, n);
}

TEST(ResponseTest, StreamHeadsStateTheirFraming) {
  Response response;
  EXPECT_TRUE(response.AddHeader("X-A", "b"));
  std::string head = StreamHead(response, StreamFraming::kChunked, 0);
  EXPECT_TRUE(HasLine(head, "Transfer-Encoding: chunked")) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos);
  EXPECT_EQ(head.find("Connection"), std::string::npos);
  EXPECT_TRUE(HasLine(head, "X-A: b"));
  EXPECT_EQ(BodyOf(head), "");

  head = StreamHead(response, StreamFraming::kContentLength, 12345);
  EXPECT_TRUE(HasLine(head, "Content-Length: 12345")) << head;
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos);

  // Close-delimited (HTTP/1.0): the end of the body is the end of the
  // connection, whatever the request asked.
  SerializeOptions keep;
  keep.keep_alive = true;
  keep.keep_alive_header = true;
  head = StreamHead(response, StreamFraming::kClose, 0, keep);
  EXPECT_TRUE(HasLine(head, "Connection: close")) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos);

  // 204: no framing at all.
  response.set_status(204);
  head = StreamHead(response, StreamFraming::kChunked, 0);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
}

TEST(ResponseTest, ChunkFraming) {
  char header[18];
  EXPECT_EQ(std::string(header, ChunkHeader(1, header)), "1\r\n");
  EXPECT_EQ(std::string(header, ChunkHeader(255, header)), "ff\r\n");
  EXPECT_EQ(std::string(header, ChunkHeader(4096, header)), "1000\r\n");
  EXPECT_EQ(std::string(header, ChunkHeader(UINT64_MAX, header)), "ffffffffffffffff\r\n");
  EXPECT_EQ(LastChunk(""), "0\r\n\r\n");
  Response response;
  EXPECT_TRUE(response.AddTrailer("X-Checksum", "abc"));
  EXPECT_FALSE(response.AddTrailer("Bad Name", "x"));
  EXPECT_FALSE(response.AddTrailer("X", "a\r\nInjected: 1"));
  EXPECT_EQ(LastChunk(response.trailers()), "0\r\nX-Checksum: abc\r\n\r\n");
}

TEST(ResponseTest, ErrorBodySizeMatchesTheBody) {
  for (int status : {400, 404, 413, 500, 503}) {
    char buffer[1024];
    const size_t n = SerializeError(status, {}, {}, buffer, sizeof(buffer));
    EXPECT_EQ(BodyOf(std::string(buffer, n)).size(), ErrorBodySize(status)) << status;
  }
}

TEST(ResponseTest, AddedHeadersAppearInOrder) {
  Response response;
  EXPECT_TRUE(response.AddHeader("X-One", "1"));
  response.set_content_type("text/plain; charset=utf-8");
  EXPECT_TRUE(response.AddHeader("X-Empty", ""));
  EXPECT_EQ(HeaderLines(response),
            "X-One: 1\r\nContent-Type: text/plain; charset=utf-8\r\nX-Empty: \r\n");
  const std::string wire = Serialize(response);
  EXPECT_NE(wire.find("\r\nX-One: 1\r\nContent-Type: text/plain; charset=utf-8\r\nX-Empty: \r\n"),
            std::string::npos)
      << wire;
}

TEST(ResponseTest, AddHeaderRejectsInjection) {
  Response response;
  EXPECT_FALSE(response.AddHeader("X-A", "a\r\nSet-Cookie: evil=1"));
  EXPECT_FALSE(response.AddHeader("X-A", "a\nb"));
  EXPECT_FALSE(response.AddHeader("X-A", "a\rb"));
  EXPECT_FALSE(response.AddHeader("X-A", std::string_view("a\0b", 3)));
  EXPECT_FALSE(response.AddHeader("X-A\r\nEvil", "1"));
  EXPECT_EQ(HeaderLines(response), "");  // nothing partial was added
  // Tabs and visible characters, obs-text included, are allowed in values.
  EXPECT_TRUE(response.AddHeader("X-B", "a\tb \x80\xff ~"));
}

TEST(ResponseTest, AddHeaderRejectsNamesThatAreNotTokens) {
  Response response;
  for (std::string_view name : {std::string_view(""), std::string_view("X A"),
                                std::string_view("X:A"), std::string_view("X-A:"),
                                std::string_view("(X)"), std::string_view("X\tA"),
                                std::string_view("X\"A"), std::string_view("X/A"),
                                std::string_view("X\x80"), std::string_view("X\0A", 3)}) {
    EXPECT_FALSE(response.AddHeader(name, "v")) << name;
  }
  EXPECT_EQ(HeaderLines(response), "");
  EXPECT_TRUE(response.AddHeader("!#$%&'*+-.^_`|~09azAZ", "v"));
}

TEST(ResponseTest, AddHeaderStopsAtTheLimitAndTheRefusalFailsTheResponse) {
  Response response;
  EXPECT_EQ(response.max_header_bytes(), Response::kDefaultMaxHeaderBytes);
  response.set_max_header_bytes(4096);
  // Exactly filling the limit works: 4096 = name(4) + 2 + value + 2.
  const std::string value(4096 - 8, 'v');
  EXPECT_TRUE(response.AddHeader("X-Fi", value));
  EXPECT_EQ(HeaderLines(response).size(), 4096u);
  EXPECT_FALSE(response.header_refused());
  EXPECT_FALSE(response.AddHeader("X", ""));  // not one byte more
  EXPECT_EQ(HeaderLines(response).size(), 4096u);
  EXPECT_TRUE(response.header_refused());
  EXPECT_EQ(response.HeaderRefusal(),
            "header \"X\" refused: its line (5 bytes) would take the header lines past 4096 "
            "bytes (the response header limit)");

  Response other;
  other.set_max_header_bytes(4096);
  EXPECT_FALSE(other.AddHeader("X-Big", std::string(4096, 'v')));
  EXPECT_EQ(HeaderLines(other), "");  // nothing partial
  EXPECT_TRUE(other.AddHeader("X-Small", "ok"));  // a failed add leaves room...
  EXPECT_TRUE(other.header_refused());  // ...but the response stays failed
  EXPECT_EQ(other.HeaderRefusal().substr(0, 24), "header \"X-Big\" refused: ");
}

TEST(ResponseTest, EveryRefusalFailsTheResponseAndSaysWhy) {
  const struct {
    std::string_view name, value, why;
  } cases[] = {
      {"X A", "v", "header \"X A\" refused: the name is not a token"},
      {"X-A", "a\r\nSet-Cookie: evil=1", "header \"X-A\" refused: the value holds CR, LF or NUL"},
      {"Content-Length", "1", "header \"Content-Length\" refused: the server writes that field itself"},
  };
  for (const auto& c : cases) {
    Response response;
    EXPECT_TRUE(response.AddHeader("X-Ok", "1"));
    EXPECT_FALSE(response.header_refused());
    EXPECT_FALSE(response.AddHeader(c.name, c.value));
    EXPECT_TRUE(response.header_refused());
    EXPECT_EQ(response.HeaderRefusal(), c.why);
    EXPECT_EQ(HeaderLines(response), "X-Ok: 1\r\n");
    // Only the first refusal is told.
    EXPECT_FALSE(response.AddHeader("Bad Name", "v"));
    EXPECT_EQ(response.HeaderRefusal(), c.why);
  }
  Response trailer;
  EXPECT_FALSE(trailer.AddTrailer("X", "a\nb"));
  EXPECT_EQ(trailer.HeaderRefusal(), "trailer \"X\" refused: the value holds CR, LF or NUL");
  Response content_type;
  content_type.set_content_type("text/plain\r\nX-Evil: 1");
  EXPECT_TRUE(content_type.header_refused());
}

TEST(ResponseTest, TrailersHaveTheirOwnLimit) {
  Response response;
  response.set_max_header_bytes(64);
  EXPECT_TRUE(response.AddHeader("X-H", std::string(40, 'h')));
  EXPECT_TRUE(response.AddTrailer("X-T", std::string(40, 't')));  // not counted with the headers
  EXPECT_FALSE(response.AddTrailer("X-U", std::string(40, 'u')));
  EXPECT_TRUE(response.header_refused());
  EXPECT_NE(response.HeaderRefusal().find("trailer lines past 64"), std::string::npos);
}

TEST(ResponseTest, TheLimitComesFromTheThreadAndClearKeepsIt) {
  const size_t saved = Response::ThreadMaxHeaderBytes();
  Response::SetThreadMaxHeaderBytes(2048);
  Response response;
  Response::SetThreadMaxHeaderBytes(saved);
  EXPECT_EQ(response.max_header_bytes(), 2048u);
  EXPECT_FALSE(response.AddHeader("X-Big", std::string(2048, 'v')));
  response.set_status(404);
  response.set_body("x");
  response.Clear();
  EXPECT_FALSE(response.header_refused());
  EXPECT_EQ(response.status(), 200);
  EXPECT_EQ(response.body_view(), "");
  EXPECT_EQ(response.max_header_bytes(), 2048u);
  EXPECT_EQ(Response().max_header_bytes(), saved);
}

TEST(ResponseTest, FieldsReadBackAsNamesAndValues) {
  Response response;
  EXPECT_TRUE(response.AddHeader("X-One", "1"));
  EXPECT_TRUE(response.AddHeader("X-Empty", ""));
  EXPECT_TRUE(response.AddHeader("X-Spaced", " a: b "));
  EXPECT_TRUE(response.AddHeader("x-one", "again"));
  std::string seen;
  for (const auto [name, value] : response.headers()) {
    seen += std::string(name) + "=[" + std::string(value) + "]";
  }
  EXPECT_EQ(seen, "X-One=[1]X-Empty=[]X-Spaced=[ a: b ]x-one=[again]");
  EXPECT_EQ(response.FindHeader("X-ONE"), "1");
  EXPECT_EQ(response.FindHeader("x-empty"), "");
  EXPECT_EQ(response.FindHeader("X-None"), std::nullopt);
}

TEST(ResponseTest, GrownHeadersCopyAndMove) {
  Response a;
  const std::string big(3000, 'b');
  EXPECT_TRUE(a.AddHeader("X-Big", big));
  Response b = a;  // copied
  EXPECT_TRUE(b.AddHeader("X-B", "2"));
  EXPECT_EQ(HeaderLines(a), "X-Big: " + big + "\r\n");
  EXPECT_EQ(HeaderLines(b), "X-Big: " + big + "\r\nX-B: 2\r\n");
  Response c = std::move(b);  // the heap block moves
  EXPECT_EQ(HeaderLines(c), "X-Big: " + big + "\r\nX-B: 2\r\n");
  Response d;
  EXPECT_TRUE(d.AddHeader("X-D", "small"));
  c = d;  // assigned smaller over larger
  EXPECT_EQ(HeaderLines(c), "X-D: small\r\n");
  d = std::move(a);
  EXPECT_EQ(HeaderLines(d), "X-Big: " + big + "\r\n");
  EXPECT_EQ(d.RemoveHeader("x-big"), 1u);
  EXPECT_EQ(HeaderLines(d), "");
  EXPECT_TRUE(d.AddHeader("X-After", "ok"));
  EXPECT_EQ(HeaderLines(d), "X-After: ok\r\n");
}

// Issue 19 item 9: a JWT cookie, a CSP and CORS headers pass 1 KiB in real
// applications; every one of them must go out.
TEST(ResponseTest, HeadersGrowPastOneKibibyte) {
  Response response;
  const std::string cookie = "session=" + std::string(792, 'j');  // 800 bytes
  const std::string csp = "default-src 'self'; " + std::string(280, 'c');  // 300 bytes
  EXPECT_TRUE(response.AddHeader("Set-Cookie", cookie));
  EXPECT_TRUE(response.AddHeader("Content-Security-Policy", csp));
  EXPECT_TRUE(response.AddHeader("Access-Control-Allow-Origin", "https://app.example"));
  EXPECT_TRUE(response.AddHeader("Vary", "Origin"));
  EXPECT_TRUE(response.AddHeader("Access-Control-Allow-Credentials", "true"));
  const std::string wire = Serialize(response);
  EXPECT_TRUE(HasLine(wire, "Set-Cookie: " + cookie));
  EXPECT_TRUE(HasLine(wire, "Content-Security-Policy: " + csp));
  EXPECT_TRUE(HasLine(wire, "Access-Control-Allow-Origin: https://app.example"));
  EXPECT_TRUE(HasLine(wire, "Vary: Origin"));
  EXPECT_TRUE(HasLine(wire, "Access-Control-Allow-Credentials: true"));
}

TEST(ResponseTest, ResponsesAreIndependentCopies) {
  Response a;
  EXPECT_TRUE(a.AddHeader("X-A", "1"));
  a.set_body("body");
  Response b = a;
  EXPECT_TRUE(b.AddHeader("X-B", "2"));
  b.body() += "!";
  EXPECT_EQ(HeaderLines(a), "X-A: 1\r\n");
  EXPECT_EQ(a.body_view(), "body");
  EXPECT_EQ(HeaderLines(b), "X-A: 1\r\nX-B: 2\r\n");
  EXPECT_EQ(b.body_view(), "body!");
}

TEST(ResponseTest, TooSmallBufferReturnsTheSizeNeeded) {
  Response response;
  EXPECT_TRUE(response.AddHeader("X-Test", "value"));
  response.set_body("some body bytes");
  const size_t needed = SerializedSize(response, {});
  const std::string full = Serialize(response);
  EXPECT_EQ(needed, full.size());

  for (size_t capacity : {size_t{0}, size_t{1}, size_t{17}, needed / 2, needed - 1}) {
    std::string buffer(needed + 8, '#');
    EXPECT_EQ(SerializeResponse(response, {}, buffer.data(), capacity), needed) << capacity;
    // Nothing is written past the capacity given.
    EXPECT_EQ(buffer.substr(capacity), std::string(needed + 8 - capacity, '#')) << capacity;
  }
  std::string exact(needed, '\0');
  EXPECT_EQ(SerializeResponse(response, {}, exact.data(), needed), needed);
  EXPECT_EQ(exact, full);
  EXPECT_EQ(SerializeResponse(response, {}, nullptr, 0), needed);
}

TEST(ResponseTest, SerializedSizeFollowsTheOptions) {
  Response response;
  response.set_body("12345");
  SerializeOptions head;
  head.head_only = true;
  EXPECT_EQ(SerializedSize(response, {}), SerializedSize(response, head) + 5);
  SerializeOptions close;
  close.keep_alive = false;
  EXPECT_EQ(SerializedSize(response, close),
            SerializedSize(response, {}) + std::string_view("Connection: close\r\n").size());
}

TEST(ResponseTest, ErrorResponses) {
  const std::string wire = Error(404);
  EXPECT_EQ(wire.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << wire;
  EXPECT_TRUE(HasLine(wire, "Content-Type: text/plain")) << wire;
  EXPECT_TRUE(HasLine(wire, "Server: uring-http"));
  EXPECT_EQ(BodyOf(wire), "404 Not Found\n");
  EXPECT_TRUE(HasLine(wire, "Content-Length: 14")) << wire;
  EXPECT_EQ(wire.find("Allow:"), std::string::npos);

  for (int status : {400, 408, 413, 414, 431, 500, 501, 503, 505}) {
    const std::string e = Error(status);
    const std::string expected_body =
        std::to_string(status) + " " + std::string(ReasonPhrase(status)) + "\n";
    EXPECT_EQ(BodyOf(e), expected_body) << status;
    EXPECT_TRUE(HasLine(e, "Content-Length: " + std::to_string(expected_body.size()))) << e;
  }
}

TEST(ResponseTest, ErrorWithAllowHeader) {
  const std::string wire = Error(405, {}, "GET, HEAD");
  EXPECT_EQ(wire.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u);
  EXPECT_TRUE(HasLine(wire, "Allow: GET, HEAD")) << wire;
  EXPECT_EQ(BodyOf(wire), "405 Method Not Allowed\n");
}

// The answer to OPTIONS from the route table: Allow, and no body at all
// (a 204 has no Content-Length either, RFC 9110 8.6).
TEST(ResponseTest, NoContentWithAllowHasNoBody) {
  const std::string wire = Error(204, {}, "GET, POST, HEAD, OPTIONS");
  EXPECT_EQ(wire.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u) << wire;
  EXPECT_TRUE(HasLine(wire, "Allow: GET, POST, HEAD, OPTIONS")) << wire;
  EXPECT_EQ(wire.find("Content-Length"), std::string::npos) << wire;
  EXPECT_EQ(wire.find("Content-Type"), std::string::npos) << wire;
  EXPECT_EQ(BodyOf(wire), "");
  EXPECT_EQ(ErrorBodySize(204), 0u);
  // A long Allow (a server with many methods) still fits.
  const std::string many(200, 'M');
  EXPECT_TRUE(HasLine(Error(204, {}, many), "Allow: " + many));
}

TEST(ResponseTest, ErrorHonoursConnectionAndHead) {
  SerializeOptions options;
  options.keep_alive = false;
  options.head_only = true;
  const std::string wire = Error(408, options);
  EXPECT_TRUE(HasLine(wire, "Connection: close")) << wire;
  EXPECT_TRUE(HasLine(wire, "Content-Length: 20")) << wire;  // "408 Request Timeout\n"
  EXPECT_EQ(BodyOf(wire), "");
}

TEST(ResponseTest, ErrorTooSmallBufferReturnsTheSizeNeeded) {
  const std::string full = Error(431);
  char small[32];
  std::memset(small, '#', sizeof(small));
  EXPECT_EQ(SerializeError(431, {}, {}, small, 16), full.size());
  for (size_t i = 16; i < sizeof(small); ++i) EXPECT_EQ(small[i], '#') << i;
  EXPECT_EQ(SerializeError(431, {}, {}, nullptr, 0), full.size());
}

TEST(ResponseTest, ReasonPhrases) {
  EXPECT_EQ(ReasonPhrase(200), "OK");
  EXPECT_EQ(ReasonPhrase(204), "No Content");
  EXPECT_EQ(ReasonPhrase(304), "Not Modified");
  EXPECT_EQ(ReasonPhrase(206), "Partial Content");
  EXPECT_EQ(ReasonPhrase(412), "Precondition Failed");
  EXPECT_EQ(ReasonPhrase(416), "Range Not Satisfiable");
  EXPECT_EQ(ReasonPhrase(400), "Bad Request");
  EXPECT_EQ(ReasonPhrase(404), "Not Found");
  EXPECT_EQ(ReasonPhrase(405), "Method Not Allowed");
  EXPECT_EQ(ReasonPhrase(408), "Request Timeout");
  EXPECT_EQ(ReasonPhrase(413), "Content Too Large");
  EXPECT_EQ(ReasonPhrase(414), "URI Too Long");
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(ReasonPhrase(500), "Internal Server Error");
  EXPECT_EQ(ReasonPhrase(501), "Not Implemented");
  EXPECT_EQ(ReasonPhrase(503), "Service Unavailable");
  EXPECT_EQ(ReasonPhrase(505), "HTTP Version Not Supported");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
  EXPECT_EQ(ReasonPhrase(0), "Unknown");
  EXPECT_EQ(ReasonPhrase(-1), "Unknown");
}

TEST(ResponseTest, UnknownStatusStillSerializes) {
  Response response;
  response.set_status(299);
  const std::string wire = Serialize(response);
  EXPECT_EQ(wire.rfind("HTTP/1.1 299 Unknown\r\n", 0), 0u);
  EXPECT_TRUE(HasLine(wire, "Content-Length: 0"));
}

TEST(ResponseTest, RemoveHeaderTakesEveryLineOfThatNameOnly) {
  Response response;
  EXPECT_TRUE(response.AddHeader("ETag", "\"a\""));
  EXPECT_TRUE(response.AddHeader("X-Keep", "1"));
  EXPECT_TRUE(response.AddHeader("etag", "\"b\""));
  EXPECT_TRUE(response.AddHeader("ETag-Like", "2"));
  EXPECT_EQ(response.RemoveHeader("ETAG"), 2u);
  EXPECT_EQ(HeaderLines(response), "X-Keep: 1\r\nETag-Like: 2\r\n");
  EXPECT_EQ(response.RemoveHeader("etag"), 0u);
  // The room is back.
  EXPECT_TRUE(response.AddHeader("ETag", "\"c\""));
  EXPECT_EQ(HeaderLines(response), "X-Keep: 1\r\nETag-Like: 2\r\nETag: \"c\"\r\n");
}

}  // namespace
}  // namespace uring_http::http1
