#include "src/tls/client_cert.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "src/tls/tls_context.h"

namespace uring_http::tls {
namespace {

// What a memory BIO holds, as a string (the BIO freed).
std::string Drain(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data != nullptr && n > 0 ? data : "", n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

// RFC 2253, UTF-8 kept as it is (not escaped as \XX).
std::string NameText(const X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  return Drain(bio);
}

std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  PEM_write_bio_X509(bio, cert);
  return Drain(bio);
}

std::string Serial(X509* cert) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  if (bn == nullptr) return "";
  char* hex = BN_bn2hex(bn);
  std::string out = hex != nullptr ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

std::string Sha256(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(cert, EVP_sha256(), md, &n) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

}  // namespace

absl::Status ConfigureClientVerification(SSL_CTX* ctx, const TlsSettings& settings) {
  if (!settings.verifies_clients()) return absl::OkStatus();
  const char* path = settings.client_ca_path.c_str();
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, path, nullptr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load --tls-client-ca ", path, ": ", OpenSslErrors()));
  }
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(path);
  if (names == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-client-ca ", path, " holds no CA certificate: ", OpenSslErrors()));
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // owns it from here
  const bool required = settings.client_auth == TlsSettings::ClientAuth::kRequired;
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     nullptr);
  return absl::OkStatus();
}

ClientCertFailure ClassifyClientCertFailure(int ssl_reason, long verify_result) {
  if (ssl_reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) return ClientCertFailure::kMissing;
  switch (verify_result) {
    case X509_V_OK:
      return ClientCertFailure::kNone;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return ClientCertFailure::kExpired;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
    case X509_V_ERR_CERT_REJECTED:
      return ClientCertFailure::kUntrusted;
    default:
      return ClientCertFailure::kInvalid;
  }
}

const char* ClientCertFailureName(ClientCertFailure failure) {
  switch (failure) {
    case ClientCertFailure::kNone: return "none";
    case ClientCertFailure::kMissing: return "missing";
    case ClientCertFailure::kUntrusted: return "untrusted";
    case ClientCertFailure::kExpired: return "expired";
    case ClientCertFailure::kInvalid: return "invalid";
  }
  return "invalid";
}

std::shared_ptr<const http::ClientCertificate> VerifiedClientCertificate(SSL* ssl) {
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0) return nullptr;
  X509* leaf = SSL_get0_peer_certificate(ssl);
  if (leaf == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return nullptr;
  auto c = std::make_shared<http::ClientCertificate>();
  c->subject = NameText(X509_get_subject_name(leaf));
  c->issuer = NameText(X509_get_issuer_name(leaf));
  c->serial = Serial(leaf);
  c->sha256 = Sha256(leaf);
  // The chain verified in this handshake; a resumed session has none of
  // its own (only the session's peer certificate).
  STACK_OF(X509)* chain = SSL_get0_verified_chain(ssl);
  const int n = chain != nullptr ? sk_X509_num(chain) : 0;
  for (int i = 0; i < n; ++i) c->chain_pem.push_back(Pem(sk_X509_value(chain, i)));
  if (c->chain_pem.empty()) c->chain_pem.push_back(Pem(leaf));
  return c;
}

}  // namespace uring_http::tls
