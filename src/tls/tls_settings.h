// TlsSettings: what a server needs to know to speak TLS on its listeners
// (--tls-cert/--tls-key, --handshake-timeout, ...). Plain data, no OpenSSL:
// the configuration carries it, and src/tls/tls_context.h turns it into
// OpenSSL contexts.
#ifndef URING_HTTP_SRC_TLS_TLS_SETTINGS_H_
#define URING_HTTP_SRC_TLS_TLS_SETTINGS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace uring_http::tls {

// One certificate chain and its private key, both PEM files (ECDSA or RSA).
// The first pair is the default; the others are chosen by SNI when the
// name the client asks for is one of theirs (subjectAltName, else CN).
struct CertificateFiles {
  std::string cert_path;
  std::string key_path;
};

struct TlsSettings {
  std::vector<CertificateFiles> certificates;  // empty: plain HTTP
  // A client that has not finished its handshake this long after it
  // connected is closed (counted as a handshake timeout).
  uint32_t handshake_timeout_ms = 10'000;
  // Session-ticket keys are replaced this often; tickets made with the key
  // before are still accepted (and renewed) for one more period.
  uint32_t ticket_key_rotation_s = 3600;
  // Handshake steps that sign with the certificate's key (the expensive
  // step of a full handshake) go to the worker pool when the key is RSA
  // ("auto"), always ("on") or never ("off"), see README (HTTPS).
  enum class Offload : uint8_t { kAuto, kOn, kOff };
  Offload offload = Offload::kAuto;

  bool enabled() const { return !certificates.empty(); }
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_SETTINGS_H_
