// Uploads to disk: the file parts of a multipart/form-data body streamed
// into files of a directory, the other fields kept in memory (Go's
// ParseMultipartForm with its temporary files, made explicit). Each file
// gets a name made here, "upload-" and 16 random hex digits, created with
// O_EXCL and O_NOFOLLOW beneath the directory: never the client's filename,
// which is only reported (SavedFile::filename).
//
// SaveMultipart(request, options) does it in a SLOW handler, reading the
// body as it arrives (flat memory: 64 KiB of buffer, whatever the size);
// router::SaveMultipartSink (router/multipart_sink.h) does it in a FAST
// route's BodySink, on the ring thread (write(2) into the page cache, which
// does not wait for the disk as a rule; a disk that cannot keep up stalls
// the ring: prefer the SLOW form then).
//
// Files that succeed are the caller's: move them, or delete them
// (SavedUpload::RemoveFiles()). A body that fails for any reason leaves no
// file behind.
//
// Thread-safety: a MultipartSaver or SavedUpload belongs to one thread.
#ifndef URING_HTTP_SRC_HTTP_MULTIPART_FILES_H_
#define URING_HTTP_SRC_HTTP_MULTIPART_FILES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/multipart.h"
#include "src/http/multipart_form.h"
#include "src/http/request.h"

namespace uring_http::http {

struct UploadOptions {
  // Where file parts are written; it must exist and be writable.
  std::string directory;
  uint64_t max_file_bytes = UINT64_MAX;  // one file; more: 413
  size_t max_files = 100;                // file parts; more: 413
  // Every other field's bytes together, kept in memory (Go's maxMemory
  // plays this part); more: 413.
  size_t max_value_bytes = 1024 * 1024;
  MultipartLimits limits;                // on the body itself
  unsigned file_mode = 0600;             // the new files' permissions
};

struct SavedFile {
  std::string name;          // the field's name
  std::string filename;      // the client's filename: for display, never a path
  std::string content_type;  // as sent
  std::string path;          // directory + "/upload-<16 hex digits>"
  uint64_t size = 0;
};

struct FormValue {
  std::string name;
  std::string value;
};

// A form whose files are on disk.
class SavedUpload {
 public:
  bool ok() const { return error.ok(); }
  // The first value named `name` (nullopt if none), Go's FormValue.
  std::optional<std::string_view> Value(std::string_view name) const;
  // The first file named `name` (null if none), Go's FormFile.
  const SavedFile* File(std::string_view name) const;
  // Deletes every file listed (Go's Form.RemoveAll); the lists are emptied.
  void RemoveFiles();

  MultipartError error;
  std::vector<FormValue> values;  // fields that are not files, in order
  std::vector<SavedFile> files;   // in order
};

// The receiver that writes file parts to disk and keeps values; what
// SaveMultipart and router::SaveMultipartSink are made of. Until Take(),
// it owns the files it wrote: destroyed (or failed) before, it deletes them.
class MultipartSaver : public MultipartReceiver {
 public:
  explicit MultipartSaver(const UploadOptions& options);
  ~MultipartSaver() override;
  MultipartSaver(const MultipartSaver&) = delete;
  MultipartSaver& operator=(const MultipartSaver&) = delete;

  void OnPart(const MultipartPart& part) override;
  void OnPartData(std::string_view piece) override;
  void OnPartEnd() override;

  // The saved form, the files now the caller's; `error` set (and no file
  // left) when `stream_error` or this saver failed.
  SavedUpload Take(const MultipartError& stream_error);

 private:
  void FailWrite(const char* what, int err);
  void CloseFile();
  void RemoveAll();

  const UploadOptions options_;
  int dir_fd_ = -1;
  int fd_ = -1;           // the file part being written, or -1
  bool value_ = false;    // the current part is a value
  uint64_t value_bytes_ = 0;
  SavedUpload upload_;
};

// Reads the request's body (streamed or buffered, see ReadMultipart) and
// saves it as above. On failure the handler answers
// upload.error.Reply(response).
SavedUpload SaveMultipart(const Request& request, const UploadOptions& options);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_MULTIPART_FILES_H_
