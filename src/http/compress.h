// gzip response compression: what the client accepts (Accept-Encoding, RFC
// 9110 12.5.3), which responses are worth compressing, and the buffered
// case (a whole body compressed at once; streamed bodies use GzipStream,
// gzip_encoder.h).
//
// The rules, applied to every response a handler builds when
// CompressionOptions::enabled:
//   - only a compressible type (IsCompressibleType) is considered; a response
//     that already has a Content-Encoding, or no Content-Type, is left alone;
//   - such a response always gets "Vary: Accept-Encoding" (compressed or not:
//     a cache must not hand one client's variant to another);
//   - it is compressed when the client accepts gzip (NegotiateGzip), its
//     status carries a body and is not 206, and a buffered body is at least
//     min_bytes long;
//   - a compressed response's strong ETag is made weak (WeakenETag);
//   - HEAD gets the headers the GET would (Content-Encoding and Vary), but
//     no Content-Length: stating it would mean compressing the body just to
//     count it (RFC 9110 8.6 lets a HEAD response leave it out).
//
// Where it runs: a FAST handler's response on the ring thread, after the
// handler returns; a SLOW handler's on its worker, before the result is
// published to the ring (the ring thread never compresses a SLOW answer).
//
// Thread-safety: pure functions, and per-thread compressor state
// (gzip_encoder.h); any thread.
#ifndef URING_HTTP_SRC_HTTP_COMPRESS_H_
#define URING_HTTP_SRC_HTTP_COMPRESS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "src/http/header_values.h"
#include "src/http/response.h"

namespace uring_http::http {

struct CompressionOptions {
  // Off by default, like nginx's gzip: turning it on changes what clients
  // and caches see (Content-Encoding, Vary), so it is a deliberate choice.
  bool enabled = false;
  // Buffered bodies shorter than this are sent as they are: below about a
  // kilobyte the gzip header and trailer (18 bytes) and the CPU buy little.
  size_t min_bytes = 1024;
  // 1-9 (zlib's scale). 1: half the CPU of 6 for 1-7% larger output on the
  // bodies measured (README, Compression).
  int level = 1;
};

// What the client's Accept-Encoding allows, fed one field value at a time
// (a request may send several lines; they form one list). Nothing is
// copied or allocated.
//
//   - "gzip" and its alias "x-gzip" name gzip; "*" stands for every coding
//     not listed, so it covers gzip unless gzip is listed itself, and
//     identity unless identity is listed;
//   - a coding's weight is its q parameter (0 to 1, at most three decimals);
//     q=0 refuses it; a missing q is 1; a malformed weight or element is
//     ignored (as if not sent); names and "q" are case-insensitive; the
//     first mention of a coding counts, later ones are ignored;
//   - no Accept-Encoding at all: identity (a client that says nothing is
//     not sent gzip, as in every major server).
class AcceptEncoding {
 public:
  void AddFieldValue(std::string_view value);

  // Whether gzip is the answer: acceptable (weight > 0) and not less
  // preferred than identity when identity has a weight (its own, or that of
  // "*"; a ;q on gzip alone does not make identity preferred). When neither is acceptable ("gzip;q=0,
  // identity;q=0" or "*;q=0") the response is still sent uncompressed
  // rather than 406: most servers do so, and a body the client may refuse
  // is more useful than an error it surely cannot use.
  bool PrefersGzip() const;

  // Weights in thousandths, or -1 when not mentioned (tests).
  int gzip_weight() const { return gzip_; }
  int identity_weight() const { return identity_; }
  int star_weight() const { return star_; }
  int br_weight() const { return br_; }
  int zstd_weight() const { return zstd_; }

  // What a precompressed file may be sent as (files/encodings.h): the
  // weight of "gzip", "br" or "zstd" (its own, else that of "*", else 0),
  // and identity's (its own, else "*"'s, else -1: acceptable, not ranked).
  // Without any Accept-Encoding every coding is 0.
  int CodingWeight(std::string_view coding) const;
  int IdentityWeight() const;

 private:
  void AddElement(std::string_view element);

  bool present_ = false;
  int gzip_ = -1;
  int identity_ = -1;
  int star_ = -1;
  int br_ = -1;
  int zstd_ = -1;
};

// Over a request's Accept-Encoding lines: request.HeaderValues("accept-encoding").
bool PrefersGzip(const HeaderValueRange& accept_encoding_lines);

// Parses a weight ("1", "0.5", "0.125", "1.000"); nullopt when malformed.
// In thousandths.
std::optional<int> ParseQValue(std::string_view value);

// Whether a media type (a Content-Type value, parameters allowed) is worth
// compressing: text/*, application/json and +json, application/x-ndjson,
// application/javascript (and x-javascript, ecmascript), application/xml and
// +xml, image/svg+xml, application/wasm, font/ttf, font/otf.
// Case-insensitive. Images, audio, video, archives and fonts already
// compressed (woff, woff2) are not.
bool IsCompressibleType(std::string_view content_type);

enum class GzipDecision : uint8_t {
  kLeave,     // not compressible (or compression off): nothing added
  kIdentity,  // compressible, sent as is: Vary only
  kGzip,      // compressed: Content-Encoding and Vary
};

// The decision for a response with these headers. `body_size` is nullopt
// for a streamed body of unknown length (no threshold applies then).
GzipDecision DecideGzip(const CompressionOptions& options, bool client_prefers_gzip, int status,
                        const HeaderTable& headers, std::optional<uint64_t> body_size);

// A strong ETag becomes weak (W/"...") on a gzipped response: a strong
// validator names one exact byte sequence, and the gzipped body is another
// (RFC 9110 8.8.3), while a weak one still matches the handler's own
// If-None-Match checks by its weak comparison.
void WeakenETag(Response& response);

// Adds "Vary: Accept-Encoding" unless a Vary the handler set says so
// already (or is "*").
void AddVaryAcceptEncoding(Response& response);

// A streamed response, before its head is serialized: the decision, or
// kLeave when the handler's header lines have no room (max_header_bytes)
// for the added lines (a body must never go out gzipped without its
// Content-Encoding). The
// caller makes its GzipStream for kGzip, then calls AddGzipHeaders.
GzipDecision DecideStreamedGzip(const CompressionOptions& options, bool client_prefers_gzip,
                                const Response& response);

// The lines a decision calls for: Content-Encoding (and a weakened ETag)
// for kGzip, Vary for kGzip and kIdentity.
void AddGzipHeaders(GzipDecision decision, Response& response);

// A buffered response, after its handler: decides, and compresses the body
// in place (or, for HEAD, only marks it). Returns the decision applied.
// Allocates only when it compresses (the compressed body).
GzipDecision CompressBufferedResponse(const CompressionOptions& options,
                                      bool client_prefers_gzip, bool head_only,
                                      Response& response);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_COMPRESS_H_
