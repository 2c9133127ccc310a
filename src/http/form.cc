// application/x-www-form-urlencoded text (see form.h).
#include "src/http/form.h"

#include <cstring>

#include "src/http/percent.h"

namespace uring_http::http {
namespace {

bool NeedsDecoding(std::string_view raw) {
  for (char c : raw) {
    if (c == '%' || c == '+') return true;
  }
  return false;
}

// Decodes the byte at raw[*i] ('+', an escape or itself), leaving *i on the
// last byte it used. False for a malformed escape.
bool DecodeAt(std::string_view raw, size_t* i, char* out) {
  const char c = raw[*i];
  if (c == '+') {
    *out = ' ';
  } else if (c != '%') {
    *out = c;
  } else {
    if (!DecodeEscape(raw, *i, out)) return false;
    *i += 2;
  }
  return true;
}

// Decodes all of `raw` into `*out` (cleared first). False when malformed.
bool DecodeAll(std::string_view raw, std::string* out) {
  out->clear();
  out->reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    char c;
    if (!DecodeAt(raw, &i, &c)) return false;
    out->push_back(c);
  }
  return true;
}

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

ParamValue ParamValue::Malformed() {
  ParamValue v;
  v.state_ = State::kMalformed;
  return v;
}

ParamValue ParamValue::Decode(std::string_view raw) {
  ParamValue v;
  v.state_ = State::kPresent;
  if (!NeedsDecoding(raw)) {
    v.view_ = raw;
    return v;
  }
  if (!DecodeAll(raw, &v.decoded_)) return Malformed();
  v.owned_ = true;
  return v;
}

UrlEncodedParams::iterator& UrlEncodedParams::iterator::operator++() {
  pos_ = next_;
  Load();
  return *this;
}

void UrlEncodedParams::iterator::Load() {
  while (pos_ != end_ && *pos_ == '&') ++pos_;
  if (pos_ == end_) {
    current_ = RawParam();
    next_ = end_;
    return;
  }
  const size_t left = static_cast<size_t>(end_ - pos_);
  const char* amp = static_cast<const char*>(std::memchr(pos_, '&', left));
  next_ = amp != nullptr ? amp : end_;
  const std::string_view pair(pos_, static_cast<size_t>(next_ - pos_));
  const size_t eq = pair.find('=');
  current_.has_equals = eq != std::string_view::npos;
  current_.name = pair.substr(0, eq);
  current_.value = current_.has_equals ? pair.substr(eq + 1) : std::string_view();
}

ParamValue UrlEncodedParams::Get(std::string_view name) const {
  for (const RawParam& param : *this) {
    if (FormComponentEquals(param.name, name)) return ParamValue::Decode(param.value);
  }
  return ParamValue();
}

std::vector<ParamValue> UrlEncodedParams::GetAll(std::string_view name) const {
  std::vector<ParamValue> values;
  for (const RawParam& param : *this) {
    if (FormComponentEquals(param.name, name)) values.push_back(ParamValue::Decode(param.value));
  }
  return values;
}

std::optional<std::string_view> DecodeFormComponent(std::string_view raw, std::string* storage) {
  if (!NeedsDecoding(raw)) return raw;
  if (!DecodeAll(raw, storage)) return std::nullopt;
  return std::string_view(*storage);
}

bool FormComponentEquals(std::string_view raw, std::string_view decoded) {
  size_t j = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c;
    if (!DecodeAt(raw, &i, &c)) return false;
    if (j == decoded.size() || decoded[j] != c) return false;
    ++j;
  }
  return j == decoded.size();
}

bool IsFormUrlEncoded(std::string_view content_type) {
  constexpr std::string_view kType = "application/x-www-form-urlencoded";
  while (!content_type.empty() && IsOws(content_type.front())) content_type.remove_prefix(1);
  if (content_type.size() < kType.size()) return false;
  for (size_t i = 0; i < kType.size(); ++i) {
    if (AsciiLower(content_type[i]) != kType[i]) return false;
  }
  content_type.remove_prefix(kType.size());
  while (!content_type.empty() && IsOws(content_type.front())) content_type.remove_prefix(1);
  return content_type.empty() || content_type.front() == ';';
}

}  // namespace uring_http::http
