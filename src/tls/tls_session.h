// TlsSession: one connection's TLS state (an OpenSSL SSL) driven entirely
// through memory, so that the ring does all of the I/O: ciphertext the ring
// received is fed in, plaintext comes out into the caller's buffer, and
// every byte OpenSSL wants to send (handshake flights, records, alerts) is
// appended to an output buffer the caller owns and sends.
//
// The SSL's BIO is our own (not a memory BIO): its read side reads straight
// from the receive buffer being fed, and its write side appends straight to
// the output buffer, so nothing is copied twice and OpenSSL never touches a
// socket. OpenSSL buffers a partial record itself, so a Feed() that stops
// for more input has consumed all of it.
//
// No io_uring and no threads here: a test drives a client and a server
// session against each other in memory (test/tls/tls_session_test.cc).
//
// Thread-safety: one thread at a time (the ring's, or a worker's while it
// runs a handshake step that the ring handed over).
#ifndef URING_HTTP_SRC_TLS_TLS_SESSION_H_
#define URING_HTTP_SRC_TLS_TLS_SESSION_H_

#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>

namespace uring_http::tls {

class TlsSession {
 public:
  // Output a Feed() may have to write however full the buffer is (a
  // handshake flight with a certificate chain, an alert, a ticket):
  // Encrypt() leaves this much free.
  static constexpr size_t kFeedHeadroom = 24 * 1024;

  TlsSession() = default;
  ~TlsSession() { Reset(); }
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Takes `ssl` (server or client side, state already set).
  void Start(SSL* ssl);
  // Frees the SSL; the session is as new.
  void Reset();
  bool started() const { return ssl_ != nullptr; }
  SSL* ssl() const { return ssl_; }

  // Where ciphertext to send goes: buf[0..cap), `len` bytes already there.
  void SetOutput(char* buf, size_t cap, size_t len) {
    out_ = buf;
    out_cap_ = cap;
    out_len_ = len;
  }
  char* output() const { return out_; }
  size_t output_len() const { return out_len_; }
  // The caller sent (or dropped) every output byte: appends start again at 0.
  void ClearOutput() { out_len_ = 0; }

  enum class Status : uint8_t {
    kNeedMore,     // all input consumed; nothing more until more arrives
    kPlainFull,    // plain_cap filled: call again (without new input)
    kPeerClosed,   // the peer's close_notify
    kFailed,       // a protocol error: what it says is in error()
    kSuspended,    // the certificate callback paused the handshake (it is to
                   // go on elsewhere: Handshake(), on a worker)
  };
  // Takes the ciphertext in[0..len) (valid only during the call, and any
  // later call with in == nullptr that continues after kPlainFull), runs
  // the handshake while it is not done, then decrypts into plain[0..cap).
  // *plain_len: plaintext bytes written.
  Status Feed(const char* in, size_t len, char* plain, size_t plain_cap, size_t* plain_len);
  // Goes on with a handshake that Feed() left kSuspended (the ClientHello
  // is inside the SSL): the expensive step, on whichever thread owns the
  // session now. kNeedMore (the flight is in the output), kFailed, or
  // kSuspended again if the callback still says so.
  Status Handshake();
  bool handshake_done() const { return handshake_done_; }
  // The handshake completed during the last Feed (once per session).
  bool TakeHandshakeCompleted() {
    const bool c = just_completed_;
    just_completed_ = false;
    return c;
  }

  // Encrypts up to len bytes of plaintext into the output; returns how
  // many it took (fewer when the output is full but for kFeedHeadroom;
  // none once the session failed()). Only after the handshake.
  size_t Encrypt(const char* data, size_t len);
  // Encrypt() would take plaintext: the output has room for a record
  // beyond kFeedHeadroom.
  bool CanEncrypt() const { return out_cap_ - out_len_ >= kFeedHeadroom + 512; }
  // Appends our close_notify alert to the output (once; false if the
  // session cannot send it: no handshake yet, failed, or no room).
  bool CloseNotify();
  bool close_notify_sent() const { return close_notify_sent_; }

  // Why the session failed (an OpenSSL reason string), after kFailed.
  const char* error() const { return error_; }
  // Its OpenSSL reason code (ERR_GET_REASON; 0: none), after kFailed.
  int error_reason() const { return error_reason_; }
  bool failed() const { return failed_; }
  // Ciphertext still unread in the current Feed's input (0 after kNeedMore).
  size_t input_left() const { return in_len_; }

 private:
  static int BioRead(BIO* bio, char* buf, int len);
  static int BioWrite(BIO* bio, const char* buf, int len);
  static long BioCtrl(BIO* bio, int cmd, long num, void* ptr);
  static BIO_METHOD* Method();
  Status Fail();

  SSL* ssl_ = nullptr;
  const char* in_ = nullptr;
  size_t in_len_ = 0;
  char* out_ = nullptr;
  size_t out_cap_ = 0;
  size_t out_len_ = 0;
  bool handshake_done_ = false;
  bool just_completed_ = false;
  bool close_notify_sent_ = false;
  bool failed_ = false;
  const char* error_ = "";
  int error_reason_ = 0;
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_SESSION_H_
