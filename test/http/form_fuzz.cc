// libFuzzer target for the request helpers that parse untrusted text: form
// text (src/http/form.h: query strings and form bodies) and the Cookie
// header (src/http/cookies.h). The input is read as both. Checked against
// plain reference implementations below (split with std::string, decode
// byte by byte) and for what must hold for any input: views lie inside the
// input, a decoded value is never longer than its encoding and is a view of
// it when nothing needed decoding, a malformed escape is reported and never
// passed through, re-encoding a decoded value and decoding it again gives
// it back, lookups find the first match, cookie names are tokens and values
// carry no ';' or DQUOTE.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] form_fuzz
// Replay: bazel run //test/http:form_fuzz -- FILE_OR_DIR...  (without
//         --config=fuzz the main at the bottom replays instead of fuzzing)
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/cookies.h"
#include "src/http/form.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http {
namespace {

constexpr size_t kMaxInput = 4096;
// Lookups are quadratic in the pairs; a few dozen names say enough.
constexpr size_t kMaxLookups = 48;

bool Inside(std::string_view part, std::string_view whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// ---------------------------------------------------------------------------
// Form text: the reference.

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> RefDecode(std::string_view raw) {
  std::string out;
  size_t i = 0;
  while (i < raw.size()) {
    if (raw[i] == '+') {
      out += ' ';
      i += 1;
    } else if (raw[i] == '%') {
      if (i + 2 >= raw.size()) return std::nullopt;  // fewer than two bytes follow
      if (Hex(raw[i + 1]) < 0 || Hex(raw[i + 2]) < 0) return std::nullopt;
      out += static_cast<char>(Hex(raw[i + 1]) * 16 + Hex(raw[i + 2]));
      i += 3;
    } else {
      out += raw[i];
      i += 1;
    }
  }
  return out;
}

// Encodes every byte but the unreserved ones; a space as '+'.
std::string RefEncode(std::string_view text) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += c;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kDigits[u >> 4];
      out += kDigits[u & 15];
    }
  }
  return out;
}

struct RefPair {
  size_t name_at, name_size, value_at, value_size;
  bool has_equals;
};

std::vector<RefPair> RefSplit(std::string_view text) {
  std::vector<RefPair> pairs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t amp = text.find('&', start);
    if (amp == std::string_view::npos) amp = text.size();
    if (amp > start) {
      const std::string_view piece = text.substr(start, amp - start);
      const size_t eq = piece.find('=');
      if (eq == std::string_view::npos) {
        pairs.push_back({start, piece.size(), amp, 0, false});
      } else {
        pairs.push_back({start, eq, start + eq + 1, piece.size() - eq - 1, true});
      }
    }
    start = amp + 1;
  }
  return pairs;
}

void CheckComponent(std::string_view raw) {
  const std::optional<std::string> expected = RefDecode(raw);
  const bool needs_decoding = raw.find_first_of("%+") != std::string_view::npos;

  std::string storage;
  const std::optional<std::string_view> got = DecodeFormComponent(raw, &storage);
  FUZZ_CHECK(got.has_value() == expected.has_value());
  if (got) {
    FUZZ_CHECK(*got == *expected);
    FUZZ_CHECK(got->size() <= raw.size());
    if (!needs_decoding) FUZZ_CHECK(got->data() == raw.data());
  }

  const ParamValue value = ParamValue::Decode(raw);
  FUZZ_CHECK(!value.absent());
  FUZZ_CHECK(value.malformed() == !expected.has_value());
  FUZZ_CHECK(value.present() == expected.has_value());
  if (!expected) {
    FUZZ_CHECK(value.value().empty());
    FUZZ_CHECK(!FormComponentEquals(raw, raw));
    return;
  }
  FUZZ_CHECK(value.value() == *expected);
  FUZZ_CHECK(value.value().size() <= raw.size());
  FUZZ_CHECK(value.is_view() == !needs_decoding);
  if (value.is_view()) FUZZ_CHECK(value.value().data() == raw.data());
  FUZZ_CHECK(FormComponentEquals(raw, *expected));
  FUZZ_CHECK(!FormComponentEquals(raw, *expected + "x"));
  if (!expected->empty()) FUZZ_CHECK(!FormComponentEquals(raw, expected->substr(1)));

  // Decoded exactly once: encoding the result and decoding gives it back.
  const std::string encoded = RefEncode(*expected);
  const std::optional<std::string> round = RefDecode(encoded);
  FUZZ_CHECK(round && *round == *expected);
  FUZZ_CHECK(ParamValue::Decode(encoded) == *expected);
}

void CheckForm(std::string_view text) {
  const UrlEncodedParams params(text);
  const std::vector<RefPair> expected = RefSplit(text);

  std::vector<RawParam> pairs;
  for (const RawParam& p : params) {
    FUZZ_CHECK(Inside(p.name, text) && Inside(p.value, text));
    FUZZ_CHECK(p.name.find('&') == std::string_view::npos);
    FUZZ_CHECK(p.value.find('&') == std::string_view::npos);
    FUZZ_CHECK(p.name.find('=') == std::string_view::npos);
    FUZZ_CHECK(p.has_equals || p.value.empty());
    FUZZ_CHECK(!p.name.empty() || p.has_equals);  // an empty piece is no pair
    pairs.push_back(p);
  }
  FUZZ_CHECK(pairs.size() == expected.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    const RefPair& e = expected[i];
    FUZZ_CHECK(pairs[i].name == text.substr(e.name_at, e.name_size));
    FUZZ_CHECK(pairs[i].value == text.substr(e.value_at, e.value_size));
    FUZZ_CHECK(pairs[i].has_equals == e.has_equals);
    if (!pairs[i].name.empty()) FUZZ_CHECK(pairs[i].name.data() == text.data() + e.name_at);
    if (!pairs[i].value.empty()) FUZZ_CHECK(pairs[i].value.data() == text.data() + e.value_at);
    CheckComponent(pairs[i].name);
    CheckComponent(pairs[i].value);
  }

  // Lookups by decoded name: the first match, and all of them in order.
  size_t lookups = 0;
  for (size_t i = 0; i < pairs.size() && lookups < kMaxLookups; ++i) {
    const std::optional<std::string> name = RefDecode(pairs[i].name);
    if (!name) continue;
    ++lookups;
    std::vector<size_t> matches;
    for (size_t j = 0; j < pairs.size(); ++j) {
      const std::optional<std::string> other = RefDecode(pairs[j].name);
      if (other && *other == *name) matches.push_back(j);
    }
    FUZZ_CHECK(!matches.empty() && matches.front() <= i);
    const ParamValue first = params.Get(*name);
    const std::optional<std::string> first_value = RefDecode(pairs[matches.front()].value);
    FUZZ_CHECK(first.malformed() == !first_value.has_value());
    if (first_value) FUZZ_CHECK(first == *first_value);
    const std::vector<ParamValue> all = params.GetAll(*name);
    FUZZ_CHECK(all.size() == matches.size());
    for (size_t k = 0; k < all.size(); ++k) {
      const std::optional<std::string> v = RefDecode(pairs[matches[k]].value);
      FUZZ_CHECK(all[k].malformed() == !v.has_value());
      if (v) FUZZ_CHECK(all[k] == *v);
    }
  }
  // A name no pair has (one byte longer than the input can hold).
  FUZZ_CHECK(params.Get(std::string(text.size() + 1, 'x')).absent());

  // The Content-Type check: true only for the media type, in any case.
  if (IsFormUrlEncoded(text)) {
    std::string lower(text);
    for (char& c : lower) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    FUZZ_CHECK(lower.find("application/x-www-form-urlencoded") != std::string::npos);
  }
}

// ---------------------------------------------------------------------------
// Cookies.

bool IsTchar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsWs(char c) { return c == ' ' || c == '\t'; }

std::string_view RefTrim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && IsWs(s[b])) ++b;
  while (e > b && IsWs(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<CookiePair> RefCookies(std::string_view header) {
  std::vector<CookiePair> out;
  size_t start = 0;
  while (start <= header.size()) {
    size_t semi = header.find(';', start);
    if (semi == std::string_view::npos) semi = header.size();
    const std::string_view piece = header.substr(start, semi - start);
    start = semi + 1;
    const size_t eq = piece.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = RefTrim(piece.substr(0, eq));
    std::string_view value = RefTrim(piece.substr(eq + 1));
    bool ok = !name.empty();
    for (char c : name) ok = ok && IsTchar(c);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    ok = ok && value.find('"') == std::string_view::npos;
    if (ok) out.push_back({name, value});
  }
  return out;
}

void CheckCookies(std::string_view header) {
  const std::vector<CookiePair> expected = RefCookies(header);
  std::vector<CookiePair> got;
  const char* last_end = header.data();
  for (const CookiePair& c : CookieRange(header)) {
    FUZZ_CHECK(Inside(c.name, header) && Inside(c.value, header));
    FUZZ_CHECK(!c.name.empty());
    for (char ch : c.name) FUZZ_CHECK(IsTchar(ch));
    FUZZ_CHECK(c.value.find(';') == std::string_view::npos);
    FUZZ_CHECK(c.value.find('"') == std::string_view::npos);
    FUZZ_CHECK(c.name.data() >= last_end);  // in order, not overlapping
    last_end = c.name.data() + c.name.size();
    got.push_back(c);
  }
  FUZZ_CHECK(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    FUZZ_CHECK(got[i].name == expected[i].name && got[i].value == expected[i].value);
    FUZZ_CHECK(got[i].name.data() == expected[i].name.data());
  }
  for (size_t i = 0; i < got.size() && i < kMaxLookups; ++i) {
    const std::optional<std::string_view> first = FindCookie(header, got[i].name);
    FUZZ_CHECK(first.has_value());
    size_t k = 0;
    while (got[k].name != got[i].name) ++k;
    FUZZ_CHECK(first->data() == got[k].value.data() && first->size() == got[k].value.size());
  }
  FUZZ_CHECK(!FindCookie(header, "").has_value());
}

}  // namespace
}  // namespace uring_http::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > uring_http::http::kMaxInput) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  uring_http::http::CheckForm(input);
  uring_http::http::CheckCookies(input);
  return 0;
}
