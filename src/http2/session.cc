// The only file that includes nghttp2.h: the 1.60 renames (nghttp2_ssize,
// the *2 callbacks and submit functions) are to be made here alone.
#include "src/http2/session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/base/check.h"
#include "src/http2/codec_memory.h"
#include "src/http2/field_list.h"
#include "src/http2/peer_frame_check.h"
#include "src/http2/stream.h"

namespace uring_http::http2 {

using internal::Stream;

namespace {

// The opaque data of the PING that follows a shutdown notice: its ack says
// the notice reached the peer (RFC 9113 6.8).
constexpr uint8_t kShutdownPing[8] = {'s', 'h', 'u', 't', 'd', 'o', 'w', 'n'};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) { return http::FieldNameEquals(a, b); }

}  // namespace

struct Session::Impl {
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
      } else if (h.name == "expect" && EqualsIgnoreCase(h.value, "100-continue")) {
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

  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
    Impl* self = Self(user_data);
    FloodKind kind;
    switch (hd->type) {
      case NGHTTP2_PING: kind = FloodKind::kPing; break;
      case NGHTTP2_SETTINGS: kind = FloodKind::kSettings; break;
      case NGHTTP2_PRIORITY: kind = FloodKind::kPriority; break;
      case NGHTTP2_RST_STREAM: kind = FloodKind::kRstStream; break;
      case NGHTTP2_WINDOW_UPDATE: kind = FloodKind::kWindowUpdate; break;
      default: return 0;
    }
    if (!self->flood.Count(kind)) return self->Flood(FloodGuard::Name(kind));
    return 0;
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Impl* self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      self->Acquire(frame->hd.stream_id);
    } else if (Stream* s = self->Find(frame->hd.stream_id)) {
      s->in_trailers = true;
    }
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    Impl* self = Self(user_data);
    Stream* s = self->Find(frame->hd.stream_id);
    if (s == nullptr) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    const size_t limit = self->settings.max_header_list_size;
    const size_t bytes = namelen + valuelen + 32;
    if (s->in_trailers) {
      s->trailer_bytes += bytes;
      // No status can answer trailers: the request is already being served.
      if (s->trailer_bytes > limit) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      s->trailers.Add(n, v);
      return 0;
    }
    s->head_bytes += bytes;
    // Decoding goes on past the limit (HPACK state must stay in step), but a
    // block four times over it is someone making us decode without end
    // (CVE-2024-28182; indexed fields expand one byte to kilobytes).
    if (s->head_bytes > 4 * static_cast<size_t>(limit)) return self->Flood("flood: CONTINUATION");
    if (s->head_bytes > limit) {
      if (!s->refused) {
        s->refused = true;
        s->pseudo.Clear();
        s->fields.Clear();
      }
      return 0;
    }
    (!n.empty() && n[0] == ':' ? s->pseudo : s->fields).Add(n, v);
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Impl* self = Self(user_data);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_DATA: {
        if (frame->hd.length <= frame->data.padlen && !end_stream &&
            !self->flood.Count(FloodKind::kEmptyData)) {
          return self->Flood(FloodGuard::Name(FloodKind::kEmptyData));
        }
        Stream* s = self->Find(frame->hd.stream_id);
        if (end_stream && s != nullptr && s->announced && !s->refused && !s->reset) {
          self->events->OnRequestEnd(s->id);
        }
        break;
      }
      case NGHTTP2_HEADERS: {
        Stream* s = self->Find(frame->hd.stream_id);
        if (s == nullptr) break;
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
          self->DeliverHead(s, end_stream);
          // Re-found: the handler may have reset or ended it.
          s = self->Find(frame->hd.stream_id);
          if (end_stream && s != nullptr && !s->refused && !s->reset) self->events->OnRequestEnd(s->id);
        } else if (s->announced && !s->refused && !s->reset) {
          const std::vector<http::Header>& t = s->trailers.Build();
          self->events->OnRequestTrailers(s->id, t.data(), t.size());
          s = self->Find(frame->hd.stream_id);
          if (s != nullptr && !s->reset) self->events->OnRequestEnd(s->id);
        }
        break;
      }
      case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0 && self->shutdown_started &&
            std::memcmp(frame->ping.opaque_data, kShutdownPing, sizeof(kShutdownPing)) == 0) {
          self->SubmitFinalGoaway();
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data) {
    Impl* self = Self(user_data);
    Stream* s = self->Find(stream_id);
    if (s == nullptr || !s->announced || s->refused || s->reset) {
      // Nobody will Consume these: the windows reopen now.
      nghttp2_session_consume(session, stream_id, len);
      return 0;
    }
    s->unconsumed += len;
    self->events->OnRequestData(stream_id, std::string_view(reinterpret_cast<const char*>(data), len));
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
    Impl* self = Self(user_data);
    if (Stream* s = self->Find(stream_id)) self->Close(s, error_code);
    return 0;
  }

  // nghttp2 would drop the field and go on; RFC 9113 8.2.1 makes the
  // request malformed, and a server that reads it without the field while a
  // proxy in front read it with one is open to smuggling. Returning this
  // resets the stream with PROTOCOL_ERROR.
  static int OnInvalidHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t,
                             uint8_t, void*) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }

  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Impl* self = Self(user_data);
    if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR && !self->failed) {
      // nghttp2 found a connection error in what it read and queued this
      // GOAWAY itself; it says so nowhere before (see Receive).
      self->failure = "protocol error";
      self->failed = true;
      self->CloseAll(frame->goaway.error_code);
      return 0;
    }
    if (frame->hd.type == NGHTTP2_DATA) self->flood.OnDataSent();
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
        nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0) {
      // The response is complete and the client still sending: ask it to
      // stop (RFC 9113 8.1) rather than keep the stream's slot and window.
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
    Impl* self = Self(user_data);
    Stream* s = self->Find(stream_id);
    if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    const size_t n = std::min(length, s->queued());
    if (n > 0) std::memcpy(buf, s->out.data() + s->out_pos, n);
    s->out_pos += n;
    if (s->out_pos == s->out.size()) {
      s->out.clear();
      s->out_pos = 0;
    } else if (s->out_pos > 64 * 1024 && s->out_pos > s->out.size() / 2) {
      s->out.erase(0, s->out_pos);
      s->out_pos = 0;
    }
    if (s->above_low_water && s->queued() < std::max<size_t>(self->settings.write_low_water, 1)) {
      s->above_low_water = false;
      self->writable.push_back(stream_id);
    }
    if (s->queued() == 0 && s->body_ended) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      if (s->has_trailers_out) {
        self->BuildNv({}, &s->trailers_out);
        if (nghttp2_submit_trailer(session, stream_id, self->nv.data(), self->nv.size()) == 0) {
          *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
      }
      return static_cast<ssize_t>(n);
    }
    if (n == 0) {
      s->deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }

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
  static void* Malloc(size_t size, void* ud) { return internal::CodecMemory::Allocate(size, &Self(ud)->allocations); }
  static void Free(void* ptr, void*) { internal::CodecMemory::Free(ptr); }
  static void* Calloc(size_t n, size_t size, void* ud) {
    return internal::CodecMemory::AllocateZeroed(n, size, &Self(ud)->allocations);
  }
  static void* Realloc(void* ptr, size_t size, void* ud) {
    return internal::CodecMemory::Reallocate(ptr, size, &Self(ud)->allocations);
  }
};

Session::Session(SessionEvents* events, const SessionSettings& settings, Clock clock)
    : impl_(std::make_unique<Impl>(events, settings, std::move(clock))) {
  Impl* d = impl_.get();
  if (!d->clock) {
    d->clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  d->mem = {d, &Impl::Malloc, &Impl::Free, &Impl::Calloc, &Impl::Realloc};

  nghttp2_session_callbacks* cb = nullptr;
  URING_CHECK(nghttp2_session_callbacks_new(&cb) == 0);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, &Impl::OnBeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &Impl::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, &Impl::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &Impl::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &Impl::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &Impl::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &Impl::OnFrameSend);
  nghttp2_session_callbacks_set_on_invalid_header_callback(cb, &Impl::OnInvalidHeader);

  const FloodLimits& f = settings.flood;
  nghttp2_option* opt = nullptr;
  URING_CHECK(nghttp2_option_new(&opt) == 0);
  // Windows reopen only as the connection consumes the body (Consume).
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_max_outbound_ack(opt, f.max_outbound_ack);
  // Ours counts per frame (peer_frame_check.h); nghttp2's may count a
  // frame once per read of its 9-byte header.
  nghttp2_option_set_max_continuations(opt, (f.max_continuations + 1) * 9);
  // nghttp2's own Rapid Reset bucket runs on the wall clock; ours (FloodGuard)
  // is meant to act first, so its bucket is looser than our window.
  nghttp2_option_set_stream_reset_rate_limit(opt, 4ull * f.max_rst_stream + 1000, 4ull * f.max_rst_stream + 33);
  // No RFC 7540 priority tree (we send NO_RFC7540_PRIORITIES): nothing to
  // keep closed streams for.
  nghttp2_option_set_no_closed_streams(opt, 1);
  const int rv = nghttp2_session_server_new3(&d->session, cb, d, opt, &d->mem);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  URING_CHECK(rv == 0);

  const nghttp2_settings_entry entries[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initial_window_size},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, settings.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_list_size},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, settings.header_table_size},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  URING_CHECK(nghttp2_submit_settings(d->session, NGHTTP2_FLAG_NONE, entries, std::size(entries)) == 0);
  URING_CHECK(nghttp2_session_set_local_window_size(d->session, NGHTTP2_FLAG_NONE, 0,
                                                    static_cast<int32_t>(settings.connection_window_size)) == 0);
}

Session::~Session() { nghttp2_session_del(impl_->session); }

bool Session::Receive(const char* data, size_t len) {
  Impl* d = impl_.get();
  if (d->failed) return false;
  d->flood.Tick(d->clock());
  // nghttp2 gets the bytes before the first frame that breaks a rule it
  // does not enforce (peer_frame_check.h); that frame ends the connection.
  internal::PeerFrameCheck::Violation violation;
  const size_t clean = d->check.Scan(data, len, &violation);
  ++d->depth;
  const ssize_t rv = nghttp2_session_mem_recv(d->session, reinterpret_cast<const uint8_t*>(data), clean);
  --d->depth;
  if (rv < 0) {
    switch (rv) {
      case NGHTTP2_ERR_BAD_CLIENT_MAGIC: d->Fail("bad preface", NGHTTP2_PROTOCOL_ERROR); break;
      case NGHTTP2_ERR_FLOODED: d->Fail("flood: outbound control frames", NGHTTP2_ENHANCE_YOUR_CALM); break;
      case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS: d->Fail("flood: CONTINUATION", NGHTTP2_ENHANCE_YOUR_CALM); break;
      case NGHTTP2_ERR_CALLBACK_FAILURE:
        // Ours: a flood (failure says which) or a handler that terminated.
        d->Fail("callback failure", d->failure.rfind("flood", 0) == 0 ? NGHTTP2_ENHANCE_YOUR_CALM
                                                                        : NGHTTP2_INTERNAL_ERROR);
        break;
      default: d->Fail(nghttp2_strerror(static_cast<int>(rv)), NGHTTP2_INTERNAL_ERROR); break;
    }
  } else if (nghttp2_session_get_outbound_queue_size(d->session) > d->settings.flood.max_outbound_frames) {
    d->Fail("flood: outbound queue", NGHTTP2_ENHANCE_YOUR_CALM);
  }
  if (clean < len && !d->failed) d->Fail(violation.what, violation.error_code);
  // A connection error nghttp2 finds itself (a bad frame) queues a GOAWAY
  // and ignores all later input, but no public call tells: it shows when
  // that GOAWAY is sent (OnFrameSend), and Receive returns false from then.
  d->AfterCall();
  return !d->failed;
}

bool Session::Upgrade(std::string_view http2_settings_base64url, bool head_request) {
  Impl* d = impl_.get();
  std::string payload;
  if (!internal::DecodeBase64Url(http2_settings_base64url, &payload)) return false;
  if (nghttp2_session_upgrade2(d->session, reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
                               head_request ? 1 : 0, nullptr) != 0) {
    return false;
  }
  Stream* s = d->Acquire(1);
  if (s == nullptr) return false;
  d->check.UpgradedStreamOne();
  s->announced = true;
  ++d->announced;
  return true;
}

size_t Session::Send(char* buf, size_t cap) {
  Impl* d = impl_.get();
  size_t total = 0;
  ++d->depth;
  while (total < cap) {
    if (d->pending_len == 0) {
      const uint8_t* p = nullptr;
      const ssize_t n = nghttp2_session_mem_send(d->session, &p);
      if (n <= 0) break;  // nothing now, or (negative) the session is over
      d->pending = p;
      d->pending_len = static_cast<size_t>(n);
    }
    const size_t n = std::min(cap - total, d->pending_len);
    std::memcpy(buf + total, d->pending, n);
    total += n;
    d->pending += n;
    d->pending_len -= n;
  }
  --d->depth;
  d->AfterCall();
  return total;
}

bool Session::WantsWrite() const {
  return impl_->pending_len > 0 || nghttp2_session_want_write(impl_->session) != 0;
}

bool Session::WantsRead() const { return !impl_->failed && nghttp2_session_want_read(impl_->session) != 0; }

bool Session::SubmitResponse(int32_t stream_id, int status, const http::HeaderTable& fields, bool has_body,
                             std::span<const ServerField> server_fields) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr || s->reset || s->response_submitted || status < 200 || status > 999) return false;
  char digits[3] = {static_cast<char>('0' + status / 100), static_cast<char>('0' + status / 10 % 10),
                    static_cast<char>('0' + status % 10)};
  d->BuildNv(std::string_view(digits, 3), &fields, server_fields);
  nghttp2_data_provider provider{};
  provider.read_callback = &Impl::ReadBody;
  if (nghttp2_submit_response(d->session, stream_id, d->nv.data(), d->nv.size(), has_body ? &provider : nullptr) != 0) {
    return false;
  }
  s->response_submitted = true;
  s->has_body = has_body;
  return true;
}

bool Session::SubmitContinue(int32_t stream_id) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr || s->reset || s->response_submitted) return false;
  d->BuildNv("100", nullptr);
  return nghttp2_submit_headers(d->session, NGHTTP2_FLAG_NONE, stream_id, nullptr, d->nv.data(), d->nv.size(),
                                nullptr) >= 0;
}

size_t Session::WriteData(int32_t stream_id, std::string_view bytes) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr || s->reset || !s->has_body || s->body_ended) return 0;
  s->out.append(bytes);
  if (s->queued() >= std::max<size_t>(d->settings.write_low_water, 1)) s->above_low_water = true;
  d->Resume(s);
  return s->queued();
}

bool Session::EndData(int32_t stream_id, const http::HeaderTable* trailers) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr || s->reset || !s->has_body || s->body_ended) return false;
  s->body_ended = true;
  if (trailers != nullptr && !trailers->empty()) {
    s->has_trailers_out = true;
    s->trailers_out = *trailers;
  }
  d->Resume(s);
  return true;
}

size_t Session::QueuedData(int32_t stream_id) const {
  const Stream* s = impl_->Find(stream_id);
  return s == nullptr ? 0 : s->queued();
}

bool Session::AnswerPending(int32_t stream_id) const {
  const Stream* s = impl_->Find(stream_id);
  if (s == nullptr || s->reset || !s->has_body) return false;
  return s->queued() > 0 ||
         (s->body_ended && nghttp2_session_get_stream_local_close(impl_->session, stream_id) == 0);
}

void Session::Consume(int32_t stream_id, size_t n) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr) return;
  n = std::min<uint64_t>(n, s->unconsumed);
  s->unconsumed -= n;
  if (n > 0) nghttp2_session_consume(d->session, stream_id, n);
}

void Session::ResetStream(int32_t stream_id, uint32_t error_code) {
  Impl* d = impl_.get();
  Stream* s = d->Find(stream_id);
  if (s == nullptr || s->reset) return;
  s->reset = true;
  nghttp2_submit_rst_stream(d->session, NGHTTP2_FLAG_NONE, stream_id, error_code);
}

void Session::Shutdown() {
  Impl* d = impl_.get();
  if (d->failed) return;
  if (d->shutdown_started) {
    d->SubmitFinalGoaway();
    return;
  }
  d->shutdown_started = true;
  nghttp2_submit_shutdown_notice(d->session);
  nghttp2_submit_ping(d->session, NGHTTP2_FLAG_NONE, kShutdownPing);
}

void Session::Terminate(uint32_t error_code) {
  impl_->Fail("terminated", error_code);
  impl_->AfterCall();
}

size_t Session::open_streams() const { return impl_->announced; }

std::string_view Session::failure() const { return impl_->failure; }

uint64_t Session::allocations() const { return impl_->allocations; }

}  // namespace uring_http::http2
