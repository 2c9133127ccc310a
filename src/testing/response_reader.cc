#include "src/testing/response_reader.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/testing/text.h"

namespace uring_http::testing::internal {
namespace {

constexpr size_t kMaxHeadBytes = 1 << 20;
constexpr size_t kMaxChunkLine = 4096;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Every comma-separated element of the header `name`'s values, lower case.
std::vector<std::string> Tokens(const Headers& headers, std::string_view name) {
  std::vector<std::string> tokens;
  for (const auto& [n, value] : headers) {
    if (!EqualsIgnoreCase(n, name)) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = std::min(rest.find(','), rest.size());
      const std::string_view element = TrimOws(rest.substr(0, comma));
      if (!element.empty()) tokens.push_back(AsciiLower(element));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
  }
  return tokens;
}

class Reader {
 public:
  Reader(ByteSource& source, std::string& buffer, const ReadOptions& options)
      : source_(source), buf_(buffer), options_(options) {}

  Response Read() {
    Response r;
    absl::Status s = ReadAll(r);
    if (!s.ok()) {
      r.error = std::move(s);
      r.connection_closed = true;
      if (stage_ <= Stage::kHeaders) r.status = 0;
    }
    return r;
  }

 private:
  enum class Stage { kStatusLine, kHeaders, kBody, kChunked, kTrailers };

  absl::Status ReadAll(Response& r) {
    for (;;) {
      r.headers.clear();
      if (absl::Status s = ReadHead(r); !s.ok()) return s;
      if (r.status >= 200 || r.status == 101) break;
      if (options_.return_interim) return absl::OkStatus();
      r.informational.push_back(r.status);
    }
    // The framing (RFC 9112, section 6.3).
    const std::vector<std::string> connection = Tokens(r.headers, "connection");
    const auto said = [&connection](std::string_view token) {
      return std::find(connection.begin(), connection.end(), token) != connection.end();
    };
    r.connection_closed = said("close") || (r.version == "HTTP/1.0" && !said("keep-alive"));
    if (r.status == 101) {
      r.connection_closed = true;  // another protocol follows
      return absl::OkStatus();
    }
    if (options_.head || r.status == 204 || r.status == 304) return absl::OkStatus();

    const std::vector<std::string> codings = Tokens(r.headers, "transfer-encoding");
    const std::vector<std::string> lengths = Tokens(r.headers, "content-length");
    if (!codings.empty()) {
      if (!lengths.empty()) {
        return Malformed("the response has both Transfer-Encoding and Content-Length");
      }
      if (codings.back() == "chunked") return ReadChunked(r);
      return ReadUntilClose(r);
    }
    if (!lengths.empty()) {
      uint64_t length = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        uint64_t n = 0;
        if (lengths[i].find_first_not_of("0123456789") != std::string::npos ||
            !absl::SimpleAtoi(lengths[i], &n)) {
          return Malformed(absl::StrCat("Content-Length \"", lengths[i], "\" is not a number"));
        }
        if (i > 0 && n != length) {
          return Malformed("the response has two different Content-Lengths");
        }
        length = n;
      }
      return ReadLength(r, length);
    }
    return ReadUntilClose(r);
  }

  absl::Status ReadHead(Response& r) {
    stage_ = Stage::kStatusLine;
    absl::StatusOr<std::string> line = Line(kMaxHeadBytes);
    if (!line.ok()) return line.status();
    // HTTP/1.1 200 OK: the version, one space, three digits, then a space
    // and the reason (possibly empty) or nothing.
    const std::string_view s = *line;
    if (s.size() < 12 || s.substr(0, 5) != "HTTP/" || !IsDigit(s[5]) || s[6] != '.' ||
        !IsDigit(s[7]) || s[8] != ' ' || !IsDigit(s[9]) || !IsDigit(s[10]) || !IsDigit(s[11]) ||
        (s.size() > 12 && s[12] != ' ')) {
      return Malformed(
          absl::StrCat("malformed status line \"", std::string(s.substr(0, 80)), "\""));
    }
    r.version = std::string(s.substr(0, 8));
    r.status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    r.reason = s.size() > 13 ? std::string(s.substr(13)) : std::string();
    if (r.status < 100) return Malformed(absl::StrCat("status ", r.status, " is below 100"));
    stage_ = Stage::kHeaders;
    return ReadFields(&r.headers);
  }

  // Header (or trailer) lines up to the empty line.
  absl::Status ReadFields(Headers* fields) {
    for (;;) {
      absl::StatusOr<std::string> line = Line(kMaxHeadBytes);
      if (!line.ok()) return line.status();
      if (line->empty()) return absl::OkStatus();
      std::string_view text = *line;
      if (text.front() == ' ' || text.front() == '\t') {
        return Malformed("a header line is folded (starts with whitespace)");
      }
      const size_t colon = text.find(':');
      if (colon == std::string_view::npos || colon == 0 ||
          !std::all_of(text.begin(), text.begin() + colon, IsTokenChar)) {
        return Malformed(
            absl::StrCat("malformed header line \"", std::string(text.substr(0, 80)), "\""));
      }
      fields->emplace_back(std::string(text.substr(0, colon)),
                           std::string(TrimOws(text.substr(colon + 1))));
    }
  }

  absl::Status ReadLength(Response& r, uint64_t length) {
    stage_ = Stage::kBody;
    expected_ = length;
    uint64_t left = length;
    while (left > 0) {
      if (buf_.empty()) {
        if (absl::Status s = Fill(); !s.ok()) return s;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf_.size()));
      const bool more = Deliver(r, std::string_view(buf_).substr(0, take));
      buf_.erase(0, take);
      left -= take;
      if (!more) return Stopped(r);
    }
    return absl::OkStatus();
  }

  absl::Status ReadUntilClose(Response& r) {
    stage_ = Stage::kBody;
    r.connection_closed = true;
    for (;;) {
      if (!buf_.empty()) {
        const bool more = Deliver(r, buf_);
        buf_.clear();
        if (!more) return Stopped(r);
      }
      absl::StatusOr<size_t> n = source_.Read(&buf_);
      if (!n.ok()) return Annotate(n.status());
      if (*n == 0) return absl::OkStatus();
    }
  }

  absl::Status ReadChunked(Response& r) {
    stage_ = Stage::kChunked;
    for (;;) {
      absl::StatusOr<std::string> line = Line(kMaxChunkLine);
      if (!line.ok()) return line.status();
      std::string_view size_text = *line;
      const size_t semicolon = size_text.find(';');
      if (semicolon != std::string_view::npos) size_text = size_text.substr(0, semicolon);
      uint64_t size = 0;
      if (size_text.empty() || size_text.size() > 15 ||
          size_text.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
        return Malformed(absl::StrCat("malformed chunk size line \"", line->substr(0, 80), "\""));
      }
      for (char c : size_text) {
        size = size * 16 + static_cast<uint64_t>(IsDigit(c) ? c - '0' : AsciiLower(c) - 'a' + 10);
      }
      if (size == 0) {
        stage_ = Stage::kTrailers;
        return ReadFields(&r.trailers);
      }
      uint64_t left = size;
      while (left > 0) {
        if (buf_.empty()) {
          if (absl::Status s = Fill(); !s.ok()) return s;
        }
        const size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf_.size()));
        const bool more = Deliver(r, std::string_view(buf_).substr(0, take));
        buf_.erase(0, take);
        left -= take;
        if (!more) return Stopped(r);
      }
      while (buf_.size() < 2) {
        if (absl::Status s = Fill(); !s.ok()) return s;
      }
      if (buf_.compare(0, 2, "\r\n") != 0) {
        return Malformed("a chunk's data is not followed by CRLF");
      }
      buf_.erase(0, 2);
    }
  }

  bool Deliver(Response& r, std::string_view piece) {
    body_bytes_ += piece.size();
    if (options_.on_body) return options_.on_body(piece);
    r.body.append(piece);
    return true;
  }

  // on_body asked to stop: the rest of the body stays unread, so the
  // connection cannot carry another request.
  absl::Status Stopped(Response& r) {
    r.connection_closed = true;
    return absl::OkStatus();
  }

  // One line (without its CRLF), taken out of the buffer.
  absl::StatusOr<std::string> Line(size_t limit) {
    size_t scanned = 0;
    for (;;) {
      const size_t lf = buf_.find('\n', scanned);
      if (lf != std::string::npos) {
        if (lf == 0 || buf_[lf - 1] != '\r') return Malformed("a line ends in a bare LF");
        std::string line = buf_.substr(0, lf - 1);
        buf_.erase(0, lf + 1);
        head_bytes_ += lf + 1;
        if (head_bytes_ > kMaxHeadBytes) return Malformed("the response head passes 1 MiB");
        return line;
      }
      if (buf_.size() > limit) return Malformed("a line passes the limit without ending");
      scanned = buf_.size();
      if (absl::Status s = Fill(); !s.ok()) return s;
    }
  }

  // More bytes into the buffer; the end of input here is an error.
  absl::Status Fill() {
    absl::StatusOr<size_t> n = source_.Read(&buf_);
    if (!n.ok()) return Annotate(n.status());
    if (*n > 0) return absl::OkStatus();
    if (stage_ == Stage::kStatusLine && head_bytes_ == 0 && buf_.empty()) {
      return absl::UnavailableError("the server closed the connection without answering");
    }
    return absl::UnavailableError(absl::StrCat("the server closed the connection ", Where()));
  }

  absl::Status Annotate(const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " ", Where()));
  }

  absl::Status Malformed(std::string_view what) {
    return absl::InternalError(
        absl::StrCat("malformed response: ", std::string(what), " (", Where(), ")"));
  }

  std::string Where() const {
    switch (stage_) {
      case Stage::kStatusLine:
        if (head_bytes_ == 0 && buf_.empty()) return "before any byte of the response came";
        return absl::StrCat("in the status line (", head_bytes_ + buf_.size(), " bytes came)");
      case Stage::kHeaders:
        return absl::StrCat("in the headers (", head_bytes_ + buf_.size(), " bytes came)");
      case Stage::kBody:
        if (expected_ == UINT64_MAX) {
          return absl::StrCat("in the body (", body_bytes_, " bytes came)");
        }
        return absl::StrCat("in the body (", body_bytes_, " of ", expected_, " bytes came)");
      case Stage::kChunked:
        return absl::StrCat("in the chunked body (", body_bytes_, " bytes came)");
      case Stage::kTrailers:
        return absl::StrCat("in the trailers (after ", body_bytes_, " bytes of body)");
    }
    return "";
  }

  ByteSource& source_;
  std::string& buf_;
  const ReadOptions& options_;
  Stage stage_ = Stage::kStatusLine;
  size_t head_bytes_ = 0;
  uint64_t body_bytes_ = 0;
  uint64_t expected_ = UINT64_MAX;
};

}  // namespace

Response ReadResponse(ByteSource& source, std::string& buffer, const ReadOptions& options) {
  return Reader(source, buffer, options).Read();
}

}  // namespace uring_http::testing::internal
