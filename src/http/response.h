// Response: what a handler fills in (status, headers, a body), and the
// serializer that turns it into HTTP/1.1 bytes in a caller-provided buffer.
//
// A body is either buffered (body(), set_body(), set_static_body(): sent
// whole, with Content-Length, after the handler returns) or streamed:
//   - a SLOW handler calls Write() as often as it likes; each piece leaves
//     while the handler goes on, and Write() blocks while the connection
//     already holds its bound of unsent bytes (backpressure), returning false
//     once the client is gone (the handler should stop). Chunked in HTTP/1.1,
//     or exactly set_content_length() bytes; close-delimited for HTTP/1.0.
//   - a FAST handler (which must never block) gives Stream() a producer that
//     the ring thread calls whenever the connection has room for more.
// Trailers (AddTrailer) follow a chunked body.
//
// The server owns the framing: Content-Length, Transfer-Encoding,
// Connection and their kin cannot be added as headers, a status outside
// 200-599 is sent as 500, and a 204/304/HEAD response never carries a body.
//
// A Response lives on the stack of the ring thread (FAST handlers) or in the
// task memory of a worker (SLOW ones); headers are copied into inline storage
// and the body is owned (std::string) or a view of memory that outlives the
// response (static data: it is copied before the handler's request is gone).
//
// Thread-safety: a Response belongs to one thread at a time.
#ifndef URING_HTTP_SRC_HTTP_RESPONSE_H_
#define URING_HTTP_SRC_HTTP_RESPONSE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace uring_http::http {

// "OK", "Not Found", ...; "Unknown" for a code without a standard phrase.
std::string_view ReasonPhrase(int status);

class Response;

// Where a FAST producer writes (see Response::Stream). Never blocks.
class BodyOutput {
 public:
  // Appends data to the body; false once the connection is gone.
  virtual bool Write(std::string_view data) = 0;
  // How many more bytes the connection takes before the producer is called
  // again (a hint: Write() accepts more, it is only queued).
  virtual size_t room() const = 0;

 protected:
  ~BodyOutput() = default;
};

// Returns true when the body is complete. Called again whenever the
// connection has room; a call that writes nothing and returns false is
// called again after a short pause (the ring's timer tick).
using BodyProducer = std::function<bool(BodyOutput& out)>;

// How a SLOW handler's Write() reaches its connection (the worker sets it).
class ResponseStream {
 public:
  virtual bool Write(Response& response, std::string_view data) = 0;

 protected:
  ~ResponseStream() = default;
};

class Response {
 public:
  static constexpr size_t kHeaderStorage = 1024;

  int status() const { return status_; }
  // 200..599; any other value (1xx belong to the server) is sent as 500.
  void set_status(int status) { status_ = status >= 200 && status <= 599 ? status : 500; }

  // Adds "name: value". Returns false (and adds nothing) when inline storage
  // is full, when the name is not a token or the value holds CR, LF or NUL
  // (which would let a handler's input inject headers), or when the name is
  // one the server writes itself (framing: Content-Length,
  // Transfer-Encoding, Connection, Keep-Alive, Upgrade, Trailer, TE,
  // Proxy-Connection).
  bool AddHeader(std::string_view name, std::string_view value);
  void set_content_type(std::string_view type) { AddHeader("Content-Type", type); }
  // Removes every "name:" line (case-insensitive); returns how many.
  size_t RemoveHeader(std::string_view name);

  // The owned body; append to it freely. (A static body set before is
  // dropped: the owned one replaces it.)
  std::string& body() {
    static_body_ = {};
    has_static_body_ = false;
    return body_;
  }
  void set_body(std::string_view body) {
    body_.assign(body);
    static_body_ = {};
    has_static_body_ = false;
  }
  // A body that is not copied into the response; it must stay valid until
  // the handler returns (it is copied then).
  void set_static_body(std::string_view body) {
    body_.clear();
    static_body_ = body;
    has_static_body_ = true;
  }
  std::string_view body_view() const {
    return has_static_body_ ? static_body_ : std::string_view(body_);
  }
  std::string take_body() && { return has_static_body_ ? std::string(static_body_) : std::move(body_); }
  // A HEAD response whose body would be transformed (gzip): no
  // Content-Length, since the handler's body is not what a GET would send.
  void set_length_unstated() { length_unstated_ = true; }
  bool length_unstated() const { return length_unstated_; }
  // The serialized extra header lines ("Name: value\r\n" each).
  std::string_view header_lines() const { return {headers_, headers_len_}; }

  // ---- streaming
  // A streamed body of exactly n bytes: sent with Content-Length instead of
  // chunked. Before the first Write().
  void set_content_length(uint64_t n) {
    content_length_ = n;
    has_content_length_ = true;
  }
  bool has_content_length() const { return has_content_length_; }
  uint64_t content_length() const { return content_length_; }
  // SLOW handlers: streams `data` now (the first call sends the head), see
  // above. FAST handlers: appends to body().
  bool Write(std::string_view data);
  // A trailer field sent after a chunked body (dropped otherwise). Same
  // rules as AddHeader.
  bool AddTrailer(std::string_view name, std::string_view value);
  std::string_view trailer_lines() const { return trailers_; }
  // FAST handlers: the body comes from `producer`, called on the ring thread
  // whenever there is room. (A SLOW handler may set one too; it runs on the
  // worker.)
  void Stream(BodyProducer producer) { producer_ = std::move(producer); }
  BodyProducer& producer() { return producer_; }
  bool has_producer() const { return static_cast<bool>(producer_); }

  // For the worker running a SLOW handler.
  void AttachStream(ResponseStream* stream) { stream_ = stream; }

 private:
  int status_ = 200;
  bool has_static_body_ = false;
  bool has_content_length_ = false;
  bool length_unstated_ = false;
  size_t headers_len_ = 0;
  uint64_t content_length_ = 0;
  std::string body_;
  std::string_view static_body_;
  std::string trailers_;
  BodyProducer producer_;
  ResponseStream* stream_ = nullptr;
  char headers_[kHeaderStorage];
};

struct SerializeOptions {
  bool keep_alive = true;  // false adds "Connection: close"
  // HTTP/1.0 keeps a connection only when the response says so.
  bool keep_alive_header = false;
  bool head_only = false;  // HEAD: headers (with the body's length) but no body
};

// Whether a response with this status may carry a body at all.
inline bool StatusHasBody(int status) { return status >= 200 && status != 204 && status != 304; }

// Writes the whole response into out[0..capacity) if it fits and returns its
// size; if it does not fit, writes nothing useful and returns the size needed.
size_t SerializeResponse(const Response& response, const SerializeOptions& options, char* out,
                         size_t capacity);

// The size SerializeResponse() would return.
size_t SerializedSize(const Response& response, const SerializeOptions& options);

// How a streamed body is delimited.
enum class StreamFraming : uint8_t {
  kContentLength,  // exactly `length` bytes
  kChunked,        // HTTP/1.1, length unknown
  kClose,          // HTTP/1.0, length unknown: the connection closes after it
};

// The head of a streamed response (no body bytes), with its framing header
// ("Connection: close" for kClose). Returns the size as SerializeResponse().
size_t SerializeStreamHead(const Response& response, const SerializeOptions& options,
                           StreamFraming framing, uint64_t length, char* out, size_t capacity);

// "<hex size>\r\n" before a chunk of `size` bytes (size > 0); returns its
// length (at most 18).
size_t ChunkHeader(uint64_t size, char out[18]);
// The last chunk and the trailer section: "0\r\n" trailers "\r\n".
std::string LastChunk(std::string_view trailer_lines);

// The body SerializeError() writes: "404 Not Found\n" (for the access log).
inline size_t ErrorBodySize(int status) {
  return StatusHasBody(status) ? ReasonPhrase(status).size() + 5 : 0;
}

// A complete error response ("404 Not Found" etc.) with a short text body.
// `allow` (for 405, or a 204 answering OPTIONS: no body) becomes an Allow
// header when not empty.
size_t SerializeError(int status, const SerializeOptions& options, std::string_view allow,
                      char* out, size_t capacity);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_RESPONSE_H_
