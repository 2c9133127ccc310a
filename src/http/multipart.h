// Incremental multipart/form-data parser (RFC 7578, with the body-part
// framing of RFC 2046 5.1.1), in the style of the chunked decoder: it is fed
// a request body in pieces of any size, as they arrive, and reports events
// (a part's head, a piece of its body, its end, the form's end) one per
// call. Part bodies are handed back as views into the input, never copied;
// the only bytes it keeps across calls are a part's header section (at most
// MultipartLimits::max_header_bytes) and how much of a delimiter the last
// piece ended in (a count: those bytes are the delimiter's own, so a piece
// that turns out to be data is handed back from the parser's copy of it).
// Everything here is pure: no I/O, no allocation after the first part but
// what a header section's growth needs.
//
// The grammar, as accepted here (D is CRLF "--" boundary):
//   body        = [preamble CRLF] "--" boundary *LWSP CRLF part
//                 *(D *LWSP CRLF part) D "--" [epilogue]
//   part        = *(field-name ":" OWS field-value OWS CRLF) CRLF octets
// - The preamble and the epilogue are skipped (they count towards
//   max_total_bytes only). A body that ends before its close delimiter is
//   malformed (400); so is one with no delimiter at all.
// - D followed by anything but SP, HTAB, CR, LF or "--" is part data, as
//   Go's mime/multipart reads it ("--abc" inside a part of boundary "ab").
//   After D (and optional SP/HTAB) only CRLF may end the line: a bare LF,
//   or other bytes, are 400.
// - Part header lines take field-name ":" OWS value OWS CRLF, with the
//   bytes a request header may hold (HTAB, SP, VCHAR, obs-text: raw UTF-8
//   filenames included); obs-fold, a bare CR or LF, a space before the
//   colon: 400.
// - Content-Disposition: "form-data" (any case) with parameters name,
//   filename and filename* (RFC 8187: UTF-8 or ISO-8859-1, percent-encoded;
//   it wins over filename, and one that cannot be decoded is ignored, as RFC
//   6266 asks). Values are tokens or quoted-strings; in a quoted-string a
//   backslash escapes only '"' and '\' (any other is itself, so that
//   "C:\dir\a.txt" survives, as in Go). A parameter twice, or a malformed
//   header, is 400. Another disposition type leaves the part nameless (Go:
//   FormName() is "").
// - Limits (MultipartLimits) are 413, each at the first byte past it.
//
// Thread-safety: none. One parser belongs to one request body.
#ifndef URING_HTTP_SRC_HTTP_MULTIPART_H_
#define URING_HTTP_SRC_HTTP_MULTIPART_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace uring_http::http {

// Bounds on one multipart body; each one past is a 413.
struct MultipartLimits {
  size_t max_parts = 1000;                // parts in the body (Go's default too)
  size_t max_header_bytes = 16 * 1024;    // one part's header section, lines and CRLFs
  uint64_t max_part_bytes = UINT64_MAX;   // one part's body
  // The whole body as sent (preamble, delimiters, headers, epilogue). The
  // route's max_body_bytes bounds it too, before a handler sees anything.
  uint64_t max_total_bytes = UINT64_MAX;
};

// A part's head: what its Content-Disposition and Content-Type say. Views
// into the parser's memory, valid until the next part begins (or Reset).
struct MultipartPart {
  // Content-Disposition's name; empty if absent or not form-data.
  std::string_view name;
  // filename* decoded to UTF-8 if present and decodable, else filename,
  // unescaped. As the client sent it: it may hold '/', '\', "..": never a
  // path to open (SaveMultipart makes names of its own).
  std::string_view filename;
  bool has_filename = false;  // a filename (or filename*) parameter was sent, maybe empty
  // Content-Type as sent, trimmed; empty if absent (RFC 7578: text/plain then).
  std::string_view content_type;
  // The raw header lines ("Name: value\r\n" each), for FindHeader.
  std::string_view header_lines;
  size_t index = 0;  // 0 for the first part

  // The value of the first header line named `name` (any case); empty if none.
  std::string_view FindHeader(std::string_view name) const;
};

class MultipartParser {
 public:
  enum class Event : uint8_t {
    kNeedMore,   // all of the input was consumed; give more
    kPartBegin,  // a part's head is complete: part() describes it
    kData,       // `data` is the next piece of the current part's body
    kPartEnd,    // the current part's body ended
    kDone,       // the close delimiter was seen (what follows is skipped)
    kError,      // error_status() and error_message() say why
  };
  struct Result {
    Event event = Event::kNeedMore;
    size_t consumed = 0;    // bytes of the input used (<= input.size())
    // kData: never empty; a view into the input, or (for bytes held back
    // from an earlier call as a possible delimiter) into the parser, valid
    // until the next call.
    std::string_view data;
  };

  // Ready for a body with this boundary (the parameter's value, unquoted).
  // An invalid boundary (RFC 2046: 1 to 70 of DIGIT ALPHA '()+_,-./:=? and
  // space, not ending in a space) puts the parser in error (400).
  explicit MultipartParser(std::string_view boundary, const MultipartLimits& limits = {});
  void Reset(std::string_view boundary);

  // Consumes bytes from the front of `input` up to the next event. Call
  // again with input.substr(consumed) until kNeedMore; the bytes of a
  // kData result are consumed with it. Once done, every call consumes its
  // input (the epilogue) and returns kDone, unless max_total_bytes ends it;
  // once failed, kError, consuming nothing.
  Result Parse(std::string_view input);
  // The body ended: true if the close delimiter was seen; otherwise the
  // parser fails (400: no delimiter at all, or the body ended before the
  // close delimiter) and false.
  bool Finish();

  // The part being read (valid from kPartBegin on, until the next part).
  const MultipartPart& part() const { return part_; }
  size_t parts() const { return parts_; }  // parts begun so far
  bool done() const { return state_ == State::kEpilogue; }
  bool failed() const { return state_ == State::kError; }
  int error_status() const { return error_status_; }   // 400 or 413
  const char* error_message() const { return error_message_; }  // "" unless failed
  uint64_t error_offset() const { return error_offset_; }  // the byte of the body that failed
  uint64_t total_bytes() const { return total_; }          // body bytes consumed so far

 private:
  enum class State : uint8_t {
    kPreamble,       // looking for the first delimiter, skipping bytes
    kDelimSuffix,    // just after D: SP/HTAB padding, CR, or "--"
    kDelimPadding,   // in SP/HTAB after D
    kDelimLf,        // the LF ending a delimiter line
    kHeaderLineStart,
    kHeaderName,
    kHeaderValue,
    kHeaderLf,       // the LF ending a header line
    kHeadersEndLf,   // the LF of the blank line ending the header section
    kBody,           // part data, looking for D
    kEpilogue,       // after the close delimiter: skipped
    kError,
  };
  enum class Scan : uint8_t { kNeedMore, kData, kDelimiter, kClose };
  struct ScanResult {
    Scan what = Scan::kNeedMore;
    size_t consumed = 0;
    std::string_view data;
  };

  Result Step(std::string_view input);
  ScanResult ScanForDelimiter(std::string_view input);
  // One byte of a delimiter line or header section; false once failed.
  bool FramingByte(char c);
  bool EndHeaders();
  Result Fail(int status, const char* message, size_t at);
  bool FailByte(int status, const char* message);

  MultipartLimits limits_;
  std::string delim_;   // CRLF "--" boundary "-": D and one more byte
  size_t delim_len_ = 0;  // D's length (delim_.size() - 1)
  State state_ = State::kPreamble;
  // Bytes of delim_ that ended the previous input, not yet known to be D
  // (or D "-"): 0..delim_len_ + 1.
  size_t held_ = 0;
  bool over_part_limit_ = false;  // a part's data reached max_part_bytes with more to come
  std::string header_buf_;   // the current part's header lines
  std::string name_buf_;     // unescaped or decoded values, when needed
  std::string filename_buf_;
  size_t header_bytes_ = 0;  // of the current section, CRLFs included
  MultipartPart part_;
  size_t parts_ = 0;
  uint64_t part_bytes_ = 0;
  uint64_t total_ = 0;
  int error_status_ = 0;
  const char* error_message_ = "";
  uint64_t error_offset_ = 0;
  size_t step_pos_ = 0;  // offset of the byte being judged, in Parse()'s input
};

// The boundary of a multipart/form-data Content-Type value.
struct MultipartContentType {
  int error_status = 0;      // 0, 415 (not multipart/form-data) or 400
  const char* error = "";    // why, when error_status != 0
  std::string boundary;      // unquoted
  bool ok() const { return error_status == 0; }
};
// The media type is compared case-insensitively; the parameters are
// token=token or token=quoted-string, ';'-separated. No boundary, an empty
// or invalid one, or two of them: 400.
MultipartContentType ParseMultipartContentType(std::string_view content_type);

// Whether `boundary` is one RFC 2046 allows.
bool IsValidBoundary(std::string_view boundary);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_MULTIPART_H_
