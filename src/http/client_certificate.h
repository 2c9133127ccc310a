// ClientCertificate: the certificate a TLS client presented and the server
// verified against --tls-client-ca (mutual TLS), as a handler sees it on
// Request::client_certificate. Plain strings, no OpenSSL: made once per
// connection when its handshake completes (shared by the connection and
// any SLOW task of its), read by handlers.
//
// Thread-safety: immutable once made; read from any thread.
#ifndef URING_HTTP_SRC_HTTP_CLIENT_CERTIFICATE_H_
#define URING_HTTP_SRC_HTTP_CLIENT_CERTIFICATE_H_

#include <string>
#include <vector>

namespace uring_http::http {

struct ClientCertificate {
  // The leaf's subject and issuer names in RFC 2253 form, most specific
  // part first ("CN=alice,O=Example").
  std::string subject;
  std::string issuer;
  std::string serial;  // hexadecimal, as `openssl x509 -serial` prints it
  std::string sha256;  // of the leaf's DER, lowercase hexadecimal
  // PEM certificates, the leaf first: the chain the server verified, up to
  // and including the trust anchor from --tls-client-ca. A connection that
  // resumed a session has the leaf alone (a session ticket keeps only the
  // peer's certificate; it was verified when the session was made).
  std::vector<std::string> chain_pem;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_CLIENT_CERTIFICATE_H_
