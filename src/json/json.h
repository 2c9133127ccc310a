// JSON request and response bodies for handlers, on nlohmann-json (Debian's
// nlohmann-json3-dev, 3.11): a library of its own, public as
// //:uring_http_json (from another workspace @uring_http//:uring_http_json,
// header uring_http/json.h), so that the server itself does not depend on
// a JSON library. nlohmann-json rather than simdjson: it builds values as
// well as reading them (a reply needs that), converts to and from structs,
// is header-only, and reports where a text broke; request bodies are small
// enough that simdjson's speed would not show.
//
//   json::Result<> in = json::Parse(request);    // the body as JSON
//   if (!in.ok()) return in.ReplyError(response); // 415, or 400 saying where
//   json::Reply(response, {{"sum", (*in)["a"].get<double>() + 1}});
//
// Parse: the Content-Type must be application/json or a */*+json type
// (RFC 6839; any case, parameters such as charset allowed), else 415. A
// request without one is 415 too unless ParseOptions says otherwise: a
// browser sends a cross-site request without a Content-Type (or with
// text/plain) with no CORS preflight, so checking it is what keeps such a
// request from a JSON API that trusts cookies. A body that is not one JSON
// text (RFC 8259: trailing bytes, comments, an empty body) is 400 with the
// parser's line, column and byte; nesting deeper than
// ParseOptions::max_depth is 400 too. A body past the route's limit never
// reaches the handler: the server answers 413 (--max-body-bytes,
// RouteOptions::max_body_bytes). No exception is thrown for a malformed
// body. ParseAs<T> converts with nlohmann's from_json (e.g.
// NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE), a failed conversion 400 with
// nlohmann's message (the one place an exception is thrown, and caught).
//
// Reply: "Content-Type: application/json" without a charset (RFC 8259 11
// defines none: JSON between systems is UTF-8), compact, a final newline
// (as Go's json.Encoder writes); invalid UTF-8 in a string becomes U+FFFD
// rather than an exception. ReplyError sends {"error": message}.
//
// Parse reads Request::body: routes that buffer their body (the default;
// a streamed route's body is not there).
//
// Thread-safety: stateless functions, callable from FAST and SLOW
// handlers alike; a Result belongs to its handler.
#ifndef URING_HTTP_SRC_JSON_JSON_H_
#define URING_HTTP_SRC_JSON_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "src/http/request.h"
#include "src/http/response.h"

namespace uring_http::json {

using Json = nlohmann::json;

struct ParseOptions {
  // Nesting of arrays and objects past this is refused (400): Reply and
  // nlohmann's destructor recurse, a body of a million '[' must not.
  size_t max_depth = 512;
  // A request without Content-Type is 415 (see the top); true: read as JSON.
  bool allow_missing_content_type = false;
};

// A request body as a T, or why not: like absl::StatusOr, with the HTTP
// status to answer.
template <typename T = Json>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: a value converts
  Result(int status, std::string error, uint64_t offset = 0)
      : status_(status), error_(std::move(error)), error_offset_(offset) {}

  bool ok() const { return status_ == 200; }
  // 200, 400 (malformed, too deep, or not a T) or 415 (not JSON).
  int status() const { return status_; }
  const std::string& error() const { return error_; }  // "" when ok()
  // The byte of the body where the parse failed (a 400 for malformed JSON).
  uint64_t error_offset() const { return error_offset_; }

  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  T& operator*() & { return value_; }
  const T& operator*() const& { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

  // Answers the failure: status() and {"error": error()}.
  void ReplyError(http::Response& response) const;

 private:
  T value_{};
  int status_ = 200;
  std::string error_;
  uint64_t error_offset_ = 0;
};

// Whether a Content-Type value names JSON: application/json or a type
// ending in "+json" (RFC 6839), any case, parameters allowed.
bool IsJsonContentType(std::string_view content_type);

// The request's body (Request::body) parsed as JSON, see the top.
Result<Json> Parse(const http::Request& request, const ParseOptions& options = {});
// The same over any text (no Content-Type check).
Result<Json> ParseText(std::string_view text, const ParseOptions& options = {});

// Parse, then value.get<T>() (nlohmann's from_json); a T that cannot be had
// from the value is 400 with nlohmann's message.
template <typename T>
Result<T> ParseAs(const http::Request& request, const ParseOptions& options = {}) {
  Result<Json> parsed = Parse(request, options);
  if (!parsed.ok()) return Result<T>(parsed.status(), parsed.error(), parsed.error_offset());
  try {
    return Result<T>(parsed->template get<T>());
  } catch (const Json::exception& e) {
    return Result<T>(400, std::string("request body: ") + e.what());
  }
}

// Answers with `value`: the status, Content-Type: application/json, the
// value serialized compactly and a newline.
void Reply(http::Response& response, const Json& value, int status = 200);
// Answers {"error": message} with the status.
void ReplyError(http::Response& response, int status, std::string_view message);

template <typename T>
void Result<T>::ReplyError(http::Response& response) const {
  json::ReplyError(response, status_, error_);
}

}  // namespace uring_http::json

#endif  // URING_HTTP_SRC_JSON_JSON_H_
