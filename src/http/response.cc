#include "src/http/response.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

namespace uring_http::http {
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

bool IsTokenChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);  // strchr finds the NUL
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

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    if (c != lower[i]) return false;
  }
  return true;
}

// Headers that frame the message or manage the connection: the server
// writes them, and a handler's copy would contradict it (RFC 9112 6, 9.6;
// RFC 9110 7.6.1).
bool IsServerOwned(std::string_view name) {
  for (std::string_view owned : {"content-length", "transfer-encoding", "connection", "keep-alive",
                                 "upgrade", "trailer", "te", "proxy-connection"}) {
    if (EqualsIgnoreCase(name, owned)) return true;
  }
  return false;
}

}  // namespace

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

namespace {

// Why a field is refused, if it is (see AddHeader).
enum class FieldCheck : uint8_t { kOk, kName, kValue, kServerOwned };

FieldCheck CheckField(std::string_view name, std::string_view value) {
  if (name.empty()) return FieldCheck::kName;
  for (unsigned char c : name) {
    if (!IsTokenChar(c)) return FieldCheck::kName;
  }
  if (IsServerOwned(name)) return FieldCheck::kServerOwned;
  for (unsigned char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return FieldCheck::kValue;
  }
  return FieldCheck::kOk;
}

}  // namespace

const HeaderTable Response::kNoFields{};

void Response::Clear() {
  const size_t max = max_header_bytes_;
  *this = Response();
  max_header_bytes_ = max;
}

bool Response::Refuse(Refusal why, bool trailer, std::string_view name, size_t line_bytes) {
  if (refusal_ == Refusal::kNone) {
    refusal_ = why;
    refused_trailer_ = trailer;
    refused_name_.assign(name.substr(0, 64));
    refused_line_bytes_ = line_bytes;
  }
  return false;
}

std::string Response::HeaderRefusal() const {
  if (refusal_ == Refusal::kNone) return {};
  std::string out = refused_trailer_ ? "trailer \"" : "header \"";
  out.append(refused_name_);
  out.append("\" refused: ");
  switch (refusal_) {
    case Refusal::kName:
      out.append("the name is not a token");
      break;
    case Refusal::kValue:
      out.append("the value holds CR, LF or NUL");
      break;
    case Refusal::kServerOwned:
      out.append("the server writes that field itself");
      break;
    case Refusal::kTooLarge:
      out.append("its line (");
      out.append(std::to_string(refused_line_bytes_));
      out.append(refused_trailer_ ? " bytes) would take the trailer lines past "
                                  : " bytes) would take the header lines past ");
      out.append(std::to_string(max_header_bytes_));
      out.append(" bytes (the response header limit)");
      break;
    case Refusal::kNone:
      break;
  }
  return out;
}

bool Response::AddHeader(std::string_view name, std::string_view value) {
  const size_t need = HeaderTable::LineBytes(name, value);
  switch (CheckField(name, value)) {
    case FieldCheck::kOk:
      break;
    case FieldCheck::kName:
      return Refuse(Refusal::kName, false, name, need);
    case FieldCheck::kValue:
      return Refuse(Refusal::kValue, false, name, need);
    case FieldCheck::kServerOwned:
      return Refuse(Refusal::kServerOwned, false, name, need);
  }
  if (need > header_room()) return Refuse(Refusal::kTooLarge, false, name, need);
  headers_.Add(name, value);
  return true;
}

void Response::set_content_type(std::string_view type) {
  // A refusal is recorded in the response (header_refused()), which is
  // what fails it.
  (void)AddHeader("Content-Type", type);
}

size_t Response::RemoveHeader(std::string_view name) { return headers_.Remove(name); }

bool Response::Write(std::string_view data) {
  if (stream_ != nullptr) return stream_->Write(*this, data);
  // Not streamed (a FAST handler): the pieces make up the buffered body,
  // after a static body if one was set.
  if (has_static_body_) {
    body_.assign(static_body_);
    static_body_ = {};
    has_static_body_ = false;
  }
  body_.append(data);
  return true;
}

bool Response::AddTrailer(std::string_view name, std::string_view value) {
  const size_t need = HeaderTable::LineBytes(name, value);
  switch (CheckField(name, value)) {
    case FieldCheck::kOk:
      break;
    case FieldCheck::kName:
      return Refuse(Refusal::kName, true, name, need);
    case FieldCheck::kValue:
      return Refuse(Refusal::kValue, true, name, need);
    case FieldCheck::kServerOwned:
      return Refuse(Refusal::kServerOwned, true, name, need);
  }
  if (trailers().line_bytes() + need > max_header_bytes_) {
    return Refuse(Refusal::kTooLarge, true, name, need);
  }
  if (trailers_.table == nullptr) trailers_.table = std::make_unique<HeaderTable>();
  trailers_.table->Add(name, value);
  return true;
}

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

}  // namespace uring_http::http
