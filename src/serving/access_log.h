// AccessLog: one accept thread's access log writer (Common Log Format).
//
// Lines are formatted into one of two in-memory buffers; a full buffer (or,
// every timer tick, a non-empty one) goes to the file with an IORING_OP_WRITE
// on the thread's own ring while the other buffer fills. The ring thread never
// blocks on the disk: if the disk falls so far behind that both buffers are
// full, lines are dropped and counted instead. All threads append to the same
// O_APPEND file; each write lands whole.
//
// Thread-safety: owned by its ring thread.
#ifndef URING_HTTP_SRC_SERVING_ACCESS_LOG_H_
#define URING_HTTP_SRC_SERVING_ACCESS_LOG_H_

#include <liburing.h>
#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "src/http/client_address.h"
#include "src/io/ring.h"

namespace uring_http::serving {

class AccessLog {
 public:
  static constexpr size_t kBufferSize = 64 * 1024;

  // `fd` is the shared log file (opened O_APPEND by the server), `user_data`
  // tags this log's write completions.
  void Init(int fd, io::Ring* ring, uint64_t user_data);
  bool enabled() const { return fd_ >= 0; }

  // One line: host - - [date] "request line" status bytes
  // and, when the answer carried an X-Request-Id: ... bytes "request id"
  void Append(const http::ClientAddress* client, std::string_view request_line, int status,
              size_t body_bytes, std::string_view request_id = {});
  // Starts writing the filled buffer if no write is in flight.
  void Flush();
  // The write completed with `res`.
  void OnWritten(int res);
  // At exit: writes everything out, waiting for the ring (blocking is fine then).
  void FlushAndWait();

  uint64_t dropped() const { return dropped_; }
  uint64_t write_errors() const { return write_errors_; }

 private:
  void Submit();

  int fd_ = -1;
  io::Ring* ring_ = nullptr;
  uint64_t user_data_ = 0;
  std::unique_ptr<char[]> buffers_[2];
  size_t fill_[2] = {0, 0};
  int active_ = 0;          // the buffer lines go into
  bool inflight_ = false;   // the other buffer is being written
  size_t written_ = 0;      // of the in-flight buffer, after a short write
  uint64_t dropped_ = 0;
  uint64_t write_errors_ = 0;
  time_t date_second_ = -1;
  char date_[40];
  size_t date_len_ = 0;
};

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_ACCESS_LOG_H_
