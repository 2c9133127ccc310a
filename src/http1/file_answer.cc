// Connection, part four: a static file as the answer. The path resolves
// beneath the mount (files/url_path.h); the loop's open-file cache answers a
// fresh hit at once, and anything else is a statx, then (for a file not
// cached, or changed) an openat2 into a direct descriptor, both on the ring.
// The body comes from the cache's memory for a small hot file, otherwise
// from reads into the loop's file buffers, as the output queue has room; a
// reader too slow to take them gives them back (YieldFileOutput), so a
// stalled reader holds no buffer at all.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/base/check.h"
#include "src/files/file_fields.h"
#include "src/files/file_response.h"
#include "src/files/mime.h"
#include "src/files/url_path.h"
#include "src/http1/connection.h"

namespace uring_http::http1 {

void Connection::StartFile(const http::Request& request) {
  env_->stats->files_served.Add();
  const router::FileMount& mount = *ex_.route->mount;
  // One per thread, reused: resolving a path allocates nothing once warm.
  thread_local files::ResolvedPath resolved;
  files::ResolveUrlPath(request.path, mount.prefix, &resolved);
  if (resolved.status != files::PathStatus::kOk) {
    return AnswerError(resolved.status == files::PathStatus::kBadRequest ? 400 : 404,
                       /*close=*/false, &request);
  }
  // Dotfiles (.env, .git/...) answer as if absent: a 404, not a 403 that
  // would say they exist, nor a 301 for a hidden directory.
  if (!mount.options.serve_dotfiles && files::IsHiddenPath(resolved.relative, mount.prefix)) {
    return AnswerError(404, /*close=*/false, &request);
  }
  if (env_->file_buffers == nullptr) return AnswerError(500, /*close=*/false, &request);
  if (S().file == nullptr) st_->file = env_->streams->AcquireFile();
  FileStream& f = *st_->file;
  URING_CHECK(f.idle() && !f.inflight);
  std::string_view rel = resolved.relative;
  size_t n = rel.size();
  std::memcpy(f.path, rel.data(), n);
  f.index = resolved.directory;
  if (f.index) {
    // A directory answers with its index.html, never a listing.
    const std::string_view index = n == 0 ? "index.html" : "/index.html";
    std::memcpy(f.path + n, index.data(), index.size());
    n += index.size();
  }
  f.path[n] = '\0';
  f.path_len = static_cast<uint32_t>(n);
  f.mount = &mount;
  f.buffers = env_->file_buffers;
  f.aborted = false;
  f.variant = FileStream::Variant::kUndecided;
  f.encoding = files::Encoding::kIdentity;
  f.vary = f.gzip = f.reload = false;
  ex_.answer = Answer::kFile;
  if (input_ == Input::kHead) input_ = Input::kWait;

  if (files::OpenFileCache* cache = env_->file_cache) {
    bool fresh = false;
    files::OpenFileCache::Entry* e = cache->Find(mount.index, f.path_view(), env_->now_tick, &fresh);
    if (e != nullptr && fresh) {
      cache->Ref(e);
      f.entry = e;
      f.version = e->version();
      return ServeFile(&request);
    }
  }
  // A miss, or an entry due for its check: the path's statx says whether
  // the cached descriptor still names the same file.
  if (!ex_.head_kept && !KeepHead(ex_.head_ptr, ex_.head_len)) return Abort();
  f.step = FileStream::Step::kStat;
  f.inflight = true;
  env_->host->StatFile(slot_, mount.dir_fd, f.path, &f.stx);
}

void Connection::OnFileStat(int res) {
  FileStream& f = *st_->file;
  if (f.step == FileStream::Step::kProbe) return OnSiblingProbed(res);
  URING_CHECK(f.inflight && f.step == FileStream::Step::kStat);
  f.inflight = false;
  if (f.aborted) return;
  files::OpenFileCache* cache = env_->file_cache;
  bool fresh = false;
  files::OpenFileCache::Entry* e =
      cache != nullptr ? cache->Find(f.mount->index, f.path_view(), env_->now_tick, &fresh)
                       : nullptr;
  if (f.encoding != files::Encoding::kIdentity &&
      (res < 0 || !S_ISREG(f.stx.stx_mode) ||
       !files::SiblingIsCurrent(f.base_version, VersionOf(f.stx)))) {
    // The sibling chosen went away (or went stale) since it was looked for.
    if (e != nullptr) cache->Remove(e);
    return FallBackToOriginal();
  }
  if (res == -ENOENT && f.index && f.mount->options.list_directories) {
    return ServeListing();  // a directory without index.html
  }
  if (res < 0) {
    if (e != nullptr) cache->Remove(e);  // deleted (or no longer reachable)
    e = nullptr;
    const int status = files::StatusForFileErrno(-res);
    if (status != 403) return FileError(status);
  }
  const uint16_t mode = f.stx.stx_mode;
  if (res < 0 || S_ISDIR(mode)) {
    if (e != nullptr) cache->Remove(e);
    if (res == 0 && f.index) return FileError(404);  // ".../index.html" is a directory
    f.step = FileStream::Step::kCheck;
    f.stat_errno = -res;
    f.inflight = true;
    env_->host->OpenFile(slot_, f.mount->dir_fd, f.path, /*check_only=*/true);
    return;
  }
  if (!S_ISREG(mode)) {
    // A device, FIFO or socket under the root is not content.
    if (e != nullptr) cache->Remove(e);
    return FileError(404);
  }
  f.version = VersionOf(f.stx);
  // Changed: the new content (or permissions) need a new open.
  if (e != nullptr && cache->Revalidate(e, f.version, env_->now_tick)) {
    cache->Ref(e);
    f.entry = e;
    ServeFile(nullptr);
    Sync();
    return;
  }
  f.step = FileStream::Step::kOpen;
  f.inflight = true;
  env_->stats->file_opens.Add();
  env_->host->OpenFile(slot_, f.mount->dir_fd, f.path, /*check_only=*/false);
}

void Connection::RedirectToDirectory() {
  // "/docs" names a directory: its index is "/docs/" (relative links in
  // it resolve against that), as nginx and h2o answer.
  FileStream& f = *st_->file;
  http::Request request;
  ReparseHead(&request);
  http::Response response;
  files::AnswerDirectoryRedirect(f.mount->prefix, f.path_view(), request.query, response);
  EndFile();
  RunDueAfters(request, response);
  Respond(response);
  Sync();
}

void Connection::OnFileOpen(int res) {
  FileStream& f = *st_->file;
  URING_CHECK(f.inflight &&
              (f.step == FileStream::Step::kOpen || f.step == FileStream::Step::kCheck));
  f.inflight = false;
  if (f.step == FileStream::Step::kCheck) {
    if (res >= 0) env_->file_closer->CloseFile(res);
    if (f.aborted) return;
    // EXDEV: the path leads outside the root, which must not tell (404).
    if (res < 0) return FileError(files::StatusForFileErrno(-res));
    if (f.stat_errno != 0) return FileError(files::StatusForFileErrno(f.stat_errno));
    return RedirectToDirectory();
  }
  if (f.aborted) {
    if (res >= 0) env_->file_closer->CloseFile(res);
    return;
  }
  if (res < 0 && f.encoding != files::Encoding::kIdentity) return FallBackToOriginal();
  if (res < 0) return FileError(files::StatusForFileErrno(-res));
  // The version is the statx's, taken just before: a file replaced in
  // between shows as a short read (the connection then closes) or is cut
  // at the announced length.
  f.entry = env_->file_cache != nullptr
                ? env_->file_cache->Insert(f.mount->index, f.path_view(), res, f.version,
                                           env_->now_tick)
                : nullptr;
  if (f.entry != nullptr) {
    env_->file_cache->Ref(f.entry);
  } else {
    f.own_index = res;  // not cached: closed when this answer ends
  }
  ServeFile(nullptr);
  Sync();
}

void Connection::ServeFile(const http::Request* request) {
  FileStream& f = *st_->file;
  http::Request reparsed;
  if (request == nullptr) {
    ReparseHead(&reparsed);
    request = &reparsed;
  }
  // A precompressed sibling or the gzip instead of the file: either may
  // need a statx or a read first.
  if (!ChooseFileVariant(*request)) return;
  files::FileRequestFields fields;
  fields.head = ex_.head;
  fields.range = request->FindHeader("range");
  fields.if_range = request->FindHeader("if-range");
  fields.if_match = request->FindHeader("if-match");
  fields.if_none_match = request->FindHeader("if-none-match");
  fields.if_modified_since = request->FindHeader("if-modified-since");
  fields.if_unmodified_since = request->FindHeader("if-unmodified-since");
  files::EtagVariant etag_variant;
  files::FileVersion version = f.version;
  if (f.encoding != files::Encoding::kIdentity) {
    etag_variant.suffix = files::EtagSuffix(f.encoding);
  } else if (f.gzip) {
    etag_variant = {"-gzip", /*weak=*/true};
    version.size = f.entry->gzip().size();
  }
  const files::FilePlan plan = files::PlanFileResponse(fields, version, etag_variant);

  http::Response response;
  const bool body = files::StartFileAnswer(plan, f.mount->options.cache_control, f.vary, response);
  if (!body) {
    // 304, 412 or 416: no file bytes.
    EndFile();
    RunDueAfters(*request, response);
    return Respond(response);
  }
  std::string_view content_encoding;
  if (f.encoding != files::Encoding::kIdentity) {
    content_encoding = files::EncodingToken(f.encoding);
  } else if (f.gzip) {
    content_encoding = "gzip";
  }
  files::AddFileBodyFields(plan, f.base_path(), content_encoding, response);
  if (ex_.afters_due > 0) {
    // The file's bytes follow with their length: an after adds headers,
    // its status or body would not be true to them (middleware.h).
    RunDueAfters(*request, response);
    response.set_status(plan.status);
  }
  if (response.header_refused()) {
    EndFile();
    return RespondRefused(response, /*close=*/false);
  }
  if (env_->access_log) NoteRequestId(response);

  const SerializeOptions options = HeadOptions(/*can_keep=*/true);
  size_t room = 0;
  char* dst = out_.ReserveRoom(512, &room);
  URING_CHECK(dst != nullptr);
  size_t size = SerializeStreamHead(response, options, StreamFraming::kContentLength,
                                          plan.length, dst, room);
  if (size > room) {
    dst = out_.Reserve(size);
    URING_CHECK(dst != nullptr);
    SerializeStreamHead(response, options, StreamFraming::kContentLength, plan.length,
                              dst, size);
  }
  out_.Commit(size);
  ex_.status = plan.status;
  ex_.response_bytes = plan.length;
  f.next = plan.offset;
  f.end = plan.offset + plan.length;
  if (ex_.head || plan.length == 0) {
    EndFile();
    return Answered();
  }
  f.step = FileStream::Step::kBody;
  files::OpenFileCache::Entry* e = f.entry;
  if (f.gzip) return PumpFile();  // from the entry's memory
  // Unless the body comes from memory now, the exchange ends in a later
  // event (a read's, a splice's), after the receive buffer the head was
  // parsed from has been reused: keep it (the access log names it).
  if (!(e != nullptr && e->content_ready()) && !ex_.head_kept &&
      !KeepHead(ex_.head_ptr, ex_.head_len)) {
    return Abort();
  }
  const uint64_t splice_min = env_->config->splice_min_bytes;
  if (splice_min != 0 && plan.length >= splice_min && !(e != nullptr && e->content_ready()) &&
      env_->transport->AcquirePipe(&f.pipe)) {
    f.splice = true;
    env_->stats->file_splices.Add();
    return PumpSplice();
  }
  if (e != nullptr && !e->content_ready()) {
    // A small file stays in memory: this request reads it whole, and the
    // next ones are answered without a read.
    if (char* content = env_->file_cache->BeginContent(e)) {
      f.step = FileStream::Step::kLoad;
      f.inflight = true;
      f.read_buf = content;
      f.read_len = static_cast<uint32_t>(f.version.size);
      env_->host->ReadFile(slot_, e->file_index(), content, f.read_len, 0);
      return;
    }
  }
  PumpFile();
}

void Connection::PumpFile() {
  FileStream& f = *st_->file;
  if (f.step != FileStream::Step::kBody || f.inflight || f.aborted) return;
  if (f.splice) return PumpSplice();
  producer_retry_ = 0;
  while (f.next < f.end && out_.room() >= 2 && out_.pending() < kOutputHighWater) {
    if (f.entry != nullptr && (f.gzip || f.entry->content_ready())) {
      // From the cache's memory: it stays valid while the entry is held.
      const size_t n = f.end - f.next;
      const char* memory = f.gzip ? f.entry->gzip().data() : f.entry->content();
      URING_CHECK(out_.AppendExternal(memory + f.next, n, &f));
      f.Queued(nullptr, n);
      f.next += n;
      break;
    }
    io::ChunkPool* buffers = env_->file_buffers;
    if (buffers->available() == 0) {
      // Every buffer is with other readers: try again on the next tick.
      producer_retry_ = env_->now_tick + 1;
      return;
    }
    f.read_buf = buffers->Acquire();
    f.read_len = static_cast<uint32_t>(std::min<uint64_t>(buffers->chunk_size(), f.end - f.next));
    f.inflight = true;
    env_->host->ReadFile(slot_, f.file_index(), f.read_buf, f.read_len, f.next);
    return;
  }
  if (f.next == f.end) {
    f.step = FileStream::Step::kDone;
    // The exchange ends once the kernel is done with the bytes. (It may
    // have counted as answered before bytes were given back and read again.)
    if (ex_.answer == Answer::kFile) Answered();
  }
}

void Connection::YieldFileOutput() {
  if (!FileBusy()) return;
  FileStream& f = *st_->file;
  if (f.splice || f.aborted || f.step < FileStream::Step::kBody) return;
  const size_t back = out_.TakeBack(&f);
  f.next -= back;
  if (back > 0 && f.step == FileStream::Step::kDone) f.step = FileStream::Step::kBody;
  if (f.inflight) {
    // A read is in flight: its buffer goes back when it completes, unsent.
    f.yield_after_read = true;
    return;
  }
  WaitForRoom();
}

void Connection::WaitForRoom() {
  FileStream& f = *st_->file;
  URING_CHECK(!f.inflight);
  f.inflight = true;
  f.op = FileStream::Op::kPoll;
  env_->transport->PollWritable(slot_);
  // The wait is our output not progressing: the send deadline runs on.
  if (send_deadline_ == 0) send_deadline_ = After(env_->config->send_timeout_ms);
}

void Connection::OnFileRead(int res) {
  FileStream& f = *st_->file;
  URING_CHECK(f.inflight);
  f.inflight = false;
  if (f.step == FileStream::Step::kLoad) {
    const bool whole = res >= 0 && static_cast<uint64_t>(res) == f.version.size;
    env_->file_cache->EndContent(f.entry, whole);
    f.read_buf = nullptr;
    if (f.aborted) return;
    if (f.reload) {
      // Loaded to be gzipped: the answer is planned now (and the content
      // is not loaded for it twice).
      f.reload = false;
      f.variant = FileStream::Variant::kLoaded;
      ServeFile(nullptr);
      Sync();
      return;
    }
    f.step = FileStream::Step::kBody;  // from memory, or by reads if that failed
    PumpFile();
    Sync();
    return;
  }
  char* buf = f.read_buf;
  f.read_buf = nullptr;
  if (f.yield_after_read && !f.aborted) {
    // The socket filled meanwhile: read this again once it has room.
    f.yield_after_read = false;
    env_->file_buffers->Release(buf);
    WaitForRoom();
    Sync();  // the deadline
    return;
  }
  if (f.aborted || res <= 0) {
    env_->file_buffers->Release(buf);
    if (f.aborted) return;
    FileTruncated();
    Sync();
    return;
  }
  URING_CHECK(out_.AppendExternal(buf, static_cast<size_t>(res), &f));
  f.Queued(buf, static_cast<size_t>(res));
  f.next += static_cast<uint64_t>(res);  // a short read is not an error: read on
  PumpFile();
  Sync();
}

void Connection::FileTruncated() {
  // The file shrank or vanished under us (or a read failed): the head
  // promised more than there is, and only closing the connection can say
  // so. What is queued still goes out; the cache forgets the file.
  FileStream& f = *st_->file;
  env_->stats->file_truncated.Add();
  if (f.entry != nullptr) env_->file_cache->Remove(f.entry);
  f.step = FileStream::Step::kDone;
  ex_.close_after = true;
  Answered();
}

void Connection::PumpSplice() {
  FileStream& f = *st_->file;
  if (f.inflight || f.aborted || f.step != FileStream::Step::kBody) return;
  if (f.in_pipe == 0) {
    if (f.next == f.end) {
      f.step = FileStream::Step::kDone;
      send_deadline_ = 0;
      Answered();
      return;
    }
    // Fill: page references move into the pipe, no bytes are copied.
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(f.pipe.capacity, f.end - f.next));
    f.inflight = true;
    f.op = FileStream::Op::kFill;
    env_->host->SpliceToPipe(slot_, f.file_index(), f.next, f.pipe.write_fd, len);
    return;
  }
  // The head (and anything queued before it) leaves first; the send's
  // completion comes back here through Sync().
  if (!out_.empty() || out_.send_inflight() || phase_ > Phase::kFinishing) return;
  f.inflight = true;
  f.op = FileStream::Op::kDrain;
  env_->transport->SpliceToSocket(slot_, f.pipe.read_fd, f.in_pipe, f.next < f.end);
  if (send_deadline_ == 0) send_deadline_ = After(env_->config->send_timeout_ms);
}

void Connection::OnFileSplice(int res) {
  FileStream& f = *st_->file;
  URING_CHECK(f.inflight && (f.op == FileStream::Op::kFill ||
                             f.op == FileStream::Op::kDrain));
  const FileStream::Op op = f.op;
  f.inflight = false;
  f.op = FileStream::Op::kNone;
  if (op == FileStream::Op::kFill && res > 0) f.in_pipe += static_cast<uint32_t>(res);
  if (op == FileStream::Op::kDrain && res > 0) f.in_pipe -= static_cast<uint32_t>(res);
  if (f.aborted || phase_ >= Phase::kClosing) return;
  if (op == FileStream::Op::kFill) {
    if (res <= 0) {
      FileTruncated();
    } else {
      f.next += static_cast<uint64_t>(res);
      PumpSplice();
    }
    Sync();
    return;
  }
  if (res == -EAGAIN) {
    // The socket is full: wait for room (the send deadline keeps running:
    // a peer that takes nothing is cut off as with any send).
    WaitForRoom();
    return;
  }
  if (res < 0) {
    Abort();  // EPIPE, ECONNRESET: the peer is gone
    return;
  }
  // Progress on our output: the send deadline starts again.
  send_deadline_ = After(env_->config->send_timeout_ms);
  PumpSplice();
  Sync();
}

void Connection::OnWritable(int res) {
  FileStream& f = *st_->file;
  URING_CHECK(f.inflight && f.op == FileStream::Op::kPoll);
  f.inflight = false;
  f.op = FileStream::Op::kNone;
  if (f.aborted || phase_ >= Phase::kClosing) return;
  if (res < 0) {
    Abort();
    return;
  }
  if (f.splice) {
    PumpSplice();
  } else {
    PumpFile();
  }
  Sync();
}

void Connection::FileError(int status) {
  EndFile();
  AnswerError(status, /*close=*/false);
  Sync();
}

void Connection::MaybeEndFile() {
  if (!FileBusy()) return;
  FileStream& f = *st_->file;
  if (f.inflight || f.queued() != 0) return;
  if (f.step != FileStream::Step::kDone && !f.aborted) return;
  EndFile();
  MaybeFinishExchange();
}

void Connection::EndFile() {
  if (st_ == nullptr || st_->file == nullptr) return;
  FileStream& f = *st_->file;
  URING_CHECK(!f.inflight && f.queued() == 0);
  if (f.entry != nullptr) env_->file_cache->Unref(f.entry);
  if (f.own_index >= 0) env_->file_closer->CloseFile(f.own_index);
  if (f.pipe.read_fd >= 0) env_->transport->ReleasePipe(f.pipe, f.in_pipe == 0);
  f.pipe = conn::Transport::Pipe();
  f.in_pipe = 0;
  f.splice = false;
  f.entry = nullptr;
  f.own_index = -1;
  f.step = FileStream::Step::kIdle;
  f.index = f.aborted = f.yield_after_read = false;
  f.gzip = f.vary = f.reload = false;
  f.encoding = files::Encoding::kIdentity;
  f.variant = FileStream::Variant::kUndecided;
  f.stat_errno = 0;
  f.mount = nullptr;
  f.path_len = 0;
  f.next = f.end = 0;
  // Back to the pool: a stream state holds a file's only while it runs.
  env_->streams->ReleaseFile(std::move(st_->file));
}

}  // namespace uring_http::http1
