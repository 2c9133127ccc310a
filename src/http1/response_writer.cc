#include "src/http1/response_writer.h"

#include <time.h>

#include <cstring>
#include <string>

namespace uring_http::http1 {

using http::ReasonPhrase;
using http::StatusHasBody;

namespace {

constexpr std::string_view kServer = "Server: uring-http\r\n";

// The Date header changes once a second; each thread formats it at most once
// per second (CLOCK_REALTIME_COARSE is a vDSO read, no syscall).
struct DateCache {
  time_t second = -1;
  char line[64];  // "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
  size_t len = 0;
};

std::string_view DateLine() {
  thread_local DateCache cache;
  timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  if (now.tv_sec != cache.second) {
    cache.second = now.tv_sec;
    tm parts;
    gmtime_r(&now.tv_sec, &parts);
    cache.len = strftime(cache.line, sizeof(cache.line), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n",
                         &parts);
  }
  return {cache.line, cache.len};
}

class Writer {
 public:
  Writer(char* out, size_t capacity) : out_(out), capacity_(capacity) {}
  void Put(std::string_view s) {
    if (!s.empty() && len_ + s.size() <= capacity_) std::memcpy(out_ + len_, s.data(), s.size());
    len_ += s.size();
  }
  void PutNumber(size_t n) {
    char digits[24];
    char* end = digits + sizeof(digits);
    char* p = end;
    do {
      *--p = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    Put(std::string_view(p, static_cast<size_t>(end - p)));
  }
  size_t size() const { return len_; }

 private:
  char* out_;
  size_t capacity_;
  size_t len_ = 0;
};

void WriteFields(Writer& w, const HeaderTable& fields) {
  for (const HeaderTable::Field f : fields) {
    w.Put(f.name);
    w.Put(": ");
    w.Put(f.value);
    w.Put("\r\n");
  }
}

// `fields` (a handler's) or `lines` (the server's own, already lines).
void WriteStatusLine(Writer& w, int status, const HeaderTable* fields, std::string_view lines) {
  w.Put("HTTP/1.1 ");
  w.PutNumber(static_cast<size_t>(status));
  w.Put(" ");
  w.Put(ReasonPhrase(status));
  w.Put("\r\n");
  w.Put(kServer);
  w.Put(DateLine());
  if (fields != nullptr) WriteFields(w, *fields);
  w.Put(lines);
}

void WriteConnection(Writer& w, bool keep_alive, bool keep_alive_header) {
  if (!keep_alive) {
    w.Put("Connection: close\r\n");
  } else if (keep_alive_header) {
    w.Put("Connection: keep-alive\r\n");
  }
  w.Put("\r\n");
}

void WriteHead(Writer& w, int status, const HeaderTable* fields, std::string_view lines,
               size_t body_size, bool keep_alive, bool keep_alive_header) {
  WriteStatusLine(w, status, fields, lines);
  // 1xx and 204 responses carry no Content-Length (RFC 9110 8.6). A 304's
  // states the length a 200 would have had: the body the handler left in
  // it says so; without one, nothing is said (0 would be false).
  if (status >= 200 && status != 204 && (status != 304 || body_size > 0)) {
    w.Put("Content-Length: ");
    w.PutNumber(body_size);
    w.Put("\r\n");
  }
  WriteConnection(w, keep_alive, keep_alive_header);
}

}  // namespace

size_t SerializeResponse(const Response& response, const SerializeOptions& options, char* out,
                         size_t capacity) {
  Writer w(out, capacity);
  const std::string_view body = response.body_view();
  if (options.head_only && response.length_unstated()) {
    WriteStatusLine(w, response.status(), &response.headers(), {});
    WriteConnection(w, options.keep_alive, options.keep_alive_header);
    return w.size();
  }
  WriteHead(w, response.status(), &response.headers(), {}, body.size(), options.keep_alive,
            options.keep_alive_header);
  if (!options.head_only && StatusHasBody(response.status())) w.Put(body);
  return w.size();
}

size_t SerializeStreamHead(const Response& response, const SerializeOptions& options,
                           StreamFraming framing, uint64_t length, char* out, size_t capacity) {
  return SerializeStreamHead(response.status(), response.headers(), options, framing, length, out,
                             capacity);
}

size_t SerializeStreamHead(int status, const HeaderTable& fields, const SerializeOptions& options,
                           StreamFraming framing, uint64_t length, char* out, size_t capacity) {
  Writer w(out, capacity);
  WriteStatusLine(w, status, &fields, {});
  bool keep_alive = options.keep_alive;
  if (status != 204) {
    switch (framing) {
      case StreamFraming::kContentLength:
        w.Put("Content-Length: ");
        w.PutNumber(length);
        w.Put("\r\n");
        break;
      case StreamFraming::kChunked:
        // 304 states no framing of its own (it has no body): nothing to say.
        if (status != 304) w.Put("Transfer-Encoding: chunked\r\n");
        break;
      case StreamFraming::kClose:
        keep_alive = false;  // the end of the body is the end of the connection
        break;
    }
  }
  WriteConnection(w, keep_alive, options.keep_alive_header);
  return w.size();
}

size_t ChunkHeader(uint64_t size, char out[18]) {
  static constexpr char kHex[] = "0123456789abcdef";
  char digits[16];
  size_t n = 0;
  do {
    digits[n++] = kHex[size & 0xf];
    size >>= 4;
  } while (size != 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\r';
  out[n + 1] = '\n';
  return n + 2;
}

void AppendFieldLines(const HeaderTable& fields, std::string* out) {
  for (const HeaderTable::Field f : fields) {
    out->append(f.name).append(": ").append(f.value).append("\r\n");
  }
}

std::string LastChunk(std::string_view trailer_lines) {
  std::string out = "0\r\n";
  out.append(trailer_lines);
  out.append("\r\n");
  return out;
}

std::string LastChunk(const HeaderTable& trailers) {
  std::string out = "0\r\n";
  AppendFieldLines(trailers, &out);
  out.append("\r\n");
  return out;
}

size_t SerializedSize(const Response& response, const SerializeOptions& options) {
  return SerializeResponse(response, options, nullptr, 0);
}

size_t SerializeError(int status, const SerializeOptions& options, std::string_view allow,
                      char* out, size_t capacity) {
  Writer w(out, capacity);
  // The body repeats the status so a person with curl sees what went wrong.
  char body[96];
  Writer b(body, sizeof(body));
  const bool has_body = StatusHasBody(status);  // a 204 (OPTIONS) has none
  if (has_body) {
    b.PutNumber(static_cast<size_t>(status));
    b.Put(" ");
    b.Put(ReasonPhrase(status));
    b.Put("\n");
  }
  char headers[320];
  Writer h(headers, sizeof(headers));
  if (has_body) h.Put("Content-Type: text/plain\r\n");
  if (!allow.empty() && allow.size() < 256) {
    h.Put("Allow: ");
    h.Put(allow);
    h.Put("\r\n");
  }
  WriteHead(w, status, nullptr, std::string_view(headers, h.size()), b.size(), options.keep_alive,
            options.keep_alive_header);
  if (!options.head_only) w.Put(std::string_view(body, b.size()));
  return w.size();
}

}  // namespace uring_http::http1
