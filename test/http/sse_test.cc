// The event-stream text: fields in order, data split at every kind of line
// break, the refusals that keep an event from ending early, comments.
#include "src/http/sse.h"

#include <string>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

std::string Text(const Event& e) {
  std::string out;
  EXPECT_TRUE(AppendEvent(&out, e));
  return out;
}

TEST(SseTest, AnEventIsItsFieldsThenABlankLine) {
  EXPECT_EQ(Text({.event = "tick", .id = "7", .data = "hello", .retry_ms = 1500}),
            "event: tick\nid: 7\nretry: 1500\ndata: hello\n\n");
  EXPECT_EQ(Text({.data = "only data"}), "data: only data\n\n");
  EXPECT_EQ(Text({}), "data: \n\n");  // an empty message is still one
}

TEST(SseTest, EachLineOfTheDataIsADataLine) {
  EXPECT_EQ(Text({.data = "a\nb\r\nc\rd"}), "data: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(Text({.data = "ends with\n"}), "data: ends with\ndata: \n\n");
  // A blank line in the data cannot end the event.
  EXPECT_EQ(Text({.data = "x\n\ny"}), "data: x\ndata: \ndata: y\n\n");
}

TEST(SseTest, ANameOrIdThatWouldBreakTheStreamIsRefused) {
  std::string out = "kept";
  EXPECT_FALSE(AppendEvent(&out, {.event = "a\nb", .data = "x"}));
  EXPECT_FALSE(AppendEvent(&out, {.id = "1\r", .data = "x"}));
  EXPECT_FALSE(AppendEvent(&out, {.id = std::string_view("1\0", 2), .data = "x"}));
  EXPECT_EQ(out, "kept");  // nothing appended
  EXPECT_TRUE(AppendEvent(&out, {.event = std::string_view("n\0", 2), .data = "x"}));
}

TEST(SseTest, CommentsAndTheHead) {
  EXPECT_EQ(EventComment(), ":\n\n");
  EXPECT_EQ(EventComment("keep\nalive"), ": keep alive\n\n");
  Response r;
  StartEventStream(r);
  EXPECT_EQ(r.FindHeader("content-type").value_or(""), "text/event-stream");
  EXPECT_EQ(r.FindHeader("cache-control").value_or(""), "no-cache");
  EXPECT_FALSE(r.header_refused());
}

}  // namespace
}  // namespace uring_http::http
