// Turns the path of a request-target into a file path relative to a mount's
// root directory, or says why it cannot: 400 for bytes no file name may hold,
// 404 for a path that leaves the root or is too long to be opened. This is
// the first defence against path traversal; opening the result with
// RESOLVE_BENEATH under the root's directory descriptor is the second, which
// is why nothing here touches the file system (symbolic links are the
// kernel's to judge).
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_URL_PATH_H_
#define URING_HTTP_SRC_FILES_URL_PATH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace uring_http::files {

enum class PathStatus : uint8_t {
  kOk,
  kBadRequest,  // 400: malformed escape, or a byte no file name may hold
  kNotFound,    // 404: leaves the mount root, or longer than a file name can be
};

// Longer decoded segments or paths cannot be opened (NAME_MAX, PATH_MAX) and
// answer 404, as ENAMETOOLONG would.
inline constexpr size_t kMaxSegmentBytes = 255;
inline constexpr size_t kMaxPathBytes = 4096;

struct ResolvedPath {
  // Fail-closed: only ResolveUrlPath() says kOk.
  PathStatus status = PathStatus::kBadRequest;
  // kOk: the segments joined by '/', e.g. "css/site.css", or "" for the mount
  // root. Never starts or ends with '/', holds no empty, "." or ".."
  // segment, no NUL, '\\' or other control byte. Empty when not kOk.
  std::string relative;
  // kOk: the request named a directory: the decoded path ends in '/', or in a
  // "." or ".." segment (RFC 3986 5.2.4 turns "/a/b/.." into "/a/"), or
  // nothing remains (the mount root).
  bool directory = false;
};

// `path`: the request-target's path (origin-form, starting with '/', the
// query already split off by the parser). `prefix`: the mount prefix, "/" or
// e.g. "/assets/", always ending in '/'. The caller has checked that `path`
// starts with `prefix` or equals it without its trailing slash ("/assets",
// the root); any other `path` is kNotFound.
//
// The part after the prefix is percent-decoded exactly once ("%252e" becomes
// the three bytes "%2e", an ordinary name, not a dot), then split on '/':
//   kBadRequest: a malformed escape ("%", "%4", "%zz"); an encoded '/'
//     ("%2F": it would neither be a separator nor can it be a name byte); a
//     '\\', literal or encoded (Windows-style traversal); NUL or any other
//     control byte (0x01-0x1f, 0x7f), literal or encoded.
//   kNotFound: a ".." (also decoded from "%2e%2e") with no segment left to
//     remove, i.e. above the mount root; a decoded segment longer than
//     kMaxSegmentBytes, or more than kMaxPathBytes decoded after the prefix.
// kBadRequest is decided first: a path with both is kBadRequest.
// Empty and "." segments are dropped, ".." removes the segment before it,
// "..." and longer runs of dots are ordinary names. '+' stays '+' (that rule
// is for form data, not paths). Bytes 0x80-0xff pass through unchecked
// (UTF-8 file names; the file system decides).
ResolvedPath ResolveUrlPath(std::string_view path, std::string_view prefix);

// Whether a resolved path (ResolvedPath::relative under mount `prefix`) is
// hidden: some segment starts with '.' (".env", ".git/config", "dir/.x",
// also "..." and names decoded from "%2e"), so that dotfiles, version
// control and editor leftovers under a root are not served by default.
// Except /.well-known/ (RFC 8615: ACME challenges, security.txt): a first
// segment ".well-known" under the "/" mount is not hidden (the segments
// below it still are). The mount's prefix itself is the program's choice
// and is not looked at.
bool IsHiddenPath(std::string_view relative, std::string_view prefix);
// The same into *resolved, reusing its string's memory (the hot path
// allocates nothing once the string has grown to the longest path seen).
void ResolveUrlPath(std::string_view path, std::string_view prefix, ResolvedPath* resolved);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_URL_PATH_H_
