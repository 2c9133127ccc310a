// A static file's encoded variants: the precompressed siblings a directory
// may hold beside a file ("app.js.gz", "app.js.br", "app.js.zst", as
// nginx's gzip_static and brotli_static serve them) and which one a client
// is sent, from its Accept-Encoding.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_ENCODINGS_H_
#define URING_HTTP_SRC_FILES_ENCODINGS_H_

#include <cstdint>
#include <string_view>

#include "src/files/validators.h"
#include "src/http/compress.h"

namespace uring_http::files {

enum class Encoding : uint8_t { kIdentity = 0, kGzip = 1, kBrotli = 2, kZstd = 3 };

// The sibling encodings, probed in this order.
inline constexpr Encoding kSiblingEncodings[] = {Encoding::kGzip, Encoding::kBrotli,
                                                 Encoding::kZstd};

// A set of encodings as bits (kIdentity has none).
constexpr uint8_t EncodingBit(Encoding e) {
  return e == Encoding::kIdentity ? 0 : static_cast<uint8_t>(1u << (static_cast<int>(e) - 1));
}

// ".gz", ".br", ".zst" ("" for identity): appended to the file's name.
std::string_view SiblingSuffix(Encoding e);
// What a sibling's ETag carries inside its quotes: "-gz", "-br", "-zst".
std::string_view EtagSuffix(Encoding e);
// The Content-Encoding token: "gzip", "br", "zstd" ("" for identity).
std::string_view EncodingToken(Encoding e);

// Whether a sibling with version `sibling` may stand for a file with
// version `original`: not older (modification time, to the nanosecond).
// An older sibling is a leftover of a previous version.
bool SiblingIsCurrent(const FileVersion& original, const FileVersion& sibling);

// Which of the siblings in `present` (EncodingBit set) to send: the one the
// client weighs highest (weight > 0 and not below identity's when identity
// is ranked); ties go to br, then zstd, then gzip (smallest output first).
// kIdentity when none is acceptable, or the client sent no Accept-Encoding.
Encoding ChooseSibling(const http::AcceptEncoding& accept, uint8_t present);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_ENCODINGS_H_
