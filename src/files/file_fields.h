// The parts of a static file's answer that do not depend on the protocol
// carrying it: the status for a failed lookup, the redirect of a directory
// named without its slash, and the fields a FilePlan (file_response.h)
// puts on the answer. HTTP/1 (src/http1/file_answer.cc) and HTTP/2
// (src/http2/file_streams.cc) frame them each their own way.
//
// Thread-safety: stateless.
#ifndef URING_HTTP_SRC_FILES_FILE_FIELDS_H_
#define URING_HTTP_SRC_FILES_FILE_FIELDS_H_

#include <string_view>

#include "src/files/file_response.h"
#include "src/http/response.h"

namespace uring_http::files {

// The status for a failed statx or openat2 of a path beneath the root (an
// errno): 404 for what is absent or outside the root (which must not
// tell), 403, 503 for a lack of descriptors or memory, else 500.
int StatusForFileErrno(int err);

// 301 to "prefix + path + /" (then "?query"): "/docs" names a directory,
// whose index is "/docs/" (relative links in it resolve against that), as
// nginx and h2o answer. The path is percent-encoded again for Location.
void AnswerDirectoryRedirect(std::string_view prefix, std::string_view path,
                             std::string_view query, http::Response& response);

// The validator fields every answer of the plan carries (ETag,
// Last-Modified, X-Content-Type-Options, Cache-Control when the mount sets
// one, Vary when the answer could differ by Accept-Encoding), its status,
// and for a 412 or 416 its short body (and a 416's Content-Range).
// Returns true when the plan has a file body to send (200 or 206).
bool StartFileAnswer(const FilePlan& plan, std::string_view cache_control, bool vary,
                     http::Response& response);

// A 200 or 206's fields about its body: the Content-Type guessed from the
// file's name, Content-Encoding (empty: identity), Accept-Ranges and a
// 206's Content-Range.
void AddFileBodyFields(const FilePlan& plan, std::string_view file_name,
                       std::string_view content_encoding, http::Response& response);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_FILE_FIELDS_H_
