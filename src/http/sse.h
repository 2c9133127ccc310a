// Server-sent events (the HTML standard's text/event-stream): the text of
// one event, so that handlers stop formatting them by hand.
//
//   StartEventStream(ex.response());
//   std::string text;
//   AppendEvent(&text, {.event = "tick", .id = "7", .data = "line one\nline two"});
//   co_await ex.Write(text);
//   co_await ex.Write(EventComment("keep-alive"));
//
// Data may hold any text: each of its lines (split at CR LF, CR or LF)
// becomes a "data:" line, so an event cannot be ended early by what it
// carries. An event name or id holding CR or LF (or an id holding NUL,
// which clients ignore) would do just that: AppendEvent refuses it,
// appending nothing.
//
// Thread-safety: plain functions.
#ifndef URING_HTTP_SRC_HTTP_SSE_H_
#define URING_HTTP_SRC_HTTP_SSE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "src/http/response.h"

namespace uring_http::http {

struct Event {
  std::string_view event;  // "event:" (empty: none, clients call it "message")
  std::string_view id;     // "id:" (empty: none)
  std::string_view data;   // "data:" lines (an empty data is one empty line)
  int64_t retry_ms = -1;   // "retry:", the client's reconnection delay (< 0: none)
};

// Appends the event's text (ending with its blank line) to *out; false,
// appending nothing, if its name or id would break the stream (see top).
[[nodiscard]] bool AppendEvent(std::string* out, const Event& event);

// A comment line: clients ignore it, proxies see traffic (a keep-alive).
// Its CR and LF become spaces.
std::string EventComment(std::string_view text = "");

// Content-Type: text/event-stream, Cache-Control: no-cache, and
// X-Accel-Buffering: no (nginx would otherwise hold the events back).
void StartEventStream(Response& response);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_SSE_H_
