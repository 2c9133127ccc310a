// Uploads to disk (see multipart_files.h).
#include "src/http/multipart_files.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace uring_http::http {
namespace {

// "upload-" and 16 hex digits; random, so that names cannot be guessed
// ahead (O_EXCL alone already keeps an existing file from being reused).
std::string NewFileName() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    thread_local uint64_t counter = 0;
    v = static_cast<uint64_t>(now.tv_nsec) * 0x9e3779b97f4a7c15ull ^ ++counter;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "upload-";
  for (int shift = 60; shift >= 0; shift -= 4) name.push_back(kHex[(v >> shift) & 0xf]);
  return name;
}

}  // namespace

std::optional<std::string_view> SavedUpload::Value(std::string_view name) const {
  for (const FormValue& v : values) {
    if (v.name == name) return v.value;
  }
  return std::nullopt;
}

const SavedFile* SavedUpload::File(std::string_view name) const {
  for (const SavedFile& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void SavedUpload::RemoveFiles() {
  for (const SavedFile& f : files) unlink(f.path.c_str());
  files.clear();
}

MultipartSaver::MultipartSaver(const UploadOptions& options) : options_(options) {
  dir_fd_ = open(options_.directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) FailWrite("cannot open the upload directory", errno);
}

MultipartSaver::~MultipartSaver() {
  RemoveAll();
  if (dir_fd_ >= 0) close(dir_fd_);
}

void MultipartSaver::FailWrite(const char* what, int err) {
  Fail(500, std::string("multipart: ") + what + " " + options_.directory + ": " +
                std::strerror(err));
  RemoveAll();
}

void MultipartSaver::CloseFile() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void MultipartSaver::RemoveAll() {
  CloseFile();
  for (const SavedFile& f : upload_.files) {
    if (dir_fd_ >= 0) unlinkat(dir_fd_, f.path.c_str() + f.path.rfind('/') + 1, 0);
  }
  upload_.files.clear();
  upload_.values.clear();
}

void MultipartSaver::OnPart(const MultipartPart& part) {
  if (failed()) return;
  value_ = part.filename.empty();
  if (value_) {
    upload_.values.push_back({std::string(part.name), std::string()});
    return;
  }
  if (upload_.files.size() >= options_.max_files) {
    Fail(413, "multipart: more than " + std::to_string(options_.max_files) + " files");
    RemoveAll();
    return;
  }
  std::string name;
  for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
    name = NewFileName();
    fd_ = openat(dir_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                 options_.file_mode);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) return FailWrite("cannot create a file in", errno);
  SavedFile file;
  file.name = part.name;
  file.filename = part.filename;
  file.content_type = part.content_type;
  file.path = options_.directory + (options_.directory.ends_with('/') ? "" : "/") + name;
  upload_.files.push_back(std::move(file));
}

void MultipartSaver::OnPartData(std::string_view piece) {
  if (failed()) return;
  if (value_) {
    if (piece.size() > options_.max_value_bytes - value_bytes_) {
      Fail(413, "multipart: form values over " + std::to_string(options_.max_value_bytes) +
                    " bytes (field \"" + upload_.values.back().name + "\")");
      RemoveAll();
      return;
    }
    value_bytes_ += piece.size();
    upload_.values.back().value.append(piece);
    return;
  }
  SavedFile& file = upload_.files.back();
  if (piece.size() > options_.max_file_bytes - file.size) {
    Fail(413, "multipart: file \"" + file.name + "\" over " +
                  std::to_string(options_.max_file_bytes) + " bytes");
    RemoveAll();
    return;
  }
  while (!piece.empty()) {
    const ssize_t n = write(fd_, piece.data(), piece.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FailWrite("cannot write a file in", n < 0 ? errno : ENOSPC);
    piece.remove_prefix(static_cast<size_t>(n));
    file.size += static_cast<uint64_t>(n);
  }
}

void MultipartSaver::OnPartEnd() {
  if (failed() || value_) return;
  if (close(fd_) != 0) {
    fd_ = -1;
    return FailWrite("cannot write a file in", errno);
  }
  fd_ = -1;
}

SavedUpload MultipartSaver::Take(const MultipartError& stream_error) {
  if (failed() || !stream_error.ok()) {
    RemoveAll();
    SavedUpload failed_upload;
    failed_upload.error = stream_error.ok() ? receiver_error() : stream_error;
    return failed_upload;
  }
  CloseFile();
  SavedUpload out = std::move(upload_);
  upload_ = SavedUpload();
  return out;
}

SavedUpload SaveMultipart(const Request& request, const UploadOptions& options) {
  MultipartSaver saver(options);
  if (saver.failed()) return saver.Take({});
  const MultipartError error = ReadMultipart(request, saver, options.limits);
  return saver.Take(error);
}

}  // namespace uring_http::http
