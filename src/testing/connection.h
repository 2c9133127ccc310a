// The test client's connection: a TCP socket to the server, plain or with
// TLS, whose every operation waits at most until a deadline. The socket is
// non-blocking and waited on with poll(); TLS runs over memory buffers, so
// that every byte crosses with send(MSG_NOSIGNAL)/recv() and a server that
// has gone cannot raise SIGPIPE in the test's process.
//
// Thread-safety: one thread at a time (the Client's lock).
#ifndef URING_HTTP_SRC_TESTING_CONNECTION_H_
#define URING_HTTP_SRC_TESTING_CONNECTION_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "uring_http/testing.h"

namespace uring_http::testing::internal {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
// A deadline long past: an operation takes only what is there already.
inline constexpr Deadline kNoWait{};

// The TLS settings of a client (an SSL_CTX), shared by its connections so
// that the trust store is read once.
class TlsClientContext;
absl::StatusOr<std::shared_ptr<TlsClientContext>> MakeTlsClientContext(
    const ClientOptions& options);

class Connection {
 public:
  // Connects (and with `tls`, completes the handshake) by `deadline`.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const ClientOptions& options, const std::shared_ptr<TlsClientContext>& tls,
      Deadline deadline);
  virtual ~Connection() = default;

  // All of `data`, or an error: DEADLINE_EXCEEDED, or UNAVAILABLE when the
  // server closed or reset the connection.
  virtual absl::Status Write(std::string_view data, Deadline deadline) = 0;
  // Appends what arrives (at least one byte) to *buffer and returns how
  // much; 0 when the server has closed its side. DEADLINE_EXCEEDED if
  // nothing came by `deadline` (a deadline already past: nothing was
  // waiting), UNAVAILABLE on a reset.
  virtual absl::StatusOr<size_t> Read(std::string* buffer, Deadline deadline) = 0;
};

}  // namespace uring_http::testing::internal

#endif  // URING_HTTP_SRC_TESTING_CONNECTION_H_
