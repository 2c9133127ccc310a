// http2::Connection, which representation of a static file answers a
// stream, by HTTP/1's rules (src/http1/file_variants.cc): a mount with
// StaticOptions::precompressed looks for "path.gz", ".br" and ".zst" beside
// the file (a statx each, in the connection's turn for file operations,
// remembered in the file's cache entry for the valid interval) and sends
// the one the client weighs highest, looked up and opened as any file;
// without one, a compressible file the cache can hold in memory is gzipped
// once per version (the gzip kept in the entry) when the server's
// compression is on and the client prefers gzip.
#include <sys/stat.h>

#include <cstring>

#include "src/base/check.h"
#include "src/files/encodings.h"
#include "src/files/file_variant.h"
#include "src/http2/connection.h"

namespace uring_http::http2 {
namespace {

void SetSuffix(FileAnswer& f, std::string_view suffix) {
  std::memcpy(f.path + f.base_len, suffix.data(), suffix.size());
  f.path_len = f.base_len + static_cast<uint32_t>(suffix.size());
  f.path[f.path_len] = '\0';
}

}  // namespace

bool Connection::ChooseFileVariant(Stream& s, const http::Request& request) {
  FileAnswer& f = *s.file;
  const router::StaticOptions& options = f.mount->options;
  files::OpenFileCache* cache = env_->file_cache;
  const http::CompressionOptions& gz = env_->config->compression;
  if (f.variant == FileAnswer::Variant::kUndecided ||
      f.variant == FileAnswer::Variant::kProbing) {
    uint8_t present = 0;
    if (f.variant == FileAnswer::Variant::kProbing) {
      present = f.siblings;  // every sibling's statx is back
    } else {
      f.base_len = f.path_len;
      f.base_version = f.version;
      if (options.precompressed) {
        if (f.entry != nullptr && cache->SiblingsFresh(f.entry, env_->now_tick)) {
          present = f.entry->siblings();
        } else {
          f.variant = FileAnswer::Variant::kProbing;
          f.siblings = 0;
          f.probe = 0;
          SetSuffix(f, files::SiblingSuffix(files::kSiblingEncodings[0]));
          QueueFileOp(s, FileOp::kProbe);
          return false;
        }
      }
    }
    f.variant = FileAnswer::Variant::kDecided;
    // The gzip below could apply: the answer varies with Accept-Encoding.
    f.vary = present != 0 ||
             files::GzipCouldApply(gz, options.gzip, cache, f.version.size, f.base_path());
    if (present != 0) {
      const files::Encoding e = files::ChooseSiblingFor(request, present);
      if (e != files::Encoding::kIdentity) {
        // The file goes; the sibling is looked up as any file is.
        ReleaseFileAnswer(f);
        f.encoding = e;
        SetSuffix(f, files::SiblingSuffix(e));
        if (cache != nullptr) {
          bool fresh = false;
          files::OpenFileCache::Entry* sibling =
              cache->Find(f.mount->index, f.path_view(), env_->now_tick, &fresh);
          if (sibling != nullptr && fresh &&
              files::SiblingIsCurrent(f.base_version, sibling->version())) {
            cache->Ref(sibling);
            f.entry = sibling;
            f.version = sibling->version();
            return true;
          }
        }
        QueueFileOp(s, FileOp::kStat);
        return false;
      }
    }
  }
  // No sibling: the cache's gzip of a file it keeps in memory.
  if (f.encoding != files::Encoding::kIdentity || f.gzip ||
      !files::GzipApplies(gz, options.gzip, cache, f.entry, f.version.size, f.base_path(),
                          request)) {
    return true;
  }
  if (f.entry->gzip_ready() || f.entry->content_ready()) {
    f.gzip = cache->GzipContent(f.entry, gz.level);
    return true;
  }
  if (f.variant == FileAnswer::Variant::kLoaded) return true;  // the load failed
  char* content = cache->BeginContent(f.entry);
  if (content == nullptr) return true;  // no room: the file goes as it is
  f.variant = FileAnswer::Variant::kLoading;
  f.load_buf = content;
  QueueFileOp(s, FileOp::kLoad);
  return false;
}

void Connection::SiblingProbed(Stream& s, int res) {
  FileAnswer& f = *s.file;
  URING_CHECK(f.variant == FileAnswer::Variant::kProbing);
  // A directory, a FIFO, or a leftover older than the file is no sibling.
  if (res == 0 && S_ISREG(files_->stx.stx_mode) &&
      files::SiblingIsCurrent(f.base_version, files::VersionOf(files_->stx))) {
    f.siblings |= files::EncodingBit(files::kSiblingEncodings[f.probe]);
  }
  if (++f.probe < std::size(files::kSiblingEncodings)) {
    SetSuffix(f, files::SiblingSuffix(files::kSiblingEncodings[f.probe]));
    return QueueFileOp(s, FileOp::kProbe);
  }
  SetSuffix(f, "");
  if (f.entry != nullptr) env_->file_cache->SetSiblings(f.entry, f.siblings, env_->now_tick);
  ServeFile(s);
}

void Connection::FallBackToOriginal(Stream& s) {
  // The sibling chosen went away (or went stale) since it was looked for:
  // the file itself, looked up again (Vary stays: a sibling was there).
  FileAnswer& f = *s.file;
  URING_CHECK(f.entry == nullptr && f.own_index < 0);
  f.encoding = files::Encoding::kIdentity;
  SetSuffix(f, "");
  QueueFileOp(s, FileOp::kStat);
}

}  // namespace uring_http::http2
