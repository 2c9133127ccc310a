// Incremental decoder for the HTTP/1.1 chunked transfer coding (RFC 9112
// 7.1), in the style of picohttpparser's phr_decode_chunked: it is fed the
// bytes of a request body as they arrive, in pieces of any size, and hands
// back the decoded body as views into those pieces, without copying or
// buffering anything. A chunk-size or an extension split across receives is
// carried over in a few counters, so its state is a handful of words.
//
// It is strict: framing that any other reading of RFC 9112 could take
// differently (bare LF, whitespace not allowed by the grammar, an empty or
// signed size, control characters) is rejected at the first offending byte,
// because a proxy in front of us that read it otherwise could smuggle a
// request past us. Chunk extensions and trailer fields are validated and
// dropped. Any split of the same input gives the same answer, and a prefix
// of an input never fails where the whole input would not.
//
// Thread-safety: none. One decoder belongs to one request body and is used
// by the thread that reads that connection.
#ifndef URING_HTTP_SRC_HTTP_CHUNKED_DECODER_H_
#define URING_HTTP_SRC_HTTP_CHUNKED_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uring_http::http {

// Bounds on the framing around the data. The body's total size is the
// caller's to limit (body_bytes(), or the sizes of the kData views).
struct ChunkedLimits {
  size_t max_size_digits = 16;        // hex digits of one chunk-size, leading zeros included; more: 400
  size_t max_extension_bytes = 1024;  // bytes of chunk-ext on one chunk line (from after the size to before CRLF); more: 400
  size_t max_trailer_bytes = 16384;   // the whole trailer section, field lines and their CRLFs; more: 431
  size_t max_trailers = 100;          // trailer field lines; more: 431
};

class ChunkedDecoder {
 public:
  enum class Status : uint8_t { kNeedMore, kData, kDone, kError };
  struct Result {
    Status status = Status::kNeedMore;
    size_t consumed = 0;      // bytes of `input` used by this call (always <= input.size())
    std::string_view data;    // kData: decoded body bytes, a view into `input` (inside the consumed part)
    int error_status = 0;     // kError: 400 or 431
  };

  explicit ChunkedDecoder(const ChunkedLimits& limits = {});
  void Reset();  // ready for a new body

  // Consumes bytes from the front of `input` and returns at most one span of
  // body data per call. kNeedMore: every byte of input was consumed (state
  // kept, give more bytes later). kData: `data` is the next piece of the body
  // (never empty: all of the current chunk that `input` holds); call again
  // with input.substr(consumed). kDone: the last chunk and the trailer
  // section ended; `consumed` stops right after the final CRLF (what follows
  // is the next request). kError: the first byte that breaks the grammar was
  // reached; `consumed` stops just before it, and the decoder stays in error.
  // Once done or failed, further calls return the same status, consuming
  // nothing.
  //
  // Errors: 400 for any byte outside the grammar (see chunked_decoder.cc),
  // a chunk-size over max_size_digits digits or over 2^64-1, and chunk-ext
  // over max_extension_bytes; 431 for a trailer section over
  // max_trailer_bytes or more than max_trailers fields. Each byte is judged
  // against the grammar first and counted against the limits second.
  Result Decode(std::string_view input);

  bool done() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kError; }
  uint64_t body_bytes() const { return body_bytes_; }   // decoded data bytes so far
  size_t trailer_count() const { return trailer_count_; }  // trailer fields seen (validated and dropped, never exposed)

 private:
  // Where the next byte belongs. The chunk line is
  //   size [BWS ";" BWS name [BWS "=" BWS (token / quoted-string)]]... CRLF
  // and each of its places has a state, so that a line split anywhere
  // resumes exactly where it stopped.
  enum class State : uint8_t {
    kSizeStart,        // first hex digit of a chunk-size
    kSize,             // more hex digits, or what follows them
    kExtBeforeSemi,    // BWS that must end in ';' (after the size or a value)
    kExtBeforeName,    // BWS after ';', then the name's first tchar
    kExtName,          // in a chunk-ext-name
    kExtAfterName,     // BWS after a name: '=' or ';' must follow
    kExtBeforeValue,   // BWS after '=', then a token or a quoted-string
    kExtToken,         // in a token value
    kExtQuoted,        // in a quoted-string, after the opening DQUOTE
    kExtQuotedPair,    // after a backslash in a quoted-string
    kExtAfterQuoted,   // after the closing DQUOTE: BWS ';' or CR
    kSizeLineLf,       // the LF of the chunk line's CRLF
    kData,             // remaining_ bytes of chunk-data
    kDataCr,           // the CR after chunk-data
    kDataLf,           // the LF after chunk-data
    kTrailerLineStart, // a trailer field line, or the CR of the final CRLF
    kTrailerName,      // in a field-name
    kTrailerValue,     // after the colon, up to the CR
    kTrailerLf,        // the LF ending a field line
    kFinalLf,          // the LF of the final CRLF
    kDone,
    kError,
  };

  // Moves the state on by one framing byte. Returns false on an error, with
  // state_ and error_status_ set.
  bool Step(char c);
  bool Fail(int status);
  bool CountExtensionByte();
  bool CountTrailerByte();

  ChunkedLimits limits_;
  State state_ = State::kSizeStart;
  int error_status_ = 0;
  uint64_t remaining_ = 0;      // kSize: the size so far; kData: bytes left
  size_t size_digits_ = 0;      // digits of the current chunk-size
  size_t extension_bytes_ = 0;  // chunk-ext bytes on the current chunk line
  size_t trailer_bytes_ = 0;
  size_t trailer_count_ = 0;
  uint64_t body_bytes_ = 0;
};

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_CHUNKED_DECODER_H_
