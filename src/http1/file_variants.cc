// Connection, part five: which representation of a static file answers.
// A mount with StaticOptions::precompressed looks for "path.gz", ".br" and
// ".zst" beside the file (one statx each, remembered in the file's cache
// entry for the valid interval, so a file without siblings costs nothing
// more per request once cached), and sends the one the client weighs
// highest, looked up and opened as any file. Without one, a compressible
// file the cache holds in memory is gzipped once per version (the gzip is
// kept in the entry) when the server's compression is on. And a directory
// without index.html may answer with a listing of its names.
#include <sys/stat.h>

#include <cstring>

#include "src/base/check.h"
#include "src/files/dir_listing.h"
#include "src/files/encodings.h"
#include "src/files/file_variant.h"
#include "src/http1/connection.h"

namespace uring_http::http1 {
namespace {

void SetPath(FileStream& f, uint32_t base_len, std::string_view suffix) {
  std::memcpy(f.path + base_len, suffix.data(), suffix.size());
  f.path_len = base_len + static_cast<uint32_t>(suffix.size());
  f.path[f.path_len] = '\0';
}

}  // namespace

bool Connection::ChooseFileVariant(const http::Request& request) {
  FileStream& f = *st_->file;
  const router::StaticOptions& options = f.mount->options;
  files::OpenFileCache* cache = env_->file_cache;
  const http::CompressionOptions& gz = env_->config->compression;
  if (f.variant == FileStream::Variant::kUndecided ||
      f.variant == FileStream::Variant::kProbed) {
    uint8_t present = 0;
    if (f.variant == FileStream::Variant::kProbed) {
      present = f.siblings;
    } else {
      f.base_len = f.path_len;
      f.base_version = f.version;
      if (options.precompressed) {
        if (f.entry != nullptr && cache->SiblingsFresh(f.entry, env_->now_tick)) {
          present = f.entry->siblings();
        } else {
          if (!ex_.head_kept && !KeepHead(ex_.head_ptr, ex_.head_len)) {
            Abort();
            return false;
          }
          f.siblings = 0;
          f.probe = 0;
          ProbeSibling();
          return false;
        }
      }
    }
    f.variant = FileStream::Variant::kDecided;
    // The gzip below could apply: the answer varies with Accept-Encoding.
    f.vary = present != 0 ||
             files::GzipCouldApply(gz, options.gzip, cache, f.version.size, f.path_view());
    if (present != 0) {
      const files::Encoding e = files::ChooseSiblingFor(request, present);
      if (e != files::Encoding::kIdentity) {
        // The original goes; the sibling is looked up as any file is.
        if (f.entry != nullptr) cache->Unref(f.entry);
        f.entry = nullptr;
        if (f.own_index >= 0) env_->file_closer->CloseFile(f.own_index);
        f.own_index = -1;
        f.encoding = e;
        SetPath(f, f.base_len, files::SiblingSuffix(e));
        if (cache != nullptr) {
          bool fresh = false;
          files::OpenFileCache::Entry* s =
              cache->Find(f.mount->index, f.path_view(), env_->now_tick, &fresh);
          if (s != nullptr && fresh && files::SiblingIsCurrent(f.base_version, s->version())) {
            cache->Ref(s);
            f.entry = s;
            f.version = s->version();
            return true;
          }
        }
        if (!ex_.head_kept && !KeepHead(ex_.head_ptr, ex_.head_len)) {
          Abort();
          return false;
        }
        f.step = FileStream::Step::kStat;
        f.inflight = true;
        env_->host->StatFile(slot_, f.mount->dir_fd, f.path, &f.stx);
        return false;
      }
    }
  }
  // No sibling: the gzip made here, for a file the cache keeps in memory.
  if (f.encoding != files::Encoding::kIdentity || f.gzip ||
      !files::GzipApplies(gz, options.gzip, cache, f.entry, f.version.size, f.path_view(),
                          request)) {
    return true;
  }
  if (f.entry->gzip_ready() || f.entry->content_ready()) {
    f.gzip = cache->GzipContent(f.entry, gz.level);
    return true;
  }
  if (f.variant == FileStream::Variant::kLoaded) return true;  // the load failed
  char* content = cache->BeginContent(f.entry);
  if (content == nullptr) return true;
  if (!ex_.head_kept && !KeepHead(ex_.head_ptr, ex_.head_len)) {
    cache->EndContent(f.entry, false);
    Abort();
    return false;
  }
  f.step = FileStream::Step::kLoad;
  f.reload = true;
  f.inflight = true;
  f.read_buf = content;
  f.read_len = static_cast<uint32_t>(f.version.size);
  env_->host->ReadFile(slot_, f.entry->file_index(), content, f.read_len, 0);
  return false;
}

void Connection::ProbeSibling() {
  FileStream& f = *st_->file;
  // The path stays the original's (path_len); only the bytes past it change.
  const std::string_view suffix = files::SiblingSuffix(files::kSiblingEncodings[f.probe]);
  std::memcpy(f.path + f.base_len, suffix.data(), suffix.size());
  f.path[f.base_len + suffix.size()] = '\0';
  f.step = FileStream::Step::kProbe;
  f.inflight = true;
  env_->host->StatFile(slot_, f.mount->dir_fd, f.path, &f.stx);
}

void Connection::OnSiblingProbed(int res) {
  FileStream& f = *st_->file;
  URING_CHECK(f.inflight && f.step == FileStream::Step::kProbe);
  f.inflight = false;
  f.path[f.base_len] = '\0';
  if (f.aborted) return;
  // A directory, a FIFO, or a leftover older than the file is no sibling.
  if (res == 0 && S_ISREG(f.stx.stx_mode) &&
      files::SiblingIsCurrent(f.base_version, VersionOf(f.stx))) {
    f.siblings |= files::EncodingBit(files::kSiblingEncodings[f.probe]);
  }
  if (++f.probe < std::size(files::kSiblingEncodings)) return ProbeSibling();
  f.variant = FileStream::Variant::kProbed;
  if (f.entry != nullptr) env_->file_cache->SetSiblings(f.entry, f.siblings, env_->now_tick);
  ServeFile(nullptr);
  Sync();
}

void Connection::FallBackToOriginal() {
  FileStream& f = *st_->file;
  URING_CHECK(f.entry == nullptr && f.own_index < 0 && !f.inflight);
  f.encoding = files::Encoding::kIdentity;
  SetPath(f, f.base_len, "");
  f.variant = FileStream::Variant::kDecided;  // Vary stays: a sibling was there
  f.step = FileStream::Step::kStat;
  f.inflight = true;
  env_->host->StatFile(slot_, f.mount->dir_fd, f.path, &f.stx);
}

void Connection::ServeListing() {
  FileStream& f = *st_->file;
  // The path is the directory's with "/index.html" (or "index.html" at the
  // root) appended.
  const std::string_view path = f.path_view();
  const std::string_view dir =
      path.size() == 10 ? std::string_view() : path.substr(0, path.size() - 11);
  std::vector<files::ListingEntry> entries;
  const int err = files::ReadDirectory(f.mount->dir_fd, dir, &entries);
  if (err != 0) return FileError(err == EACCES || err == EPERM ? 403 : 404);
  http::Response response;
  response.set_status(200);
  response.set_content_type("text/html; charset=utf-8");
  (void)response.AddHeader("X-Content-Type-Options", "nosniff");
  if (!f.mount->options.cache_control.empty()) {
    (void)response.AddHeader("Cache-Control", f.mount->options.cache_control);
  }
  response.set_body(files::RenderListing(f.mount->prefix, dir, std::move(entries)));
  EndFile();
  Respond(response);
  Sync();
}

}  // namespace uring_http::http1
