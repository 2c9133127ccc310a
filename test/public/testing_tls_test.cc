// The test helpers over HTTPS: a TestServer with a certificate (made at run
// time), its client trusting that certificate and nothing else, a client
// that verifies nothing, names checked when asked, and the plain port
// beside TLS.
#include <string>

#include "gtest/gtest.h"
#include "test/tls/test_certs.h"
#include "uring_http/testing.h"
#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;
using uring_http::testing::Client;
using uring_http::testing::ClientOptions;
using uring_http::testing::TestServer;
using uring_http::tls::testing::KeyType;
using uring_http::tls::testing::ScratchDir;
using uring_http::tls::testing::TestCertificate;

class TestingTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const TestCertificate cert = TestCertificate::Generate(KeyType::kEcP256, {"localhost"});
    uring_http::serving::ServerConfig config;
    config.tls.certificates = {cert.WriteTo(dir_.path(), "server")};
    config.plain_port = 0;
    uring_http::router::Router r;
    ASSERT_TRUE(r.Fast("GET", "/", [](const Request&, Response& resp) {
                   resp.set_body("secret");
                 }).ok());
    server_ = std::make_unique<TestServer>(config, std::move(r));
    ASSERT_TRUE(server_->ok()) << server_->status();
  }

  ScratchDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(TestingTlsTest, ItsClientSpeaksTlsAndTrustsItsCertificate) {
  EXPECT_EQ(server_->url(), "https://127.0.0.1:" + std::to_string(server_->port()));
  Client client = server_->client();
  EXPECT_TRUE(client.options().tls);
  ASSERT_EQ(client.options().tls_ca_files.size(), 1u);
  for (int i = 0; i < 3; ++i) {
    auto r = client.Get("/");
    ASSERT_TRUE(r.ok()) << r;
    EXPECT_EQ(r.body, "secret");
  }
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(server_->server().Stats().tls_handshakes, 1u);
}

TEST_F(TestingTlsTest, TrustIsCheckedWhenAskedFor) {
  // No trusted certificates: not verified, served all the same.
  ClientOptions unverified;
  unverified.tls = true;
  EXPECT_EQ(server_->client(unverified).Get("/").body, "secret");

  // Another certificate trusted: refused, and said why.
  const TestCertificate other = TestCertificate::Generate(KeyType::kEcP256, {"localhost"});
  ClientOptions wrong;
  wrong.tls = true;
  wrong.tls_ca_files = {dir_.WriteFile("other.crt", other.cert_pem())};
  auto r = server_->client(wrong).Get("/");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(absl::IsUnavailable(r.error)) << r.error;
  EXPECT_NE(r.error.message().find("the server's certificate is not trusted"), std::string::npos)
      << r.error;

  // The name, checked once given.
  ClientOptions named = server_->client().options();
  named.tls_server_name = "localhost";
  EXPECT_EQ(server_->client(named).Get("/").body, "secret");
  named.tls_server_name = "elsewhere.example";
  r = server_->client(named).Get("/");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.message().find("not trusted"), std::string::npos) << r.error;

  // A trust file that cannot be read.
  ClientOptions missing;
  missing.tls = true;
  missing.tls_ca_files = {dir_.path() + "/absent.crt"};
  r = server_->client(missing).Get("/");
  EXPECT_TRUE(absl::IsInvalidArgument(r.error)) << r.error;
}

TEST_F(TestingTlsTest, PlainPortBesideTls) {
  Client plain = server_->plain_client();
  EXPECT_FALSE(plain.options().tls);
  auto r = plain.Get("/");
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_EQ(r.body, "secret");
}

}  // namespace
