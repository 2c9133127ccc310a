// TLS for the client's connections (https:// URLs): the server's own
// memory-driven OpenSSL session (src/tls/tls_session.h) on the client side,
// so that every byte still goes through the client's transport (the ring,
// or blocking calls) and nothing here touches a socket.
//
// Verification is on by default: the upstream's chain against the
// system's trust store (or ClientOptions::tls_ca_file), and its name
// against the URL's host (a DNS name by SNI and subjectAltName, an IP
// literal against the certificate's IP addresses). ALPN offers http/1.1
// only. TLS 1.2 at least.
//
// Thread-safety: a TlsClientContext is shared by every thread (OpenSSL's
// SSL_CTX is, once set up); a TlsConnection belongs to its connection's.
#ifndef URING_HTTP_SRC_CLIENT_TLS_CLIENT_H_
#define URING_HTTP_SRC_CLIENT_TLS_CLIENT_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/tls/tls_session.h"

namespace uring_http::client {

class TlsClientContext {
 public:
  // `ca_file` empty: the system's default trust store.
  static absl::StatusOr<std::unique_ptr<TlsClientContext>> Create(bool verify,
                                                                 const std::string& ca_file);
  // Takes `ctx`.
  TlsClientContext(SSL_CTX* ctx, bool verify) : ctx_(ctx), verify_(verify) {}
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  bool verify() const { return verify_; }

 private:
  SSL_CTX* ctx_;
  bool verify_;
};

// One connection's TLS: its session and the ciphertext buffers.
struct TlsConnection {
  // A client session for `host` (SNI and the name verified); Unavailable
  // if OpenSSL could not make one.
  static absl::StatusOr<std::unique_ptr<TlsConnection>> Start(const TlsClientContext& ctx,
                                                             std::string_view host);
  // Why the handshake failed, the certificate's verdict included.
  std::string HandshakeError() const;

  tls::TlsSession session;
  std::string out;    // ciphertext to send (the session's output buffer)
  std::string in;     // ciphertext received, [in_begin, in_end) not yet fed
  size_t in_begin = 0;
  size_t in_end = 0;
  bool more_plain = false;  // the last Feed filled the plaintext room (kPlainFull)
};

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_TLS_CLIENT_H_
