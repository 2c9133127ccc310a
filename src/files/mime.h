// Content-Type of a static file, chosen by its file-name extension from a
// small built-in table (no /etc/mime.types: the answer must not depend on the
// machine, and the common web types fit in a few dozen entries). Text types
// carry "; charset=utf-8" so that browsers do not guess.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_MIME_H_
#define URING_HTTP_SRC_FILES_MIME_H_

#include <string_view>

namespace uring_http::files {

// What ContentTypeFor() answers for a file it does not know.
inline constexpr std::string_view kDefaultContentType = "application/octet-stream";

// The Content-Type for the file at `path` (a decoded file path such as
// ResolvedPath::relative; '/' separates segments). Decided by the last
// extension of the final segment, compared case-insensitively: "a.tar.gz" is
// application/gzip, "dir.d/file" has no extension. A leading dot belongs to
// the name, not to an extension: ".bashrc" and ".html" are dotfiles without
// one, while ".config.json" is JSON. No extension, an empty one ("name.") or
// an unknown one: kDefaultContentType. The returned view is static.
std::string_view ContentTypeFor(std::string_view path);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_MIME_H_
