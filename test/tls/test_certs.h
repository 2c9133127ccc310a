// Certificates for the TLS tests, made in memory at run time (no private key
// is ever checked in): a fresh EC P-256 or RSA-2048 key and a self-signed
// certificate naming the caller's DNS names (subjectAltName; the first is
// also the CN), written as PEM files into a scratch directory so that
// tls::TlsContext::Create loads them like the server's --tls-cert/--tls-key.
//
// Each certificate is its own trust anchor (a self-signed CA certificate):
// a client trusts it with TrustCertificate().
//
// Failures (OpenSSL out of memory, a directory that cannot be written)
// abort: these are test fixtures, used by gtest tests and the fuzz targets
// alike.
#ifndef URING_HTTP_TEST_TLS_TEST_CERTS_H_
#define URING_HTTP_TEST_TLS_TEST_CERTS_H_

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

#include "src/tls/tls_settings.h"

namespace uring_http::tls::testing {

enum class KeyType { kEcP256, kRsa2048 };

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

class TestCertificate {
 public:
  // A new key of `type` and a self-signed certificate for `dns_names`
  // (at least one), valid from a day ago for a year.
  static TestCertificate Generate(KeyType type, const std::vector<std::string>& dns_names);

  X509* x509() const { return cert_.get(); }
  EVP_PKEY* key() const { return key_.get(); }
  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }

  // Writes <dir>/<stem>.crt and <dir>/<stem>.key (mode 0600): what
  // TlsSettings names.
  CertificateFiles WriteTo(const std::string& dir, const std::string& stem) const;

 private:
  std::unique_ptr<X509, X509Free> cert_;
  std::unique_ptr<EVP_PKEY, PkeyFree> key_;
  std::string cert_pem_;
  std::string key_pem_;
};

// A fresh directory (mkdtemp under $TEST_TMPDIR, else /tmp), removed with
// everything in it when this goes.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `contents` to <path>/<name>; returns the file's path.
  std::string WriteFile(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

// Adds `cert` to the trust store of a client context.
void TrustCertificate(SSL_CTX* client_ctx, X509* cert);

// `pem` (one PEM certificate) parsed; null if it is not one.
std::unique_ptr<X509, X509Free> ParseCertificate(const std::string& pem);

}  // namespace uring_http::tls::testing

#endif  // URING_HTTP_TEST_TLS_TEST_CERTS_H_
