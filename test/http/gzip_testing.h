// A gzip decoder for tests (zlib's inflate), so that what the server sends
// is checked by decoding it, not by comparing compressed bytes.
#ifndef URING_HTTP_TEST_HTTP_GZIP_TESTING_H_
#define URING_HTTP_TEST_HTTP_GZIP_TESTING_H_

#include <zlib.h>

#include <optional>
#include <string>
#include <string_view>

namespace uring_http::http::testing {

// Incremental: Feed() what arrived, read decoded() at any point (what
// a client could show so far); ended() once the gzip trailer was checked.
class GunzipStream {
 public:
  GunzipStream() { ok_ = inflateInit2(&z_, 15 + 16) == Z_OK; }
  ~GunzipStream() { inflateEnd(&z_); }
  GunzipStream(const GunzipStream&) = delete;
  GunzipStream& operator=(const GunzipStream&) = delete;

  bool Feed(std::string_view in) {
    if (!ok_ || ended_) return in.empty();
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    char buf[16384];
    do {
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof(buf);
      const int rc = inflate(&z_, Z_SYNC_FLUSH);
      decoded_.append(buf, sizeof(buf) - z_.avail_out);
      if (rc == Z_STREAM_END) {
        ended_ = true;
        return z_.avail_in == 0;  // nothing may follow the member
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) return ok_ = false;
      if (rc == Z_BUF_ERROR && z_.avail_in == 0) break;
    } while (z_.avail_in > 0 || z_.avail_out == 0);
    return true;
  }
  const std::string& decoded() const { return decoded_; }
  bool ended() const { return ended_; }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool ended_ = false;
  std::string decoded_;
};

// A whole gzip member, decoded; nullopt if it is not exactly one valid one.
inline std::optional<std::string> Gunzip(std::string_view in) {
  GunzipStream s;
  if (!s.Feed(in) || !s.ended()) return std::nullopt;
  return s.decoded();
}

}  // namespace uring_http::http::testing

#endif  // URING_HTTP_TEST_HTTP_GZIP_TESTING_H_
