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
  // connected is closed (counted as a handshake timeout). 0: the header
  // timeout bounds it instead (or the idle timeout when that is 0 too).
  uint32_t handshake_timeout_ms = 10'000;
  // ALPN offers "h2" before "http/1.1" (--http2=on): a client that takes
  // it speaks HTTP/2 once the handshake is done.
  bool http2 = false;
  // Session-ticket keys are replaced this often; tickets made with the key
  // before are still accepted (and renewed) for one more period.
  uint32_t ticket_key_rotation_s = 3600;
  // Where a full handshake's expensive step (key exchange and the
  // signature with the certificate's key) runs: on the TLS workers while
  // the ring's connections are being reused (keep-alive requests that a
  // signature on the ring would hold up), else on the ring, which saves the
  // worker round trip ("auto"); always on the workers ("on"); for RSA
  // certificates only ("rsa"); never ("off"). See README (HTTPS) for the
  // measurements of each.
  enum class Offload : uint8_t { kAuto, kOn, kRsa, kOff };
  Offload offload = Offload::kAuto;
  // The TLS workers: a pool of their own (not the SLOW handlers', whose
  // FIFO queue may be full of tasks that block), at a lower priority than
  // the rings so that a ring thread always gets its CPU back at once.
  // -1: one per accept thread; 0: none (handshakes run on the rings).
  int workers = -1;
  int workers_nice = 19;
  // The ring threads ask the scheduler for this short a slice (Linux
  // 6.12+), so that one that wakes preempts a TLS worker on its CPU at
  // once: keep-alive latency beside a flood of handshakes (README, HTTPS).
  // 0: the kernel's default.
  uint32_t ring_slice_us = 100;
  // Client certificates (mutual TLS): a PEM file of the CAs a client's
  // certificate must chain to (--tls-client-ca; empty: none are asked
  // for). kRequired: a client without a valid one fails the handshake;
  // kOptional: one without a certificate is let in (its requests have no
  // Request::client_certificate), one with an invalid one still fails.
  std::string client_ca_path;
  enum class ClientAuth : uint8_t { kRequired, kOptional };
  ClientAuth client_auth = ClientAuth::kRequired;

  bool enabled() const { return !certificates.empty(); }
  bool verifies_clients() const { return !client_ca_path.empty(); }
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_SETTINGS_H_
