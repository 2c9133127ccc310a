// Client certificates (mutual TLS) in memory, a client and a server session
// talking through TlsSession: a certificate from the --tls-client-ca file
// verifies and is handed over (subject, issuer, serial, fingerprint,
// chain); none, an untrusted one and an expired one fail the handshake,
// each told apart by reason; under "optional" a client without one gets
// in; the classification of verify results; a bad CA file refused at
// start-up.
#include "src/tls/client_cert.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "src/tls/ticket_keys.h"
#include "src/tls/tls_context.h"
#include "test/tls/session_pair.h"
#include "test/tls/test_certs.h"

namespace uring_http::tls {
namespace {

using testing::ClientContext;
using testing::Handshake;
using testing::KeyType;
using testing::NewClientSsl;
using testing::Peer;
using testing::ScratchDir;
using testing::SslCtxPtr;
using testing::TestCertificate;

class ClientCertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestCertificate::Generate(KeyType::kEcP256, {"localhost"});
    alice_ = TestCertificate::Generate(KeyType::kEcP256, {"alice.test"});
    mallory_ = TestCertificate::Generate(KeyType::kEcP256, {"mallory.test"});
    settings_.certificates.push_back(server_.WriteTo(dir_.path(), "server"));
    // alice's self-signed certificate is the client CA: its own anchor.
    settings_.client_ca_path = dir_.WriteFile("clients.pem", alice_.cert_pem());
  }

  std::shared_ptr<const TlsContext> Context() {
    auto c = TlsContext::Create(settings_, std::make_shared<TicketKeys>(3600));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }

  // A handshake with `client_cert` (null: none) at TLS `version`; the
  // server's peer is left in *server for the test to look at.
  bool Connect(const TlsContext& context, const TestCertificate* client_cert, int version,
               std::unique_ptr<Peer>* server) {
    SslCtxPtr client_ctx = ClientContext({server_.x509()}, version);
    SSL* ssl = NewClientSsl(client_ctx.get());
    if (client_cert != nullptr) {
      EXPECT_EQ(SSL_use_certificate(ssl, client_cert->x509()), 1);
      EXPECT_EQ(SSL_use_PrivateKey(ssl, client_cert->key()), 1);
    }
    Peer client(ssl);
    *server = std::make_unique<Peer>(context.NewSsl());
    return Handshake(client, **server);
  }

  ClientCertFailure FailureOf(const Peer& server) {
    return ClassifyClientCertFailure(server.session.error_reason(),
                                     SSL_get_verify_result(server.session.ssl()));
  }

  ScratchDir dir_;
  TestCertificate server_, alice_, mallory_;
  TlsSettings settings_;
};

TEST_F(ClientCertTest, ATrustedCertificateIsVerifiedAndHandedOver) {
  auto context = Context();
  ASSERT_NE(context, nullptr);
  EXPECT_NE(context->Describe().find("client certificates required"), std::string::npos);
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    std::unique_ptr<Peer> server;
    ASSERT_TRUE(Connect(*context, &alice_, version, &server)) << version;
    auto cert = VerifiedClientCertificate(server->session.ssl());
    ASSERT_NE(cert, nullptr) << version;
    EXPECT_EQ(cert->subject, "CN=alice.test,O=uring-http test");
    EXPECT_EQ(cert->issuer, "CN=alice.test,O=uring-http test");
    EXPECT_EQ(cert->sha256.size(), 64u);
    EXPECT_FALSE(cert->serial.empty());
    ASSERT_EQ(cert->chain_pem.size(), 1u);  // its own anchor
    EXPECT_EQ(cert->chain_pem[0], alice_.cert_pem());
  }
}

TEST_F(ClientCertTest, FailuresAreToldApartByReason) {
  auto context = Context();
  ASSERT_NE(context, nullptr);
  // An expired copy of alice's certificate (re-signed with her key).
  TestCertificate expired = TestCertificate::Generate(KeyType::kEcP256, {"alice.test"});
  ASSERT_EQ(X509_gmtime_adj(X509_getm_notAfter(expired.x509()), -3600), X509_getm_notAfter(expired.x509()));
  ASSERT_GT(X509_sign(expired.x509(), expired.key(), EVP_sha256()), 0);
  // Trusted as an anchor itself (another file), so that only its dates fail.
  TlsSettings with_expired = settings_;
  {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, expired.x509());
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    with_expired.client_ca_path = dir_.WriteFile("expired.pem", std::string(data, n));
    BIO_free(bio);
  }
  auto expired_context = TlsContext::Create(with_expired, std::make_shared<TicketKeys>(3600));
  ASSERT_TRUE(expired_context.ok()) << expired_context.status();

  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    std::unique_ptr<Peer> server;
    EXPECT_FALSE(Connect(*context, nullptr, version, &server));
    EXPECT_TRUE(server->failed());
    EXPECT_EQ(FailureOf(*server), ClientCertFailure::kMissing) << server->session.error();

    EXPECT_FALSE(Connect(*context, &mallory_, version, &server));
    EXPECT_TRUE(server->failed());
    EXPECT_EQ(FailureOf(*server), ClientCertFailure::kUntrusted) << server->session.error();

    EXPECT_FALSE(Connect(**expired_context, &expired, version, &server));
    EXPECT_TRUE(server->failed());
    EXPECT_EQ(FailureOf(*server), ClientCertFailure::kExpired) << server->session.error();
  }
}

TEST_F(ClientCertTest, OptionalLetsAClientWithoutOneIn) {
  settings_.client_auth = TlsSettings::ClientAuth::kOptional;
  auto context = Context();
  ASSERT_NE(context, nullptr);
  std::unique_ptr<Peer> server;
  ASSERT_TRUE(Connect(*context, nullptr, TLS1_3_VERSION, &server));
  EXPECT_EQ(VerifiedClientCertificate(server->session.ssl()), nullptr);
  ASSERT_TRUE(Connect(*context, &alice_, TLS1_3_VERSION, &server));
  EXPECT_NE(VerifiedClientCertificate(server->session.ssl()), nullptr);
  // One that is sent must still verify.
  EXPECT_FALSE(Connect(*context, &mallory_, TLS1_3_VERSION, &server));
  EXPECT_EQ(FailureOf(*server), ClientCertFailure::kUntrusted);
}

TEST_F(ClientCertTest, WithoutACaNoneIsAskedFor) {
  settings_.client_ca_path.clear();
  auto context = Context();
  ASSERT_NE(context, nullptr);
  std::unique_ptr<Peer> server;
  ASSERT_TRUE(Connect(*context, &alice_, TLS1_3_VERSION, &server));
  EXPECT_EQ(VerifiedClientCertificate(server->session.ssl()), nullptr);
}

TEST_F(ClientCertTest, ABadCaFileIsRefusedByName) {
  settings_.client_ca_path = dir_.path() + "/missing.pem";
  auto c = TlsContext::Create(settings_, std::make_shared<TicketKeys>(3600));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("missing.pem"), std::string::npos) << c.status();
  settings_.client_ca_path = dir_.WriteFile("empty.pem", "not a certificate\n");
  c = TlsContext::Create(settings_, std::make_shared<TicketKeys>(3600));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("empty.pem"), std::string::npos) << c.status();
}

TEST(ClassifyClientCertFailureTest, ByReasonAndVerifyResult) {
  EXPECT_EQ(ClassifyClientCertFailure(0, X509_V_OK), ClientCertFailure::kNone);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, X509_V_OK),
            ClientCertFailure::kMissing);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_CERTIFICATE_VERIFY_FAILED, X509_V_ERR_CERT_HAS_EXPIRED),
            ClientCertFailure::kExpired);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_CERTIFICATE_VERIFY_FAILED,
                                      X509_V_ERR_CERT_NOT_YET_VALID),
            ClientCertFailure::kExpired);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_CERTIFICATE_VERIFY_FAILED,
                                      X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY),
            ClientCertFailure::kUntrusted);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_CERTIFICATE_VERIFY_FAILED,
                                      X509_V_ERR_CERT_SIGNATURE_FAILURE),
            ClientCertFailure::kInvalid);
  EXPECT_EQ(ClassifyClientCertFailure(SSL_R_CERTIFICATE_VERIFY_FAILED, X509_V_ERR_INVALID_PURPOSE),
            ClientCertFailure::kInvalid);
  EXPECT_STREQ(ClientCertFailureName(ClientCertFailure::kUntrusted), "untrusted");
}

}  // namespace
}  // namespace uring_http::tls
