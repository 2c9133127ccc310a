// Response: what a handler fills in (status, a few headers, a body), and the
// serializer that turns it into HTTP/1.1 bytes in a caller-provided buffer.
//
// A Response lives on the stack of whoever runs the handler (the ring thread
// for FAST handlers, a worker for SLOW ones) and is serialized before the
// handler's frame is gone, so headers are copied into inline storage and the
// body is either owned (std::string, no allocation for 15 bytes or less) or a
// view of static memory.
//
// Thread-safety: a Response belongs to one thread at a time.
#ifndef URING_HTTP_SRC_HTTP_RESPONSE_H_
#define URING_HTTP_SRC_HTTP_RESPONSE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace uring_http::http {

// "OK", "Not Found", ...; "Unknown" for a code without a standard phrase.
std::string_view ReasonPhrase(int status);

class Response {
 public:
  static constexpr size_t kHeaderStorage = 1024;

  int status() const { return status_; }
  void set_status(int status) { status_ = status; }

  // Adds "name: value". Returns false (and adds nothing) when inline storage
  // is full, or when the name is not a token or the value holds CR, LF or NUL
  // (which would let a handler's input inject headers).
  bool AddHeader(std::string_view name, std::string_view value);
  void set_content_type(std::string_view type) { AddHeader("Content-Type", type); }

  // The owned body; append to it freely.
  std::string& body() {
    static_body_ = {};
    has_static_body_ = false;
    return body_;
  }
  void set_body(std::string_view body) { this->body().assign(body); }
  // A body that is not copied; it must outlive serialization (static data).
  void set_static_body(std::string_view body) {
    body_.clear();
    static_body_ = body;
    has_static_body_ = true;
  }
  std::string_view body_view() const {
    return has_static_body_ ? static_body_ : std::string_view(body_);
  }
  // The serialized extra header lines ("Name: value\r\n" each).
  std::string_view header_lines() const { return {headers_, headers_len_}; }

 private:
  int status_ = 200;
  size_t headers_len_ = 0;
  std::string body_;
  std::string_view static_body_;
  bool has_static_body_ = false;
  char headers_[kHeaderStorage];
};

struct SerializeOptions {
  bool keep_alive = true;  // false adds "Connection: close"
  // HTTP/1.0 keeps a connection only when the response says so.
  bool keep_alive_header = false;
  bool head_only = false;  // HEAD: headers (with the body's length) but no body
};

// Writes the whole response into out[0..capacity) if it fits and returns its
// size; if it does not fit, writes nothing useful and returns the size needed.
size_t SerializeResponse(const Response& response, const SerializeOptions& options, char* out,
                         size_t capacity);

// The size SerializeResponse() would return.
size_t SerializedSize(const Response& response, const SerializeOptions& options);

// A complete error response ("404 Not Found" etc.) with a short text body.
// `allow` (for 405) becomes an Allow header when not empty.
size_t SerializeError(int status, const SerializeOptions& options, std::string_view allow,
                      char* out, size_t capacity);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_RESPONSE_H_
