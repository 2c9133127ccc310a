#include "src/http/gzip_encoder.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <array>

namespace uring_http::http {
namespace {

struct FreeCompressor {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

libdeflate_compressor* ThreadCompressor(int level) {
  thread_local std::array<std::unique_ptr<libdeflate_compressor, FreeCompressor>, 10> compressors;
  level = std::clamp(level, 1, 9);
  auto& c = compressors[static_cast<size_t>(level)];
  if (!c) c.reset(libdeflate_alloc_compressor(level));
  return c.get();
}

// zlib's gzip wrapper: windowBits + 16.
constexpr int kWindowBits = 14;
constexpr int kMemLevel = 7;

}  // namespace

bool GzipBuffer(std::string_view in, int level, std::string* out) {
  libdeflate_compressor* c = ThreadCompressor(level);
  if (c == nullptr) return false;
  out->resize(libdeflate_gzip_compress_bound(c, in.size()));
  const size_t n = libdeflate_gzip_compress(c, in.data(), in.size(), out->data(), out->size());
  // The bound is enough by definition; 0 would mean it was not.
  if (n == 0) return false;
  out->resize(n);
  return true;
}

GzipStream::GzipStream(int level) : z_(std::make_unique<z_stream_s>()) {
  if (deflateInit2(z_.get(), std::clamp(level, 1, 9), Z_DEFLATED, kWindowBits + 16, kMemLevel,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    z_.reset();  // nothing to deflateEnd
  }
}

GzipStream::~GzipStream() {
  if (z_) deflateEnd(z_.get());
}

bool GzipStream::Deflate(std::string_view data, int flush, std::string* out) {
  if (finished_ || !z_) return false;
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z_->avail_in = static_cast<uInt>(data.size());
  for (;;) {
    // Room for the piece at worst ratio plus the flush marker; more rounds
    // only if zlib still had output pending.
    const size_t old = out->size();
    const size_t room = deflateBound(z_.get(), z_->avail_in) + 64;
    out->resize(old + room);
    z_->next_out = reinterpret_cast<Bytef*>(out->data() + old);
    z_->avail_out = static_cast<uInt>(room);
    const int rc = deflate(z_.get(), flush);
    out->resize(old + room - z_->avail_out);
    if (rc == Z_STREAM_END) return true;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
    // Done when all input is taken and the flush fitted.
    if (z_->avail_in == 0 && z_->avail_out != 0) return flush != Z_FINISH;
  }
}

bool GzipStream::Write(std::string_view data, std::string* out) {
  if (data.empty()) return !finished_;
  return Deflate(data, Z_SYNC_FLUSH, out);
}

bool GzipStream::Finish(std::string* out) {
  const bool ok = Deflate({}, Z_FINISH, out);
  finished_ = true;
  return ok;
}

}  // namespace uring_http::http
