#include "src/files/file_fields.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "src/files/mime.h"

namespace uring_http::files {

int StatusForFileErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:   // a symbolic link loop, or a magic link (RESOLVE_NO_MAGICLINKS)
    case EXDEV:   // the path would leave the root (RESOLVE_BENEATH)
      return 404;
    case EACCES:
    case EPERM:
      return 403;
    case ENFILE:  // the fixed-file table is full
    case EMFILE:
    case ENOMEM:
    case EAGAIN:
      return 503;
    default:
      return 500;
  }
}

namespace {

// Percent-encodes a decoded path for a Location field: unreserved bytes,
// '/' and the sub-delimiters a path may hold stay, the rest is %XX.
void AppendEncodedPath(std::string& out, std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : path) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::strchr("-._~/!$&'()*+,;=:@", c) != nullptr;
    if (keep && c != 0) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

}  // namespace

void AnswerDirectoryRedirect(std::string_view prefix, std::string_view path,
                             std::string_view query, http::Response& response) {
  response.set_status(301);
  std::string location(prefix);
  AppendEncodedPath(location, path);
  location.push_back('/');
  if (!query.empty()) {
    location.push_back('?');
    location.append(query);
  }
  // A Location past the header limit is refused: the caller answers 500.
  (void)response.AddHeader("Location", location);
  response.set_content_type("text/plain; charset=utf-8");
  (void)response.AddHeader("X-Content-Type-Options", "nosniff");
  response.set_body("301 Moved Permanently\n");
}

bool StartFileAnswer(const FilePlan& plan, std::string_view cache_control, bool vary,
                     http::Response& response) {
  response.set_status(plan.status);
  // Short, valid fields: refused only under a limit below them, which
  // fails the response (the caller checks header_refused()).
  (void)response.AddHeader("ETag", plan.etag_view());
  (void)response.AddHeader("Last-Modified", plan.last_modified_view());
  // The Content-Type is the file name's guess: a browser must not second-
  // guess it (an uploaded .txt run as HTML or script).
  (void)response.AddHeader("X-Content-Type-Options", "nosniff");
  if (!cache_control.empty()) (void)response.AddHeader("Cache-Control", cache_control);
  if (vary) (void)response.AddHeader("Vary", "Accept-Encoding");
  if (plan.status == 412 || plan.status == 416) {
    if (plan.status == 416) (void)response.AddHeader("Content-Range", plan.content_range_view());
    response.set_content_type("text/plain; charset=utf-8");
    response.set_static_body(plan.status == 416 ? "416 Range Not Satisfiable\n"
                                                : "412 Precondition Failed\n");
  }
  return plan.status == 200 || plan.status == 206;
}

void AddFileBodyFields(const FilePlan& plan, std::string_view file_name,
                       std::string_view content_encoding, http::Response& response) {
  response.set_content_type(ContentTypeFor(file_name));
  if (!content_encoding.empty()) (void)response.AddHeader("Content-Encoding", content_encoding);
  (void)response.AddHeader("Accept-Ranges", "bytes");
  if (plan.status == 206) (void)response.AddHeader("Content-Range", plan.content_range_view());
}

}  // namespace uring_http::files
