// HTTP/1.x request parser (see parser.h).
//
// One left-to-right pass, line by line. A line is judged when its LF has
// arrived, in a fixed order (size limit, header count, syntax); while it is
// incomplete only the limits are checked, on a lower bound of its length.
// That makes the result monotonic in the input: a prefix of any input is
// either incomplete or fails with the same status as the whole input, so a
// caller that re-parses after every receive never sees an answer change.
//
// Each line has a fast path that scans it once and accepts only a complete,
// valid line; anything else (an error, a line still arriving) falls back to
// the plain path, which finds the LF first and then applies the rules in the
// order above. Both give the same answer; the tests run every case on each
// (see kFastPaths).
#include "src/http/parser.h"

#include <bit>
#include <cstring>

#include "src/http/field_syntax.h"

namespace uring_http::http {
namespace {

using namespace field_syntax;  // NOLINT: the rules this parser shares with the client's

// URING_HTTP_PARSER_PLAIN (set for one test build only) turns the fast
// paths off, so that the same test cases check the plain path on its own.
#ifdef URING_HTTP_PARSER_PLAIN
constexpr bool kFastPaths = false;
#else
constexpr bool kFastPaths = true;
#endif

static_assert(std::endian::native == std::endian::little,
              "FindValueEnd and the version words assume little-endian");

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

inline uint64_t Load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Marks (high bit) the bytes of `w` below 0x20 or equal to 0x7F; bytes
// >= 0x80 are never marked (obs-text is allowed). A borrow can also mark a
// byte above a marked one, never below it.
inline uint64_t SuspectValueBytes(uint64_t w) {
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  const uint64_t x = w ^ (kOnes * 0x7f);
  const uint64_t del = (x - kOnes) & ~x & kHighs;
  return below_space | del;
}

// Returns the first byte of [p, end) that is not HTAB, SP, VCHAR or obs-text
// (normally the CR or LF ending the line), or `end`. Header values are the
// bulk of a request, so eight bytes are screened at a time; the lowest marked
// byte of a word is exact, as a borrow only runs upwards from a true one.
const char* FindValueEnd(const char* p, const char* end) {
  while (kFastPaths && end - p >= 8) {
    const uint64_t suspect = SuspectValueBytes(Load8(p));
    if (suspect == 0) {
      p += 8;
      continue;
    }
    p += __builtin_ctzll(suspect) / 8;  // little-endian: lowest byte first
    if (*p != '\t') return p;
    ++p;
  }
  while (p < end && Is(*p, kValueChar)) ++p;
  return p;
}

// Returns the first byte of [p, end) that is not a VCHAR (or is a '?' when
// `stop_at_question` is set), or `end`: the end of a request-target's path
// or query. Screened eight bytes at a time like FindValueEnd.
template <bool stop_at_question>
const char* FindTargetEnd(const char* p, const char* end) {
  while (kFastPaths && end - p >= 8) {
    const uint64_t w = Load8(p);
    uint64_t suspect = ((w - kOnes * 0x21) & ~w & kHighs) | (w & kHighs);
    const uint64_t del = w ^ (kOnes * 0x7f);
    suspect |= (del - kOnes) & ~del & kHighs;
    if (stop_at_question) {
      const uint64_t question = w ^ (kOnes * '?');
      suspect |= (question - kOnes) & ~question & kHighs;
    }
    if (suspect != 0) return p + __builtin_ctzll(suspect) / 8;
    p += 8;
  }
  constexpr uint8_t kClass = stop_at_question ? kPathChar : kTargetChar;
  while (p < end && Is(*p, kClass)) ++p;
  return p;
}

Method MethodFromToken(std::string_view m) {
  switch (m.size()) {
    case 3:
      if (m == "GET") return Method::kGet;
      if (m == "PUT") return Method::kPut;
      break;
    case 4:
      if (m == "HEAD") return Method::kHead;
      if (m == "POST") return Method::kPost;
      break;
    case 5:
      if (m == "PATCH") return Method::kPatch;
      if (m == "TRACE") return Method::kTrace;
      break;
    case 6:
      if (m == "DELETE") return Method::kDelete;
      break;
    case 7:
      if (m == "OPTIONS") return Method::kOptions;
      if (m == "CONNECT") return Method::kConnect;
      break;
  }
  return Method::kOther;
}

// Splits a request-target into path and query. Returns false if it is none
// of origin-form, absolute-form (http or https) or asterisk-form; the
// authority-form belongs to CONNECT, which we do not serve.
bool SplitTarget(std::string_view target, Request* out) {
  if (target[0] == '/') {
    const size_t q = target.find('?');
    if (q == std::string_view::npos) {
      out->path = target;
    } else {
      out->path = target.substr(0, q);
      out->query = target.substr(q + 1);
    }
    return true;
  }
  if (target == "*") {
    out->path = target;
    return true;
  }
  // absolute-form: scheme "://" authority [path-abempty] ["?" query]
  size_t scheme_len;
  if (target.size() > 7 && EqualsIgnoreCase(target.substr(0, 7), "http://")) {
    scheme_len = 4;
  } else if (target.size() > 8 &&
             EqualsIgnoreCase(target.substr(0, 8), "https://")) {
    scheme_len = 5;
  } else {
    return false;
  }
  const size_t authority = scheme_len + 3;
  size_t end = authority;
  while (end < target.size() && target[end] != '/' && target[end] != '?') {
    ++end;
  }
  if (end == authority) return false;  // "http:///x": no host
  const size_t q = target.find('?', end);
  const size_t path_end = q == std::string_view::npos ? target.size() : q;
  if (end < path_end) {
    out->path = target.substr(end, path_end - end);
  } else {
    // An empty path means "/" (RFC 9110 4.2.3). The second slash of "://"
    // stands in for it, so that every view still points into the input.
    out->path = target.substr(scheme_len + 2, 1);
  }
  if (q != std::string_view::npos) out->query = target.substr(q + 1);
  return true;
}

// memchr with an empty range is still undefined for a null pointer, which an
// empty string_view may hold.
inline const char* FindLf(const char* p, const char* end) {
  if (p == end) return nullptr;
  return static_cast<const char*>(
      std::memchr(p, '\n', static_cast<size_t>(end - p)));
}

inline ParseResult Error(int status) {
  ParseResult r;
  r.status = ParseStatus::kError;
  r.error_status = status;
  return r;
}

// The plain path: parses a complete request line (without its line ending).
ParseResult ParseRequestLine(std::string_view line, Request* out) {
  out->query = {};  // the fast path may have set it before giving up
  size_t i = 0;
  while (i < line.size() && Is(line[i], kTchar)) ++i;
  if (i == 0 || i == line.size() || line[i] != ' ') return Error(400);
  out->method = line.substr(0, i);
  out->method_id = MethodFromToken(out->method);

  const size_t target_start = ++i;
  while (i < line.size() && Is(line[i], kTargetChar)) ++i;
  if (i == target_start) return Error(400);
  out->target = line.substr(target_start, i - target_start);
  if (!SplitTarget(out->target, out)) return Error(400);

  if (i == line.size()) {
    out->version = Version::kBare;
    return ParseResult{};
  }
  if (line[i] != ' ') return Error(400);
  const std::string_view version = line.substr(i + 1);
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" ||
      version[6] != '.' || version[5] < '0' || version[5] > '9' ||
      version[7] < '0' || version[7] > '9') {
    return Error(400);
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return Error(505);
  }
  out->version = version[7] == '1' ? Version::kHttp11 : Version::kHttp10;
  return ParseResult{};
}

// The fast path for the request line: accepts only a complete, valid line,
// scanning it once, and returns its LF with *line_end at its CR (or LF).
// Returns nullptr for anything else, for the plain path to decide.
const char* ScanRequestLine(const char* p, const char* end, Request* out,
                            const char** line_end) {
  if (!kFastPaths) return nullptr;
  const char* q = p;
  while (q < end && Is(*q, kTchar)) ++q;
  if (q == p || q == end || *q != ' ') return nullptr;
  const std::string_view method(p, static_cast<size_t>(q - p));

  const char* const target = ++q;
  if (q < end && *q == '/') {  // origin-form: split while scanning
    q = FindTargetEnd<true>(q, end);
    const char* const path_end = q;
    if (q < end && *q == '?') {
      q = FindTargetEnd<false>(q + 1, end);
      out->query =
          std::string_view(path_end + 1, static_cast<size_t>(q - path_end - 1));
    }
    out->path = std::string_view(target, static_cast<size_t>(path_end - target));
    out->target = std::string_view(target, static_cast<size_t>(q - target));
  } else {
    while (q < end && Is(*q, kTargetChar)) ++q;
    if (q == target) return nullptr;
    out->target = std::string_view(target, static_cast<size_t>(q - target));
    if (!SplitTarget(out->target, out)) return nullptr;
  }
  if (q == end) return nullptr;

  Version version = Version::kBare;
  if (*q == ' ') {
    if (end - q < 10) return nullptr;  // " HTTP/1.1" and at least an LF
    const uint64_t word = Load8(q + 1);
    if (word == Load8("HTTP/1.1")) {
      version = Version::kHttp11;
    } else if (word == Load8("HTTP/1.0")) {
      version = Version::kHttp10;
    } else {
      return nullptr;
    }
    q += 9;
  }
  *line_end = q;
  if (*q == '\r') {
    if (end - q < 2 || q[1] != '\n') return nullptr;
    ++q;
  } else if (*q != '\n') {
    return nullptr;
  }
  out->method = method;
  out->method_id = MethodFromToken(method);
  out->version = version;
  return q;
}

// The plain path for a header line the fast path refused: the line is
// invalid if complete (400), but the size limit is judged first.
ParseResult HeaderLineError(const char* p, const char* end,
                            const char* section, const ParseLimits& limits) {
  const char* lf = FindLf(p, end);
  const char* upto = lf == nullptr ? end : lf + 1;
  if (static_cast<size_t>(upto - section) > limits.max_header_bytes) {
    return Error(431);
  }
  return lf == nullptr ? ParseResult{} : Error(400);
}

// Header names are tchars, and among tchars `c | 0x20` is a lower-case
// letter only for that letter in either case: one OR per byte suffices.
// `lower` must be lower-case letters and '-'.
inline bool NameIs(std::string_view name, std::string_view lower) {
  if (name.size() != lower.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if ((name[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

}  // namespace

size_t FindHeadEnd(std::string_view data, size_t* scanned) {
  const char* const begin = data.data();
  const size_t size = data.size();
  // The empty line ParseRequestHead() skips before the request line.
  size_t start = 0;
  if (size > 0 && begin[0] == '\n') {
    start = 1;
  } else if (size >= 2 && begin[0] == '\r' && begin[1] == '\n') {
    start = 2;
  }
  size_t i = *scanned > start ? *scanned : start;
  for (;;) {
    const char* lf = FindLf(begin + i, begin + size);
    if (lf == nullptr) {
      *scanned = size;
      return 0;
    }
    const size_t at = static_cast<size_t>(lf - begin);
    const size_t line = at > start && begin[at - 1] == '\r' ? at - 1 : at;
    // An empty line: the end of the head, or an empty request line, which
    // the parser answers (400) all the same.
    if (line == start || begin[line - 1] == '\n') {
      *scanned = at;  // a call again finds the same end
      return at + 1;
    }
    i = at + 1;
  }
}

ParseResult ParseRequestHead(std::string_view data, const ParseLimits& limits,
                             Request* out, Header* headers,
                             size_t headers_capacity) {
  // Field by field: `*out = Request{}` compiles to a slow `rep stos`.
  out->method = {};
  out->method_id = Method::kOther;
  out->target = {};
  out->path = {};
  out->query = {};
  out->version = Version::kHttp11;
  out->headers = headers;
  out->num_headers = 0;
  out->host = {};
  out->content_length = 0;
  out->framing = BodyFraming::kNone;
  out->keep_alive = false;
  out->expect_continue = false;
  out->head_bytes = 0;
  out->body = {};
  out->body_reader = nullptr;
  out->body_read_ = 0;

  const char* const begin = data.data();
  const char* const end = begin + data.size();
  const char* p = begin;

  // RFC 9112 2.2: an empty line before the request line (left over from a
  // previous body, typically) should be ignored. We ignore one.
  if (p < end && *p == '\n') {
    ++p;
  } else if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
    p += 2;
  }

  // Request line.
  const char* line_end;
  const char* lf = ScanRequestLine(p, end, out, &line_end);
  if (lf == nullptr) {
    lf = FindLf(p, end);
    if (lf == nullptr) {
      // A trailing CR may still become the CR of CRLF, so it is not counted.
      size_t at_least = static_cast<size_t>(end - p);
      if (at_least > 0 && end[-1] == '\r') --at_least;
      if (at_least > limits.max_request_line) return Error(414);
      return ParseResult{};
    }
    line_end = (lf > p && lf[-1] == '\r') ? lf - 1 : lf;
    if (static_cast<size_t>(line_end - p) > limits.max_request_line) {
      return Error(414);
    }
    const ParseResult r = ParseRequestLine(
        std::string_view(p, static_cast<size_t>(line_end - p)), out);
    if (r.status == ParseStatus::kError) return r;
  } else if (static_cast<size_t>(line_end - p) > limits.max_request_line) {
    return Error(414);
  }
  p = lf + 1;

  // Header section.
  const char* const section = p;
  const size_t max_header_bytes = limits.max_header_bytes;
  // While a line is incomplete: all we know is that the section is longer.
  const auto incomplete = [&] {
    if (static_cast<size_t>(end - section) > max_header_bytes) {
      return Error(431);
    }
    return ParseResult{};
  };
  const size_t max_headers = headers_capacity < limits.max_headers
                                 ? headers_capacity
                                 : limits.max_headers;
  size_t num_headers = 0;
  std::string_view host;
  int host_count = 0;
  uint64_t content_length = 0;
  bool content_length_seen = false;
  TransferCodings codings;
  bool conn_close = false;
  bool conn_keep_alive = false;
  bool expect_continue = false;
  for (;;) {
    if (p == end) return incomplete();
    if (*p == '\n' || *p == '\r') {
      if (*p == '\n') {
        lf = p;
      } else if (end - p == 1) {
        return incomplete();
      } else {
        lf = p[1] == '\n' ? p + 1 : nullptr;
      }
      if (lf != nullptr) {  // the blank line: end of the head
        if (static_cast<size_t>(lf + 1 - section) > max_header_bytes) {
          return Error(431);
        }
        p = lf + 1;
        break;
      }
      // A CR not followed by LF: a header line, and a bad one.
    }
    // Whatever this line turns out to be, it is one header too many; saying
    // so before its end keeps the answer the same once the end arrives.
    if (num_headers == max_headers) return Error(431);

    // field-name ":" OWS field-value OWS. A leading SP or HTAB (obs-fold)
    // fails the name, as neither is a tchar.
    const char* name_end = p;
    while (name_end < end && Is(*name_end, kTchar)) ++name_end;
    if (name_end == end) return incomplete();
    if (name_end == p || *name_end != ':') {
      return HeaderLineError(p, end, section, limits);
    }
    const char* v = name_end + 1;
    const char* v_end = FindValueEnd(v, end);
    if (v_end == end) return incomplete();
    if (*v_end == '\n') {
      lf = v_end;
    } else if (*v_end == '\r') {
      if (v_end + 1 == end) return incomplete();
      // A bare CR fails here, like NUL, DEL and other control characters.
      if (v_end[1] != '\n') return HeaderLineError(p, end, section, limits);
      lf = v_end + 1;
    } else {
      return HeaderLineError(p, end, section, limits);
    }
    if (static_cast<size_t>(lf + 1 - section) > max_header_bytes) {
      return Error(431);
    }
    while (v < v_end && IsOws(*v)) ++v;
    while (v_end > v && IsOws(v_end[-1])) --v_end;

    const std::string_view name(p, static_cast<size_t>(name_end - p));
    const std::string_view value(v, static_cast<size_t>(v_end - v));
    headers[num_headers].name = name;
    headers[num_headers].value = value;
    ++num_headers;

    // Names of interest differ in length, so the length picks the candidate.
    switch (name.size()) {
      case 4:
        if (NameIs(name, "host")) {
          // More than one Host is a 400 in any version (RFC 9112 3.2).
          if (++host_count > 1) return Error(400);
          host = value;
        }
        break;
      case 6:
        if (NameIs(name, "expect") && EqualsIgnoreCase(value, "100-continue")) {
          expect_continue = true;
        }
        break;
      case 10:
        if (NameIs(name, "connection")) {
          ScanConnection(value, &conn_close, &conn_keep_alive);
        }
        break;
      case 14:
        if (NameIs(name, "content-length") &&
            !ParseContentLength(value, &content_length_seen,
                                &content_length)) {
          return Error(400);
        }
        break;
      case 17:
        if (NameIs(name, "transfer-encoding")) {
          ScanTransferEncoding(value, &codings);
        }
        break;
    }
    p = lf + 1;
  }

  // The head is complete: checks that need all of it.
  const Version version = out->version;
  if (version == Version::kHttp11 && host_count != 1) return Error(400);
  BodyFraming framing =
      content_length > 0 ? BodyFraming::kContentLength : BodyFraming::kNone;
  if (codings.seen) {
    // RFC 9112 6.1 and 6.3: both framings at once is the classic smuggling
    // vector; HTTP/1.0 has no chunked framing (so a 1.0 message with
    // Transfer-Encoding has faulty framing); a final coding other than
    // chunked leaves the length unknowable. Each is a 400 and a close. A
    // well-framed list with a coding we do not implement is a 501.
    if (content_length_seen || version != Version::kHttp11 || codings.malformed ||
        codings.chunked != 1 || !codings.last_chunked) {
      return Error(400);
    }
    if (codings.other) return Error(501);
    framing = BodyFraming::kChunked;
  }

  out->num_headers = num_headers;
  out->host = host;
  out->content_length = content_length;
  out->framing = framing;
  switch (version) {
    case Version::kHttp11:
      out->keep_alive = !conn_close;
      // RFC 9110 10.1.1: a 100-continue in an HTTP/1.0 request is ignored,
      // so the flag is only raised where answering 100 is allowed.
      out->expect_continue = expect_continue;
      break;
    case Version::kHttp10:
      out->keep_alive = conn_keep_alive && !conn_close;
      break;
    case Version::kBare:
      break;
  }
  const size_t head_bytes = static_cast<size_t>(p - begin);
  out->head_bytes = head_bytes;

  ParseResult r;
  r.status = ParseStatus::kComplete;
  r.consumed = head_bytes;
  return r;
}

}  // namespace uring_http::http
