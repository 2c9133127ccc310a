#include "src/ws/handshake.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <vector>

namespace uring_http::ws {
namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether any field `name` lists `token` (comma-separated, any case).
bool ListsToken(const http::Request& r, std::string_view name, std::string_view token) {
  for (size_t i = 0; i < r.num_headers; ++i) {
    if (!EqualsNoCase(r.headers[i].name, name)) continue;
    std::string_view rest = r.headers[i].value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (EqualsNoCase(Trim(rest.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

// The one value of field `name`; false if there are several.
bool OneField(const http::Request& r, std::string_view name, std::string_view* value) {
  int n = 0;
  for (size_t i = 0; i < r.num_headers; ++i) {
    if (EqualsNoCase(r.headers[i].name, name)) {
      *value = r.headers[i].value;
      ++n;
    }
  }
  return n <= 1;
}

bool KeyValid(std::string_view key) {
  // 16 bytes in base64: 22 characters and "==".
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (size_t i = 0; i < 22; ++i) {
    const char c = key[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/') return false;
  }
  // The last character carries 2 bits of the 16th byte and 4 zero bits.
  static constexpr std::string_view kLast = "AQgw";
  return kLast.find(key[21]) != std::string_view::npos;
}

}  // namespace

UpgradeCheck CheckUpgrade(const http::Request& request) {
  UpgradeCheck c;
  auto bad = [&c](const char* why) {
    c.status = 400;
    c.error = why;
    return c;
  };
  if (request.method != "GET") return bad("a WebSocket handshake is a GET");
  if (request.version != http::Version::kHttp11) return bad("a WebSocket handshake needs HTTP/1.1");
  if (!ListsToken(request, "upgrade", "websocket")) return bad("no \"Upgrade: websocket\"");
  if (!ListsToken(request, "connection", "upgrade")) return bad("no \"Connection: Upgrade\"");
  std::string_view version;
  if (!OneField(request, "sec-websocket-version", &version)) return bad("several Sec-WebSocket-Version");
  if (Trim(version) != "13") {
    c.status = 426;  // with Sec-WebSocket-Version: 13 (4.4)
    c.error = "Sec-WebSocket-Version is not 13";
    return c;
  }
  std::string_view key;
  if (!OneField(request, "sec-websocket-key", &key) || !KeyValid(Trim(key))) {
    return bad("Sec-WebSocket-Key is not the base64 of 16 bytes");
  }
  c.key = Trim(key);
  for (size_t i = 0; i < request.num_headers; ++i) {
    const http::Header& h = request.headers[i];
    if (c.protocols.empty() && EqualsNoCase(h.name, "sec-websocket-protocol")) c.protocols = h.value;
    if (c.origin.empty() && EqualsNoCase(h.name, "origin")) c.origin = h.value;
  }
  return c;
}

std::string AcceptKey(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string text(key);
  text.append(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  char out[32];
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out), digest, SHA_DIGEST_LENGTH);
  return std::string(out, static_cast<size_t>(n));
}

std::optional<DeflateParams> NegotiateDeflate(std::string_view offers, const DeflateLimits& ours) {
  if (!ours.enabled) return std::nullopt;
  while (!offers.empty()) {
    const size_t comma = offers.find(',');
    std::string_view offer = Trim(offers.substr(0, comma));
    offers = comma == std::string_view::npos ? std::string_view() : offers.substr(comma + 1);
    const size_t semi = offer.find(';');
    if (Trim(offer.substr(0, semi)) != "permessage-deflate") continue;
    std::string_view params = semi == std::string_view::npos ? std::string_view() : offer.substr(semi + 1);
    DeflateParams p;
    bool seen_snct = false, seen_cnct = false, seen_smwb = false, seen_cmwb = false;
    bool ok = true;
    int server_bits = 15;
    while (ok && !params.empty()) {
      const size_t next = params.find(';');
      std::string_view param = Trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      const size_t eq = param.find('=');
      const std::string_view name = Trim(param.substr(0, eq));
      std::string_view value = eq == std::string_view::npos ? std::string_view() : Trim(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      auto bits = [&value](int* out) {
        int v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || end != value.data() + value.size() || v < 8 || v > 15) return false;
        *out = v;
        return true;
      };
      if (name == "server_no_context_takeover") {
        ok = !seen_snct && eq == std::string_view::npos;
        seen_snct = true;
        p.server_no_context_takeover = true;
      } else if (name == "client_no_context_takeover") {
        ok = !seen_cnct && eq == std::string_view::npos;
        seen_cnct = true;
        p.client_no_context_takeover = true;
      } else if (name == "server_max_window_bits") {
        ok = !seen_smwb && bits(&server_bits);
        seen_smwb = true;
      } else if (name == "client_max_window_bits") {
        int v = 15;
        ok = !seen_cmwb && (eq == std::string_view::npos || bits(&v));
        seen_cmwb = true;
        p.client_max_window_bits = v;
      } else {
        ok = false;  // unknown: this offer is declined
      }
    }
    if (!ok) continue;
    // zlib cannot make an 8-bit window (it makes 9): an offer that needs
    // one is declined rather than answered with what it cannot inflate.
    const int bits = std::min(server_bits, ours.max_window_bits);
    if (bits < 9) continue;
    p.server_max_window_bits = bits;
    if (!ours.context_takeover) p.server_no_context_takeover = true;
    if (!ours.client_context_takeover) p.client_no_context_takeover = true;
    if (seen_cmwb && ours.client_max_window_bits < p.client_max_window_bits) {
      p.client_max_window_bits = std::max(ours.client_max_window_bits, 9);
      p.client_window_asked = true;
    }
    return p;
  }
  return std::nullopt;
}

std::string DeflateResponse(const DeflateParams& agreed) {
  std::string out = "permessage-deflate";
  if (agreed.server_no_context_takeover) out += "; server_no_context_takeover";
  if (agreed.client_no_context_takeover) out += "; client_no_context_takeover";
  if (agreed.server_max_window_bits < 15) {
    out += "; server_max_window_bits=" + std::to_string(agreed.server_max_window_bits);
  }
  if (agreed.client_window_asked) {
    out += "; client_max_window_bits=" + std::to_string(agreed.client_max_window_bits);
  }
  return out;
}

}  // namespace uring_http::ws
