// FakeUpstream: a scripted HTTP/1.1 server on 127.0.0.1 for the client's
// tests, one thread, one connection at a time. For each request it reads
// (the head, then a Content-Length or chunked body) it calls the script,
// which writes whatever bytes it likes (well-formed or not) and says
// whether to keep the connection. It counts connections and keeps every
// request's raw bytes.
#ifndef URING_HTTP_TEST_CLIENT_FAKE_UPSTREAM_H_
#define URING_HTTP_TEST_CLIENT_FAKE_UPSTREAM_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace uring_http::client::testing {

inline bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

class FakeUpstream {
 public:
  // (fd, the request's raw bytes, its index on the connection) -> keep the
  // connection open for another request?
  using Script = std::function<bool(int fd, const std::string& request, int index)>;

  explicit FakeUpstream(Script script) : script_(std::move(script)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 64) != 0) {
      std::abort();
    }
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~FakeUpstream() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  std::string url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  int connections() const { return connections_.load(); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Reads one request; false when the peer went (or stop).
  bool ReadRequest(int fd, std::string& buffered, std::string& request) {
    auto fill = [&]() {
      for (;;) {
        if (stop_) return false;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 50) == 0) continue;
        char buf[65536];
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) return false;
        buffered.append(buf, static_cast<size_t>(n));
        return true;
      }
    };
    size_t head_end;
    while ((head_end = buffered.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return false;
    }
    head_end += 4;
    std::string head = buffered.substr(0, head_end);
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t total = head_end;
    if (const size_t cl = lower.find("\r\ncontent-length:"); cl != std::string::npos) {
      total += std::strtoull(head.c_str() + cl + 17, nullptr, 10);
      while (buffered.size() < total) {
        if (!fill()) return false;
      }
    } else if (lower.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      size_t end;
      while ((end = buffered.find("\r\n0\r\n\r\n", head_end - 2)) == std::string::npos) {
        if (!fill()) return false;
      }
      total = end + 7;
    }
    request = buffered.substr(0, total);
    buffered.erase(0, total);
    return true;
  }

  void Run() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      std::string buffered;
      std::string request;
      for (int index = 0; ReadRequest(fd, buffered, request); ++index) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(request);
        }
        if (!script_(fd, request, index)) break;
      }
      close(fd);
    }
  }

  Script script_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace uring_http::client::testing

#endif  // URING_HTTP_TEST_CLIENT_FAKE_UPSTREAM_H_
