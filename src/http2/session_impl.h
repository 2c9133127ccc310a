// Session::Impl: the codec's state around its nghttp2_session, shared by
// session.cc (the public calls) and session_callbacks.cc (what nghttp2
// calls back). These three files are the only ones that see nghttp2.h: the
// 1.60 renames (nghttp2_ssize, the *2 callbacks and submit functions) are to
// be made here alone.
//
// Private to src/http2. Thread-safety: none; the Session's.
#ifndef URING_HTTP_SRC_HTTP2_SESSION_IMPL_H_
#define URING_HTTP_SRC_HTTP2_SESSION_IMPL_H_

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/check.h"
#include "src/base/size_class_memory.h"
#include "src/http2/field_list.h"
#include "src/http2/flood_guard.h"
#include "src/http2/peer_frame_check.h"
#include "src/http2/session.h"
#include "src/http2/stream.h"

namespace uring_http::http2 {

namespace internal {
// The opaque data of the PING that follows a shutdown notice: its ack says
// the notice reached the peer (RFC 9113 6.8).
inline constexpr uint8_t kShutdownPing[8] = {'s', 'h', 'u', 't', 'd', 'o', 'w', 'n'};
}  // namespace internal

struct Session::Impl {
  using Stream = internal::Stream;

  Impl(SessionEvents* e, const SessionSettings& s, Clock c)
      : events(e), settings(s), clock(std::move(c)), flood(s.flood) {
    check.set_max_continuations(s.flood.max_continuations);
  }

  SessionEvents* events;
  SessionSettings settings;
  Clock clock;
  FloodGuard flood;
  internal::PeerFrameCheck check;
  nghttp2_session* session = nullptr;
  nghttp2_mem mem{};
  uint64_t allocations = 0;

  // Owns the streams open in nghttp2 (closed ones go to the thread's spares).
  std::vector<std::unique_ptr<Stream>> live;
  size_t announced = 0;  // live streams owed an OnStreamClosed

  // Bytes mem_send returned and Send could not yet copy out (valid until
  // the next mem_send).
  const uint8_t* pending = nullptr;
  size_t pending_len = 0;

  std::string failure;
  bool failed = false;
  bool shutdown_started = false;
  bool final_goaway = false;
  int depth = 0;  // inside mem_recv/mem_send: closing all streams waits
  bool close_all_pending = false;
  uint32_t close_all_code = 0;
  std::vector<int32_t> writable;  // OnStreamWritable owed after mem_send

  // Scratch for building header lists, reused.
  internal::FieldList field_list;
  std::vector<nghttp2_nv> nv;

  Stream* Find(int32_t id) const {
    if (id <= 0 || session == nullptr) return nullptr;
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
    return s != nullptr && !s->closed ? s : nullptr;
  }

  Stream* Acquire(int32_t id) {
    std::unique_ptr<Stream> owned = internal::TakeStream();
    Stream* s = owned.get();
    s->Reset(id);
    if (nghttp2_session_set_stream_user_data(session, id, s) != 0) {
      // No such stream in nghttp2 (refused or gone): nothing would ever
      // close ours, and a peer repeating it would grow `live` without end.
      internal::GiveBackStream(std::move(owned));
      return nullptr;
    }
    s->live_index = live.size();
    live.push_back(std::move(owned));
    return s;
  }

  // Gives the stream's unconsumed body bytes back to the connection window,
  // says OnStreamClosed if owed, and pools the Stream.
  void Close(Stream* s, uint32_t code) {
    URING_CHECK(!s->closed);
    s->closed = true;
    if (s->unconsumed > 0) nghttp2_session_consume_connection(session, s->unconsumed);
    s->unconsumed = 0;
    nghttp2_session_set_stream_user_data(session, s->id, nullptr);
    // Out of `live` before the event: a handler that terminates from it
    // closes the others without meeting this one again.
    URING_CHECK(live[s->live_index].get() == s);
    std::unique_ptr<Stream> owned = std::move(live[s->live_index]);
    if (s->live_index + 1 != live.size()) {
      live[s->live_index] = std::move(live.back());
      live[s->live_index]->live_index = s->live_index;
    }
    live.pop_back();
    if (s->announced) {
      --announced;
      events->OnStreamClosed(s->id, code);  // the head's views stay valid through it
    }
    internal::GiveBackStream(std::move(owned));
  }

  void CloseAll(uint32_t code) {
    if (depth > 0) {
      close_all_pending = true;
      close_all_code = code;
      return;
    }
    close_all_pending = false;
    while (!live.empty()) Close(live.back().get(), code);
  }

  // After mem_recv/mem_send: what had to wait until nghttp2 was not on the stack.
  void AfterCall() {
    if (depth > 0) return;
    for (size_t i = 0; i < writable.size(); ++i) {
      if (Find(writable[i]) != nullptr) events->OnStreamWritable(writable[i]);
    }
    writable.clear();
    if (close_all_pending) CloseAll(close_all_code);
  }

  void Fail(std::string_view why, uint32_t code) {
    if (failure.empty()) failure = why;
    if (!failed) {
      failed = true;
      nghttp2_session_terminate_session(session, code);
    }
    CloseAll(code);
  }

  int Flood(std::string_view why) {
    if (failure.empty()) failure = why;
    return NGHTTP2_ERR_CALLBACK_FAILURE;  // Receive terminates with ENHANCE_YOUR_CALM
  }

  // The fields as nghttp2_nv (nghttp2 copies them at submission).
  void BuildNv(std::string_view status, const http::HeaderTable* fields,
               std::span<const ServerField> server_fields = {}) {
    nv.clear();
    for (const internal::FieldList::Field& f : field_list.Build(status, fields, server_fields)) {
      nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(f.name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(f.value.data())), f.name.size(), f.value.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
  }

  void DeliverHead(Stream* s, bool end_stream) {
    s->announced = true;
    ++announced;
    if (s->refused) {
      events->OnRequestRefused(s->id, 431);
      return;
    }
    RequestHead head;
    std::string_view host;
    for (const http::Header& h : s->pseudo.Build()) {
      if (h.name == ":method") head.method = h.value;
      else if (h.name == ":scheme") head.scheme = h.value;
      else if (h.name == ":authority") head.authority = h.value;
      else if (h.name == ":path") head.path = h.value;
    }
    const std::vector<http::Header>& fields = s->fields.Build();
    for (const http::Header& h : fields) {
      if (h.name == "host" && host.empty()) {
        host = h.value;
      } else if (h.name == "content-length" && !head.has_content_length) {
        // nghttp2 accepted it, so it is digits only and fits an int64.
        head.has_content_length = true;
        for (char c : h.value) head.content_length = head.content_length * 10 + static_cast<uint64_t>(c - '0');
      } else if (h.name == "expect" && http::FieldNameEquals(h.value, "100-continue")) {
        head.expect_continue = true;
      }
    }
    if (head.authority.empty()) head.authority = host;  // RFC 9113 8.3.1
    head.headers = fields.data();
    head.num_headers = fields.size();
    head.end_stream = end_stream;
    head.head_bytes = s->head_bytes;
    events->OnRequest(s->id, head);
  }

  // ---- nghttp2 callbacks ----

  static Impl* Self(void* user_data) { return static_cast<Impl*>(user_data); }

  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data);
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t, void* user_data);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data);
  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data);
  // nghttp2 would drop the field and go on; RFC 9113 8.2.1 makes the
  // request malformed, and a server that reads it without the field while a
  // proxy in front read it with one is open to smuggling. Returning this
  // resets the stream with PROTOCOL_ERROR.
  static int OnInvalidHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t,
                             uint8_t, void*);
  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data);
  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data);

  void SubmitFinalGoaway() {
    if (final_goaway) return;
    final_goaway = true;
    nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session),
                          NGHTTP2_NO_ERROR, nullptr, 0);
  }

  void Resume(Stream* s) {
    if (!s->deferred) return;
    s->deferred = false;
    nghttp2_session_resume_data(session, s->id);
  }

  // ---- nghttp2_mem: from the ring thread's size-class lists
  // (codec_memory.h); `allocations` counts only what reached the heap.
  static void* Malloc(size_t size, void* ud) { return base::SizeClassMemory::Allocate(size, &Self(ud)->allocations); }
  static void Free(void* ptr, void*) { base::SizeClassMemory::Free(ptr); }
  static void* Calloc(size_t n, size_t size, void* ud) {
    return base::SizeClassMemory::AllocateZeroed(n, size, &Self(ud)->allocations);
  }
  static void* Realloc(void* ptr, size_t size, void* ud) {
    return base::SizeClassMemory::Reallocate(ptr, size, &Self(ud)->allocations);
  }
};

}  // namespace uring_http::http2

#endif  // URING_HTTP_SRC_HTTP2_SESSION_IMPL_H_
