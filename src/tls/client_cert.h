// Client certificates (mutual TLS, --tls-client-ca): the server's contexts
// ask for one and verify it against the CA file; a completed handshake's
// verified certificate becomes the http::ClientCertificate handlers see;
// a handshake that failed over one is told apart from other failures, by
// reason, for /metrics.
//
// Thread-safety: ConfigureClientVerification at context creation;
// the others on whichever thread owns the SSL (the ring's).
#ifndef URING_HTTP_SRC_TLS_CLIENT_CERT_H_
#define URING_HTTP_SRC_TLS_CLIENT_CERT_H_

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "src/http/client_certificate.h"
#include "src/tls/tls_settings.h"

namespace uring_http::tls {

// Makes `ctx` ask clients for a certificate and verify it against
// settings.client_ca_path (its CAs are also named in the request, so that
// a client with several certificates picks the right one). Nothing when
// !settings.verifies_clients(). An unreadable or empty CA file is an error
// naming it.
absl::Status ConfigureClientVerification(SSL_CTX* ctx, const TlsSettings& settings);

// Why a handshake failed over a client certificate; kNone: not over one.
enum class ClientCertFailure : uint8_t {
  kNone,
  kMissing,    // required, and the client sent none
  kUntrusted,  // not issued (through any chain) by a CA of --tls-client-ca
  kExpired,    // past its notAfter, or before its notBefore
  kInvalid,    // anything else the verification refused (bad signature,
               // wrong purpose, ...)
};
// From the failed session's OpenSSL reason code (TlsSession::error_reason)
// and the SSL's verify result (SSL_get_verify_result).
ClientCertFailure ClassifyClientCertFailure(int ssl_reason, long verify_result);
const char* ClientCertFailureName(ClientCertFailure failure);  // "missing", ...

// The verified client certificate of a completed handshake (a resumed
// one's: the session's), or null: the context does not ask for one, the
// client sent none, or it did not verify.
std::shared_ptr<const http::ClientCertificate> VerifiedClientCertificate(SSL* ssl);

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_CLIENT_CERT_H_
