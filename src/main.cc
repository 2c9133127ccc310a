// The shipped server: the reference design's two endpoints on the library.
//
//   GET /test/fast  200, answered inline on the accept thread
//   GET /test/slow  200 after --slow-duration ms on a worker thread
//   GET /test/bytes?N  200 with an N-byte body (N <= 1 MiB), for measuring
//                   large responses (--send-zc) with wrk
//
// Run: bazel run //src:server -- --workers=300
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <cstdio>
#include <thread>

#include "src/serving/options.h"
#include "src/serving/server.h"
#include "src/serving/systemd_notify.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;

}  // namespace

int main(int argc, char** argv) {
  auto options = uring_http::serving::ParseOptions(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "uring-http: %s\nTry '%s --help'.\n",
                 std::string(options.status().message()).c_str(), argv[0]);
    return 2;
  }
  if (options->help) {
    std::fputs(uring_http::serving::UsageText(argv[0]).c_str(), stdout);
    return 0;
  }

  uring_http::router::Router router;
  (void)router.Fast("GET", "/test/fast", [](const Request&, Response&) {});
  const auto slow = std::chrono::milliseconds(options->slow_duration_ms);
  (void)router.Slow("GET", "/test/slow",
                    [slow](const Request&, Response&) { std::this_thread::sleep_for(slow); });

  // The body is built per request, as a handler's would be; N is capped so a
  // client cannot make the server allocate without bound.
  (void)router.Fast("GET", "/test/bytes", [](const Request& request, Response& response) {
    constexpr size_t kMaxBytes = size_t{1} << 20;
    size_t n = 0;
    bool ok = !request.query.empty() && request.query.size() <= 7;
    for (char ch : request.query) {
      ok = ok && ch >= '0' && ch <= '9';
      n = n * 10 + static_cast<size_t>(ch - '0');
    }
    if (!ok || n > kMaxBytes) {
      response.set_status(400);
      response.set_body("expected /test/bytes?N with N in [0, 1048576]\n");
      return;
    }
    response.body().assign(n, 'x');
  });
  if (options->daemonize && daemon(/*nochdir=*/0, /*noclose=*/0) != 0) {
    std::perror("uring-http: daemon");
    return 1;
  }

  uring_http::serving::ServerConfig config = options->config;
  config.handle_signals = true;
  uring_http::serving::Server server(config, std::move(router));
  server.set_on_stop([] { uring_http::serving::SystemdNotify("STOPPING=1"); });
  const std::string pid_file = options->pid_file;
  bool pid_written = false;
  absl::Status status = server.Run([&](const uring_http::serving::Server& s) {
    std::printf("%s\n", s.ReadyLine().c_str());
    std::fflush(stdout);
    if (!pid_file.empty()) {
      if (FILE* f = std::fopen(pid_file.c_str(), "w")) {
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
        pid_written = true;
      } else {
        std::fprintf(stderr, "uring-http: cannot write --pid-file %s: %s\n", pid_file.c_str(),
                     std::strerror(errno));
      }
    }
    uring_http::serving::SystemdNotify("READY=1\nMAINPID=" + std::to_string(getpid()));
  });
  if (pid_written) std::remove(pid_file.c_str());
  if (!status.ok()) {
    std::fprintf(stderr, "uring-http: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
