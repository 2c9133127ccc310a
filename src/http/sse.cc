#include "src/http/sse.h"

namespace uring_http::http {
namespace {

bool BreaksLine(std::string_view s, bool nul_too) {
  for (char c : s) {
    if (c == '\r' || c == '\n' || (nul_too && c == '\0')) return true;
  }
  return false;
}

}  // namespace

bool AppendEvent(std::string* out, const Event& event) {
  if (BreaksLine(event.event, false) || BreaksLine(event.id, true)) return false;
  if (!event.event.empty()) out->append("event: ").append(event.event).push_back('\n');
  if (!event.id.empty()) out->append("id: ").append(event.id).push_back('\n');
  if (event.retry_ms >= 0) out->append("retry: ").append(std::to_string(event.retry_ms)).push_back('\n');
  std::string_view data = event.data;
  for (;;) {
    size_t end = 0;
    while (end < data.size() && data[end] != '\r' && data[end] != '\n') ++end;
    out->append("data: ").append(data.substr(0, end)).push_back('\n');
    if (end == data.size()) break;
    // CR LF is one line break, as a lone CR or LF is.
    end += data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1;
    data.remove_prefix(end);
  }
  out->push_back('\n');
  return true;
}

std::string EventComment(std::string_view text) {
  std::string out = ":";
  if (!text.empty()) out.push_back(' ');
  for (char c : text) out.push_back(c == '\r' || c == '\n' ? ' ' : c);
  out.append("\n\n");
  return out;
}

void StartEventStream(Response& response) {
  response.set_content_type("text/event-stream");
  (void)response.AddHeader("Cache-Control", "no-cache");
  (void)response.AddHeader("X-Accel-Buffering", "no");
}

}  // namespace uring_http::http
