// The test client's response reader without a socket: each response fed
// whole, byte by byte and at every two-way split, for every framing, and
// the malformed responses it must report instead of accepting.
#include "src/testing/response_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::testing::internal {
namespace {

// Hands out `input` in the given piece sizes (the last repeated), then end
// of input or `end`.
class ScriptedSource : public ByteSource {
 public:
  ScriptedSource(std::string input, std::vector<size_t> pieces, absl::Status end = absl::OkStatus())
      : input_(std::move(input)), pieces_(std::move(pieces)), end_(std::move(end)) {}
  absl::StatusOr<size_t> Read(std::string* buffer) override {
    if (at_ == input_.size()) {
      if (!end_.ok()) return end_;
      return size_t{0};
    }
    size_t n = pieces_[std::min(next_, pieces_.size() - 1)];
    ++next_;
    n = std::min(n, input_.size() - at_);
    buffer->append(input_, at_, n);
    at_ += n;
    return n;
  }

 private:
  std::string input_;
  std::vector<size_t> pieces_;
  absl::Status end_;
  size_t at_ = 0;
  size_t next_ = 0;
};

// Every way of reading `input` the same: whole, byte by byte, split in two
// anywhere.
std::vector<std::vector<size_t>> Splits(const std::string& input) {
  std::vector<std::vector<size_t>> splits = {{input.size() + 1}, {1}};
  for (size_t at = 1; at < input.size(); ++at) splits.push_back({at, input.size()});
  return splits;
}

struct Read {
  Response response;
  std::string left;  // what stayed in the buffer
};

Read ReadWith(const std::string& input, const std::vector<size_t>& pieces,
              ReadOptions options = {}, absl::Status end = absl::OkStatus()) {
  ScriptedSource source(input, pieces, std::move(end));
  Read read;
  read.response = ReadResponse(source, read.left, options);
  return read;
}

TEST(ResponseReaderTest, ContentLengthAtEverySplit) {
  const std::string input =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-Two: a\r\n"
      "X-Two:b \r\n\r\nhello";
  for (const auto& pieces : Splits(input)) {
    Read read = ReadWith(input, pieces);
    const Response& r = read.response;
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.reason, "OK");
    EXPECT_EQ(r.version, "HTTP/1.1");
    EXPECT_EQ(r.body, "hello");
    EXPECT_EQ(r.header("content-type"), "text/plain");
    EXPECT_EQ(r.header_values("x-two"), (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(r.connection_closed);
    EXPECT_EQ(read.left, "");
  }
}

TEST(ResponseReaderTest, ChunkedWithExtensionsAndTrailersAtEverySplit) {
  const std::string input =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\nA\r\n, world!!!\r\n0\r\nX-Sum: 42\r\nX-More: yes\r\n\r\n";
  for (const auto& pieces : Splits(input)) {
    Read read = ReadWith(input, pieces);
    const Response& r = read.response;
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.body, "hello, world!!!");
    EXPECT_EQ(r.trailer("x-sum"), "42");
    EXPECT_EQ(r.trailer("X-More"), "yes");
    EXPECT_FALSE(r.has_header("x-sum"));
    EXPECT_FALSE(r.connection_closed);
  }
}

TEST(ResponseReaderTest, InterimResponsesAreSkippedAndListed) {
  const std::string input =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
  for (const auto& pieces : Splits(input)) {
    const Response r = ReadWith(input, pieces).response;
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.status, 201);
    EXPECT_EQ(r.informational, (std::vector<int>{100, 103}));
    EXPECT_FALSE(r.has_header("link"));  // the interim one's
    EXPECT_EQ(r.body, "ok");
  }
  // Asked for: the first interim one, the rest left.
  ReadOptions options;
  options.return_interim = true;
  Read read = ReadWith(input, {input.size()}, options);
  EXPECT_EQ(read.response.status, 100);
  EXPECT_EQ(read.left.substr(0, 12), "HTTP/1.1 103");
}

TEST(ResponseReaderTest, NoBodyForHead204And304) {
  ReadOptions head;
  head.head = true;
  // Followed by the next response: none of it is taken as a body.
  const std::string next = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  Read read = ReadWith("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + next, {1000}, head);
  EXPECT_TRUE(read.response.ok()) << read.response;
  EXPECT_EQ(read.response.header("content-length"), "10");
  EXPECT_EQ(read.response.body, "");
  EXPECT_EQ(read.left, next);
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    read = ReadWith(std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 10\r\n\r\n" + next,
                    {1000});
    EXPECT_TRUE(read.response.ok()) << read.response;
    EXPECT_EQ(read.response.body, "");
    EXPECT_EQ(read.left, next) << status;
  }
}

TEST(ResponseReaderTest, BodyUntilCloseAndConnectionClose) {
  const std::string input = "HTTP/1.1 200 OK\r\n\r\nall of it until the end";
  for (const auto& pieces : Splits(input)) {
    const Response r = ReadWith(input, pieces).response;
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.body, "all of it until the end");
    EXPECT_TRUE(r.connection_closed);
  }
  // A reset instead of an orderly close loses the end: an error.
  Response reset = ReadWith(input, {input.size()},
                            {}, absl::UnavailableError("the connection broke (reset)"))
                       .response;
  EXPECT_TRUE(absl::IsUnavailable(reset.error)) << reset;
  EXPECT_EQ(reset.status, 200);
  EXPECT_TRUE(
      ReadWith("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
               {100})
          .response.connection_closed);
  EXPECT_EQ(ReadWith("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", {100})
                .response.connection_closed,
            true);
  EXPECT_EQ(ReadWith("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                     {100})
                .response.connection_closed,
            false);
  EXPECT_EQ(ReadWith("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nframes", {100})
                .response.connection_closed,
            true);
}

TEST(ResponseReaderTest, OnBodyGetsEachPieceAndMayStop) {
  const std::string input =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
  for (const auto& pieces : Splits(input)) {
    std::string got;
    ReadOptions options;
    options.on_body = [&got](std::string_view piece) {
      EXPECT_FALSE(piece.empty());
      got += piece;
      return true;
    };
    const Response r = ReadWith(input, pieces, options).response;
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(got, "abcdef");
    EXPECT_EQ(r.body, "");
  }
  ReadOptions stop;
  int calls = 0;
  stop.on_body = [&calls](std::string_view) { return ++calls < 1; };
  const Response r = ReadWith(input, {1}, stop).response;
  EXPECT_TRUE(r.ok()) << r;
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.connection_closed);
}

TEST(ResponseReaderTest, MalformedResponsesAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", "a line ends in a bare LF"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 20 OK\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 099 Low\r\n\r\n", "below 100"},
      {"ICY 200 OK\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "malformed header line"},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "malformed header line"},
      {"HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n", "folded"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
       "both Transfer-Encoding and Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
       "two different Content-Lengths"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "is not a number"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", "is not a number"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n", "malformed chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
       "not followed by CRLF"},
  };
  for (const auto& [input, why] : cases) {
    const Response r = ReadWith(input, {input.size()}).response;
    EXPECT_TRUE(absl::IsInternal(r.error)) << input << " -> " << r;
    EXPECT_NE(r.error.message().find(why), std::string::npos) << input << " -> " << r.error;
    EXPECT_TRUE(r.connection_closed);
  }
  // Two equal lengths are one.
  const Response same =
      ReadWith("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", {100})
          .response;
  EXPECT_TRUE(same.ok()) << same;
  EXPECT_EQ(same.body, "ab");
}

TEST(ResponseReaderTest, AnEndTooEarlySaysWhere) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "the server closed the connection without answering"},
      {"HTTP/1.1 2", "the server closed the connection in the status line (10 bytes came)"},
      {"HTTP/1.1 200 OK\r\nA: b",
       "the server closed the connection in the headers (21 bytes came)"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
       "the server closed the connection in the body (3 of 10 bytes came)"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
       "the server closed the connection in the chunked body (2 bytes came)"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX: 1\r\n",
       "the server closed the connection in the trailers (after 2 bytes of body)"},
  };
  for (const auto& [input, message] : cases) {
    const Response r = ReadWith(input, {1}).response;
    EXPECT_TRUE(absl::IsUnavailable(r.error)) << input << " -> " << r;
    EXPECT_EQ(r.error.message(), message) << input;
  }
  // A timeout keeps its code and says where it struck.
  const Response late =
      ReadWith("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", {1000}, {},
               absl::DeadlineExceededError("timed out"))
          .response;
  EXPECT_TRUE(absl::IsDeadlineExceeded(late.error)) << late;
  EXPECT_EQ(late.error.message(), "timed out in the body (3 of 10 bytes came)");
  EXPECT_EQ(late.status, 200);  // the head had come
}

}  // namespace
}  // namespace uring_http::testing::internal
