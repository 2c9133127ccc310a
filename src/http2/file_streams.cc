// http2::Connection, its static files: a stream whose route is a mount is
// answered from the loop's open-file cache and the file itself, as over
// HTTP/1 (src/http1/file_answer.cc) and with the same rules (the path
// resolved beneath the root, dotfiles as absent, a directory's index.html
// or its redirect, the conditional and Range fields of files/file_response,
// the mount's middleware around it). The body goes out as DATA within the
// client's windows: from the cache's memory for a small hot file, else read
// into the loop's file buffers a buffer at a time and copied into the
// session's queue, at most kStreamQueueBytes of it waiting per stream (the
// next read starts at OnStreamWritable). Precompressed siblings and the
// cache's gzip are chosen in file_variants.cc.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "src/base/check.h"
#include "src/files/dir_listing.h"
#include "src/files/file_fields.h"
#include "src/files/file_response.h"
#include "src/files/url_path.h"
#include "src/http2/connection.h"
#include "src/router/middleware.h"

namespace uring_http::http2 {
namespace {

// A DATA write from the cache's memory at most this large: the rest waits
// for the stream's queue to drain (OnStreamWritable).
constexpr size_t kMemoryWriteBytes = 16 * 1024;

}  // namespace

void Connection::StartFile(Stream& s, const http::Request& request, const router::Route& route) {
  env_->stats->files_served.Add();
  const router::FileMount& mount = *route.mount;
  // One per thread, reused: resolving a path allocates nothing once warm.
  thread_local files::ResolvedPath resolved;
  files::ResolveUrlPath(request.path, mount.prefix, &resolved);
  if (resolved.status != files::PathStatus::kOk) {
    return FileError(s, resolved.status == files::PathStatus::kBadRequest ? 400 : 404);
  }
  // Dotfiles (.env, .git/...) answer as if absent (file_answer.cc says why).
  if (!mount.options.serve_dotfiles && files::IsHiddenPath(resolved.relative, mount.prefix)) {
    return FileError(s, 404);
  }
  if (env_->file_buffers == nullptr) return FileError(s, 500);
  s.file = std::make_unique<FileAnswer>();
  FileAnswer& f = *s.file;
  f.mount = &mount;
  size_t n = resolved.relative.size();
  std::memcpy(f.path, resolved.relative.data(), n);
  f.index = resolved.directory;
  if (f.index) {
    // A directory answers with its index.html (or its listing, if asked).
    const std::string_view index = n == 0 ? "index.html" : "/index.html";
    std::memcpy(f.path + n, index.data(), index.size());
    n += index.size();
  }
  f.path[n] = '\0';
  f.path_len = static_cast<uint32_t>(n);
  if (files::OpenFileCache* cache = env_->file_cache) {
    bool fresh = false;
    files::OpenFileCache::Entry* e =
        cache->Find(mount.index, f.path_view(), env_->now_tick, &fresh);
    if (e != nullptr && fresh) {
      cache->Ref(e);
      f.entry = e;
      f.version = e->version();
      return ServeFile(s);
    }
  }
  // A miss, or an entry due for its check: the path's statx says whether
  // the cached descriptor still names the same file.
  QueueFileOp(s, FileOp::kStat);
}

// ---------------------------------------------------------------- turns

void Connection::QueueFileOp(Stream& s, FileOp op) {
  if (files_ == nullptr) files_ = std::make_unique<FileOps>();
  s.file->pending = op;
  if (files_->op != FileOp::kNone || files_->retry_tick != 0) {
    files_->waiting.push_back(s.id);
    return;
  }
  IssueFileOp(s);
}

void Connection::NextFileOp() {
  if (files_ == nullptr) return;
  while (files_->op == FileOp::kNone && files_->retry_tick == 0 && !files_->waiting.empty()) {
    const int32_t id = files_->waiting.front();
    files_->waiting.pop_front();
    Stream* s = Find(id);
    if (s == nullptr || s->file == nullptr || s->file->pending == FileOp::kNone) continue;
    IssueFileOp(*s);
  }
}

void Connection::IssueFileOp(Stream& s) {
  FileAnswer& f = *s.file;
  const FileOp op = f.pending;
  if (op == FileOp::kRead) {
    io::ChunkPool* buffers = env_->file_buffers;
    if (buffers->available() == 0) {
      // Every buffer is with other readers: this stream keeps its turn and
      // tries again on the next tick (Sync arms the deadline).
      files_->waiting.push_front(s.id);
      files_->retry_tick = env_->now_tick + 1;
      return;
    }
    files_->read_buf = buffers->Acquire();
    files_->read_len =
        static_cast<uint32_t>(std::min<uint64_t>(buffers->chunk_size(), f.end - f.next));
  }
  f.pending = FileOp::kNone;
  files_->op = op;
  files_->stream = s.id;
  const int dir_fd = f.mount->dir_fd;
  switch (op) {
    case FileOp::kStat:
    case FileOp::kProbe:
      return env_->host->StatFile(slot_, dir_fd, f.path, &files_->stx);
    case FileOp::kCheck:
      return env_->host->OpenFile(slot_, dir_fd, f.path, /*check_only=*/true);
    case FileOp::kOpen:
      env_->stats->file_opens.Add();
      return env_->host->OpenFile(slot_, dir_fd, f.path, /*check_only=*/false);
    case FileOp::kLoad:
      return env_->host->ReadFile(slot_, f.entry->file_index(), f.load_buf,
                                  static_cast<uint32_t>(f.version.size), 0);
    case FileOp::kRead:
      return env_->host->ReadFile(slot_, f.file_index(), files_->read_buf, files_->read_len,
                                  f.next);
    case FileOp::kNone:
      break;
  }
  URING_CHECK(false);
}

Connection::Stream* Connection::EndFileOp(FileOp expected, FileAnswer** answer) {
  URING_CHECK(files_ != nullptr && files_->op == expected);
  files_->op = FileOp::kNone;
  if (files_->orphan != nullptr) {
    *answer = files_->orphan.get();
    return nullptr;
  }
  Stream* s = Find(files_->stream);
  URING_CHECK(s != nullptr && s->file != nullptr);  // EndFile orphans it otherwise
  *answer = s->file.get();
  return s;
}

void Connection::FreeOrphanFile() {
  if (files_ == nullptr || files_->orphan == nullptr) return;
  ReleaseFileAnswer(*files_->orphan);
  files_->orphan.reset();
}

// ---------------------------------------------------------------- completions

void Connection::OnFileStat(int res) {
  const FileOp op = files_ != nullptr ? files_->op : FileOp::kNone;
  URING_CHECK(op == FileOp::kStat || op == FileOp::kProbe);
  FileAnswer* fp = nullptr;
  Stream* s = EndFileOp(op, &fp);
  if (s != nullptr) {
    if (op == FileOp::kProbe) {
      SiblingProbed(*s, res);
    } else {
      FileStatDone(*s, res);
    }
  }
  FreeOrphanFile();
  NextFileOp();
  Sync();
}

void Connection::FileStatDone(Stream& s, int res) {
  FileAnswer& f = *s.file;
  files::OpenFileCache* cache = env_->file_cache;
  bool fresh = false;
  files::OpenFileCache::Entry* e =
      cache != nullptr ? cache->Find(f.mount->index, f.path_view(), env_->now_tick, &fresh)
                       : nullptr;
  if (f.encoding != files::Encoding::kIdentity &&
      (res < 0 || !S_ISREG(files_->stx.stx_mode) ||
       !files::SiblingIsCurrent(f.base_version, files::VersionOf(files_->stx)))) {
    // The sibling chosen went away (or went stale) since it was probed.
    if (e != nullptr) cache->Remove(e);
    return FallBackToOriginal(s);
  }
  if (res == -ENOENT && f.index && f.mount->options.list_directories) return ServeListing(s);
  if (res < 0) {
    if (e != nullptr) cache->Remove(e);  // deleted (or no longer reachable)
    e = nullptr;
    const int status = files::StatusForFileErrno(-res);
    if (status != 403) return FileError(s, status);
  }
  const uint16_t mode = files_->stx.stx_mode;
  if (res < 0 || S_ISDIR(mode)) {
    if (e != nullptr) cache->Remove(e);
    if (res == 0 && f.index) return FileError(s, 404);  // ".../index.html" is a directory
    // The statx follows symbolic links anywhere: neither the redirect nor
    // the 403 may tell what lies outside the root, so the path is opened
    // beneath it first.
    f.stat_errno = -res;
    return QueueFileOp(s, FileOp::kCheck);
  }
  if (!S_ISREG(mode)) {
    // A device, FIFO or socket under the root is not content.
    if (e != nullptr) cache->Remove(e);
    return FileError(s, 404);
  }
  f.version = files::VersionOf(files_->stx);
  // Changed: the new content (or permissions) need a new open.
  if (e != nullptr && cache->Revalidate(e, f.version, env_->now_tick)) {
    cache->Ref(e);
    f.entry = e;
    return ServeFile(s);
  }
  QueueFileOp(s, FileOp::kOpen);
}

void Connection::OnFileOpen(int res) {
  const FileOp op = files_ != nullptr ? files_->op : FileOp::kNone;
  URING_CHECK(op == FileOp::kOpen || op == FileOp::kCheck);
  FileAnswer* fp = nullptr;
  Stream* s = EndFileOp(op, &fp);
  if (op == FileOp::kCheck) {
    if (res >= 0) env_->file_closer->CloseFile(res);
    if (s != nullptr) {
      // EXDEV: the path leads outside the root, which must not tell (404).
      if (res < 0) {
        FileError(*s, files::StatusForFileErrno(-res));
      } else if (fp->stat_errno != 0) {
        FileError(*s, files::StatusForFileErrno(fp->stat_errno));
      } else {
        RedirectToDirectory(*s);
      }
    }
  } else if (s == nullptr) {
    if (res >= 0) env_->file_closer->CloseFile(res);
  } else if (res < 0 && fp->encoding != files::Encoding::kIdentity) {
    FallBackToOriginal(*s);
  } else if (res < 0) {
    FileError(*s, files::StatusForFileErrno(-res));
  } else {
    // The version is the statx's, taken just before (file_answer.cc: a
    // file replaced in between is cut at the announced length).
    FileAnswer& f = *fp;
    f.entry = env_->file_cache != nullptr
                  ? env_->file_cache->Insert(f.mount->index, f.path_view(), res, f.version,
                                             env_->now_tick)
                  : nullptr;
    if (f.entry != nullptr) {
      env_->file_cache->Ref(f.entry);
    } else {
      f.own_index = res;  // not cached: closed when this answer ends
    }
    ServeFile(*s);
  }
  FreeOrphanFile();
  NextFileOp();
  Sync();
}

void Connection::OnFileRead(int res) {
  const FileOp op = files_ != nullptr ? files_->op : FileOp::kNone;
  URING_CHECK(op == FileOp::kLoad || op == FileOp::kRead);
  FileAnswer* fp = nullptr;
  Stream* s = EndFileOp(op, &fp);
  FileAnswer& f = *fp;
  if (op == FileOp::kLoad) {
    // The content is the cache's from now on, whoever asked for it.
    env_->file_cache->EndContent(f.entry, res >= 0 && static_cast<uint64_t>(res) == f.version.size);
    f.load_buf = nullptr;
    if (s != nullptr && f.variant == FileAnswer::Variant::kLoading) {
      // Read to be gzipped: the answer is planned now (the file as it is,
      // if the read failed).
      f.variant = FileAnswer::Variant::kLoaded;
      ServeFile(*s);
    } else if (s != nullptr) {
      PumpFile(*s);
    }
  } else {
    char* buf = files_->read_buf;
    files_->read_buf = nullptr;
    if (s != nullptr) {
      if (res > 0) {
        const size_t n = std::min<uint64_t>(static_cast<uint64_t>(res), f.end - f.next);
        f.next += n;
        if (session_->WriteData(s->id, std::string_view(buf, n)) == 0) {
          EndFile(*s);  // the stream went (its close follows)
        }
      } else {
        // The file shrank (or failed) under the announced length: the
        // client must not take a short body as whole.
        env_->stats->file_truncated.Add();
        session_->ResetStream(s->id, kInternalError);
        s->ended = true;
        EndFile(*s);
      }
    }
    env_->file_buffers->Release(buf);
    if (s != nullptr && s->file != nullptr) PumpFile(*s);
  }
  FreeOrphanFile();
  NextFileOp();
  Sync();
}

// ---------------------------------------------------------------- answers

void Connection::ServeFile(Stream& s) {
  FileAnswer& f = *s.file;
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  // A precompressed sibling or the gzip instead of the file: either may
  // need file operations first (ServeFile comes back after them).
  if (!ChooseFileVariant(s, request)) return;
  files::FileRequestFields fields;
  fields.head = s.head_request;
  fields.range = request.FindHeader("range");
  fields.if_range = request.FindHeader("if-range");
  fields.if_match = request.FindHeader("if-match");
  fields.if_none_match = request.FindHeader("if-none-match");
  fields.if_modified_since = request.FindHeader("if-modified-since");
  fields.if_unmodified_since = request.FindHeader("if-unmodified-since");
  files::EtagVariant etag_variant;
  files::FileVersion version = f.version;
  std::string_view content_encoding;
  if (f.encoding != files::Encoding::kIdentity) {
    etag_variant.suffix = files::EtagSuffix(f.encoding);
    content_encoding = files::EncodingToken(f.encoding);
  } else if (f.gzip) {
    etag_variant = {"-gzip", /*weak=*/true};
    version.size = f.entry->gzip().size();
    content_encoding = "gzip";
  }
  const files::FilePlan plan = files::PlanFileResponse(fields, version, etag_variant);
  http::Response& response = s.response;
  response.Clear();
  if (!files::StartFileAnswer(plan, f.mount->options.cache_control, f.vary, response)) {
    // 304, 412 or 416: no file bytes.
    EndFile(s);
    RunDueAfters(s, request);
    return Submit(s);
  }
  files::AddFileBodyFields(plan, f.base_path(), content_encoding, response);
  if (s.afters_due > 0) {
    // The file's bytes follow with their length: an after adds headers,
    // its status or body would not be true to them (middleware.h).
    RunDueAfters(s, request);
    response.set_status(plan.status);
  }
  if (response.header_refused()) return FileError(s, 500);
  s.answered = true;
  const bool has_body = !s.head_request && plan.length > 0;
  if (!SubmitHead(s, plan.status, response.headers(), /*length_known=*/true, plan.length,
                  has_body)) {
    s.ended = true;
    return EndFile(s);
  }
  Done(s, plan.status, s.head_request ? 0 : plan.length);
  if (!has_body) {
    s.ended = true;
    return EndFile(s);
  }
  f.next = plan.offset;
  f.end = plan.offset + plan.length;
  if (f.entry != nullptr && !f.gzip && !f.entry->content_ready()) {
    // A small file stays in memory: this stream reads it whole, and the
    // next ones are answered without a read.
    if (char* content = env_->file_cache->BeginContent(f.entry)) {
      f.load_buf = content;
      return QueueFileOp(s, FileOp::kLoad);
    }
  }
  PumpFile(s);
}

void Connection::PumpFile(Stream& s) {
  FileAnswer& f = *s.file;
  if (f.pending != FileOp::kNone) return;  // waiting for its turn
  if (files_ != nullptr && files_->op != FileOp::kNone && files_->stream == s.id) return;
  while (f.next < f.end) {
    // Enough waits in the session: more once it is framed.
    if (session_->QueuedData(s.id) >= kStreamQueueBytes) return;
    // From the cache's memory (the content, or its gzip): valid while the
    // entry is held.
    const char* memory = f.gzip                                              ? f.entry->gzip().data()
                         : f.entry != nullptr && f.entry->content_ready() ? f.entry->content()
                                                                          : nullptr;
    if (memory == nullptr) return QueueFileOp(s, FileOp::kRead);
    const size_t n = std::min<uint64_t>(kMemoryWriteBytes, f.end - f.next);
    if (session_->WriteData(s.id, std::string_view(memory + f.next, n)) == 0) {
      return EndFile(s);  // the stream went (its close follows)
    }
    f.next += n;
  }
  session_->EndData(s.id);
  s.ended = true;
  EndFile(s);
}

void Connection::RedirectToDirectory(Stream& s) {
  const FileAnswer& f = *s.file;
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  s.response.Clear();
  files::AnswerDirectoryRedirect(f.mount->prefix, f.path_view(), request.query, s.response);
  EndFile(s);
  RunDueAfters(s, request);
  if (s.response.header_refused()) return SubmitError(s, 500);
  Submit(s);
}

void Connection::ServeListing(Stream& s) {
  const FileAnswer& f = *s.file;
  // The path is the directory's with "/index.html" (or "index.html" at the
  // root) appended. The read blocks: see files/dir_listing.h.
  const std::string_view path = f.path_view();
  const std::string_view dir =
      path.size() == 10 ? std::string_view() : path.substr(0, path.size() - 11);
  std::vector<files::ListingEntry> entries;
  const int err = files::ReadDirectory(f.mount->dir_fd, dir, &entries);
  if (err != 0) return FileError(s, err == EACCES || err == EPERM ? 403 : 404);
  http::Response& response = s.response;
  response.Clear();
  response.set_status(200);
  response.set_content_type("text/html; charset=utf-8");
  (void)response.AddHeader("X-Content-Type-Options", "nosniff");
  if (!f.mount->options.cache_control.empty()) {
    (void)response.AddHeader("Cache-Control", f.mount->options.cache_control);
  }
  response.set_body(files::RenderListing(f.mount->prefix, dir, std::move(entries)));
  EndFile(s);
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  RunDueAfters(s, request);
  Submit(s);
}

void Connection::FileError(Stream& s, int status) {
  if (s.file != nullptr) EndFile(s);
  std::vector<http::Header> storage;
  http::Request request;
  BuildRequest(s, storage, request);
  s.response.Clear();
  s.response.set_status(status);
  // The error page a bare 4xx or 5xx gets, then the afters of the
  // middlewares that ran before the file was looked up.
  env_->router->pipeline().MaybeFailPage(request, s.response);
  RunDueAfters(s, request);
  if (s.response.header_refused()) return SubmitError(s, 500);
  Submit(s);
}

void Connection::RunDueAfters(Stream& s, const http::Request& request) {
  if (s.afters_due == 0) return;
  const size_t ran = s.afters_due;
  s.afters_due = 0;
  router::RunAfters(env_->router->pipeline(), s.route->options.middleware, ran, request,
                    s.response, s.route->name());
}

void Connection::EndFile(Stream& s) {
  if (s.file == nullptr) return;
  if (files_ != nullptr && files_->op != FileOp::kNone && files_->stream == s.id) {
    // Its operation is with the kernel: the answer waits for it (file_answer.h).
    files_->orphan = std::move(s.file);
    return;
  }
  ReleaseFileAnswer(*s.file);
  s.file.reset();
}

void Connection::ReleaseFileAnswer(FileAnswer& f) {
  if (f.load_buf != nullptr) {
    env_->file_cache->EndContent(f.entry, false);  // never read: the room goes
    f.load_buf = nullptr;
  }
  if (f.entry != nullptr) env_->file_cache->Unref(f.entry);
  if (f.own_index >= 0) env_->file_closer->CloseFile(f.own_index);
  f.entry = nullptr;
  f.own_index = -1;
}

}  // namespace uring_http::http2
