// TlsContext: the server's TLS configuration as OpenSSL contexts, one per
// certificate, built once at start-up (and again on each reload): TLS 1.3
// and 1.2 only, AEAD cipher suites only, ALPN http/1.1 (h2 first with
// TlsSettings::http2), session tickets
// (TicketKeys) without a server-side session cache, no renegotiation, no
// 0-RTT. A ClientHello's SNI picks the certificate that names the host;
// the first certificate answers everything else. A session resumes only
// under the certificate it was made under (each has its own session id
// context).
//
// A connection gets its SSL from NewSsl(); the SSL holds a reference to the
// TlsContext that made it (its callbacks point at it), so a reload (a new
// TlsContext) never pulls a context from under a connection still using
// the old one: the old one goes with its last SSL.
//
// Thread-safety: immutable after Create(); NewSsl() from any thread.
#ifndef URING_HTTP_SRC_TLS_TLS_CONTEXT_H_
#define URING_HTTP_SRC_TLS_TLS_CONTEXT_H_

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/tls/ticket_keys.h"
#include "src/tls/tls_settings.h"

namespace uring_http::tls {

// What a handshake records about itself, through SSL ex-data, for metrics.
struct CertificateInfo {
  std::string names;     // "localhost,127.0.0.1" (SAN, else CN)
  std::string key_type;  // "ECDSA P-256", "RSA 2048", ...
  bool rsa = false;
};

// Where a connection's full handshakes sign (TlsSettings::Offload); the
// TLS layer gives each SSL one (SetGate). The certificate callback, which
// OpenSSL calls only for a full handshake (after it has decided not to
// resume), pauses a handshake that would sign on the ring (kSuspended from
// TlsSession) so that a worker can run that step; resumptions sign
// nothing and stay.
struct HandshakeGate {
  enum class Mode : uint8_t { kInline, kOffloadRsa, kOffloadAll };
  Mode mode = Mode::kInline;
  bool on_worker = false;  // the worker runs the step now: let it through
};

class TlsContext : public std::enable_shared_from_this<TlsContext> {
 public:
  // Loads every certificate and key (checking that each key matches its
  // certificate). `keys` seals tickets; shared across reloads.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> Create(
      const TlsSettings& settings, std::shared_ptr<TicketKeys> keys);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A server-side SSL on the default context (SNI may move it), or null
  // when OpenSSL is out of memory.
  SSL* NewSsl() const;
  // Whether the context `ssl` ended up on signs with an RSA key (the
  // expensive handshakes; TlsSettings::Offload).
  static bool UsesRsa(const SSL* ssl);
  // The gate `ssl`'s handshake consults (null: always inline).
  static void SetGate(SSL* ssl, HandshakeGate* gate);
  // The index of the certificate a ClientHello naming `host` gets (SNI;
  // null or unknown: 0, the default).
  size_t CertificateFor(const char* host) const;

  // "OpenSSL 3.0.19, TLSv1.3 TLSv1.2, ciphers ..., certificates: ..."
  std::string Describe() const;
  const std::vector<CertificateInfo>& certificates() const { return infos_; }

 private:
  TlsContext() = default;
  static int OnServerName(SSL* ssl, int* alert, void* arg);
  static int OnClientHello(SSL* ssl, int* alert, void* arg);
  static int OnCertificate(SSL* ssl, void* arg);
  static int OnAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                    const unsigned char* in, unsigned int inlen, void* arg);

  std::vector<SSL_CTX*> contexts_;  // owned; [0] is the default
  std::vector<X509*> leaves_;       // owned by their contexts
  std::vector<CertificateInfo> infos_;
  std::shared_ptr<TicketKeys> keys_;
  std::string client_auth_;  // for Describe(): ", client certificates required (ca.pem)"
  bool h2_ = false;          // ALPN offers h2 (TlsSettings::http2)
};

// The ALPN protocols we speak, in preference order, in wire format
// (length-prefixed): http/1.1, and with TlsSettings::http2 h2 first.
inline constexpr unsigned char kAlpnProtocols[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
inline constexpr unsigned char kAlpnProtocolsH2[] = {2, 'h', '2', 8, 'h', 't', 't', 'p',
                                                     '/', '1', '.', '1'};
// Whether the handshake chose h2.
bool NegotiatedH2(const SSL* ssl);

// The context new connections get: set at start-up, replaced by a reload.
// A loop keeps its own reference and looks at generation() (one relaxed
// load) per accepted connection, taking the lock only after a reload.
class TlsContextSource {
 public:
  void Set(std::shared_ptr<const TlsContext> context) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(context);
    generation_.fetch_add(1, std::memory_order_release);
  }
  std::shared_ptr<const TlsContext> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const TlsContext> current_;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
};

// OpenSSL's error queue as one line (and emptied).
std::string OpenSslErrors();

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_CONTEXT_H_
