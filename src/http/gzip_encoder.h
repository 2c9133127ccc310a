// gzip encoders: a whole buffer at once (GzipBuffer, libdeflate), and a
// body that arrives in pieces (GzipStream, zlib), flushed after each piece.
//
// libdeflate for buffered bodies: on the bodies measured it takes half of
// zlib's CPU at the same level with slightly smaller output
// (perf/compression_benchmark, README Compression). It has no streaming API,
// so streamed bodies use zlib's deflate with Z_SYNC_FLUSH after every write:
// what the handler wrote can be decoded by the client at once (server-sent
// events stay prompt), at the cost of a few bytes per flush.
//
// Memory: GzipBuffer keeps one libdeflate compressor per thread and level
// (allocated the first time that thread compresses, kept for the thread's
// life: nothing is allocated per response but the output). A GzipStream
// holds about 128 KiB of zlib state (a 16 KiB window, memLevel 7), allocated
// when it is created and released when it is destroyed: one per streamed
// response that is compressed, bounded by the streams in flight.
//
// Thread-safety: GzipBuffer any thread (its state is per thread); a
// GzipStream belongs to one thread at a time.
#ifndef URING_HTTP_SRC_HTTP_GZIP_ENCODER_H_
#define URING_HTTP_SRC_HTTP_GZIP_ENCODER_H_

#include <memory>
#include <string>
#include <string_view>

struct z_stream_s;

namespace uring_http::http {

// `in` as one gzip member, in *out (replaced). False only if the compressor
// cannot be allocated.
bool GzipBuffer(std::string_view in, int level, std::string* out);

class GzipStream {
 public:
  // level 1-9. ok() is false when zlib could not allocate its state.
  explicit GzipStream(int level);
  ~GzipStream();
  bool ok() const { return z_ != nullptr; }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  // Compresses `data` and flushes, appending to *out everything the client
  // needs to decode it (the gzip header first, on the first call). An empty
  // `data` appends nothing.
  bool Write(std::string_view data, std::string* out);
  // The last compressed bytes and the gzip trailer (CRC, length). Nothing
  // may be written after.
  bool Finish(std::string* out);

 private:
  bool Deflate(std::string_view data, int flush, std::string* out);

  std::unique_ptr<z_stream_s> z_;
  bool finished_ = false;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_GZIP_ENCODER_H_
