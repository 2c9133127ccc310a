// HTTP-date (RFC 9110 5.6.7): the IMF-fixdate the server writes (Date,
// Last-Modified, Expires) and the three forms a client may send
// (If-Modified-Since, If-Unmodified-Since, If-Range). Pure functions, with
// one exception: ParseHttpDate() reads the clock when it meets an obsolete
// RFC 850 date, whose two-digit year is read relative to the current year
// (ParseHttpDateAt() takes that year's instant as an argument instead).
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_HTTP_HTTP_DATE_H_
#define URING_HTTP_SRC_HTTP_HTTP_DATE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uring_http::http {

inline constexpr size_t kHttpDateSize = 29;

// The IMF-fixdate of a Unix time, "Sun, 06 Nov 1994 08:49:37 GMT", into
// out[0..29); returns 29. Times outside the years 0000-9999, which have no
// four-digit year, are clamped to 0000-01-01 00:00:00 and 9999-12-31 23:59:59.
size_t FormatHttpDate(int64_t unix_seconds, char out[kHttpDateSize]);

// Parses an HTTP-date in any of its three forms:
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"  (obsolete)
//   asctime      "Sun Nov  6 08:49:37 1994"        (obsolete; day " 6" or "06")
// Returns false (the caller then ignores the field, RFC 9110 13.1) for
// anything else: other spacing, lower-case names (HTTP-date is case
// sensitive), an impossible date (Feb 30, Feb 29 of a common year, hour 24),
// a list of dates. Surrounding spaces and tabs are allowed. Second 60 (a leap
// second) is accepted and counts as the next minute's first second. The day
// name must be a day name but need not match the date: the date fields carry
// the meaning, and Go's and nginx's parsers do not check it either.
// RFC 850's two-digit year is the year with those last two digits in the
// window of 100 years ending 50 years after the current one: a year more
// than 50 years in the future is read as the most recent one in the past
// (RFC 9110 5.6.7), one less than 50 years in the past as the future one.
bool ParseHttpDate(std::string_view text, int64_t* unix_seconds);
// The same, with `now_unix_seconds` as the current time (for tests, and for
// callers that already read the clock).
bool ParseHttpDateAt(std::string_view text, int64_t now_unix_seconds, int64_t* unix_seconds);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_HTTP_DATE_H_
