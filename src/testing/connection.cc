#include "src/testing/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uring_http::testing::internal {
namespace {

// poll()'s timeout for `deadline`: rounded up, so that a wait ends at or
// after the deadline rather than spinning just before it.
int PollTimeoutMs(Deadline deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 1 << 30));
}

// Waits for `events` on fd: OK, or DEADLINE_EXCEEDED.
absl::Status WaitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, PollTimeoutMs(deadline));
    if (n > 0) return absl::OkStatus();  // ready, or an error the next call reports
    if (n == 0) return absl::DeadlineExceededError("timed out");
    if (errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
  }
}

std::string Endpoint(const ClientOptions& options) {
  const bool v6 = options.host.find(':') != std::string::npos;
  return v6 ? absl::StrCat("[", options.host, "]:", options.port)
            : absl::StrCat(options.host, ":", options.port);
}

// A connected non-blocking TCP socket, closed with the object.
class Socket {
 public:
  static absl::StatusOr<Socket> Connect(const ClientOptions& options, Deadline deadline) {
    sockaddr_storage storage{};
    socklen_t length = 0;
    const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(options.port);
      length = sizeof(*v4);
    } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(options.port);
      length = sizeof(*v6);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("host \"", options.host, "\" is not an IPv4 or IPv6 address"));
    }
    Socket s(socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (s.fd_ < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
    const int one = 1;
    setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int err = 0;
    if (connect(s.fd_, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        absl::Status waited = WaitFor(s.fd_, POLLOUT, deadline);
        if (!waited.ok()) {
          return absl::DeadlineExceededError(
              absl::StrCat("connecting to ", Endpoint(options), " timed out"));
        }
        socklen_t size = sizeof(err);
        getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &size);
      }
    }
    if (err != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", Endpoint(options), ": ", std::strerror(err)));
    }
    return s;
  }

  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Write(std::string_view data, Deadline deadline) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        absl::Status s = WaitFor(fd_, POLLOUT, deadline);
        if (absl::IsDeadlineExceeded(s)) {
          return absl::DeadlineExceededError("timed out sending (the server does not read)");
        }
        if (!s.ok()) return s;
        continue;
      }
      return absl::UnavailableError(
          absl::StrCat("the connection broke while sending (", std::strerror(errno), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(std::string* buffer, Deadline deadline) {
    char chunk[16384];
    for (;;) {
      const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n >= 0) {
        buffer->append(chunk, static_cast<size_t>(n));
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        absl::Status s = WaitFor(fd_, POLLIN, deadline);
        if (!s.ok()) return s;
        continue;
      }
      return absl::UnavailableError(
          absl::StrCat("the connection broke (", std::strerror(errno), ")"));
    }
  }

 private:
  int fd_ = -1;
};

class PlainConnection : public Connection {
 public:
  explicit PlainConnection(Socket socket) : socket_(std::move(socket)) {}
  absl::Status Write(std::string_view data, Deadline deadline) override {
    return socket_.Write(data, deadline);
  }
  absl::StatusOr<size_t> Read(std::string* buffer, Deadline deadline) override {
    return socket_.Read(buffer, deadline);
  }

 private:
  Socket socket_;
};

// OpenSSL's error queue, emptied, as text.
std::string OpenSslErrors() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(e, line, sizeof(line));
    if (!text.empty()) text += "; ";
    text += line;
  }
  return text.empty() ? "no detail from OpenSSL" : text;
}

}  // namespace

class TlsClientContext {
 public:
  explicit TlsClientContext(SSL_CTX* ctx) : ctx_(ctx) {}
  ~TlsClientContext() { SSL_CTX_free(ctx_); }
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;
  SSL_CTX* get() const { return ctx_; }

 private:
  SSL_CTX* ctx_;
};

absl::StatusOr<std::shared_ptr<TlsClientContext>> MakeTlsClientContext(
    const ClientOptions& options) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_client_method());
  if (raw == nullptr) return absl::InternalError("SSL_CTX_new: " + OpenSslErrors());
  auto ctx = std::make_shared<TlsClientContext>(raw);
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  if (options.tls_ca_files.empty()) {
    SSL_CTX_set_verify(raw, SSL_VERIFY_NONE, nullptr);
    return ctx;
  }
  for (const std::string& file : options.tls_ca_files) {
    if (SSL_CTX_load_verify_locations(raw, file.c_str(), nullptr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load trusted certificates from ", file, ": ", OpenSslErrors()));
    }
  }
  // A server's own certificate (no CA above it) is an anchor too.
  X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(raw), X509_V_FLAG_PARTIAL_CHAIN);
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

namespace {

// TLS over memory BIOs: OpenSSL reads what Read() received and leaves what
// it wants sent in wbio_, which Flush() sends.
class TlsConnection : public Connection {
 public:
  TlsConnection(Socket socket, std::shared_ptr<TlsClientContext> ctx)
      : socket_(std::move(socket)), ctx_(std::move(ctx)), ssl_(SSL_new(ctx_->get())) {}
  ~TlsConnection() override {
    if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIOs
  }

  absl::Status Handshake(const ClientOptions& options, Deadline deadline) {
    if (ssl_ == nullptr) return absl::InternalError("SSL_new: " + OpenSslErrors());
    BIO* rbio = BIO_new(BIO_s_mem());
    BIO* wbio = BIO_new(BIO_s_mem());
    if (rbio == nullptr || wbio == nullptr) {
      BIO_free(rbio);
      BIO_free(wbio);
      return absl::InternalError("BIO_new failed");
    }
    // An empty memory BIO means "nothing yet", not end of file.
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(ssl_, rbio, wbio);
    wbio_ = wbio;
    rbio_ = rbio;
    if (!options.tls_server_name.empty()) {
      SSL_set_tlsext_host_name(ssl_, options.tls_server_name.c_str());
      if (!options.tls_ca_files.empty()) SSL_set1_host(ssl_, options.tls_server_name.c_str());
    }
    SSL_set_connect_state(ssl_);
    for (;;) {
      ERR_clear_error();
      const int r = SSL_do_handshake(ssl_);
      absl::Status flushed = Flush(deadline);
      if (r == 1) return flushed;
      const int err = SSL_get_error(ssl_, r);
      if (err == SSL_ERROR_WANT_READ) {
        if (!flushed.ok()) return flushed;
        absl::Status s = Receive(deadline);
        if (s.ok()) continue;
        if (absl::IsDeadlineExceeded(s)) {
          return absl::DeadlineExceededError("the TLS handshake timed out");
        }
        return absl::UnavailableError(absl::StrCat("the TLS handshake failed: ", s.message()));
      }
      const long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        return absl::UnavailableError(
            absl::StrCat("the TLS handshake failed: the server's certificate is not trusted (",
                         X509_verify_cert_error_string(verify), ")"));
      }
      return absl::UnavailableError(
          absl::StrCat("the TLS handshake failed: ", OpenSslErrors()));
    }
  }

  absl::Status Write(std::string_view data, Deadline deadline) override {
    while (!data.empty()) {
      ERR_clear_error();
      size_t written = 0;
      // Into the memory BIO: always whole, unless the session is broken.
      if (SSL_write_ex(ssl_, data.data(), data.size(), &written) != 1) {
        return absl::UnavailableError(absl::StrCat("TLS write failed: ", OpenSslErrors()));
      }
      data.remove_prefix(written);
      absl::Status s = Flush(deadline);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(std::string* buffer, Deadline deadline) override {
    char chunk[16384];
    for (;;) {
      ERR_clear_error();
      size_t n = 0;
      const int r = SSL_read_ex(ssl_, chunk, sizeof(chunk), &n);
      // Post-handshake messages (tickets, key updates) may want an answer.
      absl::Status flushed = Flush(deadline);
      if (r == 1) {
        buffer->append(chunk, n);
        return n;
      }
      const int err = SSL_get_error(ssl_, r);
      if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};  // close_notify
      if (err != SSL_ERROR_WANT_READ) {
        return absl::UnavailableError(absl::StrCat("TLS read failed: ", OpenSslErrors()));
      }
      if (!flushed.ok() && !absl::IsDeadlineExceeded(flushed)) return flushed;
      absl::Status s = Receive(deadline);
      if (absl::IsOutOfRange(s)) return size_t{0};  // closed without close_notify
      if (!s.ok()) return s;
    }
  }

 private:
  // Sends what OpenSSL has queued.
  absl::Status Flush(Deadline deadline) {
    char chunk[16384];
    for (;;) {
      const int n = BIO_read(wbio_, chunk, sizeof(chunk));
      if (n <= 0) return absl::OkStatus();
      absl::Status s = socket_.Write(std::string_view(chunk, static_cast<size_t>(n)), deadline);
      if (!s.ok()) return s;
    }
  }

  // Feeds OpenSSL what the socket has; OUT_OF_RANGE at end of file.
  absl::Status Receive(Deadline deadline) {
    std::string bytes;
    absl::StatusOr<size_t> n = socket_.Read(&bytes, deadline);
    if (!n.ok()) return n.status();
    if (*n == 0) return absl::OutOfRangeError("closed");
    BIO_write(rbio_, bytes.data(), static_cast<int>(bytes.size()));
    return absl::OkStatus();
  }

  Socket socket_;
  std::shared_ptr<TlsClientContext> ctx_;
  SSL* ssl_;
  BIO* rbio_ = nullptr;  // owned by ssl_
  BIO* wbio_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const ClientOptions& options, const std::shared_ptr<TlsClientContext>& tls,
    Deadline deadline) {
  absl::StatusOr<Socket> socket = Socket::Connect(options, deadline);
  if (!socket.ok()) return socket.status();
  if (tls == nullptr) return std::make_unique<PlainConnection>(*std::move(socket));
  auto connection = std::make_unique<TlsConnection>(*std::move(socket), tls);
  absl::Status s = connection->Handshake(options, deadline);
  if (!s.ok()) return s;
  return connection;
}

}  // namespace uring_http::testing::internal
