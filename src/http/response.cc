#include "src/http/response.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

namespace uring_http::http {
namespace {

bool IsTokenChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);  // strchr finds the NUL
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
    refused_line_bytes_ = static_cast<uint32_t>(std::min<size_t>(line_bytes, UINT32_MAX));
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

}  // namespace uring_http::http
