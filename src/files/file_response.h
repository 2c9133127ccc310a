// What to answer to a GET or HEAD of a regular file, from the request's
// conditional and Range fields and the file's version: the status, the body
// range and the validator fields (RFC 9110 13.2.2's order: If-Match,
// If-Unmodified-Since, If-None-Match, If-Modified-Since, then If-Range and
// Range). No I/O: the connection does the opening and sending.
//
// Thread-safety: stateless.
#ifndef URING_HTTP_SRC_FILES_FILE_RESPONSE_H_
#define URING_HTTP_SRC_FILES_FILE_RESPONSE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/files/byte_range.h"
#include "src/files/validators.h"

namespace uring_http::files {

// The request fields that decide a file's answer (empty: absent).
struct FileRequestFields {
  bool head = false;
  std::string_view range;
  std::string_view if_range;
  std::string_view if_match;
  std::string_view if_none_match;
  std::string_view if_modified_since;
  std::string_view if_unmodified_since;
};

// How an encoded representation's ETag differs from the file's own:
// `suffix` goes inside the quotes ("\"1f-65a.0-br\""), and a `weak` tag is
// W/ (a gzip made on the fly: the bytes depend on the compressor).
struct EtagVariant {
  std::string_view suffix{};
  bool weak = false;
};

struct FilePlan {
  int status = 200;    // 200, 206, 304, 412 or 416
  uint64_t offset = 0; // the body: file bytes [offset, offset + length)
  uint64_t length = 0; // (200 and 206 only; HEAD sends none but says it)
  char etag[kMaxEtagSize + 16];
  size_t etag_len = 0;
  char last_modified[kHttpDateSize];
  char content_range[kMaxContentRangeSize];  // 206 and 416
  size_t content_range_len = 0;

  std::string_view etag_view() const { return {etag, etag_len}; }
  std::string_view last_modified_view() const { return {last_modified, kHttpDateSize}; }
  std::string_view content_range_view() const { return {content_range, content_range_len}; }
};

FilePlan PlanFileResponse(const FileRequestFields& request, const FileVersion& version,
                          EtagVariant variant = {});

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_FILE_RESPONSE_H_
