#include "examples/proxy/upstreams.h"

#include <charconv>

namespace proxy {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Upstreams>> Upstreams::Parse(const std::vector<std::string>& specs,
                                                            std::chrono::milliseconds fail_timeout) {
  if (specs.empty()) return absl::InvalidArgumentError("no --upstream given");
  if (specs.size() > kMaxUpstreams) return absl::InvalidArgumentError("more than 64 --upstream");
  auto out = std::make_unique<Upstreams>();
  out->fail_timeout_ = fail_timeout;
  for (const std::string& given : specs) {
    auto bad = [&given](const char* why) {
      return absl::InvalidArgumentError("--upstream=" + given + ": " + why +
                                        " (expected [https://]HOST:PORT)");
    };
    std::string spec = given;
    bool tls = false;
    if (spec.starts_with("https://")) {
      tls = true;
      spec.erase(0, 8);
    } else if (spec.starts_with("http://")) {
      spec.erase(0, 7);
    }
    if (spec.ends_with("/")) spec.pop_back();
    const size_t colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0) return bad("no port");
    std::string_view host(spec.data(), colon);
    if (host.starts_with("[")) {
      if (!host.ends_with("]") || host.size() < 3) return bad("malformed IPv6 literal");
      host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
      return bad("an IPv6 literal goes in brackets");
    }
    unsigned port = 0;
    const char* first = spec.data() + colon + 1;
    const char* last = spec.data() + spec.size();
    const auto [end, ec] = std::from_chars(first, last, port);
    if (ec != std::errc() || end != last || port == 0 || port > 65535) return bad("malformed port");
    auto u = std::make_unique<Upstream>();
    u->tls = tls;
    u->host = std::string(host);
    u->port = static_cast<uint16_t>(port);
    u->authority = spec;
    out->list_.push_back(std::move(u));
  }
  return out;
}

Upstream* Upstreams::Pick(uint64_t* tried, size_t* turn) {
  if (*tried == 0) *turn = next_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = NowNs();
  const size_t n = list_.size();
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      const size_t at = (*turn + i) % n;
      if ((*tried >> at) & 1) continue;
      Upstream& u = *list_[at];
      if (pass == 0 && u.down_until.load(std::memory_order_relaxed) > now) continue;
      *tried |= uint64_t{1} << at;
      return &u;
    }
  }
  return nullptr;
}

void Upstreams::MarkFailed(Upstream& u) {
  const int64_t until = NowNs() + std::chrono::duration_cast<std::chrono::nanoseconds>(fail_timeout_).count();
  u.down_until.store(until, std::memory_order_relaxed);
}

}  // namespace proxy
