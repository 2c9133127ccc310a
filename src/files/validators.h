// Validators of a static file and the conditional requests that use them
// (RFC 9110 8.8, 13.1, 13.2): a strong ETag made from the file's metadata,
// HTTP-dates for Last-Modified (src/http/http_date.h), the If-Match / If-None-Match / If-Modified-Since /
// If-Unmodified-Since evaluation in the RFC's order, and If-Range.
//
// Everything here is a pure function of its arguments, with one exception:
// a condition with an obsolete RFC 850 date reads the clock (see
// ParseHttpDate).
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_VALIDATORS_H_
#define URING_HTTP_SRC_FILES_VALIDATORS_H_

#include <linux/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/http/http_date.h"

namespace uring_http::files {

// What identifies one version of a file's content (from statx), and, for
// the open-file cache, of the file itself (its inode and status change time).
struct FileVersion {
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  uint64_t inode = 0;
  int64_t ctime_sec = 0;
  uint32_t ctime_nsec = 0;
};

// A statx's version of the file it describes.
inline FileVersion VersionOf(const struct statx& stx) {
  FileVersion v;
  v.size = stx.stx_size;
  v.mtime_sec = stx.stx_mtime.tv_sec;
  v.mtime_nsec = stx.stx_mtime.tv_nsec;
  v.inode = stx.stx_ino;
  v.ctime_sec = stx.stx_ctime.tv_sec;
  v.ctime_nsec = stx.stx_ctime.tv_nsec;
  return v;
}

// ---- ETag

// The longest tag FormatStrongEtag() writes: two quotes, 16 + 16 + 8 hex
// digits and two separators (44 bytes), rounded up.
inline constexpr size_t kMaxEtagSize = 48;

// A strong entity-tag, quoted: "\"<size>-<mtime_sec>.<mtime_nsec>\"", each
// in lower-case hex without leading zeros (a negative mtime_sec as its 64-bit
// two's complement). Deterministic: the same version always gets the same
// tag, and a rewritten file (new size or mtime, to the nanosecond) gets a new
// one. No inode: it would tell clients about the server's disk (a known
// information leak) and differ between two servers holding the same file; a
// file replaced by one of the same size and mtime to the nanosecond keeps
// its tag, as with nginx's. Called strong although two same-size writes
// within one tick of the file system's timestamp clock (milliseconds) would
// share it: nginx and h2o accept the same with one-second times. Writes into
// out[0..kMaxEtagSize) and returns the length.
size_t FormatStrongEtag(const FileVersion& v, char out[kMaxEtagSize]);
// The same as a string.
std::string StrongEtag(const FileVersion& v);

// ---- HTTP-date: src/http/http_date.h, named here too for the callers
// that validate files.

using http::FormatHttpDate;
using http::kHttpDateSize;
using http::ParseHttpDate;
using http::ParseHttpDateAt;

// ---- Conditional requests (RFC 9110 13.2.2)

enum class Precondition : uint8_t {
  kNone,         // no condition stops the request: answer it normally
  kNotModified,  // 304
  kFailed,       // 412
};

// The request's conditional header fields; an empty view means absent (a
// field sent with an empty value is treated as absent too).
// (The {} initializers let callers name only the fields they have without
// -Wmissing-field-initializers.)
struct ConditionalHeaders {
  std::string_view if_match{};
  std::string_view if_none_match{};
  std::string_view if_modified_since{};
  std::string_view if_unmodified_since{};
  bool get_or_head = true;  // the method is GET or HEAD
};

// Evaluates the preconditions for an existing file whose current ETag is
// `etag` (a complete entity-tag, as FormatStrongEtag() writes it) and whose
// Last-Modified is `mtime_sec`, in RFC 9110 13.2.2's order:
//   1. If-Match: "*" passes (the file exists); otherwise it passes only when
//      a listed tag matches `etag` strongly (a W/ tag never does). Failing,
//      or a malformed list: kFailed.
//   2. Else If-Unmodified-Since: modified after the date: kFailed. An
//      invalid date is ignored.
//   3. If-None-Match: "*" or a tag matching `etag` weakly (W/ ignored):
//      kNotModified for GET/HEAD, kFailed otherwise. A malformed list matches
//      nothing, so the full response goes out (the safe answer).
//   4. Else, for GET/HEAD only, If-Modified-Since: not modified since the
//      date: kNotModified. An invalid date (a list of dates included) is
//      ignored.
// Lists are comma-separated entity-tags with optional spaces and tabs; empty
// elements are skipped (RFC 9110 5.6.1); a list with no tag, or with any
// element that is not an entity-tag, is malformed as a whole. "*" must stand
// alone. Dates compare at one-second granularity, as Last-Modified has no
// finer part. Range/If-Range (step 5) is IfRangeAllows()'s.
Precondition Evaluate(const ConditionalHeaders& h, std::string_view etag, int64_t mtime_sec);

// If-Range (RFC 9110 13.1.5): whether the Range field may be applied. True
// for an empty field; for a single entity-tag that matches `etag` strongly
// (a weak tag never does); for an HTTP-date exactly equal to `mtime_sec`.
// False for anything else, malformed values and lists included: the full
// representation is then sent with 200, which is always correct. Last-Modified
// is taken as a strong validator here (RFC 9110 8.8.2.2 would need the
// response's Date; clients prefer the ETag when they have one).
bool IfRangeAllows(std::string_view if_range, std::string_view etag, int64_t mtime_sec);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_VALIDATORS_H_
