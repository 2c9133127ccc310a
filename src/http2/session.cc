// The Session's public calls over nghttp2 (session_impl.h; what nghttp2
// calls back is in session_callbacks.cc).
#include "src/http2/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/http2/session_impl.h"

namespace uring_http::http2 {

using internal::kShutdownPing;
using internal::Stream;

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
