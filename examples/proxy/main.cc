// proxy: a reverse proxy on ASYNC handlers and the ring's HTTP/1.1 client.
//
//   bazel run //examples/proxy -- --port=8080 --upstream=127.0.0.1:9000 --upstream=127.0.0.1:9001
//
// Every request (any method, any path) goes to one of the upstreams in
// turn, with both bodies streamed (see forward.h for what is sent, what
// is dropped, and the 502/504 rules). No thread is held per request: the
// exchange waits on its ring (--workers=0 is fine; a worker is used only
// to resolve an upstream given by name). Upstream connections are kept
// alive, per ring.
//
// Flags: the server's (--help), and
//   --upstream=[https://]HOST:PORT  repeatable; HOST a literal or a name;
//                                   https: TLS, verified for HOST
//   --upstream-ca-file=FILE         CAs for https upstreams (default: the system's)
//   --upstream-insecure             do not verify them (tests, known hosts)
//   --upstream-connect-timeout=5s
//   --upstream-read-timeout=60s     each send and receive (then 504)
//   --upstream-fail-timeout=10s     how long an unreachable one is skipped
//   --upstream-keepalive=32         idle connections kept per upstream per ring
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "examples/proxy/forward.h"
#include "examples/proxy/upstreams.h"
#include "uring_http/uring_http.h"

int main(int argc, char** argv) {
  using namespace uring_http;
  serving::Flags flags("proxy: a reverse proxy to HTTP/1.1 upstreams");
  std::vector<std::string> upstream_specs;
  flags.AddParsed(
      "upstream", "HOST:PORT", "An upstream server (repeatable; taken in turn)",
      [&upstream_specs](std::string_view text) -> absl::Status {
        upstream_specs.emplace_back(text);
        return absl::OkStatus();
      },
      [] { return std::string(); });
  std::chrono::milliseconds connect_timeout{5000};
  flags.Add("upstream-connect-timeout", &connect_timeout, "Longest a connect to an upstream may take");
  std::chrono::milliseconds read_timeout{60000};
  flags.Add("upstream-read-timeout", &read_timeout,
            "Longest an upstream may take to accept or send the next bytes (then 504)");
  std::chrono::milliseconds fail_timeout{10000};
  flags.Add("upstream-fail-timeout", &fail_timeout, "How long an unreachable upstream is skipped");
  bool no_tls_verify = false;
  flags.Add("upstream-insecure", &no_tls_verify,
            "Do not verify https:// upstreams' certificates and names (tests, known hosts only)");
  std::string ca_file;
  flags.Add("upstream-ca-file", &ca_file,
            "CA certificates (PEM) for https:// upstreams (default: the system's store)")
      .Value("FILE");
  uint32_t keepalive = 32;
  flags.Add("upstream-keepalive", &keepalive, "Idle connections kept per upstream per ring",
            uint32_t{0}, uint32_t{100000});
  serving::Options options = serving::ParseOptions(argc, argv, &flags);

  absl::StatusOr<std::unique_ptr<proxy::Upstreams>> upstreams =
      proxy::Upstreams::Parse(upstream_specs, fail_timeout);
  if (!upstreams.ok()) {
    std::cerr << "proxy: " << upstreams.status().message() << "\n";
    return 2;
  }
  client::ClientOptions client_options;
  client_options.connect_timeout = connect_timeout;
  client_options.read_timeout = read_timeout;
  client_options.total_timeout = std::chrono::milliseconds(0);  // bodies of any length
  client_options.max_idle_per_upstream = keepalive;
  client_options.tls_verify = !no_tls_verify;
  client_options.tls_ca_file = ca_file;
  proxy::Forwarder forwarder(upstreams->get(), client_options);

  router::Router router;
  router::RouteOptions route;
  // Bodies of any size, streamed: the proxy holds a piece at a time.
  route.body = router::BodyMode::kStreamed;
  route.max_body_bytes = router::kUnlimitedBody;
  const router::Registration r = router.SetAsyncFallback(
      [&forwarder](async::Exchange& ex) { return forwarder.Handle(ex); }, route);
  if (!r.ok()) {
    std::cerr << "proxy: " << r.status().message() << "\n";
    return 1;
  }

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  const absl::Status status =
      server.Run([](const serving::Server& s) { std::cout << s.ReadyLine() << std::endl; });
  if (!status.ok()) {
    std::cerr << "proxy: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
