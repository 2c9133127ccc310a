#include "src/http/compress.h"

#include <cstring>
#include <string>
#include <utility>

#include "src/http/gzip_encoder.h"
#include "src/http/header_values.h"

namespace uring_http::http {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

bool EqualsLower(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != lower[i]) return false;
  }
  return true;
}

bool StartsWithLower(std::string_view a, std::string_view lower) {
  return a.size() >= lower.size() && EqualsLower(a.substr(0, lower.size()), lower);
}

bool EndsWithLower(std::string_view a, std::string_view lower) {
  return a.size() >= lower.size() && EqualsLower(a.substr(a.size() - lower.size()), lower);
}

bool ContainsLower(std::string_view a, std::string_view lower) {
  for (size_t i = 0; i + lower.size() <= a.size(); ++i) {
    if (EqualsLower(a.substr(i, lower.size()), lower)) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsTokenChar(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == t) return true;
  }
  return false;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

}  // namespace

std::optional<int> ParseQValue(std::string_view v) {
  // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
  if (v.empty() || (v[0] != '0' && v[0] != '1')) return std::nullopt;
  const bool one = v[0] == '1';
  int thousandths = one ? 1000 : 0;
  if (v.size() == 1) return thousandths;
  if (v[1] != '.' || v.size() > 5) return std::nullopt;
  int scale = 100;
  for (char c : v.substr(2)) {
    if (c < '0' || c > '9' || (one && c != '0')) return std::nullopt;
    thousandths += (c - '0') * scale;
    scale /= 10;
  }
  return thousandths;
}

void AcceptEncoding::AddFieldValue(std::string_view value) {
  // An empty field still says something: only identity is acceptable.
  present_ = true;
  for (std::string_view element : ListElementRange(value)) AddElement(element);
}

void AcceptEncoding::AddElement(std::string_view element) {
  // coding *( OWS ";" OWS name "=" value ); only q means anything here.
  const size_t semi = element.find(';');
  const std::string_view coding = Trim(element.substr(0, semi));
  if (!IsToken(coding)) return;
  int weight = 1000;
  std::string_view params = semi == std::string_view::npos ? std::string_view()
                                                           : element.substr(semi + 1);
  while (!params.empty()) {
    const size_t next = params.find(';');
    const std::string_view param = Trim(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
    if (param.empty()) continue;  // "gzip;" and "gzip; ;q=1": empty parameters are allowed
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos) return;  // malformed parameter: the element is ignored
    const std::string_view name = Trim(param.substr(0, eq));
    if (!IsToken(name)) return;
    if (EqualsLower(name, "q")) {
      const std::optional<int> q = ParseQValue(Trim(param.substr(eq + 1)));
      if (!q) return;
      weight = *q;
    }
  }
  int* slot = nullptr;
  if (EqualsLower(coding, "gzip") || EqualsLower(coding, "x-gzip")) {
    slot = &gzip_;
  } else if (EqualsLower(coding, "identity")) {
    slot = &identity_;
  } else if (coding == "*") {
    slot = &star_;
  } else if (EqualsLower(coding, "br")) {
    slot = &br_;
  } else if (EqualsLower(coding, "zstd")) {
    slot = &zstd_;
  }
  if (slot != nullptr && *slot < 0) *slot = weight;
}

bool AcceptEncoding::PrefersGzip() const {
  if (!present_) return false;
  const int gzip = gzip_ >= 0 ? gzip_ : (star_ >= 0 ? star_ : 0);
  // Identity competes with the weight it is given, explicitly or through
  // "*"; unnamed, it is acceptable but not preferred ("gzip;q=0.5" alone
  // still asks for gzip).
  const int identity = identity_ >= 0 ? identity_ : (star_ >= 0 ? star_ : 0);
  // Ties go to gzip: equal preference, fewer bytes.
  return gzip > 0 && gzip >= identity;
}

int AcceptEncoding::CodingWeight(std::string_view coding) const {
  if (!present_) return 0;
  int named = -1;
  if (EqualsLower(coding, "gzip")) {
    named = gzip_;
  } else if (EqualsLower(coding, "br")) {
    named = br_;
  } else if (EqualsLower(coding, "zstd")) {
    named = zstd_;
  }
  if (named >= 0) return named;
  return star_ >= 0 ? star_ : 0;
}

int AcceptEncoding::IdentityWeight() const {
  if (!present_) return -1;
  return identity_ >= 0 ? identity_ : (star_ >= 0 ? star_ : -1);
}

bool PrefersGzip(const HeaderValueRange& accept_encoding_lines) {
  AcceptEncoding ae;
  for (std::string_view line : accept_encoding_lines) ae.AddFieldValue(line);
  return ae.PrefersGzip();
}

bool IsCompressibleType(std::string_view content_type) {
  std::string_view type = Trim(content_type.substr(0, content_type.find(';')));
  if (StartsWithLower(type, "text/")) return type.size() > 5;
  for (std::string_view exact :
       {"application/json", "application/x-ndjson", "application/javascript",
        "application/x-javascript", "application/ecmascript", "application/xml",
        "image/svg+xml", "application/wasm", "font/ttf", "font/otf"}) {
    if (EqualsLower(type, exact)) return true;
  }
  // Structured syntax suffixes (RFC 6839): application/problem+json,
  // application/atom+xml, ...
  return StartsWithLower(type, "application/") &&
         (EndsWithLower(type, "+json") || EndsWithLower(type, "+xml"));
}

GzipDecision DecideGzip(const CompressionOptions& options, bool client_prefers_gzip, int status,
                        const HeaderTable& headers, std::optional<uint64_t> body_size) {
  if (!options.enabled) return GzipDecision::kLeave;
  if (headers.Find("content-encoding")) return GzipDecision::kLeave;
  std::optional<std::string_view> type = headers.Find("content-type");
  if (type) *type = Trim(*type);
  if (!type || !IsCompressibleType(*type)) return GzipDecision::kLeave;
  // A range of the identity body (206) must stay one; 204/304 have no body.
  if (!client_prefers_gzip || !StatusHasBody(status) || status == 206 ||
      (body_size && *body_size < options.min_bytes)) {
    return GzipDecision::kIdentity;
  }
  return GzipDecision::kGzip;
}

void WeakenETag(Response& response) {
  std::optional<std::string_view> etag = response.FindHeader("etag");
  if (etag) *etag = Trim(*etag);
  if (!etag || etag->empty() || etag->front() != '"') return;  // absent, or weak already
  // The view points into the header storage that RemoveHeader rewrites:
  // copied first (on the stack unless the tag is absurdly long).
  char small[256];
  std::string large;
  char* weak = small;
  if (etag->size() + 2 > sizeof(small)) {
    large.resize(etag->size() + 2);
    weak = large.data();
  }
  weak[0] = 'W';
  weak[1] = '/';
  std::memcpy(weak + 2, etag->data(), etag->size());
  const std::string_view value(weak, etag->size() + 2);
  response.RemoveHeader("ETag");
  // Room for the two more bytes was checked (RoomForGzipHeaders).
  (void)response.AddHeader("ETag", value);
}

void AddVaryAcceptEncoding(Response& response) {
  // Every Vary field the handler set, one by one.
  for (const HeaderTable::Field f : response.headers()) {
    if (!FieldNameEquals(f.name, "vary")) continue;
    if (ContainsLower(f.value, "accept-encoding") || Trim(f.value) == "*") return;
  }
  (void)response.AddHeader("Vary", "Accept-Encoding");  // room checked
}

namespace {

bool RoomForGzipHeaders(const Response& response) {
  // The two lines, and "W/" should an ETag be weakened.
  constexpr size_t kAdded =
      sizeof("Content-Encoding: gzip\r\n") + sizeof("Vary: Accept-Encoding\r\n") + 2;
  return kAdded <= response.header_room();
}

}  // namespace

GzipDecision DecideStreamedGzip(const CompressionOptions& options, bool client_prefers_gzip,
                                const Response& response) {
  if (!options.enabled) return GzipDecision::kLeave;
  const std::optional<uint64_t> length =
      response.has_content_length() ? std::optional<uint64_t>(response.content_length())
                                    : std::nullopt;
  const GzipDecision decision = DecideGzip(options, client_prefers_gzip, response.status(),
                                           response.headers(), length);
  return RoomForGzipHeaders(response) ? decision : GzipDecision::kLeave;
}

void AddGzipHeaders(GzipDecision decision, Response& response) {
  if (decision == GzipDecision::kLeave) return;
  if (decision == GzipDecision::kGzip) {
    (void)response.AddHeader("Content-Encoding", "gzip");  // room checked
    WeakenETag(response);
  }
  AddVaryAcceptEncoding(response);
}

GzipDecision CompressBufferedResponse(const CompressionOptions& options,
                                      bool client_prefers_gzip, bool head_only,
                                      Response& response) {
  if (!options.enabled) return GzipDecision::kLeave;
  const std::string_view body = response.body_view();
  GzipDecision decision = DecideGzip(options, client_prefers_gzip, response.status(),
                                     response.headers(), body.size());
  if (decision == GzipDecision::kLeave) return decision;
  // Room for both lines, checked first: a body must never go out compressed
  // without its Content-Encoding. A handler that filled its header lines to
  // the limit gets its response as it built it.
  if (!RoomForGzipHeaders(response)) return GzipDecision::kLeave;
  if (decision == GzipDecision::kGzip && !head_only) {
    std::string compressed;
    // Incompressible after all (already compressed data labelled text): the
    // original is sent, and the client cannot tell.
    if (!GzipBuffer(body, options.level, &compressed) || compressed.size() >= body.size()) {
      decision = GzipDecision::kIdentity;
    } else {
      response.body() = std::move(compressed);
    }
  }
  if (decision == GzipDecision::kGzip && head_only) response.set_length_unstated();
  AddGzipHeaders(decision, response);
  return decision;
}

}  // namespace uring_http::http
