#include "src/files/mime.h"

#include <algorithm>
#include <cstddef>

namespace uring_http::files {
namespace {

struct Entry {
  std::string_view extension;  // lower case, without the dot
  std::string_view type;
};

constexpr std::string_view kHtml = "text/html; charset=utf-8";
constexpr std::string_view kJavaScript = "text/javascript; charset=utf-8";

// Sorted by extension (checked below) for the binary search.
constexpr Entry kTable[] = {
    {"7z", "application/x-7z-compressed"},
    {"aac", "audio/aac"},
    {"apng", "image/apng"},
    {"atom", "application/atom+xml"},
    {"avif", "image/avif"},
    {"bmp", "image/bmp"},
    {"bz2", "application/x-bzip2"},
    {"css", "text/css; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"eot", "application/vnd.ms-fontobject"},
    {"epub", "application/epub+zip"},
    {"flac", "audio/flac"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"htm", kHtml},
    {"html", kHtml},
    {"ico", "image/x-icon"},
    {"ics", "text/calendar; charset=utf-8"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", kJavaScript},
    {"json", "application/json"},
    {"jsonld", "application/ld+json"},
    {"m4a", "audio/mp4"},
    {"m4v", "video/mp4"},
    // Source maps are JSON; browsers' developer tools accept either type.
    {"map", "application/json"},
    {"md", "text/markdown; charset=utf-8"},
    {"mjs", kJavaScript},
    {"mov", "video/quicktime"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"oga", "audio/ogg"},
    {"ogg", "audio/ogg"},
    {"ogv", "video/ogg"},
    {"opus", "audio/ogg"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"rss", "application/rss+xml"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"toml", "application/toml"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain; charset=utf-8"},
    {"wasm", "application/wasm"},  // streaming compilation requires exactly this
    {"wav", "audio/wav"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json"},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xhtml", "application/xhtml+xml"},
    {"xml", "application/xml"},
    {"xz", "application/x-xz"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
    {"zip", "application/zip"},
};

constexpr bool TableIsSortedAndLowerCase() {
  for (size_t i = 0; i < std::size(kTable); ++i) {
    if (i > 0 && !(kTable[i - 1].extension < kTable[i].extension)) return false;
    for (char c : kTable[i].extension) {
      if (c >= 'A' && c <= 'Z') return false;
    }
  }
  return true;
}
static_assert(TableIsSortedAndLowerCase(), "kTable must be sorted, unique and lower case");

constexpr size_t LongestExtension() {
  size_t longest = 0;
  for (const Entry& e : kTable) longest = std::max(longest, e.extension.size());
  return longest;
}
// An extension longer than every entry cannot match, so lower-casing fits in a
// small stack buffer.
constexpr size_t kMaxExtension = LongestExtension();

}  // namespace

std::string_view ContentTypeFor(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  // dot == 0: a dotfile's leading dot starts its name, not an extension.
  if (dot == std::string_view::npos || dot == 0) return kDefaultContentType;
  const std::string_view extension = name.substr(dot + 1);
  if (extension.empty() || extension.size() > kMaxExtension) return kDefaultContentType;

  char lower[kMaxExtension];
  for (size_t i = 0; i < extension.size(); ++i) {
    const char c = extension[i];
    lower[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const std::string_view key(lower, extension.size());
  const Entry* end = std::end(kTable);
  const Entry* it =
      std::lower_bound(std::begin(kTable), end, key,
                       [](const Entry& e, std::string_view k) { return e.extension < k; });
  return it != end && it->extension == key ? it->type : kDefaultContentType;
}

}  // namespace uring_http::files
