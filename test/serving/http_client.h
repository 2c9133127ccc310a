// A blocking HTTP/1.1 test client over a real TCP socket: enough to drive the
// server the way wrk, ab and curl do, and to see exactly what comes back
// (status, headers, body, and whether the server closed the connection).
#ifndef URING_HTTP_TEST_SERVING_HTTP_CLIENT_H_
#define URING_HTTP_TEST_SERVING_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace uring_http::testing {

struct HttpResponse {
  int status = 0;
  std::string status_line;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  bool Closes() const { return Header("connection") == "close"; }
};

class TestClient {
 public:
  // receive_buffer > 0: SO_RCVBUF before connecting, so the window stays
  // small and the server's data waits in its own send queue. The MSS shrinks
  // with it: loopback's 64 KiB MSS would keep a window that small shut (the
  // receiver never advertises less than one MSS) and crawl on zero-window
  // probes.
  // `source`: the local address to connect from ("127.0.0.2": another
  // client of the loopback's 127/8, for per-client limits); null: any.
  explicit TestClient(uint16_t port, int timeout_ms = 10000, int receive_buffer = 0,
                      const char* source = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    }
    if (receive_buffer > 0) {
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
      const int mss = 1024;
      setsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~TestClient() { Close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // Closes with RST (SO_LINGER 0): a peer that vanishes.
  void Reset() {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    Close();
  }

  // Reads one response. `head` = the request was HEAD (no body follows).
  std::optional<HttpResponse> ReadResponse(bool head = false) {
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    HttpResponse r;
    std::string_view headers(buffer_.data(), end);
    size_t line_end = headers.find("\r\n");
    r.status_line = std::string(headers.substr(0, line_end));
    if (r.status_line.size() < 12 || r.status_line.compare(0, 5, "HTTP/") != 0) {
      return std::nullopt;
    }
    r.status = std::atoi(r.status_line.c_str() + 9);
    while (line_end != std::string_view::npos) {
      headers.remove_prefix(line_end + 2);
      line_end = headers.find("\r\n");
      std::string_view line = headers.substr(0, line_end);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name(line.substr(0, colon));
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      r.headers[name] = std::string(value);
    }
    buffer_.erase(0, end + 4);
    if (r.status >= 200 && !head && r.status != 204 && r.status != 304) {
      const size_t length = static_cast<size_t>(std::atoll(r.Header("content-length").c_str()));
      while (buffer_.size() < length) {
        if (!Fill()) return std::nullopt;
      }
      r.body = buffer_.substr(0, length);
      buffer_.erase(0, length);
    }
    return r;
  }

  // True when the server has closed the connection (EOF or reset) and sent
  // nothing more.
  bool ReadEof() {
    if (!buffer_.empty()) return false;
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    if (n == 0) return true;
    if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return true;
    if (n > 0) buffer_.push_back(c);
    return false;
  }

  const std::string& pending() const { return buffer_; }

 private:
  bool Fill() {
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buffer_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

inline std::string Get(std::string_view path, std::string_view extra_headers = "") {
  return std::string("GET ") + std::string(path) + " HTTP/1.1\r\nHost: test\r\n" +
         std::string(extra_headers) + "\r\n";
}

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_SERVING_HTTP_CLIENT_H_
