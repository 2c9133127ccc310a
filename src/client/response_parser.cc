// The response-head parser (see response_parser.h). Line by line: a line
// is judged once its LF has arrived; while it is incomplete only the limits
// are checked. So, as for the request parser, a prefix of any input is
// either incomplete or fails as the whole input does.
#include "src/client/response_parser.h"

#include <cstring>

#include "src/http/field_syntax.h"

namespace uring_http::client {
namespace {

using namespace http::field_syntax;  // NOLINT: the rules the request parser uses

ResponseParseResult Error(const char* why) {
  ResponseParseResult r;
  r.status = http::ParseStatus::kError;
  r.error = why;
  return r;
}

// The line starting at p: its end (before CR LF or LF) and the byte after
// its LF; false while its LF has not arrived. A CR elsewhere than before
// the LF stays in the line, for the caller's syntax check to refuse.
bool NextLine(const char* p, const char* end, const char** line_end, const char** next) {
  if (p == end) return false;
  const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
  if (lf == nullptr) return false;
  const char* at = static_cast<const char*>(lf);
  *line_end = at > p && at[-1] == '\r' ? at - 1 : at;
  *next = at + 1;
  return true;
}

bool ParseStatusLine(std::string_view line, ResponseHead* out) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1.") return false;
  if (line[7] == '1') {
    out->version = http::Version::kHttp11;
  } else if (line[7] == '0') {
    out->version = http::Version::kHttp10;
  } else {
    return false;
  }
  if (line[8] != ' ') return false;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100 || status > 599) return false;
  out->status = status;
  std::string_view rest = line.substr(12);
  if (!rest.empty()) {
    if (rest[0] != ' ') return false;  // "HTTP/1.1 2000" is not a status
    rest.remove_prefix(1);
    for (char c : rest) {
      if (!Is(c, kValueChar)) return false;
    }
  }
  out->reason = rest;
  return true;
}

}  // namespace

ResponseParseResult ParseResponseHead(std::string_view data, const ResponseLimits& limits,
                                      bool head_request, ResponseHead* out,
                                      http::Header* headers, size_t capacity) {
  *out = ResponseHead();
  out->headers = headers;
  const char* const begin = data.data();
  const char* const end = begin + data.size();
  const char* line_end = nullptr;
  const char* next = nullptr;

  if (!NextLine(begin, end, &line_end, &next)) {
    size_t at_least = data.size();
    if (at_least > 0 && end[-1] == '\r') --at_least;  // may be the CR of CRLF
    if (at_least > limits.max_status_line) return Error("status line too long");
    return {};
  }
  if (static_cast<size_t>(line_end - begin) > limits.max_status_line) {
    return Error("status line too long");
  }
  if (!ParseStatusLine(std::string_view(begin, static_cast<size_t>(line_end - begin)), out)) {
    return Error("malformed status line");
  }

  const char* p = next;
  const char* const section = p;
  const size_t max_headers = capacity < limits.max_headers ? capacity : limits.max_headers;
  size_t n = 0;
  bool length_seen = false;
  uint64_t length = 0;
  TransferCodings codings;
  bool conn_close = false;
  bool conn_keep_alive = false;
  for (;;) {
    if (!NextLine(p, end, &line_end, &next)) {
      if (static_cast<size_t>(end - section) > limits.max_header_bytes) {
        return Error("header section too large");
      }
      return {};
    }
    if (static_cast<size_t>(next - section) > limits.max_header_bytes) {
      return Error("header section too large");
    }
    if (line_end == p) {  // the blank line
      p = next;
      break;
    }
    if (n == max_headers) return Error("too many header fields");
    // field-name ":" OWS field-value OWS; a leading SP or HTAB (obs-fold)
    // is not a token character and fails the name.
    const char* name_end = p;
    while (name_end < line_end && Is(*name_end, kTchar)) ++name_end;
    if (name_end == p || name_end == line_end || *name_end != ':') {
      return Error("malformed header field");
    }
    const char* v = name_end + 1;
    const char* v_end = line_end;
    for (const char* q = v; q < v_end; ++q) {
      if (!Is(*q, kValueChar)) return Error("control character in a header value");
    }
    while (v < v_end && IsOws(*v)) ++v;
    while (v_end > v && IsOws(v_end[-1])) --v_end;
    const std::string_view name(p, static_cast<size_t>(name_end - p));
    const std::string_view value(v, static_cast<size_t>(v_end - v));
    headers[n++] = {name, value};
    if (EqualsIgnoreCase(name, "content-length")) {
      if (!ParseContentLength(value, &length_seen, &length)) {
        return Error("malformed Content-Length");
      }
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      ScanTransferEncoding(value, &codings);
    } else if (EqualsIgnoreCase(name, "connection")) {
      ScanConnection(value, &conn_close, &conn_keep_alive);
    }
    p = next;
  }

  if (out->status == 101) return Error("101 Switching Protocols (no upgrade was asked)");
  if (codings.seen) {
    if (length_seen) return Error("both Content-Length and Transfer-Encoding");
    if (out->version != http::Version::kHttp11) {
      return Error("Transfer-Encoding in an HTTP/1.0 response");
    }
    if (codings.malformed || codings.other || codings.chunked != 1 || !codings.last_chunked) {
      return Error("Transfer-Encoding other than chunked");
    }
  }
  out->num_headers = n;
  out->keep_alive = out->version == http::Version::kHttp11 ? !conn_close
                                                           : conn_keep_alive && !conn_close;
  if (head_request || out->interim() || out->status == 204 || out->status == 304) {
    out->framing = ResponseFraming::kNone;
  } else if (codings.seen) {
    out->framing = ResponseFraming::kChunked;
  } else if (length_seen) {
    out->framing = length > 0 ? ResponseFraming::kContentLength : ResponseFraming::kNone;
    out->content_length = length;
  } else {
    out->framing = ResponseFraming::kUntilClose;
    out->keep_alive = false;
  }
  out->head_bytes = static_cast<size_t>(p - begin);
  ResponseParseResult r;
  r.status = http::ParseStatus::kComplete;
  r.consumed = out->head_bytes;
  return r;
}

}  // namespace uring_http::client
