// Routes the integration tests serve: FAST and SLOW handlers whose answers
// show which request they answer (so order and content can be checked).
#ifndef URING_HTTP_TEST_SERVING_TEST_ROUTES_H_
#define URING_HTTP_TEST_SERVING_TEST_ROUTES_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/router/router.h"

namespace uring_http::testing {

struct RouteLog {
  std::mutex mu;
  std::vector<std::string> slow_started;  // query strings, in the order workers took them
};

inline router::Router MakeTestRouter(std::shared_ptr<RouteLog> log = nullptr) {
  using http::Request;
  using http::Response;
  router::Router r;
  (void)r.Fast("GET", "/fast", [](const Request&, Response&) {});
  (void)r.Fast("GET", "/echo", [](const Request& req, Response& resp) {
    resp.set_body(std::string(req.query));
  });
  (void)r.Fast("POST", "/echo", [](const Request& req, Response& resp) {
    resp.set_body(std::string(req.body));
  });
  (void)r.Fast("GET", "/throw", [](const Request&, Response&) {
    throw std::runtime_error("handler failure");
  });
  (void)r.Fast("GET", "/big", [](const Request& req, Response& resp) {
    const size_t n = req.query.empty() ? 200000 : std::strtoul(std::string(req.query).c_str(),
                                                                 nullptr, 10);
    resp.body().assign(n, 'b');
  });
  // GET /fill?<n>-<c>: n bytes of the character c (tells responses apart).
  (void)r.Fast("GET", "/fill", [](const Request& req, Response& resp) {
    std::string q(req.query);
    const size_t dash = q.find('-');
    const size_t n = std::strtoul(q.substr(0, dash).c_str(), nullptr, 10);
    resp.body().assign(n, dash == std::string::npos ? 'f' : q[dash + 1]);
  });
  // GET /slow?<ms>-<tag>: sleeps <ms> on a worker, answers "slow:<tag>".
  (void)r.Slow("GET", "/slow", [log](const Request& req, Response& resp) {
    std::string q(req.query);
    const size_t dash = q.find('-');
    const int ms = std::atoi(q.substr(0, dash).c_str());
    if (log != nullptr) {
      std::lock_guard<std::mutex> lock(log->mu);
      log->slow_started.push_back(q);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    resp.set_body("slow:" + (dash == std::string::npos ? std::string() : q.substr(dash + 1)));
  });
  (void)r.Slow("POST", "/slow", [](const Request& req, Response& resp) {
    resp.set_body(std::to_string(req.body.size()));
  });
  (void)r.Slow("GET", "/slowbig", [](const Request&, Response& resp) {
    resp.body().assign(100000, 's');
  });
  // POST /slow-echo: the body back from a worker, as a view of the request's
  // bytes (the server must copy it before the task's memory goes).
  (void)r.Slow("POST", "/slow-echo", [](const Request& req, Response& resp) {
    resp.set_static_body(req.body);
  });
  // POST /sink: a streamed body of any size, answered with its length.
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;
  streamed.max_body_bytes = router::kUnlimitedBody;
  (void)r.Slow("POST", "/sink", [](const Request& req, Response& resp) {
    char buf[65536];
    uint64_t total = 0;
    long n;
    while ((n = req.ReadBody(buf, sizeof buf)) > 0) total += static_cast<uint64_t>(n);
    if (n < 0) {
      resp.set_status(400);
      return;
    }
    resp.set_body(std::to_string(total));
  }, streamed);
  // POST /sink-limited: the same within 64 KiB, answering nothing itself
  // when ReadBody() fails (as the README tells a handler): the server must.
  router::RouteOptions limited = streamed;
  limited.max_body_bytes = 64 * 1024;
  (void)r.Slow("POST", "/sink-limited", [](const Request& req, Response& resp) {
    char buf[65536];
    uint64_t total = 0;
    long n;
    while ((n = req.ReadBody(buf, sizeof buf)) > 0) total += static_cast<uint64_t>(n);
    if (n < 0) return;
    resp.set_body(std::to_string(total));
  }, limited);
  // POST /count, /count-limited (64 KiB): the body's length from a FAST sink.
  struct CountingSink : router::BodySink {
    uint64_t total = 0;
    void OnData(std::string_view piece) override { total += piece.size(); }
    void OnEnd(const Request&, Response& resp) override { resp.set_body(std::to_string(total)); }
  };
  (void)r.FastStream("POST", "/count", [](const Request&) {
    return std::make_unique<CountingSink>();
  });
  (void)r.FastStream("POST", "/count-limited", [](const Request&) {
    return std::make_unique<CountingSink>();
  }, 64 * 1024);
  // GET /stream?<n>: n bytes written from a worker in 64 KiB pieces.
  (void)r.Slow("GET", "/stream", [](const Request& req, Response& resp) {
    uint64_t n = std::strtoull(std::string(req.query).c_str(), nullptr, 10);
    const std::string piece(65536, 'w');
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, piece.size()));
      if (!resp.Write(std::string_view(piece.data(), k))) return;
      n -= k;
    }
  });
  return r;
}

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_SERVING_TEST_ROUTES_H_
