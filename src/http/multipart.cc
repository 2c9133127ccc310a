// multipart/form-data parser (see multipart.h).
//
// Two kinds of bytes: part data, scanned for the delimiter D with memchr
// for its CR and compared in place (ScanForDelimiter), and framing (the
// delimiter line's tail and the part headers), judged one byte at a time
// by FramingByte() against the current state. A delimiter split across
// inputs is carried as a count (held_) of its own bytes, so neither kind
// depends on how the input was split: the tests feed every split.
#include "src/http/multipart.h"

#include <cstring>

#include "src/http/multipart_fields.h"

namespace uring_http::http {
namespace {

bool IsDelimEnd(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string_view MultipartPart::FindHeader(std::string_view name) const {
  std::string_view rest = header_lines;
  while (!rest.empty()) {
    const size_t eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !multipart_internal::EqualsIgnoreCase(line.substr(0, colon), name)) {
      continue;
    }
    return multipart_internal::TrimOws(line.substr(colon + 1));
  }
  return {};
}

bool IsValidBoundary(std::string_view boundary) {
  if (boundary.empty() || boundary.size() > 70 || boundary.back() == ' ') return false;
  for (char c : boundary) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c != '\0' && std::strchr("'()+_,-./:=? ", c) != nullptr);
    if (!ok) return false;
  }
  return true;
}

MultipartParser::MultipartParser(std::string_view boundary, const MultipartLimits& limits)
    : limits_(limits) {
  Reset(boundary);
}

void MultipartParser::Reset(std::string_view boundary) {
  delim_.assign("\r\n--");
  delim_.append(boundary);
  delim_.push_back('-');
  delim_len_ = delim_.size() - 1;
  state_ = State::kPreamble;
  // The first delimiter may open the body with no CRLF before it: as if
  // the CRLF had been seen already.
  held_ = 2;
  over_part_limit_ = false;
  header_buf_.clear();
  header_bytes_ = 0;
  part_ = MultipartPart();
  parts_ = 0;
  part_bytes_ = 0;
  total_ = 0;
  error_status_ = 0;
  error_message_ = "";
  error_offset_ = 0;
  if (!IsValidBoundary(boundary)) Fail(400, "invalid multipart boundary", 0);
}

MultipartParser::Result MultipartParser::Fail(int status, const char* message, size_t at) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = message;
  error_offset_ = total_ + at;
  return {Event::kError, at, {}};
}

bool MultipartParser::FailByte(int status, const char* message) {
  Fail(status, message, step_pos_);
  return false;
}

MultipartParser::Result MultipartParser::Parse(std::string_view input) {
  if (state_ == State::kError) return {Event::kError, 0, {}};
  const uint64_t room = limits_.max_total_bytes - total_;
  const bool clamped = input.size() > room;
  if (clamped) input = input.substr(0, static_cast<size_t>(room));
  Result r = Step(input);
  if (clamped && r.consumed == input.size() &&
      (r.event == Event::kNeedMore || r.event == Event::kDone)) {
    return Fail(413, "multipart body over max_total_bytes", r.consumed);
  }
  total_ += r.consumed;
  return r;
}

bool MultipartParser::Finish() {
  switch (state_) {
    case State::kEpilogue:
      return true;
    case State::kError:
      return false;
    case State::kPreamble:
      Fail(400, "no multipart boundary line in the body", 0);
      return false;
    default:
      Fail(400, "multipart body ended before its closing boundary", 0);
      return false;
  }
}

MultipartParser::Result MultipartParser::Step(std::string_view in) {
  size_t pos = 0;
  while (true) {
    switch (state_) {
      case State::kPreamble:
      case State::kBody: {
        if (over_part_limit_) return Fail(413, "multipart part over max_part_bytes", pos);
        const ScanResult s = ScanForDelimiter(in.substr(pos));
        const size_t from = pos;
        pos += s.consumed;
        const bool body = state_ == State::kBody;
        switch (s.what) {
          case Scan::kNeedMore:
            return {Event::kNeedMore, pos, {}};
          case Scan::kData: {
            if (!body) continue;  // preamble: skipped
            const uint64_t room = limits_.max_part_bytes - part_bytes_;
            if (s.data.size() <= room) {
              part_bytes_ += s.data.size();
              return {Event::kData, pos, s.data};
            }
            if (room == 0) return Fail(413, "multipart part over max_part_bytes", from);
            // What fits first, as any other split would have given it; the
            // next call fails.
            over_part_limit_ = true;
            part_bytes_ += room;
            if (s.data.data() == in.data() + from) {
              pos = from + static_cast<size_t>(room);
              held_ = 0;  // what followed is not consumed
            }
            return {Event::kData, pos, s.data.substr(0, static_cast<size_t>(room))};
          }
          case Scan::kDelimiter:
            state_ = State::kDelimPadding;
            header_bytes_ = 0;
            if (body) return {Event::kPartEnd, pos, {}};
            continue;
          case Scan::kClose:
            state_ = State::kEpilogue;
            if (body) return {Event::kPartEnd, pos, {}};
            continue;
        }
        continue;
      }
      case State::kEpilogue:
        return {Event::kDone, in.size(), {}};
      case State::kError:
        return {Event::kError, pos, {}};
      default:
        while (pos < in.size()) {
          step_pos_ = pos;
          if (!FramingByte(in[pos])) return {Event::kError, pos, {}};
          ++pos;
          if (state_ == State::kBody) return {Event::kPartBegin, pos, {}};
        }
        return {Event::kNeedMore, pos, {}};
    }
  }
}

MultipartParser::ScanResult MultipartParser::ScanForDelimiter(std::string_view in) {
  const size_t n = in.size();
  const size_t d = delim_len_;
  if (held_ > 0) {
    // The previous input ended in delim_[0..held_): go on matching.
    size_t i = 0;
    while (true) {
      if (i == n) return {Scan::kNeedMore, i, {}};
      const char c = in[i];
      if (held_ < d) {
        if (c != delim_[held_]) break;
        ++held_;
        ++i;
        continue;
      }
      if (held_ == d && IsDelimEnd(c)) {
        held_ = 0;
        return {Scan::kDelimiter, i, {}};
      }
      if (c != '-') break;
      ++i;
      if (held_ == d + 1) {
        held_ = 0;
        return {Scan::kClose, i, {}};
      }
      held_ = d + 1;
    }
    // Not a delimiter: the held bytes were data (D[1..] holds no CR, so no
    // delimiter can start inside them); the byte at i is judged afresh.
    const std::string_view data(delim_.data(), held_);
    held_ = 0;
    return {Scan::kData, i, data};
  }
  // Data up to `end`, all of `consumed` used.
  auto data_up_to = [&](size_t end, size_t consumed) -> ScanResult {
    if (end == 0) return {Scan::kNeedMore, consumed, {}};
    return {Scan::kData, consumed, in.substr(0, end)};
  };
  size_t at = 0;
  while (true) {
    const void* cr = at < n ? std::memchr(in.data() + at, '\r', n - at) : nullptr;
    if (cr == nullptr) return data_up_to(n, n);
    const size_t p = static_cast<size_t>(static_cast<const char*>(cr) - in.data());
    size_t k = 1;
    while (k < d && p + k < n && in[p + k] == delim_[k]) ++k;
    if (k < d) {
      if (p + k == n) {
        held_ = k;
        return data_up_to(p, n);
      }
      at = p + k;  // D[1..k) holds no CR: the next match starts past it
      continue;
    }
    const size_t q = p + d;
    if (q == n) {
      held_ = d;
      return data_up_to(p, n);
    }
    if (IsDelimEnd(in[q])) {
      // The data before it first (its end is then found again at 0).
      if (p > 0) return {Scan::kData, p, in.substr(0, p)};
      return {Scan::kDelimiter, q, {}};
    }
    if (in[q] == '-') {
      if (q + 1 == n) {
        held_ = d + 1;
        return data_up_to(p, n);
      }
      if (in[q + 1] == '-') {
        if (p > 0) return {Scan::kData, p, in.substr(0, p)};
        return {Scan::kClose, q + 2, {}};
      }
      at = q + 1;
      continue;
    }
    at = q;  // D and a byte that is not a delimiter's: data
  }
}

bool MultipartParser::FramingByte(char c) {
  using multipart_internal::IsFieldValueByte;
  using multipart_internal::IsTchar;
  const bool header = state_ != State::kDelimPadding && state_ != State::kDelimLf;
  if (++header_bytes_ > limits_.max_header_bytes) {
    return FailByte(413, header ? "multipart part's header section over max_header_bytes"
                                : "multipart boundary line over max_header_bytes");
  }
  switch (state_) {
    case State::kDelimPadding:
      if (c == ' ' || c == '\t') return true;
      if (c == '\r') {
        state_ = State::kDelimLf;
        return true;
      }
      if (c == '\n') return FailByte(400, "multipart boundary line ends in a bare LF");
      return FailByte(400, "unexpected bytes after a multipart boundary");
    case State::kDelimLf:
      if (c != '\n') return FailByte(400, "multipart boundary line has a bare CR");
      if (parts_ >= limits_.max_parts) return FailByte(413, "more multipart parts than max_parts");
      ++parts_;
      header_buf_.clear();
      header_bytes_ = 0;
      state_ = State::kHeaderLineStart;
      return true;
    case State::kHeaderLineStart:
      if (c == '\r') {
        state_ = State::kHeadersEndLf;
        return true;
      }
      if (c == ' ' || c == '\t') return FailByte(400, "obsolete line folding in a part header");
      if (!IsTchar(c)) return FailByte(400, "malformed part header line");
      header_buf_.push_back(c);
      state_ = State::kHeaderName;
      return true;
    case State::kHeaderName:
      if (c == ':') {
        header_buf_.push_back(c);
        state_ = State::kHeaderValue;
        return true;
      }
      if (!IsTchar(c)) return FailByte(400, "malformed part header name");
      header_buf_.push_back(c);
      return true;
    case State::kHeaderValue:
      if (c == '\r') {
        state_ = State::kHeaderLf;
        return true;
      }
      if (!IsFieldValueByte(c)) return FailByte(400, "invalid byte in a part header value");
      header_buf_.push_back(c);
      return true;
    case State::kHeaderLf:
      if (c != '\n') return FailByte(400, "bare CR in a part header");
      header_buf_.append("\r\n");
      state_ = State::kHeaderLineStart;
      return true;
    case State::kHeadersEndLf:
      if (c != '\n') return FailByte(400, "bare CR in a part header");
      return EndHeaders();
    default:
      return FailByte(400, "multipart parser in a bad state");  // not reached
  }
}

bool MultipartParser::EndHeaders() {
  multipart_internal::PartFields fields;
  if (const char* error = multipart_internal::ParsePartHeaders(header_buf_, &name_buf_,
                                                               &filename_buf_, &fields)) {
    return FailByte(400, error);
  }
  part_ = MultipartPart();
  part_.name = fields.name;
  part_.filename = fields.filename;
  part_.has_filename = fields.has_filename;
  part_.content_type = fields.content_type;
  part_.header_lines = header_buf_;
  part_.index = parts_ - 1;
  part_bytes_ = 0;
  state_ = State::kBody;
  return true;
}

MultipartContentType ParseMultipartContentType(std::string_view content_type) {
  MultipartContentType out;
  const char* error = multipart_internal::ParseBoundaryParam(content_type, &out.error_status,
                                                             &out.boundary);
  if (error != nullptr) out.error = error;
  return out;
}

}  // namespace uring_http::http
