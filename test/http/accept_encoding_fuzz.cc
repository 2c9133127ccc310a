// libFuzzer target for the Accept-Encoding negotiation and the
// compressible-type check (src/http/compress.h). The input is read as
// Accept-Encoding lines (split at '\n'; no line at all is no header) and
// checked against a plain reference written with std::string and std::regex
// (for inputs without DQUOTE or backslash, whose quoted-string splitting is
// header_values' own and fuzzed there), and for what must hold for any
// input: a first line "gzip;q=0" refuses gzip whatever follows, a first
// line "gzip" selects it whatever follows, weights stay in [-1, 1000].
// The input is also read as a Content-Type (no crash, case-insensitive).
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] accept_encoding_fuzz
// Replay: bazel run //test/http:accept_encoding_fuzz -- FILE_OR_DIR...
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/compress.h"
#include "test/fuzz/replay_main.h"

namespace uring_http::http {
namespace {

constexpr size_t kMaxInput = 2048;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

std::string TrimOws(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Token(const std::string& s) {
  static const std::string extra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string::npos;
  });
}

// RFC 9110's rules, spelt out plainly.
bool ReferencePrefersGzip(const std::vector<std::string>& lines) {
  if (lines.empty()) return false;
  static const std::regex qvalue("0(\\.[0-9]{0,3})?|1(\\.0{0,3})?");
  int gzip = -1, identity = -1, star = -1;
  for (const std::string& line : lines) {
    for (const std::string& raw : Split(line, ',')) {
      const std::string element = TrimOws(raw);
      if (element.empty()) continue;
      const std::vector<std::string> parts = Split(element, ';');
      const std::string coding = Lower(TrimOws(parts[0]));
      if (!Token(coding)) continue;
      int weight = 1000;
      bool valid = true;
      for (size_t i = 1; i < parts.size() && valid; ++i) {
        const std::string param = TrimOws(parts[i]);
        if (param.empty()) continue;
        const size_t eq = param.find('=');
        if (eq == std::string::npos || !Token(TrimOws(param.substr(0, eq)))) {
          valid = false;
          break;
        }
        if (Lower(TrimOws(param.substr(0, eq))) != "q") continue;
        const std::string v = TrimOws(param.substr(eq + 1));
        if (!std::regex_match(v, qvalue)) {
          valid = false;
          break;
        }
        weight = static_cast<int>(std::stod(v) * 1000 + 0.5);
      }
      if (!valid) continue;
      int* slot = coding == "gzip" || coding == "x-gzip" ? &gzip
                  : coding == "identity"                 ? &identity
                  : coding == "*"                        ? &star
                                                         : nullptr;
      if (slot != nullptr && *slot < 0) *slot = weight;
    }
  }
  const int g = gzip >= 0 ? gzip : std::max(star, 0);
  const int id = identity >= 0 ? identity : std::max(star, 0);
  return g > 0 && g >= id;
}

bool Prefers(const std::vector<std::string>& lines) {
  AcceptEncoding ae;
  for (const std::string& line : lines) ae.AddFieldValue(line);
  FUZZ_CHECK(ae.gzip_weight() >= -1 && ae.gzip_weight() <= 1000);
  FUZZ_CHECK(ae.identity_weight() >= -1 && ae.identity_weight() <= 1000);
  FUZZ_CHECK(ae.star_weight() >= -1 && ae.star_weight() <= 1000);
  if (ae.gzip_weight() == 0) FUZZ_CHECK(!ae.PrefersGzip());
  return ae.PrefersGzip();
}

void Check(std::string_view input) {
  const std::string text(input);
  std::vector<std::string> lines;
  if (!text.empty()) lines = Split(text, '\n');
  const bool got = Prefers(lines);
  if (text.find_first_of("\"\\") == std::string::npos) {
    FUZZ_CHECK(got == ReferencePrefersGzip(lines));
  }
  std::vector<std::string> refused = lines;
  refused.insert(refused.begin(), "gzip;q=0");
  FUZZ_CHECK(!Prefers(refused));
  std::vector<std::string> wanted = lines;
  wanted.insert(wanted.begin(), "gzip");
  FUZZ_CHECK(Prefers(wanted));

  const bool compressible = IsCompressibleType(input);
  std::string upper(input);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  FUZZ_CHECK(IsCompressibleType(upper) == compressible);
}

}  // namespace
}  // namespace uring_http::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > uring_http::http::kMaxInput) return 0;
  uring_http::http::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
