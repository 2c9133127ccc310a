#include "src/files/file_variant.h"

#include "src/files/mime.h"

namespace uring_http::files {

Encoding ChooseSiblingFor(const http::Request& request, uint8_t present) {
  http::AcceptEncoding accept;
  for (std::string_view line : request.HeaderValues("accept-encoding")) {
    accept.AddFieldValue(line);
  }
  return ChooseSibling(accept, present);
}

bool GzipCouldApply(const http::CompressionOptions& gz, bool mount_gzip,
                    const OpenFileCache* cache, uint64_t size, std::string_view file_name) {
  return gz.enabled && mount_gzip && cache != nullptr && size >= gz.min_bytes &&
         size <= cache->limits().max_content_file &&
         http::IsCompressibleType(ContentTypeFor(file_name));
}

bool GzipApplies(const http::CompressionOptions& gz, bool mount_gzip, const OpenFileCache* cache,
                 const OpenFileCache::Entry* entry, uint64_t size, std::string_view file_name,
                 const http::Request& request) {
  return entry != nullptr && !entry->gzip_useless() &&
         GzipCouldApply(gz, mount_gzip, cache, size, file_name) &&
         request.FindHeader("range").empty() &&
         http::PrefersGzip(request.HeaderValues("accept-encoding"));
}

}  // namespace uring_http::files
