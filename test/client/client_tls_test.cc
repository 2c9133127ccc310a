// The client over TLS (https://) against this server's own HTTPS listener,
// with certificates made at run time: verified against the CA file by
// name, refused for a wrong name or an untrusted chain, accepted with
// verification off; kept connections reused, blocking and on a ring.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/async/exchange.h"
#include "src/client/client.h"
#include "src/serving/server.h"
#include "test/tls/test_certs.h"

namespace uring_http::client {
namespace {

using tls::testing::KeyType;
using tls::testing::ScratchDir;
using tls::testing::TestCertificate;

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = std::make_unique<TestCertificate>(TestCertificate::Generate(KeyType::kEcP256, {"localhost"}));
    other_ = std::make_unique<TestCertificate>(TestCertificate::Generate(KeyType::kEcP256, {"other.example"}));
    ca_path_ = dir_.WriteFile("ca.crt", cert_->cert_pem());
    other_ca_path_ = dir_.WriteFile("other.crt", other_->cert_pem());
    router::Router r;
    ASSERT_TRUE(r.Fast("GET", "/where", [](const http::Request& req, http::Response& res) {
                   res.set_body(req.secure ? "secure" : "plain");
                 }).ok());
    // The ring's client, calling this same server over TLS.
    ring_client_ = std::make_unique<Client>(Options(ca_path_));
    Client* c = ring_client_.get();
    ASSERT_TRUE(r.Async("GET", "/relay", [c, this](async::Exchange& ex) -> async::Task<> {
                   absl::StatusOr<Response> got = co_await c->Get(ex, Url("/where"));
                   ex.response().set_body(got.ok() ? "relayed " + got->body
                                                   : std::string(got.status().message()));
                 }).ok());
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 1;
    config.tls.certificates.push_back(cert_->WriteTo(dir_.path(), "server"));
    server_ = std::make_unique<serving::Server>(config, std::move(r));
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    server_->Wait();
  }
  static ClientOptions Options(const std::string& ca) {
    ClientOptions o;
    o.tls_ca_file = ca;
    o.read_timeout = std::chrono::seconds(5);
    return o;
  }
  std::string Url(const std::string& path) const {
    return "https://localhost:" + std::to_string(server_->port()) + path;
  }

  ScratchDir dir_;
  std::unique_ptr<TestCertificate> cert_, other_;
  std::string ca_path_, other_ca_path_;
  std::unique_ptr<Client> ring_client_;
  std::unique_ptr<serving::Server> server_;
};

TEST_F(ClientTlsTest, AVerifiedCallAndItsKeptConnection) {
  Client client(Options(ca_path_));
  const uint64_t before = server_->Stats().accepted;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Response> r = client.GetBlocking(Url("/where"));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "secure");
  }
  EXPECT_EQ(server_->Stats().accepted - before, 1u);
}

TEST_F(ClientTlsTest, AWrongNameOrAnUntrustedChainIsRefused) {
  Client wrong_ca(Options(other_ca_path_));
  absl::StatusOr<Response> r = wrong_ca.GetBlocking(Url("/where"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("certificate"), std::string::npos) << r.status();
  // The right CA, but the certificate does not name 127.0.0.1.
  Client by_address(Options(ca_path_));
  r = by_address.GetBlocking("https://127.0.0.1:" + std::to_string(server_->port()) + "/where");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("certificate"), std::string::npos) << r.status();
  // Verification off: taken (for tests and known hosts only).
  ClientOptions off = Options("");
  off.tls_verify = false;
  Client unverified(off);
  r = unverified.GetBlocking("https://127.0.0.1:" + std::to_string(server_->port()) + "/where");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "secure");
}

TEST_F(ClientTlsTest, AnAsyncHandlerCallsOverTlsOnItsRing) {
  Client client(Options(ca_path_));
  absl::StatusOr<Response> r = client.GetBlocking(Url("/relay"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "relayed secure");
  r = client.GetBlocking(Url("/relay"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "relayed secure");
}

}  // namespace
}  // namespace uring_http::client
