// Mutual TLS from a user's side, through the public header only, over real
// sockets with curl as the client: a server with --tls-client-ca (here
// ServerConfig::tls.client_ca_path) lets a client whose certificate a CA of
// the file issued in, and its handlers, FAST and SLOW, see the verified
// subject and chain on Request::client_certificate; a client with no
// certificate, an untrusted one or an expired one fails the handshake, and
// /metrics counts each by reason; under "optional" a client without one
// is served with no certificate. Certificates are made at run time with
// the openssl command line (a CA, a leaf it signs, an expired leaf, a leaf
// of another CA).
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

bool Shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// curl's output and whether it exited 0.
struct Curl {
  bool ok = false;
  std::string out;
};

Curl Get(uint16_t port, const std::string& path, const std::string& cert_args,
         const std::string& tls = "") {
  const std::string command = "curl -sk --max-time 20 " + tls + " " + cert_args +
                              " https://127.0.0.1:" + std::to_string(port) + path + " 2>/dev/null";
  Curl c;
  FILE* f = popen(command.c_str(), "r");
  if (f == nullptr) return c;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) c.out.append(buf, n);
  const int status = pclose(f);
  c.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return c;
}

class MtlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/mtls_XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    const std::string d = dir_ + "/";
    ASSERT_TRUE(Shell("openssl req -x509 " + ec + " -keyout " + d + "server.key -out " + d +
                    "server.crt -subj /CN=localhost -days 2"));
    for (const char* ca : {"ca", "other"}) {
      ASSERT_TRUE(Shell("openssl req -x509 " + ec + " -keyout " + d + ca + ".key -out " + d + ca +
                      ".crt -subj '/CN=Test " + ca + " CA' -days 2"));
    }
    ASSERT_TRUE(Shell("printf 'extendedKeyUsage=clientAuth\\n' > " + d + "ext"));
    // leaf name, its CA, days (-1: expired a day ago)
    const struct {
      const char* name;
      const char* ca;
      const char* days;
    } leaves[] = {{"alice", "ca", "2"}, {"old", "ca", "-1"}, {"mallory", "other", "2"}};
    for (const auto& l : leaves) {
      const std::string n = d + l.name;
      ASSERT_TRUE(Shell("openssl req " + ec + " -keyout " + n + ".key -out " + n +
                      ".csr -subj '/O=Example/CN=" + l.name + "'"));
      ASSERT_TRUE(Shell("openssl x509 -req -in " + n + ".csr -CA " + d + l.ca + ".crt -CAkey " + d +
                      l.ca + ".key -CAcreateserial -extfile " + d + "ext -days " + l.days +
                      " -out " + n + ".crt"));
    }
  }
  void TearDown() override { Shell("rm -rf " + dir_); }

  std::string CertArgs(const std::string& name) const {
    return "--cert " + dir_ + "/" + name + ".crt --key " + dir_ + "/" + name + ".key";
  }

  serving::ServerConfig Config(tls::TlsSettings::ClientAuth auth) const {
    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.accept_capacity = 64;
    config.workers = 1;
    config.tls.certificates.push_back({dir_ + "/server.crt", dir_ + "/server.key"});
    config.tls.client_ca_path = dir_ + "/ca.crt";
    config.tls.client_auth = auth;
    return config;
  }

  static router::Router WhoAmI() {
    router::Router router;
    const auto who = [](const http::Request& req, http::Response& r) {
      const http::ClientCertificate* c = req.client_certificate;
      r.set_body(c == nullptr ? std::string("none\n")
                              : c->subject + " by " + c->issuer + ", chain " +
                                    std::to_string(c->chain_pem.size()) + "\n");
    };
    EXPECT_TRUE(router.Fast("GET", "/whoami", who).ok());
    EXPECT_TRUE(router.Slow("GET", "/whoami-slow", who).ok());
    return router;
  }

  std::string dir_;
};

// Polls /metrics (in process) until it has `line`, or 20 s pass.
bool MetricsShow(const serving::Server& server, const std::string& line) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (server.RenderMetrics().find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "no '" << line << "' in:\n" << server.RenderMetrics();
  return false;
}

TEST_F(MtlsTest, RequiredVerifiesAndHandsTheSubjectToHandlers) {
  serving::Server server(Config(tls::TlsSettings::ClientAuth::kRequired), WhoAmI());
  ASSERT_TRUE(server.Start().ok());
  const std::string alice = "CN=alice,O=Example by CN=Test ca CA, chain 2\n";
  for (const char* tls : {"--tlsv1.3", "--tlsv1.2 --tls-max 1.2"}) {
    Curl c = Get(server.port(), "/whoami", CertArgs("alice"), tls);
    EXPECT_TRUE(c.ok) << tls;
    EXPECT_EQ(c.out, alice) << tls;
    c = Get(server.port(), "/whoami-slow", CertArgs("alice"), tls);
    EXPECT_TRUE(c.ok) << tls;
    EXPECT_EQ(c.out, alice) << tls;
  }
  // No certificate, one of another CA, an expired one: no handshake.
  for (const std::string& args : {std::string(), CertArgs("mallory"), CertArgs("old")}) {
    const Curl c = Get(server.port(), "/whoami", args);
    EXPECT_FALSE(c.ok) << args;
    EXPECT_EQ(c.out, "") << args;
  }
  MetricsShow(server, "uring_http_tls_client_certificates_verified_total 4\n");
  MetricsShow(server, "uring_http_tls_client_certificate_failures_total{reason=\"missing\"} 1\n");
  MetricsShow(server,
              "uring_http_tls_client_certificate_failures_total{reason=\"untrusted\"} 1\n");
  MetricsShow(server, "uring_http_tls_client_certificate_failures_total{reason=\"expired\"} 1\n");
  MetricsShow(server,
              "uring_http_tls_handshake_failures_total{reason=\"client_certificate\"} 3\n");
  MetricsShow(server, "uring_http_tls_handshake_failures_total{reason=\"protocol\"} 0\n");
  server.Stop();
  server.Wait();
}

TEST_F(MtlsTest, OptionalServesAClientWithoutOne) {
  serving::Server server(Config(tls::TlsSettings::ClientAuth::kOptional), WhoAmI());
  ASSERT_TRUE(server.Start().ok());
  Curl c = Get(server.port(), "/whoami", "");
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.out, "none\n");
  c = Get(server.port(), "/whoami-slow", CertArgs("alice"));
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.out, "CN=alice,O=Example by CN=Test ca CA, chain 2\n");
  // One that is sent must still verify.
  c = Get(server.port(), "/whoami", CertArgs("mallory"));
  EXPECT_FALSE(c.ok);
  MetricsShow(server,
              "uring_http_tls_client_certificate_failures_total{reason=\"untrusted\"} 1\n");
  server.Stop();
  server.Wait();
}

}  // namespace
}  // namespace uring_http
