// ServerFrames: follows the bytes an HTTP/2 server sent, as its peer
// received them, and checks what a server keeps to whatever its client did:
//   - each stream is answered at most once (one final :status);
//   - nothing but a reset follows a stream's end (END_STREAM or RST_STREAM);
//   - DATA and trailers come after the answer's head, and trailers end it;
//   - a body that ends normally (not reset) after at least one DATA byte is
//     as long as its Content-Length said (a short or long body is a reset);
//   - header blocks decode (HPACK), CONTINUATION follows its HEADERS, no
//     PUSH_PROMISE is sent.
// It knows nothing of the client's side (which streams it opened, which
// were HEAD), so it checks nothing that depends on that.
//
// An h2c upgrade starts with HTTP/1: a 101, then HTTP/2; or a 400 and
// nothing after it (ExpectHttp1Head).
//
// For tests and fuzz targets; one thread.
#ifndef URING_HTTP_TEST_HTTP2_SERVER_FRAMES_H_
#define URING_HTTP_TEST_HTTP2_SERVER_FRAMES_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace uring_http::http2::testing {

class ServerFrames {
 public:
  ServerFrames() { nghttp2_hd_inflate_new(&inflater_); }
  ~ServerFrames() { nghttp2_hd_inflate_del(inflater_); }
  ServerFrames(const ServerFrames&) = delete;
  ServerFrames& operator=(const ServerFrames&) = delete;

  void ExpectHttp1Head() { http1_head_ = true; }
  // Bytes were lost (a send failed): nothing after them is checked.
  void Stop() { stopped_ = true; }

  void Feed(std::string_view bytes) {
    if (stopped_ || bytes.empty()) return;
    if (after_400_) {
      Violation("bytes after the upgrade's 400");
      return;
    }
    buffer_.append(bytes);
    if (http1_head_) {
      const size_t end = buffer_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      const std::string_view head(buffer_.data(), end);
      if (head.substr(0, 12) == "HTTP/1.1 400") {
        after_400_ = true;
        if (buffer_.size() > end + 4) {
          Violation("bytes after the upgrade's 400");
        }
        buffer_.clear();
        return;
      }
      if (head.substr(0, 12) != "HTTP/1.1 101") return Violation("an upgrade answered neither 101 nor 400");
      buffer_.erase(0, end + 4);
      http1_head_ = false;
    }
    size_t pos = 0;
    while (!stopped_ && buffer_.size() - pos >= 9) {
      const auto* p = reinterpret_cast<const uint8_t*>(buffer_.data() + pos);
      const size_t len = size_t{p[0]} << 16 | size_t{p[1]} << 8 | p[2];
      if (buffer_.size() - pos < 9 + len) break;
      const uint8_t type = p[3];
      const uint8_t flags = p[4];
      const int32_t id =
          static_cast<int32_t>((uint32_t{p[5]} << 24 | uint32_t{p[6]} << 16 | uint32_t{p[7]} << 8 |
                                p[8]) & 0x7fffffffu);
      Frame(type, flags, id, std::string_view(buffer_.data() + pos + 9, len));
      pos += 9 + len;
    }
    buffer_.erase(0, pos);
  }

  const std::vector<std::string>& violations() const { return violations_; }
  size_t frames() const { return frames_; }
  // Streams that got a final answer (for a trace).
  size_t answered() const {
    size_t n = 0;
    for (const auto& [id, s] : streams_) n += s.answered ? 1 : 0;
    return n;
  }

 private:
  static constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kPushPromise = 5,
                           kContinuation = 9;
  static constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriority = 0x20;

  struct StreamState {
    bool answered = false;
    bool ended = false;
    bool reset = false;
    bool has_length = false;
    uint64_t length = 0;
    uint64_t data = 0;
  };

  void Violation(std::string what) {
    violations_.push_back(std::move(what));
    stopped_ = true;
  }
  std::string On(int32_t id) const { return " (stream " + std::to_string(id) + ")"; }

  void Frame(uint8_t type, uint8_t flags, int32_t id, std::string_view payload) {
    ++frames_;
    if (continuation_of_ != 0 && type != kContinuation) {
      return Violation("a frame between HEADERS and its CONTINUATION" + On(id));
    }
    switch (type) {
      case kData: {
        if (id == 0) return Violation("DATA on stream 0");
        StreamState& s = streams_[id];
        if (s.ended || s.reset) return Violation("DATA after the stream's end" + On(id));
        if (!s.answered) return Violation("DATA before the answer's head" + On(id));
        if (!Unpad(flags, &payload)) return Violation("DATA padding longer than its frame" + On(id));
        s.data += payload.size();
        if (flags & kEndStream) End(id, s);
        return;
      }
      case kHeaders: {
        if (id == 0) return Violation("HEADERS on stream 0");
        if (!Unpad(flags, &payload)) return Violation("HEADERS padding longer than its frame");
        if (flags & kPriority) {
          if (payload.size() < 5) return Violation("HEADERS too short for its priority");
          payload.remove_prefix(5);
        }
        block_.assign(payload);
        block_stream_ = id;
        block_end_stream_ = (flags & kEndStream) != 0;
        if (flags & kEndHeaders) return Block();
        continuation_of_ = id;
        return;
      }
      case kContinuation:
        if (continuation_of_ != id) return Violation("CONTINUATION without its HEADERS" + On(id));
        block_.append(payload);
        if (flags & kEndHeaders) {
          continuation_of_ = 0;
          Block();
        }
        return;
      case kRstStream:
        if (id == 0) return Violation("RST_STREAM on stream 0");
        streams_[id].reset = true;
        return;
      case kPushPromise:
        return Violation("PUSH_PROMISE from a server that never pushes");
      default:  // SETTINGS, PING, GOAWAY, WINDOW_UPDATE, PRIORITY, unknown
        return;
    }
  }

  static bool Unpad(uint8_t flags, std::string_view* payload) {
    if ((flags & kPadded) == 0) return true;
    if (payload->empty()) return false;
    const size_t pad = static_cast<uint8_t>((*payload)[0]);
    if (pad + 1 > payload->size()) return false;
    *payload = payload->substr(1, payload->size() - 1 - pad);
    return true;
  }

  // A complete header block of block_stream_.
  void Block() {
    const int32_t id = block_stream_;
    int status = 0;
    bool has_length = false;
    uint64_t length = 0;
    auto* in = reinterpret_cast<const uint8_t*>(block_.data());
    size_t left = block_.size();
    for (;;) {
      nghttp2_nv nv;
      int inflate_flags = 0;
      const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &inflate_flags, in, left, 1);
      if (n < 0) return Violation("a header block that does not decode" + On(id));
      in += n;
      left -= static_cast<size_t>(n);
      if (inflate_flags & NGHTTP2_HD_INFLATE_EMIT) {
        const std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
        const std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
        if (name == ":status") status = std::atoi(std::string(value).c_str());
        if (name == "content-length") {
          has_length = true;
          length = std::strtoull(std::string(value).c_str(), nullptr, 10);
        }
      }
      if (inflate_flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        break;
      }
      if ((inflate_flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
    }
    StreamState& s = streams_[id];
    if (s.ended || s.reset) return Violation("HEADERS after the stream's end" + On(id));
    if (status >= 200) {
      if (s.answered) return Violation("a stream answered twice" + On(id));
      s.answered = true;
      s.has_length = has_length;
      s.length = length;
    } else if (status >= 100) {
      if (s.answered) return Violation("a 1xx after the final answer" + On(id));
      if (block_end_stream_) return Violation("a 1xx that ends its stream" + On(id));
    } else if (status != 0) {
      return Violation("a :status out of range" + On(id));
    } else {
      // Trailers.
      if (!s.answered) return Violation("HEADERS without :status before the answer" + On(id));
      if (!block_end_stream_) return Violation("trailers that do not end the stream" + On(id));
    }
    if (block_end_stream_) End(id, s);
  }

  void End(int32_t id, StreamState& s) {
    s.ended = true;
    // No DATA at all may be a HEAD's answer (which states the GET's length).
    if (s.has_length && s.data > 0 && s.data != s.length) {
      Violation("a body of " + std::to_string(s.data) + " bytes ended normally after a " +
                "Content-Length of " + std::to_string(s.length) + On(id));
    }
  }

  nghttp2_hd_inflater* inflater_ = nullptr;
  std::string buffer_;
  bool http1_head_ = false;
  bool after_400_ = false;
  bool stopped_ = false;
  size_t frames_ = 0;
  std::string block_;
  int32_t block_stream_ = 0;
  bool block_end_stream_ = false;
  int32_t continuation_of_ = 0;
  std::map<int32_t, StreamState> streams_;
  std::vector<std::string> violations_;
};

}  // namespace uring_http::http2::testing

#endif  // URING_HTTP_TEST_HTTP2_SERVER_FRAMES_H_
