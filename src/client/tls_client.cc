#include "src/client/tls_client.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace uring_http::client {
namespace {

constexpr size_t kCipherBuffer = 64 * 1024;

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(bool verify,
                                                                           const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new failed");
  auto out = std::make_unique<TlsClientContext>(ctx, verify);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                       : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
    if (loaded != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(ca_file.empty() ? "cannot load the system's trust store"
                                                        : "cannot load the CA file " + ca_file);
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx, kAlpn, sizeof(kAlpn));
  return out;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<TlsConnection>> TlsConnection::Start(const TlsClientContext& ctx,
                                                                   std::string_view host_view) {
  const std::string host(host_view);
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) return absl::UnavailableError("SSL_new failed");
  auto c = std::make_unique<TlsConnection>();
  c->session.Start(ssl);  // owns it from here
  if (IsIpLiteral(host)) {
    // No SNI for an address (RFC 6066 3); verified against its IP SANs.
    if (ctx.verify() && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
      return absl::UnavailableError("cannot verify an upstream at " + host);
    }
  } else {
    if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 ||
        (ctx.verify() && SSL_set1_host(ssl, host.c_str()) != 1)) {
      ERR_clear_error();
      return absl::UnavailableError("cannot set the upstream's name " + host);
    }
  }
  SSL_set_connect_state(ssl);
  c->out.resize(kCipherBuffer + tls::TlsSession::kFeedHeadroom);
  c->session.SetOutput(c->out.data(), c->out.size(), 0);
  c->in.resize(kCipherBuffer);
  return c;
}

std::string TlsConnection::HandshakeError() const {
  std::string why = session.error();
  SSL* ssl = session.ssl();
  if (ssl != nullptr) {
    const long verdict = SSL_get_verify_result(ssl);
    if (verdict != X509_V_OK) {
      why += std::string(why.empty() ? "" : ": ") + "certificate: " +
             X509_verify_cert_error_string(verdict);
    }
  }
  return why.empty() ? "handshake failed" : why;
}

}  // namespace uring_http::client
