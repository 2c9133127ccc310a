// Which representation of a static file answers a request, the decisions
// that do not depend on the protocol: the precompressed sibling a client's
// Accept-Encoding picks, and whether the open-file cache's gzip of the
// file's content may answer. HTTP/1 (src/http1/file_variants.cc) and HTTP/2
// (src/http2/file_variants.cc) each run their own file operations around
// them.
//
// Thread-safety: stateless; the cache and its entry are the caller's
// thread's.
#ifndef URING_HTTP_SRC_FILES_FILE_VARIANT_H_
#define URING_HTTP_SRC_FILES_FILE_VARIANT_H_

#include <cstdint>
#include <string_view>

#include "src/files/encodings.h"
#include "src/files/open_file_cache.h"
#include "src/http/compress.h"
#include "src/http/request.h"

namespace uring_http::files {

// The sibling among `present` (EncodingBit set) the request's
// Accept-Encoding weighs highest (ChooseSibling); kIdentity for none.
Encoding ChooseSiblingFor(const http::Request& request, uint8_t present);

// Whether the cache's gzip of a file could answer some request for it (so
// the answer varies with Accept-Encoding): compression is on and the mount
// allows it (`mount_gzip`), its type is compressible, and its size is one
// the cache keeps in memory and worth compressing.
bool GzipCouldApply(const http::CompressionOptions& gz, bool mount_gzip,
                    const OpenFileCache* cache, uint64_t size, std::string_view file_name);

// Whether it answers this request: as above, with the file's cache entry
// (not already found to gain nothing), no Range (a range is of the file's
// own bytes), and a client that prefers gzip.
bool GzipApplies(const http::CompressionOptions& gz, bool mount_gzip, const OpenFileCache* cache,
                 const OpenFileCache::Entry* entry, uint64_t size, std::string_view file_name,
                 const http::Request& request);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_FILE_VARIANT_H_
