// Helpers a handler calls on its Response for the common answers that are
// easy to get subtly wrong: a redirect (301, 302, 303, 307, 308) with a
// Location that cannot split the head, Cache-Control from named
// directives, Content-Disposition for a download (RFC 6266, with RFC 8187's
// filename* for names beyond ASCII), and Set-Cookie with its attributes,
// the name and value checked against RFC 6265.
//
// Each returns false (or an error) and leaves the response as it was when
// its input is unsafe: a handler that passes what a client sent cannot be
// made to emit a header of the client's choosing.
//
// Thread-safety: stateless; any thread, on a Response the caller owns.
#ifndef URING_HTTP_SRC_HTTP_RESPONSE_HELPERS_H_
#define URING_HTTP_SRC_HTTP_RESPONSE_HELPERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/http/response.h"

namespace uring_http::http {

// ---- Redirects

// Sets `status` (301, 302, 303, 307 or 308), "Location: <location>" and a
// short text body naming it. `location` may be absolute ("https://x/y") or
// relative ("/login?next=%2F", "../up"); bytes that may not stand in a URI
// (space, '"', '<', '>', '\\', '^', '`', '{', '|', '}', and 0x80-0xff) are
// percent-encoded, as Go's http.Redirect does. False, and nothing set, for
// another status, an empty location, or one holding a control byte (CR, LF,
// NUL, ...: the header injection a raw Location would allow).
bool Redirect(Response& response, std::string_view location, int status = 302);

// The Location a trailing-slash redirect sends for `path` (with `query`, if
// any): the path with its final '/' toggled ("/docs" <-> "/docs/"), leading
// slashes collapsed to one so that "//evil.example/" can never become a
// network-path reference to another host.
std::string ToggleTrailingSlash(std::string_view path, std::string_view query);

// ---- Cache-Control (RFC 9111 5.2.2)

struct CacheControl {
  std::optional<int64_t> max_age;   // seconds; max-age=N
  std::optional<int64_t> s_maxage;  // shared caches' max age
  bool is_public = false;
  bool is_private = false;
  bool no_cache = false;
  bool no_store = false;
  bool must_revalidate = false;
  bool immutable = false;           // RFC 8246
  std::optional<int64_t> stale_while_revalidate;  // RFC 5861

  // "public, max-age=31536000, immutable": the directives set, in a fixed
  // order (public, private, no-cache, no-store, must-revalidate, max-age,
  // s-maxage, stale-while-revalidate, immutable). Negative seconds count
  // as 0.
  std::string ToString() const;
};

// Sets (replaces) Cache-Control; false if the head has no room.
bool SetCacheControl(Response& response, const CacheControl& directives);

// ---- Content-Disposition (RFC 6266)

enum class Disposition : uint8_t { kAttachment, kInline };

// The field value: `attachment; filename="report.pdf"`, and for a name with
// bytes beyond ASCII also `filename*=UTF-8''r%C3%A9sum%C3%A9.pdf` (RFC
// 8187), the plain filename then carrying '_' for each such character for
// old clients. In the quoted name '"' and '\\' are escaped with '\\'; any
// '/' or '\\' path separator in the name becomes '_' (only the last name
// counts), control bytes are dropped. An empty name gives the bare type.
std::string ContentDispositionValue(std::string_view filename,
                                    Disposition disposition = Disposition::kAttachment);
// Sets (replaces) Content-Disposition; false if the head has no room.
bool SetContentDisposition(Response& response, std::string_view filename,
                           Disposition disposition = Disposition::kAttachment);

// ---- Set-Cookie (RFC 6265 4.1)

enum class SameSite : uint8_t { kUnset, kStrict, kLax, kNone };

struct SetCookieOptions {
  std::string_view path;                // Path=; "" for none
  std::string_view domain;              // Domain=; "" for none (host only)
  std::optional<int64_t> max_age;       // Max-Age= seconds; <= 0 expires it now
  std::optional<int64_t> expires;       // Expires=, Unix seconds (as an HTTP-date)
  bool secure = false;
  bool http_only = false;
  SameSite same_site = SameSite::kUnset;
};

// The Set-Cookie field value, or an error naming what is wrong: a name
// that is not an RFC 9110 token; a value with a byte outside cookie-octet
// (space, '"' but for one surrounding pair, ',', ';', '\\', control bytes,
// 0x80-0xff: encode such values first); a Path with a control byte or ';';
// a Domain that is not letters, digits, '-' and '.'; SameSite=None without
// Secure (browsers reject that cookie).
absl::StatusOr<std::string> SetCookieValue(std::string_view name, std::string_view value,
                                           const SetCookieOptions& options = {});
// Adds one Set-Cookie line (several cookies: call it for each). The
// response is unchanged on an error.
absl::Status SetCookie(Response& response, std::string_view name, std::string_view value,
                       const SetCookieOptions& options = {});

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_RESPONSE_HELPERS_H_
