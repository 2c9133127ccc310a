#include "src/serving/server.h"

#include <utility>

#include "src/serving/server_core.h"

namespace uring_http::serving {

Server::Server(ServerConfig config, router::Router router)
    : core_(std::make_unique<ServerCore>(std::move(config), std::move(router))) {}

Server::~Server() {
  // A handler that outlived --shutdown-timeout still runs on the core's
  // router, pool and buffers: kept, for the process's last moments.
  if (core_ != nullptr && core_->abandoned()) (void)core_.release();
}

absl::Status Server::Run(const std::function<void(const Server&)>& on_ready) {
  if (!on_ready) return core_->Run();
  return core_->Run([this, &on_ready](const ServerCore&) { on_ready(*this); });
}

absl::Status Server::Start() { return core_->Start(); }
void Server::Stop() { core_->Stop(); }
void Server::set_on_stop(std::function<void()> on_stop) {
  core_->set_on_stop(std::move(on_stop));
}
void Server::Wait() { core_->Wait(); }
uint16_t Server::port() const { return core_->port(); }
uint16_t Server::plain_port() const { return core_->plain_port(); }
const ServerConfig& Server::config() const { return core_->config(); }
const std::vector<ListeningAddress>& Server::listening() const { return core_->listening(); }
std::string Server::ReadyLine() const { return core_->ReadyLine(); }
ServerStats Server::Stats() const { return core_->Stats(); }
std::string Server::RenderMetrics() const { return core_->RenderMetrics(); }
metrics::Registry& Server::metrics() const { return core_->metrics(); }
bool Server::draining() const { return core_->draining(); }
bool Server::handed_over() const { return core_->handed_over(); }
absl::Status Server::ReloadTls() { return core_->ReloadTls(); }

}  // namespace uring_http::serving
