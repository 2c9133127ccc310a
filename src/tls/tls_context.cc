#include "src/tls/tls_context.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/tls/client_cert.h"

namespace uring_http::tls {
namespace {

constexpr char kCiphers12[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr char kCiphers13[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr char kGroups[] = "X25519:P-256:P-384";

// Which of our contexts an SSL_CTX is, for UsesRsa (ex-data on the context).
int RsaIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// Each SSL holds a reference to the TlsContext that made it (its SNI and
// ClientHello callbacks point at it), released by SSL_free.
void FreeContextRef(void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/,
                    long /*argl*/, void* /*argp*/) {
  delete static_cast<std::shared_ptr<const TlsContext>*>(ptr);
}

int ContextRefIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &FreeContextRef);
  return index;
}

// No passphrase prompt: an encrypted key would otherwise make OpenSSL ask
// on the terminal and wait (at start-up, or in a reload).
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

int GateIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The host_name of a ClientHello's server_name extension (RFC 6066 3) into
// out (NUL-terminated); false when there is none or it is malformed.
bool SniHost(SSL* ssl, char* out, size_t cap) {
  const unsigned char* p = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) != 1 || len < 5) {
    return false;
  }
  const size_t list = (size_t{p[0]} << 8) | p[1];
  if (list + 2 != len || p[2] != TLSEXT_NAMETYPE_host_name) return false;
  const size_t n = (size_t{p[3]} << 8) | p[4];
  if (n == 0 || n + 5 > len || n >= cap) return false;
  if (std::memchr(p + 5, '\0', n) != nullptr) return false;  // OpenSSL refuses it too
  std::memcpy(out, p + 5, n);
  out[n] = '\0';
  return true;
}

std::string KeyType(EVP_PKEY* key, bool* rsa) {
  *rsa = false;
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
      *rsa = true;
      return absl::StrCat("RSA ", EVP_PKEY_get_bits(key));
    case EVP_PKEY_EC: {
      char group[64] = "";
      size_t len = 0;
      EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof(group), &len);
      // "prime256v1" is P-256 by its NIST name, as the docs say.
      const char* nist = EC_curve_nid2nist(OBJ_sn2nid(group));
      return absl::StrCat("ECDSA ", nist != nullptr ? nist : group);
    }
    case EVP_PKEY_ED25519:
      return "Ed25519";
    default:
      return "other";
  }
}

std::string CertificateNames(X509* cert) {
  std::vector<std::string> names;
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
      if (n->type == GEN_DNS) {
        const ASN1_STRING* s = n->d.dNSName;
        names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                           ASN1_STRING_length(s));
      }
    }
    GENERAL_NAMES_free(sans);
  }
  if (names.empty()) {
    char cn[256] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
    if (cn[0] != '\0') names.emplace_back(cn);
  }
  return absl::StrJoin(names, ",");
}

}  // namespace

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Create(
    const TlsSettings& settings, std::shared_ptr<TicketKeys> keys) {
  if (settings.certificates.empty()) {
    return absl::InvalidArgumentError("TLS needs at least one --tls-cert/--tls-key pair");
  }
  std::shared_ptr<TlsContext> c(new TlsContext());
  c->keys_ = std::move(keys);
  c->h2_ = settings.http2;
  if (settings.verifies_clients()) {
    c->client_auth_ = absl::StrCat(
        ", client certificates ",
        settings.client_auth == TlsSettings::ClientAuth::kRequired ? "required" : "optional",
        " (", settings.client_ca_path, ")");
  }
  ERR_clear_error();
  for (const CertificateFiles& files : settings.certificates) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) return absl::InternalError("SSL_CTX_new: " + OpenSslErrors());
    c->contexts_.push_back(ctx);
    SSL_CTX_set_default_passwd_cb(ctx, &NoPassphrase);
    if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_path.c_str()) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load TLS certificate ", files.cert_path, ": ", OpenSslErrors()));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load TLS key ", files.key_path, " (for certificate ",
                       files.cert_path, "; encrypted keys are not supported): ",
                       OpenSslErrors()));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("TLS key ", files.key_path,
                                                     " does not match certificate ",
                                                     files.cert_path, ": ", OpenSslErrors()));
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    if (SSL_CTX_set_cipher_list(ctx, kCiphers12) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, kCiphers13) != 1 ||
        SSL_CTX_set1_groups_list(ctx, kGroups) != 1) {
      return absl::InternalError("OpenSSL refused the cipher list: " + OpenSslErrors());
    }
    // No renegotiation (a client-driven CPU sink, and HTTP/1.1 needs none),
    // no compression (CRIME); the server's order of ciphers wins.
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    // Partial writes: SSL_write takes what fits in our output buffer.
    // Release buffers: an idle keep-alive connection holds no 34 KiB of
    // OpenSSL record buffers (100,000 idle connections would hold 3 GiB).
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    // Tickets only (stateless resumption, which survives across threads and
    // reloads): no server-side cache. One ticket per handshake.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_max_early_data(ctx, 0);  // no 0-RTT: replayable requests
    c->keys_->Install(ctx);
    SSL_CTX_set_client_hello_cb(ctx, &TlsContext::OnClientHello, c.get());
    SSL_CTX_set_cert_cb(ctx, &TlsContext::OnCertificate, nullptr);
    SSL_CTX_set_tlsext_servername_callback(ctx, &TlsContext::OnServerName);
    SSL_CTX_set_tlsext_servername_arg(ctx, c.get());
    // The callback's argument says whether h2 is offered (no state: any
    // non-null pointer does).
    SSL_CTX_set_alpn_select_cb(ctx, &TlsContext::OnAlpn,
                               settings.http2 ? const_cast<unsigned char*>(kAlpnProtocolsH2)
                                              : nullptr);
    // Every context alike: SNI may move a handshake to any of them.
    if (absl::Status s = ConfigureClientVerification(ctx, settings); !s.ok()) return s;

    X509* leaf = SSL_CTX_get0_certificate(ctx);
    EVP_PKEY* key = SSL_CTX_get0_privatekey(ctx);
    CertificateInfo info;
    info.key_type = KeyType(key, &info.rsa);
    info.names = CertificateNames(leaf);
    SSL_CTX_set_ex_data(ctx, RsaIndex(), info.rsa ? ctx : nullptr);
    // Each certificate its own session id context, from the names it
    // answers for: a session made under one certificate does not resume
    // under another's SNI name (OpenSSL compares the contexts before it
    // resumes), while one made before a reload or a renewal of the same
    // names still does.
    unsigned char sid_ctx[SHA256_DIGEST_LENGTH];
    // Client verification is part of it: a session made under another CA
    // file or mode does not resume under this one.
    std::string id = "uring-http\n" + info.names;
    if (settings.verifies_clients()) {
      absl::StrAppend(&id, "\nclient-ca ", settings.client_ca_path, " ",
                      static_cast<int>(settings.client_auth));
    }
    static_assert(sizeof(sid_ctx) <= SSL_MAX_SID_CTX_LENGTH);
    if (EVP_Digest(id.data(), id.size(), sid_ctx, nullptr, EVP_sha256(), nullptr) != 1 ||
        SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx)) != 1) {
      return absl::InternalError("session id context: " + OpenSslErrors());
    }
    c->leaves_.push_back(leaf);
    c->infos_.push_back(std::move(info));
  }
  return std::shared_ptr<const TlsContext>(std::move(c));
}

TlsContext::~TlsContext() {
  for (SSL_CTX* ctx : contexts_) SSL_CTX_free(ctx);
}

SSL* TlsContext::NewSsl() const {
  SSL* ssl = SSL_new(contexts_[0]);
  if (ssl == nullptr) return nullptr;
  auto* self = new std::shared_ptr<const TlsContext>(shared_from_this());
  if (SSL_set_ex_data(ssl, ContextRefIndex(), self) != 1) {
    delete self;
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

bool TlsContext::UsesRsa(const SSL* ssl) {
  return SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), RsaIndex()) != nullptr;
}

void TlsContext::SetGate(SSL* ssl, HandshakeGate* gate) {
  SSL_set_ex_data(ssl, GateIndex(), gate);
}

size_t TlsContext::CertificateFor(const char* host) const {
  if (host == nullptr || contexts_.size() == 1) return 0;
  for (size_t i = 0; i < contexts_.size(); ++i) {
    if (X509_check_host(leaves_[i], host, 0, 0, nullptr) == 1) return i;
  }
  // No certificate names it: the default answers (as nginx's default
  // server does); the client decides whether to trust it.
  return 0;
}

int TlsContext::OnServerName(SSL* /*ssl*/, int* /*alert*/, void* /*arg*/) {
  // The certificate was chosen in OnClientHello; this only acknowledges
  // the name (and records it in a TLS 1.2 session).
  return SSL_TLSEXT_ERR_OK;
}

int TlsContext::OnClientHello(SSL* ssl, int* /*alert*/, void* arg) {
  const auto* self = static_cast<const TlsContext*>(arg);
  // SNI picks the certificate here, first thing: OpenSSL decides whether a
  // ticket or a PSK resumes after this callback and before the servername
  // callback, comparing the session's id context with the SSL's, which
  // SSL_set_SSL_CTX takes from the certificate's context. Switched later,
  // a session would resume under any certificate.
  if (self->contexts_.size() > 1) {
    char host[256];
    const size_t i = self->CertificateFor(SniHost(ssl, host, sizeof(host)) ? host : nullptr);
    SSL_set_SSL_CTX(ssl, self->contexts_[i]);
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

int TlsContext::OnCertificate(SSL* ssl, void* /*arg*/) {
  // OpenSSL calls this for full handshakes only, once it has decided not
  // to resume: a ticket or a PSK that does not open (sealed with other
  // keys, made up, made under another certificate) is a full handshake
  // like any other and comes here. Deciding on the ClientHello's
  // extensions instead let any client with a bogus ticket sign on the ring.
  auto* gate = static_cast<HandshakeGate*>(SSL_get_ex_data(ssl, GateIndex()));
  if (gate == nullptr || gate->mode == HandshakeGate::Mode::kInline || gate->on_worker) return 1;
  if (gate->mode == HandshakeGate::Mode::kOffloadRsa && !UsesRsa(ssl)) {
    return 1;  // ECDSA: ~20 us, inline
  }
  // The handshake stops here (SSL_ERROR_WANT_X509_LOOKUP) with the
  // ClientHello processed; a worker calls SSL_do_handshake again, which
  // calls this again.
  return -1;
}

int TlsContext::OnAlpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                       const unsigned char* in, unsigned int inlen, void* arg) {
  unsigned char* selected = nullptr;
  // Our order wins (SSL_select_next_proto walks the server's list): h2
  // when both sides have it.
  const bool h2 = arg != nullptr;
  if (SSL_select_next_proto(&selected, outlen, h2 ? kAlpnProtocolsH2 : kAlpnProtocols,
                            h2 ? sizeof(kAlpnProtocolsH2) : sizeof(kAlpnProtocols), in,
                            inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  // The client offers only protocols we do not speak (h2 alone, say): go
  // on without ALPN, and it speaks HTTP/1.1 or leaves.
  return SSL_TLSEXT_ERR_NOACK;
}

bool NegotiatedH2(const SSL* ssl) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &len);
  return len == 2 && proto[0] == 'h' && proto[1] == '2';
}

std::string TlsContext::Describe() const {
  std::vector<std::string> certs;
  for (const CertificateInfo& i : infos_) certs.push_back(absl::StrCat(i.names, " (", i.key_type, ")"));
  return absl::StrCat(OpenSSL_version(OPENSSL_VERSION), ", TLSv1.3+TLSv1.2, ciphers ", kCiphers13,
                      ":", kCiphers12, h2_ ? ", ALPN h2,http/1.1" : ", ALPN http/1.1",
                      ", tickets, certificates: ",
                      absl::StrJoin(certs, "; "), client_auth_);
}

}  // namespace uring_http::tls
