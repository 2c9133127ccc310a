// The Range request field and the Content-Range response field for byte
// ranges (RFC 9110 14.1-14.4), as a static-file server needs them: one range
// is served as a 206; several ranges are answered with the whole file (a 200
// is always a correct answer to a Range request, RFC 9110 14.2, and spares
// us multipart/byteranges, which clients seldom ask for and that is a known
// amplification vector); a set that no byte of the file satisfies is a 416.
//
// The caller applies Range to GET only, and only when IfRangeAllows()
// (validators.h) says so.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_BYTE_RANGE_H_
#define URING_HTTP_SRC_FILES_BYTE_RANGE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uring_http::files {

enum class RangeResult : uint8_t {
  kNone,           // ignore the field: send the whole representation, 200
  kSingle,         // send *out, 206
  kUnsatisfiable,  // 416, with FormatContentRange(nullptr, size, ...)
};

// Inclusive bounds: first <= last < the representation's size.
struct ByteRange {
  uint64_t first = 0;
  uint64_t last = 0;

  uint64_t length() const { return last - first + 1; }
};

// Evaluates the Range field value `header` against a representation of
// `size` bytes; on kSingle, stores the range in *out.
//   - The unit is "bytes", case-insensitive, directly followed by '='.
//     Another unit, or any syntax error anywhere in the set, is kNone: an
//     invalid Range field is ignored (RFC 9110 14.2).
//   - "first-last": last beyond the end is clamped to size - 1; last < first
//     is invalid (kNone). "first-": to the end. "-n": the last n bytes; n at
//     least size means the whole file, n = 0 is unsatisfiable.
//   - A range is satisfiable when first < size ("-n": when n > 0 and
//     size > 0); a zero-length file satisfies none.
//   - Several ranges: kNone when any is satisfiable (whole file, see above),
//     kUnsatisfiable when none is.
//   - Numbers are unsigned decimal digits, at most 19 of them (more, even
//     leading zeros, is kNone: no uint64 overflow to reason about).
//   - Spaces and tabs are allowed around each comma-separated element, at
//     the start of the set too ("bytes= 0-9"), not inside one ("0 - 9");
//     empty elements are skipped (RFC 9110 5.6.1), but a set with none left
//     ("bytes=", "bytes=,") is invalid.
RangeResult ParseRange(std::string_view header, uint64_t size, ByteRange* out);

// "bytes 18446744073709551614-18446744073709551614/18446744073709551615" is
// 68 bytes: FormatContentRange()'s `out` must hold this many.
inline constexpr size_t kMaxContentRangeSize = 68;

// Writes the Content-Range field value into out[0..kMaxContentRangeSize) and
// returns its length: "bytes first-last/size" for a 206, or with a null
// `range` "bytes */size" for a 416.
size_t FormatContentRange(const ByteRange* range, uint64_t size, char* out);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_BYTE_RANGE_H_
