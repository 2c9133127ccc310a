// PeerFrameCheck: the rules on a client's frames that RFC 9113 sets and
// nghttp2, as Session configures it, does not enforce. We send
// SETTINGS_NO_RFC7540_PRIORITIES, so nghttp2 1.52 forgets a stream the
// moment it closes and does not read PRIORITY frames at all; it then drops,
// without a word:
// - DATA or HEADERS on a stream the client itself closed, with END_STREAM or
//   RST_STREAM, once nghttp2 has forgotten it (5.1: STREAM_CLOSED; while
//   the stream is still open, nghttp2 finds this itself);
// - DATA or HEADERS on a stream id below the client's highest that it never
//   opened (5.1.1: PROTOCOL_ERROR);
// - PRIORITY on stream 0 (6.3) or making a stream depend on itself (RFC
//   7540 5.3.1): PROTOCOL_ERROR.
// Session runs it over the client's bytes before nghttp2 sees them and ends
// the connection at the first frame that breaks one (a stream error may be
// a connection error, 5.4.1; nghttp2 does the same where it finds them).
//
// It reads frame headers only (and a PRIORITY's 4-byte dependency), and
// remembers the client's last 512 stream ids: opened or skipped, ended by
// the client or not. Older ids pass as before. Frames on a stream that we
// reset, or ended while the client was still sending, pass too: the client
// may have sent them before our RST_STREAM reached it (5.1, "closed").
//
// Thread-safety: none; part of its Session.
#ifndef URING_HTTP_SRC_HTTP2_PEER_FRAME_CHECK_H_
#define URING_HTTP_SRC_HTTP2_PEER_FRAME_CHECK_H_

#include <bitset>
#include <cstddef>
#include <cstdint>

namespace uring_http::http2::internal {

class PeerFrameCheck {
 public:
  struct Violation {
    uint32_t error_code = 0;  // RFC 9113 7: for the GOAWAY
    const char* what = "";    // for Session::failure()
  };

  // The connection's next len bytes from the client, the 24-byte preface
  // first. Returns how many of them come before the frame that breaks a
  // rule (len when none does) and says which rule in *v. After a violation
  // the connection is over: no further calls.
  size_t Scan(const char* data, size_t len, Violation* v);
  // Stream 1 came from an HTTP/1 Upgrade with the whole request (RFC 9113
  // 3.2: half-closed (remote) from the start).
  void UpgradedStreamOne();
  // CONTINUATION frames one header block may have (CVE-2024-27316): past
  // them, "flood: CONTINUATION" (ENHANCE_YOUR_CALM). Counted here, once per
  // frame however its header is split between reads: Debian's nghttp2 1.52
  // counts a header split across reads once per read (fixed upstream in
  // 1.70), so a legitimate client's block could pass its cap, which is
  // therefore set high enough that only this one acts.
  void set_max_continuations(uint32_t n) { max_continuations_ = n; }

 private:
  static constexpr uint32_t kIds = 512;  // client stream ids remembered (odd: 1,024 wide)
  enum class Known { kIdle, kSkipped, kOpen, kEnded, kForgotten };

  bool OnFrameHead(const uint8_t* head, Violation* v);  // 9 bytes; false: the frame breaks a rule
  void Open(uint32_t id);
  Known State(uint32_t id) const;
  static size_t Slot(uint32_t id) { return (id >> 1) % kIds; }

  std::bitset<kIds> opened_, ended_;  // by Slot(id), for ids within kIds of highest_
  uint32_t highest_ = 0;              // the highest stream id the client has opened

  size_t preface_left_ = 24;
  uint8_t head_[9] = {};  // a frame header split between Scans
  size_t head_have_ = 0;
  uint32_t payload_left_ = 0;
  uint32_t stream_ = 0;  // the current frame's
  uint8_t dependency_[4] = {};
  size_t dependency_have_ = 0;
  bool want_dependency_ = false;  // inside a PRIORITY payload
  uint64_t scanned_ = 0;          // bytes before this Scan
  uint64_t frame_start_ = 0;      // where the current frame's header began
  uint32_t max_continuations_ = UINT32_MAX;
  uint32_t continuations_ = 0;    // in the header block now open
};

}  // namespace uring_http::http2::internal

#endif  // URING_HTTP_SRC_HTTP2_PEER_FRAME_CHECK_H_
