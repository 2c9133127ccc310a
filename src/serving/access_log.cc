#include "src/serving/access_log.h"

#include <arpa/inet.h>
#include <time.h>

#include <cstdio>
#include <cstring>

namespace uring_http::serving {

void AccessLog::Init(int fd, io::Ring* ring, uint64_t user_data) {
  fd_ = fd;
  ring_ = ring;
  user_data_ = user_data;
  if (fd_ < 0) return;
  buffers_[0] = std::make_unique<char[]>(kBufferSize);
  buffers_[1] = std::make_unique<char[]>(kBufferSize);
}

namespace {

// Client bytes inside the line's quotes: a '"' would break the format's
// quoting, so it (and anything not printable) is escaped as in nginx
// ("\x22"). Stops short of `room`, keeping 40 bytes for the line's end.
size_t AppendQuoted(std::string_view text, char* p, size_t len, size_t room) {
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\' || u < 0x20 || u >= 0x7f) {
      if (len + 4 >= room - 40) break;
      len += static_cast<size_t>(std::snprintf(p + len, 5, "\\x%02X", u));
    } else {
      p[len++] = ch;
    }
  }
  return len;
}

}  // namespace

void AccessLog::Append(const http::ClientAddress* client, std::string_view request_line, int status,
                       size_t body_bytes, std::string_view request_id) {
  if (fd_ < 0) return;
  timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  if (now.tv_sec != date_second_) {
    date_second_ = now.tv_sec;
    tm parts;
    gmtime_r(&now.tv_sec, &parts);
    date_len_ = strftime(date_, sizeof(date_), "[%d/%b/%Y:%H:%M:%S +0000]", &parts);
  }
  char host[http::ClientAddress::kMaxText] = "-";
  if (client != nullptr) client->Format(host);
  if (request_line.size() > 2048) request_line = request_line.substr(0, 2048);
  char bytes[24] = "-";
  if (body_bytes > 0) std::snprintf(bytes, sizeof(bytes), "%zu", body_bytes);
  if (request_id.size() > 128) request_id = request_id.substr(0, 128);
  const size_t need =
      std::strlen(host) + date_len_ + 4 * (request_line.size() + request_id.size()) + 64;
  if (fill_[active_] + need > kBufferSize) {
    Flush();
    if (fill_[active_] + need > kBufferSize) {
      ++dropped_;  // both buffers full: the disk is far behind
      return;
    }
  }
  char* p = buffers_[active_].get() + fill_[active_];
  const size_t room = kBufferSize - fill_[active_];
  int n = std::snprintf(p, room, "%s - - %.*s \"", host, static_cast<int>(date_len_), date_);
  size_t len = AppendQuoted(request_line, p, static_cast<size_t>(n), room);
  n = std::snprintf(p + len, room - len, "\" %d %s", status, bytes);
  len += static_cast<size_t>(n);
  if (!request_id.empty()) {
    // An echoed id is the client's too (visible ASCII, but it may hold '"').
    p[len++] = ' ';
    p[len++] = '"';
    len = AppendQuoted(request_id, p, len, room);
    p[len++] = '"';
  }
  p[len++] = '\n';
  fill_[active_] += len;
  if (fill_[active_] > kBufferSize / 2) Flush();
}

void AccessLog::Flush() {
  if (fd_ < 0 || inflight_ || fill_[active_] == 0) return;
  active_ ^= 1;  // the filled buffer goes to the disk, the other one fills
  inflight_ = true;
  written_ = 0;
  Submit();
}

void AccessLog::Submit() {
  const int idx = active_ ^ 1;
  io_uring_sqe* sqe = ring_->GetSqe();
  // Offset -1: the file position, which O_APPEND puts at the end. A regular
  // file write goes to io-wq, so the ring thread never waits for the disk.
  io_uring_prep_write(sqe, fd_, buffers_[idx].get() + written_,
                      static_cast<unsigned>(fill_[idx] - written_), static_cast<__u64>(-1));
  io_uring_sqe_set_data64(sqe, user_data_);
}

void AccessLog::OnWritten(int res) {
  const int idx = active_ ^ 1;
  if (res < 0) {
    ++write_errors_;
    written_ = fill_[idx];  // give up on this buffer rather than loop
  } else {
    written_ += static_cast<size_t>(res);
  }
  if (written_ < fill_[idx] && res > 0) {
    Submit();  // short write: the rest
    return;
  }
  fill_[idx] = 0;
  inflight_ = false;
  if (fill_[active_] > kBufferSize / 2) Flush();
}

void AccessLog::FlushAndWait() {
  if (fd_ < 0) return;
  for (int round = 0; round < 4 && (inflight_ || fill_[active_] > 0); ++round) {
    Flush();
    while (inflight_) {
      io_uring_cqe* cqe = nullptr;
      io_uring_submit(ring_->raw());
      if (io_uring_wait_cqe(ring_->raw(), &cqe) != 0) return;
      const uint64_t ud = cqe->user_data;
      const int res = cqe->res;
      io_uring_cqe_seen(ring_->raw(), cqe);
      if (ud == user_data_) OnWritten(res);
    }
  }
}

}  // namespace uring_http::serving
