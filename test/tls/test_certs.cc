#include "test/tls/test_certs.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace uring_http::tls::testing {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "test_certs: %s failed\n", what);
  ERR_print_errors_fp(stderr);
  std::abort();
}

#define CERT_CHECK(cond)      \
  do {                        \
    if (!(cond)) Die(#cond);  \
  } while (0)

void AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  CERT_CHECK(ext != nullptr);
  CERT_CHECK(X509_add_ext(cert, ext, -1) == 1);
  X509_EXTENSION_free(ext);
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(len));
}

}  // namespace

TestCertificate TestCertificate::Generate(KeyType type, const std::vector<std::string>& dns_names) {
  CERT_CHECK(!dns_names.empty());
  TestCertificate c;
  EVP_PKEY* key = type == KeyType::kEcP256
                      ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                      : EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  CERT_CHECK(key != nullptr);
  c.key_.reset(key);

  X509* cert = X509_new();
  CERT_CHECK(cert != nullptr);
  c.cert_.reset(cert);
  CERT_CHECK(X509_set_version(cert, X509_VERSION_3) == 1);
  // A random positive serial: two certificates of one run never share
  // issuer and serial.
  unsigned char serial[16];
  CERT_CHECK(RAND_bytes(serial, sizeof(serial)) == 1);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  CERT_CHECK(bn != nullptr);
  CERT_CHECK(BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr);
  BN_free(bn);
  CERT_CHECK(X509_gmtime_adj(X509_getm_notBefore(cert), -24 * 3600) != nullptr);
  CERT_CHECK(X509_gmtime_adj(X509_getm_notAfter(cert), 365L * 24 * 3600) != nullptr);

  X509_NAME* name = X509_get_subject_name(cert);
  CERT_CHECK(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                        reinterpret_cast<const unsigned char*>("uring-http test"),
                                        -1, -1, 0) == 1);
  CERT_CHECK(X509_NAME_add_entry_by_txt(
                 name, "CN", MBSTRING_ASC,
                 reinterpret_cast<const unsigned char*>(dns_names[0].c_str()), -1, -1, 0) == 1);
  CERT_CHECK(X509_set_issuer_name(cert, name) == 1);  // self-signed
  CERT_CHECK(X509_set_pubkey(cert, key) == 1);

  std::string sans;
  for (const std::string& n : dns_names) {
    if (!sans.empty()) sans += ",";
    sans += "DNS:" + n;
  }
  // Its own CA: the client trusts it as the anchor of a one-certificate
  // chain.
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, NID_key_usage,
               type == KeyType::kRsa2048 ? "critical,digitalSignature,keyEncipherment,keyCertSign"
                                         : "critical,digitalSignature,keyCertSign");
  AddExtension(cert, NID_ext_key_usage, "serverAuth,clientAuth");  // mTLS tests: clients too
  AddExtension(cert, NID_subject_key_identifier, "hash");
  AddExtension(cert, NID_subject_alt_name, sans);
  CERT_CHECK(X509_sign(cert, key, EVP_sha256()) > 0);

  BIO* bio = BIO_new(BIO_s_mem());
  CERT_CHECK(bio != nullptr);
  CERT_CHECK(PEM_write_bio_X509(bio, cert) == 1);
  c.cert_pem_ = BioContents(bio);
  BIO_free(bio);
  bio = BIO_new(BIO_s_mem());
  CERT_CHECK(bio != nullptr);
  CERT_CHECK(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
  c.key_pem_ = BioContents(bio);
  BIO_free(bio);
  return c;
}

CertificateFiles TestCertificate::WriteTo(const std::string& dir, const std::string& stem) const {
  CertificateFiles files;
  files.cert_path = dir + "/" + stem + ".crt";
  files.key_path = dir + "/" + stem + ".key";
  const auto write = [](const std::string& path, const std::string& contents) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CERT_CHECK(fd >= 0);
    CERT_CHECK(::write(fd, contents.data(), contents.size()) ==
               static_cast<ssize_t>(contents.size()));
    ::close(fd);
  };
  write(files.cert_path, cert_pem_);
  write(files.key_path, key_pem_);
  return files;
}

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") +
                      "/uring_http_tls_XXXXXX";
  CERT_CHECK(::mkdtemp(templ.data()) != nullptr);
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::WriteFile(const std::string& name, const std::string& contents) const {
  const std::string path = path_ + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  CERT_CHECK(f != nullptr);
  CERT_CHECK(std::fwrite(contents.data(), 1, contents.size(), f) == contents.size());
  CERT_CHECK(std::fclose(f) == 0);
  return path;
}

void TrustCertificate(SSL_CTX* client_ctx, X509* cert) {
  CERT_CHECK(X509_STORE_add_cert(SSL_CTX_get_cert_store(client_ctx), cert) == 1);
}

std::unique_ptr<X509, X509Free> ParseCertificate(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  CERT_CHECK(bio != nullptr);
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  return std::unique_ptr<X509, X509Free>(cert);
}

}  // namespace uring_http::tls::testing
