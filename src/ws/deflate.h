// permessage-deflate (RFC 7692) on zlib: a message's payload compressed as
// raw DEFLATE ending in an empty stored block whose 00 00 FF FF is left
// off (7.2.1), and inflated with those four bytes put back (7.2.2).
//
// Two ways to hold the state, chosen per route (ws::Compression):
//   shared     one compressor and one decompressor per ring thread, reset
//              for every message: the handshake asks for no context
//              takeover either way, so a socket holds no zlib state at all
//              (uWebSockets' SHARED_COMPRESSOR);
//   dedicated  each socket's own, made when it first sends or receives a
//              compressed message, keeping the context between messages
//              (better ratios on repetitive traffic) in a bounded window:
//              deflate memory is (1 << (window + 2)) + (1 << (mem_level +
//              9)) bytes, inflate about 7 KiB + (1 << client window).
//
// Thread-safety: a Deflater or Inflater belongs to one thread.
#ifndef URING_HTTP_SRC_WS_DEFLATE_H_
#define URING_HTTP_SRC_WS_DEFLATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct z_stream_s;

namespace uring_http::ws {

// Messages shorter than this go uncompressed (RFC 7692 lets each message
// choose): their DEFLATE would be no smaller.
inline constexpr size_t kDeflateMinBytes = 64;

class Deflater {
 public:
  // window_bits 9..15; context_takeover false resets after each message.
  Deflater(int window_bits, int mem_level, bool context_takeover);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  bool ok() const { return z_ != nullptr; }
  // The message's compressed payload, appended to *out; false on a zlib
  // failure (the message then goes uncompressed, unless the context was
  // taken over: see Connection).
  bool Compress(std::string_view message, std::string* out);

 private:
  std::unique_ptr<z_stream_s> z_;
  bool takeover_;
};

class Inflater {
 public:
  // window_bits: the client's agreed window (15 when it was not asked for
  // a smaller one); zlib allocates it on first use.
  Inflater(bool context_takeover, int window_bits = 15);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  bool ok() const { return z_ != nullptr; }
  enum class Result : uint8_t { kOk, kTooBig, kError };
  // The message's payload into *out (replaced), at most `max` bytes: past
  // it kTooBig at once (a small message that inflates to gigabytes stops
  // at the bound, not at the end); kError for a stream that is not DEFLATE.
  Result Inflate(std::string_view compressed, uint64_t max, std::string* out);

 private:
  std::unique_ptr<z_stream_s> z_;
  bool takeover_;
};

// The ring thread's shared ones (made on first use; no context kept): a
// compressor for each window a client may ask for (server_max_window_bits,
// 9..15: a client that inflates with a smaller window than we compressed
// with cannot read the message), one decompressor for every client.
Deflater& ThreadDeflater(int window_bits);
Inflater& ThreadInflater();

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_DEFLATE_H_
