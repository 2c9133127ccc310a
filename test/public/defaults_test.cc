// A ServerConfig built by hand has the command line's defaults: as many
// workers and accept threads as CPUs, so SLOW requests sent at once run at
// once (issue 23 item 1: it had one of each, so the README's "Adding an
// endpoint" example answered three 500 ms requests in 0.5, 1.0 and 1.5 s).
//
// Through the public header only, over real sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace {

using namespace uring_http;

// The whole answer to one GET on its own connection ("" if it failed).
std::string Get(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  close(fd);
  return response;
}

// As many requests as the machine has CPUs (up to 8), sent at once. Each
// handler waits until all of them have started (or a generous 10 s passes)
// before it finishes: with fewer workers than requests the last cannot
// start until one finishes, so the deadline passes and the test sees it. No
// timing of the machine is assumed: a slow machine only takes longer to get
// them all in.
int Requests() { return static_cast<int>(std::min(8u, std::thread::hardware_concurrency())); }

struct Overlap {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  int finished = 0;
  int started_before_first_finish = -1;  // how many had started when one finished
};

TEST(DefaultsTest, AHandBuiltConfigRunsAsManySlowRequestsAtOnceAsThereAreCpus) {
  const int n = Requests();
  if (n < 2) GTEST_SKIP() << "one CPU: one worker is the default";
  Overlap overlap;
  router::Router router;
  ASSERT_TRUE(router
                  .Slow("GET", "/slow",
                        [&overlap, n](const http::Request&, http::Response& r) {
                          std::unique_lock<std::mutex> lock(overlap.mu);
                          ++overlap.started;
                          overlap.cv.notify_all();
                          overlap.cv.wait_for(lock, std::chrono::seconds(10),
                                              [&overlap, n] { return overlap.started >= n; });
                          if (overlap.finished++ == 0) {
                            overlap.started_before_first_finish = overlap.started;
                          }
                          r.set_static_body("done\n");
                        })
                  .ok());
  serving::ServerConfig config;  // nothing but where to listen
  config.address = "127.0.0.1";
  config.port = 0;
  serving::Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::string> answers(n);
  std::vector<std::thread> clients;
  for (int i = 0; i < n; ++i) {
    clients.emplace_back([&answers, &server, i] { answers[i] = Get(server.port(), "/slow"); });
  }
  for (std::thread& t : clients) t.join();
  server.Stop();
  server.Wait();

  for (const std::string& answer : answers) {
    EXPECT_EQ(answer.substr(0, 15), "HTTP/1.1 200 OK") << answer;
  }
  // All of them were running before any of them finished.
  EXPECT_EQ(overlap.started_before_first_finish, n)
      << "workers: " << server.config().workers
      << ", accept threads: " << server.config().accept_threads;
}

// The same defaults as an empty command line's.
TEST(DefaultsTest, AHandBuiltConfigIsAnEmptyCommandLines) {
  char program[] = "app";
  char* argv[] = {program, nullptr};
  absl::StatusOr<serving::Options> parsed = serving::TryParseOptions(1, argv);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const serving::ServerConfig by_hand;
  const serving::ServerConfig& c = parsed->config;
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(by_hand.accept_threads, cpus);
  EXPECT_EQ(by_hand.workers, cpus);
  EXPECT_EQ(c.accept_threads, by_hand.accept_threads);
  EXPECT_EQ(c.workers, by_hand.workers);
  EXPECT_EQ(c.port, by_hand.port);
  EXPECT_EQ(c.address, by_hand.address);
  EXPECT_EQ(c.accept_capacity, by_hand.accept_capacity);
  EXPECT_EQ(c.limits.max_body_bytes, by_hand.limits.max_body_bytes);
  EXPECT_EQ(c.header_timeout_ms, by_hand.header_timeout_ms);
  EXPECT_EQ(c.tls.offload, by_hand.tls.offload);
  EXPECT_EQ(c.tls.workers, by_hand.tls.workers);
}

}  // namespace
