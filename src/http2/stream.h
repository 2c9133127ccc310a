// Stream: what a Session keeps for one request/response exchange. The
// request head's and trailers' bytes are copied here field by field as
// nghttp2 decodes them, and their views built once the block is complete
// (so that no append can move bytes under a view). The response body waits
// here until nghttp2 frames it. A closed stream goes to its thread's
// spares (TakeStream, GiveBackStream), so its buffers' capacity carries
// over to the next request of any of the thread's sessions, and an idle
// connection keeps no stream of its own.
//
// Private to src/http2 (no nghttp2 types). Thread-safety: none; the
// Session's.
#ifndef URING_HTTP_SRC_HTTP2_STREAM_H_
#define URING_HTTP_SRC_HTTP2_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/header.h"
#include "src/http/header_table.h"

namespace uring_http::http2::internal {

// Field lines of one header block, copied.
class FieldStore {
 public:
  void Add(std::string_view name, std::string_view value) {
    refs_.push_back({bytes_.size(), name.size(), value.size()});
    bytes_.append(name);
    bytes_.append(value);
  }
  // Views into the copies; valid until Clear (Add after this would move them).
  const std::vector<http::Header>& Build() {
    views_.clear();
    for (const Ref& r : refs_) {
      views_.push_back({std::string_view(bytes_).substr(r.offset, r.name_len),
                        std::string_view(bytes_).substr(r.offset + r.name_len, r.value_len)});
    }
    return views_;
  }
  void Clear() {
    bytes_.clear();
    refs_.clear();
    views_.clear();
  }
  // A request with a huge head should not pin its memory in the pool.
  void Trim(size_t keep_bytes) {
    if (bytes_.capacity() > keep_bytes) std::string().swap(bytes_);
    if (refs_.capacity() > keep_bytes / 16) {
      std::vector<Ref>().swap(refs_);
      std::vector<http::Header>().swap(views_);
    }
  }

 private:
  struct Ref {
    size_t offset, name_len, value_len;
  };
  std::string bytes_;
  std::vector<Ref> refs_;
  std::vector<http::Header> views_;
};

struct Stream {
  int32_t id = 0;
  size_t live_index = 0;  // in the Session's list of live streams
  bool closed = false;    // OnStreamClosed given (or being given): unknown to callers
  bool announced = false; // OnRequest/OnRequestRefused given (or Upgrade): OnStreamClosed owed
  bool refused = false;   // head over max_header_list_size: 431, body discarded
  bool reset = false;     // ResetStream called: no more events but the close
  bool in_trailers = false;

  // The request.
  FieldStore pseudo;   // :method etc., in arrival order
  FieldStore fields;   // regular fields (the head's, then, reused, none)
  FieldStore trailers;
  size_t head_bytes = 0;     // decoded bytes of the head (RFC 9113 6.5.2 measure)
  size_t trailer_bytes = 0;  // the same for the trailer block
  uint64_t unconsumed = 0;   // body bytes delivered and not yet Consume()d

  // The response.
  bool response_submitted = false;
  bool has_body = false;
  bool body_ended = false;   // EndData called
  bool deferred = false;     // the data provider said DEFERRED: resume on more
  bool above_low_water = false;
  std::string out;           // queued body bytes; [out_pos, size) not yet framed
  size_t out_pos = 0;
  bool has_trailers_out = false;
  http::HeaderTable trailers_out;

  size_t queued() const { return out.size() - out_pos; }

  void Reset(int32_t new_id) {
    id = new_id;
    closed = announced = refused = reset = in_trailers = false;
    pseudo.Clear();
    fields.Clear();
    trailers.Clear();
    head_bytes = trailer_bytes = 0;
    unconsumed = 0;
    response_submitted = has_body = body_ended = deferred = above_low_water = false;
    out.clear();
    out_pos = 0;
    has_trailers_out = false;
    trailers_out.Clear();
  }
  // Before it waits among the spares: a request with a large head, or an
  // answer with a large body, does not leave every spare (up to
  // kSpareStreams a thread) holding that much; a small one's buffers stay.
  void Trim() {
    constexpr size_t kKeep = 2 * 1024;
    pseudo.Trim(kKeep);
    fields.Trim(kKeep);
    trailers.Trim(kKeep);
    if (out.capacity() > 16 * 1024) std::string().swap(out);
  }
};

// A stream from this thread's spares, else a new one (Reset by the caller).
std::unique_ptr<Stream> TakeStream();
// Keeps `s` (Trimmed) among this thread's spares, up to kSpareStreams of
// them; frees it past that, or once the thread's spares are gone (its exit).
inline constexpr size_t kSpareStreams = 1024;
void GiveBackStream(std::unique_ptr<Stream> s);
// How many this thread keeps, for tests.
size_t SpareStreams();

}  // namespace uring_http::http2::internal

#endif  // URING_HTTP_SRC_HTTP2_STREAM_H_
