#include "src/ws/deflate.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace uring_http::ws {
namespace {

constexpr unsigned char kTail[4] = {0x00, 0x00, 0xFF, 0xFF};
constexpr int kLevel = 6;

}  // namespace

Deflater::Deflater(int window_bits, int mem_level, bool context_takeover)
    : z_(std::make_unique<z_stream_s>()), takeover_(context_takeover) {
  std::memset(z_.get(), 0, sizeof(z_stream_s));
  // Negative window bits: raw DEFLATE, no zlib header or checksum.
  if (deflateInit2(z_.get(), kLevel, Z_DEFLATED, -std::clamp(window_bits, 9, 15),
                   std::clamp(mem_level, 1, 9), Z_DEFAULT_STRATEGY) != Z_OK) {
    z_.reset();
  }
}

Deflater::~Deflater() {
  if (z_ != nullptr) deflateEnd(z_.get());
}

bool Deflater::Compress(std::string_view message, std::string* out) {
  if (z_ == nullptr) return false;
  const size_t start = out->size();
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(message.data()));
  z_->avail_in = static_cast<uInt>(message.size());
  // Z_SYNC_FLUSH ends the message on a byte boundary with the empty stored
  // block 00 00 FF FF, which is left off (RFC 7692 7.2.1).
  for (;;) {
    const size_t room = std::max<size_t>(deflateBound(z_.get(), z_->avail_in) + 16, 64);
    const size_t at = out->size();
    out->resize(at + room);
    z_->next_out = reinterpret_cast<Bytef*>(out->data() + at);
    z_->avail_out = static_cast<uInt>(room);
    const int rc = deflate(z_.get(), Z_SYNC_FLUSH);
    out->resize(at + room - z_->avail_out);
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      out->resize(start);
      deflateReset(z_.get());
      return false;
    }
    if (z_->avail_in == 0 && z_->avail_out != 0) break;
  }
  const size_t n = out->size() - start;
  if (n >= 4 && std::memcmp(out->data() + out->size() - 4, kTail, 4) == 0) {
    out->resize(out->size() - 4);
  }
  if (!takeover_) deflateReset(z_.get());
  return true;
}

Inflater::Inflater(bool context_takeover, int window_bits)
    : z_(std::make_unique<z_stream_s>()), takeover_(context_takeover) {
  std::memset(z_.get(), 0, sizeof(z_stream_s));
  if (inflateInit2(z_.get(), -std::clamp(window_bits, 9, 15)) != Z_OK) z_.reset();
}

Inflater::~Inflater() {
  if (z_ != nullptr) inflateEnd(z_.get());
}

Inflater::Result Inflater::Inflate(std::string_view compressed, uint64_t max, std::string* out) {
  out->clear();
  if (z_ == nullptr) return Result::kError;
  Result result = Result::kOk;
  bool ended = false;  // a final block (BFINAL): the stream is over
  // The message's bytes, then the tail its sender left off.
  const std::string_view parts[2] = {
      compressed, std::string_view(reinterpret_cast<const char*>(kTail), sizeof(kTail))};
  for (size_t i = 0; i < 2 && result == Result::kOk && !ended; ++i) {
    z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(parts[i].data()));
    z_->avail_in = static_cast<uInt>(parts[i].size());
    // Until the part is used and inflate had room to spare (all it could
    // give for it is out).
    for (;;) {
      const size_t at = out->size();
      const size_t room = std::max<size_t>(std::min<uint64_t>(max + 1 - at, 64 * 1024), 1);
      out->resize(at + room);
      z_->next_out = reinterpret_cast<Bytef*>(out->data() + at);
      z_->avail_out = static_cast<uInt>(room);
      const int rc = inflate(z_.get(), Z_SYNC_FLUSH);
      out->resize(at + room - z_->avail_out);
      if (out->size() > max) {
        result = Result::kTooBig;
        break;
      }
      if (rc == Z_STREAM_END) {
        // The sender ended its stream with this message (BFINAL): what it
        // has is whole, but nothing of the message may follow the end, and
        // the next message starts a new stream.
        ended = true;
        if (i == 0 && z_->avail_in != 0) result = Result::kError;
        break;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        result = Result::kError;
        break;
      }
      if (z_->avail_in == 0 && z_->avail_out != 0) break;
    }
  }
  if (result != Result::kOk || ended || !takeover_) inflateReset(z_.get());
  return result;
}

Deflater& ThreadDeflater(int window_bits) {
  // One per thread and window, not one per socket.
  thread_local std::unique_ptr<Deflater> by_bits[16];
  const int bits = std::clamp(window_bits, 9, 15);
  std::unique_ptr<Deflater>& d = by_bits[bits];
  if (d == nullptr) d = std::make_unique<Deflater>(bits, 8, /*context_takeover=*/false);
  return *d;
}

Inflater& ThreadInflater() {
  thread_local Inflater i(/*context_takeover=*/false);
  return i;
}

}  // namespace uring_http::ws
