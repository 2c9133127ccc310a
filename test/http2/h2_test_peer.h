// Test helpers for the HTTP/2 codec: a real nghttp2 *client* session driven
// in memory (TestClient), a recording SessionEvents (Recorder), a pump that
// moves bytes both ways until neither side has more, and raw frame writing
// and parsing for what a well-behaved client would never send.
//
// Thread-safety: none; one test's thread.
#ifndef URING_HTTP_TEST_HTTP2_H2_TEST_PEER_H_
#define URING_HTTP_TEST_HTTP2_H2_TEST_PEER_H_

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/http2/session.h"

namespace uring_http::http2::testing {

using Fields = std::vector<std::pair<std::string, std::string>>;

// One frame as it went over the wire.
struct RawFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  int32_t stream_id = 0;
  std::string payload;
  uint32_t U32(size_t at) const;  // big-endian at payload offset
};

// A frame's bytes: 9-byte header and payload.
std::string Frame(uint8_t type, uint8_t flags, int32_t stream_id, std::string_view payload);
// Parses server output (no preface) into frames; a partial tail is left.
std::vector<RawFrame> ParseFrames(std::string_view bytes);
// "PRI * HTTP/2.0..." and an empty SETTINGS frame.
std::string ClientPreface();
// An HPACK block of literal fields without indexing (no Huffman), for
// hand-made HEADERS frames whose names nghttp2's client would not send.
std::string LiteralBlock(const Fields& fields);

// What a client saw of one stream.
struct ClientStream {
  std::vector<Fields> header_blocks;  // 1xx heads, the final head, trailers
  std::string body;
  bool closed = false;
  uint32_t close_code = 0;
  bool reset_by_server = false;
  uint32_t rst_code = 0;
};

class TestClient {
 public:
  TestClient();
  ~TestClient();
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  // Submits a request; body==nullptr: no body (END_STREAM on HEADERS).
  // The body is sent as the windows allow, then END_STREAM (or trailers).
  int32_t Request(const Fields& fields, const std::string* body = nullptr, const Fields* trailers = nullptr);
  // Bytes the client wants to send now.
  std::string Output();
  void Input(std::string_view bytes);
  void Consume(int32_t stream_id, size_t n);  // its windows are manual too
  // A per-stream WINDOW_UPDATE the client's consumption has earned.
  nghttp2_session* raw() { return session_; }

  std::map<int32_t, ClientStream> streams;
  std::vector<RawFrame> frames;  // every frame received, payload not kept
  bool goaway = false;
  uint32_t goaway_code = 0;
  int32_t goaway_last_stream = -1;
  int goaways = 0;
  bool auto_consume = true;  // give window back as data arrives

 private:
  struct Body {
    std::string bytes;
    size_t pos = 0;
    Fields trailers;
    bool has_trailers = false;
  };
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame*, void*);
  static int OnHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                      void*);
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame*, void*);
  static int OnData(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int OnClose(nghttp2_session*, int32_t, uint32_t, void*);

  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Body> bodies_;
};

// Every event, in order, as text ("request 1 GET http /x", "data 1 5", ...),
// with what the views said copied out.
class Recorder : public SessionEvents {
 public:
  struct Request {
    std::string method, scheme, authority, path;
    Fields headers;
    bool has_content_length = false;
    uint64_t content_length = 0;
    bool end_stream = false, expect_continue = false;
    size_t head_bytes = 0;
    std::string body;
    Fields trailers;
    bool ended = false;
    bool closed = false;
    uint32_t close_code = 0;
  };

  void OnRequest(int32_t id, const RequestHead& head) override;
  void OnRequestRefused(int32_t id, int status) override;
  void OnRequestData(int32_t id, std::string_view data) override;
  void OnRequestTrailers(int32_t id, const http::Header* fields, size_t n) override;
  void OnRequestEnd(int32_t id) override;
  void OnStreamClosed(int32_t id, uint32_t code) override;
  void OnStreamWritable(int32_t id) override;

  std::vector<std::string> log;
  std::map<int32_t, Request> requests;
  std::map<int32_t, int> refused;
  // Reactions, for tests that answer from inside the events.
  std::function<void(int32_t, const RequestHead&)> on_request;
  std::function<void(int32_t)> on_end;
  std::function<void(int32_t)> on_writable;
  std::function<void(int32_t, uint32_t)> on_closed;
};

// Moves bytes client -> server -> client until neither has more. Returns
// false if server.Receive did. cap: Send's buffer size.
bool Pump(Session& server, TestClient& client, size_t cap = 16384);
// Everything the server wants to send, with Send(cap) calls.
std::string Drain(Session& server, size_t cap = 16384);

}  // namespace uring_http::http2::testing

#endif  // URING_HTTP_TEST_HTTP2_H2_TEST_PEER_H_
