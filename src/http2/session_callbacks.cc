// What nghttp2 calls back while it reads and writes frames: each decoded
// field, frame and stream end becomes a SessionEvents call (or a flood
// count, or a refusal), and ReadBody frames a stream's queued body.
#include <cstring>
#include <string_view>

#include "src/http2/session_impl.h"

namespace uring_http::http2 {

using internal::kShutdownPing;
using internal::Stream;

int Session::Impl::OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
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

int Session::Impl::OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  Impl* self = Self(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    self->Acquire(frame->hd.stream_id);
  } else if (Stream* s = self->Find(frame->hd.stream_id)) {
    s->in_trailers = true;
  }
  return 0;
}

int Session::Impl::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
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

int Session::Impl::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
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

int Session::Impl::OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
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

int Session::Impl::OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
  Impl* self = Self(user_data);
  if (Stream* s = self->Find(stream_id)) self->Close(s, error_code);
  return 0;
}

int Session::Impl::OnInvalidHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t,
                                   const uint8_t*, size_t, uint8_t, void*) {
  return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int Session::Impl::OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
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

ssize_t Session::Impl::ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
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

}  // namespace uring_http::http2
