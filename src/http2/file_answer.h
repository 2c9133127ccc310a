// A static file as an HTTP/2 stream's answer (file_streams.cc), and the one
// file operation a connection has with the kernel at a time.
//
// ConnectionHost allows one file operation in flight per slot (a statx, an
// openat2, a read), and its completion names the slot, not a stream. An
// HTTP/1 connection answers one request at a time, so that is all it needs;
// an HTTP/2 connection may have many streams answering files, so they take
// turns: a stream that needs an operation while another's is in flight
// waits in FileOps::waiting, in order. A hot file needs none: the open-file
// cache answers from its descriptor, and from its memory for a small file.
//
// A stream that goes (reset, or the connection closing) while its
// operation is in flight leaves its FileAnswer to FileOps::orphan: the
// kernel may still write into the statx buffer, the cache entry's content
// or a file buffer, and the descriptor the open returns must be closed.
// Its completion frees it.
//
// Thread-safety: the connection's ring thread.
#ifndef URING_HTTP_SRC_HTTP2_FILE_ANSWER_H_
#define URING_HTTP_SRC_HTTP2_FILE_ANSWER_H_

#include <linux/stat.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>

#include "src/files/encodings.h"
#include "src/files/open_file_cache.h"
#include "src/files/url_path.h"
#include "src/files/validators.h"
#include "src/router/router.h"

namespace uring_http::http2 {

// What a file answer asks of the kernel.
enum class FileOp : uint8_t {
  kNone,
  kStat,   // statx of the path (a cache miss, or an entry due for its check)
  kProbe,  // statx of a precompressed sibling's path ("path.gz", ...)
  kCheck,  // openat2 O_PATH: a directory or a refused path lies beneath the root
  kOpen,   // openat2 into a direct descriptor
  kLoad,   // a small file's whole content into the cache's memory (to gzip it, too)
  kRead,   // body bytes into one of the loop's file buffers
};

struct FileAnswer {
  // Room for a resolved path, and the "/index.html" a directory adds.
  static constexpr size_t kPathRoom = files::kMaxPathBytes + 24;

  const router::FileMount* mount = nullptr;
  FileOp pending = FileOp::kNone;  // the operation it waits its turn for
  bool index = false;              // `path` is a directory's index.html
  int stat_errno = 0;              // kCheck: the statx's error (0: a directory)
  files::OpenFileCache::Entry* entry = nullptr;  // referenced while set
  int own_index = -1;              // a descriptor opened outside the cache
  files::FileVersion version;
  char* load_buf = nullptr;        // kLoad: the cache's room for the content
  uint64_t next = 0;               // the next body byte (file offset)
  uint64_t end = 0;                // one past the last
  // Which representation answers (file_variants.cc): the file, one of its
  // precompressed siblings, or the cache's gzip of its content.
  enum class Variant : uint8_t {
    kUndecided,
    kProbing,  // the siblings' statx, one at a time
    kDecided,
    kLoading,  // the content is read to be gzipped; the answer is planned after
    kLoaded,   // ... and was (a failed load: the file goes as it is)
  };
  Variant variant = Variant::kUndecided;
  uint8_t siblings = 0;  // files::EncodingBit of each sibling found
  uint8_t probe = 0;     // the files::kSiblingEncodings index being probed
  files::Encoding encoding = files::Encoding::kIdentity;  // a sibling is sent
  bool vary = false;     // the answer varies with Accept-Encoding
  bool gzip = false;     // the entry's gzip of the content is sent
  uint32_t base_len = 0; // the file's own path; a sibling's suffix follows it
  files::FileVersion base_version;
  uint32_t path_len = 0;
  char path[kPathRoom];  // NUL-terminated, relative to the mount's root (room for a suffix)

  std::string_view path_view() const { return {path, path_len}; }
  // The file's own name (for its Content-Type), whichever variant is sent.
  std::string_view base_path() const { return {path, base_len != 0 ? base_len : path_len}; }
  int file_index() const { return entry != nullptr ? entry->file_index() : own_index; }
};

// The connection's file operation in flight, and the streams waiting.
struct FileOps {
  FileOp op = FileOp::kNone;
  int32_t stream = 0;                   // whose operation it is
  std::unique_ptr<FileAnswer> orphan;   // its answer, if the stream went
  struct statx stx;                     // kStat's result
  char* read_buf = nullptr;             // kRead: a file buffer (the loop's pool)
  uint32_t read_len = 0;
  std::deque<int32_t> waiting;          // streams with an operation pending
  uint64_t retry_tick = 0;              // every file buffer was taken: try then
};

}  // namespace uring_http::http2

#endif  // URING_HTTP_SRC_HTTP2_FILE_ANSWER_H_
