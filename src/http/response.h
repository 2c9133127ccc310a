// Response: what a handler fills in (status, headers, a body), whatever the
// protocol that carries it; each codec serializes it (HTTP/1 in
// src/http1/response_writer.h).
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
// Headers: AddHeader refuses a field that would make the response wrong or
// unsafe (a name that is not a token, a value with CR, LF or NUL, a framing
// header, or header lines past max_header_bytes()). A refused header fails
// the whole response: the server answers 500 instead and logs why (src/http1,
// src/worker), so that no response ever leaves missing a header its handler
// meant to send. The [[nodiscard]] result lets a handler stop at once.
//
// A Response lives on the stack of the ring thread (FAST handlers) or in the
// task memory of a worker (SLOW ones). Its header and trailer fields are a
// HeaderTable of (name, value) pairs that each codec serializes its own way
// (HTTP/1 lines here, HPACK for HTTP/2); the table's inline areas
// (kInlineHeaderBytes of names and values) mean an ordinary response
// allocates nothing for them. Past that area they move to a block of the
// thread's size classes (no malloc once a thread is warm), up to
// max_header_bytes() (counted as HTTP/1 lines, whatever the codec). The body is
// owned (std::string) or a view of memory that outlives the response (static
// data: it is copied before the handler's request is gone).
//
// Thread-safety: a Response belongs to one thread at a time.
#ifndef URING_HTTP_SRC_HTTP_RESPONSE_H_
#define URING_HTTP_SRC_HTTP_RESPONSE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/http/header_table.h"

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
  // Header lines up to this many bytes live in the Response itself.
  static constexpr size_t kInlineHeaderBytes = HeaderTable::kInlineBytes;
  // max_header_bytes() unless the thread's default says otherwise (the
  // shipped server's --max-response-header-bytes).
  static constexpr size_t kDefaultMaxHeaderBytes = 64 * 1024;

  Response() : max_header_bytes_(thread_max_header_bytes_) {}

  int status() const { return status_; }
  // 200..599; any other value (1xx belong to the server) is sent as 500.
  void set_status(int status) { status_ = status >= 200 && status <= 599 ? status : 500; }

  // Adds "name: value". Refuses it (returns false and adds nothing) when
  // the name is not a token or the value holds CR, LF or NUL (which would
  // let a handler's input inject headers), when the name is one the server
  // writes itself (framing: Content-Length, Transfer-Encoding, Connection,
  // Keep-Alive, Upgrade, Trailer, TE, Proxy-Connection), or when the header
  // lines ("Name: value\r\n" each) would pass max_header_bytes(). A refusal
  // fails the response (header_refused()): it is answered 500, whatever the
  // handler does next.
  [[nodiscard]] bool AddHeader(std::string_view name, std::string_view value);
  // AddHeader("Content-Type", type); a refusal fails the response the same way.
  void set_content_type(std::string_view type);
  // Removes every "name:" line (case-insensitive); returns how many.
  size_t RemoveHeader(std::string_view name);
  // The value of the first `name` field (case-insensitive), if any.
  std::optional<std::string_view> FindHeader(std::string_view name) const {
    return headers_.Find(name);
  }
  // Every field, in the order added (for (auto [name, value] : headers())).
  const HeaderTable& headers() const { return headers_; }

  // The bound on the header lines (and, apart, on the trailer lines). A
  // new Response takes its thread's default (SetThreadMaxHeaderBytes);
  // Clear() keeps it.
  size_t max_header_bytes() const { return max_header_bytes_; }
  void set_max_header_bytes(size_t n) { max_header_bytes_ = n; }
  // How many more bytes of header lines fit.
  size_t header_room() const {
    const size_t used = headers_.line_bytes();
    return used < max_header_bytes_ ? max_header_bytes_ - used : 0;
  }
  // The default for Responses made on the calling thread from now on. The
  // server sets it on its ring threads (ServerConfig::max_response_header_bytes).
  static void SetThreadMaxHeaderBytes(size_t n) { thread_max_header_bytes_ = n; }
  static size_t ThreadMaxHeaderBytes() { return thread_max_header_bytes_; }

  // A header or trailer was refused (see AddHeader): the response must not
  // be sent as it is.
  bool header_refused() const { return refusal_ != Refusal::kNone; }
  // What the first refusal was, for the log ("" if none).
  std::string HeaderRefusal() const;

  // Back to a new response (status 200, no headers, no body, no stream),
  // keeping max_header_bytes().
  void Clear();

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
  // rules as AddHeader (its lines bounded by max_header_bytes() apart from
  // the headers'); a refusal fails the response too: answered 500 if its
  // head has not gone, else the stream ends without its last chunk.
  [[nodiscard]] bool AddTrailer(std::string_view name, std::string_view value);
  const HeaderTable& trailers() const { return trailers_.table ? *trailers_.table : kNoFields; }
  // FAST handlers: the body comes from `producer`, called on the ring thread
  // whenever there is room. (A SLOW handler may set one too; it runs on the
  // worker.)
  void Stream(BodyProducer producer) { producer_ = std::move(producer); }
  BodyProducer& producer() { return producer_; }
  bool has_producer() const { return static_cast<bool>(producer_); }

  // For the worker running a SLOW handler.
  void AttachStream(ResponseStream* stream) { stream_ = stream; }

 private:
  enum class Refusal : uint8_t { kNone, kName, kValue, kServerOwned, kTooLarge };
  // Constant-initialized: reading it is one thread-pointer-relative load
  // (a new Response is on the FAST path).
  static constinit inline thread_local size_t thread_max_header_bytes_ = kDefaultMaxHeaderBytes;
  // Records the first refusal; returns false.
  bool Refuse(Refusal why, bool trailer, std::string_view name, size_t line_bytes);

  int status_ = 200;
  bool has_static_body_ = false;
  bool has_content_length_ = false;
  bool length_unstated_ = false;
  Refusal refusal_ = Refusal::kNone;
  bool refused_trailer_ = false;
  // (32 bits, for the log line only, saturated: it fills the padding
  // beside the flags, and every open ASYNC stream's task holds a Response.)
  uint32_t refused_line_bytes_ = 0;
  size_t max_header_bytes_ = kDefaultMaxHeaderBytes;
  uint64_t content_length_ = 0;
  std::string body_;
  std::string_view static_body_;
  BodyProducer producer_;
  ResponseStream* stream_ = nullptr;
  std::string refused_name_;  // (the first bytes of it)
  HeaderTable headers_;
  // Few responses have trailers: their table is made by the first (and
  // copied with the response).
  struct LazyTable {
    LazyTable() = default;
    LazyTable(const LazyTable& other)
        : table(other.table ? std::make_unique<HeaderTable>(*other.table) : nullptr) {}
    LazyTable& operator=(const LazyTable& other) {
      if (this != &other) table = other.table ? std::make_unique<HeaderTable>(*other.table) : nullptr;
      return *this;
    }
    LazyTable(LazyTable&&) noexcept = default;
    LazyTable& operator=(LazyTable&&) noexcept = default;
    std::unique_ptr<HeaderTable> table;
  };
  LazyTable trailers_;
  static const HeaderTable kNoFields;
};

// Whether a response with this status may carry a body at all.
inline bool StatusHasBody(int status) { return status >= 200 && status != 204 && status != 304; }

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_RESPONSE_H_
