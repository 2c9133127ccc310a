// TestServer: a serving::Server through its public API only (Start, Stop,
// Wait, port), on loopback and an ephemeral port.
#include "absl/strings/str_cat.h"
#include "uring_http/testing.h"
#include "uring_http/uring_http.h"

namespace uring_http::testing {

TestServer::TestServer(const serving::ServerConfig& config, router::Router&& router) {
  serving::ServerConfig c = config;
  c.address = "127.0.0.1";
  c.port = 0;
  if (c.plain_port >= 0) c.plain_port = 0;
  c.handle_signals = false;  // the test's process keeps its signals
  tls_ = c.tls.enabled();
  for (const tls::CertificateFiles& files : c.tls.certificates) {
    certificate_files_.push_back(files.cert_path);
  }
  server_ = std::make_unique<serving::Server>(std::move(c), std::move(router));
  status_ = server_->Start();
  if (!status_.ok()) {
    status_ = absl::Status(status_.code(),
                           absl::StrCat("the test server did not start: ", status_.message()));
  }
}

TestServer::TestServer(router::Router&& router)
    : TestServer(serving::ServerConfig(), std::move(router)) {}

TestServer::~TestServer() { Stop(); }

void TestServer::Stop() {
  server_->Stop();
  server_->Wait();
}

uint16_t TestServer::port() const { return server_->port(); }

std::string TestServer::url() const {
  return absl::StrCat(tls_ ? "https" : "http", "://127.0.0.1:", port());
}

Client TestServer::client(ClientOptions options) const {
  if (options.port == 0) options.port = port();
  if (tls_ && !options.tls) {
    options.tls = true;
    options.tls_ca_files = certificate_files_;
  }
  Client client(std::move(options));
  if (!status_.ok()) client.FailAll(status_);
  return client;
}

Client TestServer::plain_client(ClientOptions options) const {
  if (options.port == 0) options.port = server_->plain_port();
  Client client(std::move(options));
  if (!status_.ok()) {
    client.FailAll(status_);
  } else if (server_->plain_port() == 0) {
    client.FailAll(absl::FailedPreconditionError("the test server has no plain_port"));
  }
  return client;
}

}  // namespace uring_http::testing
