#include "src/tls/tls_session.h"

#include <openssl/bio.h>
#include <openssl/err.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "src/base/check.h"

namespace uring_http::tls {

BIO_METHOD* TlsSession::Method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "uring-http ring");
    URING_CHECK(m != nullptr);
    BIO_meth_set_read(m, &TlsSession::BioRead);
    BIO_meth_set_write(m, &TlsSession::BioWrite);
    BIO_meth_set_ctrl(m, &TlsSession::BioCtrl);
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

void TlsSession::Start(SSL* ssl) {
  Reset();
  ssl_ = ssl;
  BIO* bio = BIO_new(Method());
  URING_CHECK(bio != nullptr);
  BIO_set_data(bio, this);
  // One BIO for both directions; the SSL owns it from here.
  SSL_set_bio(ssl_, bio, bio);
}

void TlsSession::Reset() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  in_ = nullptr;
  in_len_ = 0;
  handshake_done_ = just_completed_ = close_notify_sent_ = failed_ = false;
  error_ = "";
  error_reason_ = 0;
}

int TlsSession::BioRead(BIO* bio, char* buf, int len) {
  auto* s = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (s->in_len_ == 0) {
    // Nothing more in this receive: OpenSSL keeps what it has of a record
    // and reports SSL_ERROR_WANT_READ.
    BIO_set_retry_read(bio);
    return -1;
  }
  const size_t n = std::min(s->in_len_, static_cast<size_t>(len));
  std::memcpy(buf, s->in_, n);
  s->in_ += n;
  s->in_len_ -= n;
  return static_cast<int>(n);
}

int TlsSession::BioWrite(BIO* bio, const char* buf, int len) {
  auto* s = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const size_t room = s->out_cap_ - s->out_len_;
  if (room == 0) {
    BIO_set_retry_write(bio);
    return -1;
  }
  const size_t n = std::min(room, static_cast<size_t>(len));
  std::memcpy(s->out_ + s->out_len_, buf, n);
  s->out_len_ += n;
  return static_cast<int>(n);
}

long TlsSession::BioCtrl(BIO* /*bio*/, int cmd, long /*num*/, void* /*ptr*/) {
  // Flush: the bytes are already where the ring sends from.
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

TlsSession::Status TlsSession::Fail() {
  failed_ = true;
  const unsigned long e = ERR_peek_last_error();
  const char* reason = e != 0 ? ERR_reason_error_string(e) : nullptr;
  error_ = reason != nullptr ? reason : "protocol error";
  error_reason_ = e != 0 ? ERR_GET_REASON(e) : 0;
  ERR_clear_error();
  return Status::kFailed;
}

TlsSession::Status TlsSession::Feed(const char* in, size_t len, char* plain, size_t plain_cap,
                                    size_t* plain_len) {
  URING_CHECK(ssl_ != nullptr && out_ != nullptr);
  *plain_len = 0;
  if (failed_) return Status::kFailed;
  if (in != nullptr) {
    in_ = in;
    in_len_ = len;
  }
  if (!handshake_done_) {
    const Status st = Handshake();
    if (!handshake_done_) return st;
  }
  // The error queue is not cleared before each call (it costs a
  // thread-local lookup): every failure path below leaves it empty.
  while (*plain_len < plain_cap) {
    const int r = SSL_read(ssl_, plain + *plain_len, static_cast<int>(plain_cap - *plain_len));
    if (r > 0) {
      *plain_len += static_cast<size_t>(r);
      // All input taken and no record left inside the SSL: a further
      // SSL_read would only find that out again.
      if (in_len_ == 0 && !SSL_has_pending(ssl_)) return Status::kNeedMore;
      continue;
    }
    const int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ) return Status::kNeedMore;
    if (err == SSL_ERROR_ZERO_RETURN) {
      ERR_clear_error();
      return Status::kPeerClosed;
    }
    return Fail();
  }
  return Status::kPlainFull;
}

TlsSession::Status TlsSession::Handshake() {
  URING_CHECK(ssl_ != nullptr && out_ != nullptr);
  if (failed_) return Status::kFailed;
  if (handshake_done_) return Status::kNeedMore;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshake_done_ = just_completed_ = true;
    return Status::kNeedMore;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Status::kNeedMore;
    case SSL_ERROR_WANT_X509_LOOKUP:  // HandshakeGate: a full handshake, for a worker
      ERR_clear_error();
      return Status::kSuspended;
    default:
      return Fail();  // a bad message, an alert from the peer, no room for our flight
  }
}

size_t TlsSession::Encrypt(const char* data, size_t len) {
  URING_CHECK(handshake_done_);
  // A session the peer broke (its alert, a record that did not decrypt)
  // takes nothing: the caller sees failed() and gives up on the send.
  if (failed_) return 0;
  size_t taken = 0;
  while (taken < len) {
    // Room for a full record's plaintext and its overhead, beyond what a
    // Feed may need: otherwise stop here (the caller sends and comes back).
    if (!CanEncrypt()) break;
    const size_t room = out_cap_ - out_len_ - kFeedHeadroom - 512;
    const size_t n = std::min(len - taken, std::max<size_t>(room, 1));
    const int r = SSL_write(ssl_, data + taken, static_cast<int>(std::min<size_t>(n, 1 << 30)));
    if (r <= 0) {
      // Only a full output can stop it (partial writes are on), and the
      // room was checked: any other failure is a broken session.
      if (SSL_get_error(ssl_, r) != SSL_ERROR_WANT_WRITE) Fail();
      ERR_clear_error();
      break;
    }
    taken += static_cast<size_t>(r);
  }
  return taken;
}

bool TlsSession::CloseNotify() {
  if (ssl_ == nullptr || !handshake_done_ || failed_ || close_notify_sent_) return false;
  if (out_cap_ - out_len_ < 64) return false;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // 0: our alert is written, the peer's not yet seen
  ERR_clear_error();
  close_notify_sent_ = true;
  return true;
}

}  // namespace uring_http::tls
