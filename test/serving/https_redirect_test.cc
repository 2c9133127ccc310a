// The HTTPS redirect over real sockets: a server with a certificate and a
// plain-HTTP port beside it sends plain requests to https (with the path
// and query), and lets requests that came over TLS through to the route,
// which sees Request::secure. Through the public header and curl.
#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "test/tls/test_certs.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

std::string Shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  if (p == nullptr) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

TEST(HttpsRedirectTest, PlainToHttpsAndTlsThrough) {
  tls::testing::ScratchDir dir;
  const auto cert = tls::testing::TestCertificate::Generate(tls::testing::KeyType::kEcP256,
                                                            {"localhost"});
  router::Router r;
  middleware::HttpsRedirectOptions redirect;
  redirect.host = "localhost";
  redirect.https_port = 8443;
  r.Use(middleware::HttpsRedirect(redirect));
  ASSERT_TRUE(r.Fast("GET", "/where", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.secure ? "secure\n" : "plain\n");
  }).ok());
  // A worker's request says so too.
  ASSERT_TRUE(r.Slow("GET", "/where-slow", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.secure ? "secure\n" : "plain\n");
  }).ok());
  serving::ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.plain_port = 0;
  config.accept_threads = 1;
  config.workers = 1;
  config.tls.certificates.push_back(cert.WriteTo(dir.path(), "server"));
  serving::Server server(config, std::move(r));
  const absl::Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_NE(server.plain_port(), 0);

  testing::TestClient plain(server.plain_port());
  ASSERT_TRUE(plain.Send(testing::Get("/where?a=1")));
  const auto answer = plain.ReadResponse();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 308);
  EXPECT_EQ(answer->Header("location"), "https://localhost:8443/where?a=1");

  if (Shell("curl --version").find("curl") != std::string::npos) {
    const std::string tls = Shell("curl -sS -k https://127.0.0.1:" + std::to_string(server.port()) +
                                "/where");
    EXPECT_EQ(tls, "secure\n");
    EXPECT_EQ(Shell("curl -sS -k https://127.0.0.1:" + std::to_string(server.port()) +
                    "/where-slow"),
              "secure\n");
  }
  server.Stop();
  server.Wait();
}

}  // namespace
}  // namespace uring_http
