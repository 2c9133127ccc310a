#include "src/http/response_helpers.h"

#include <cstring>

#include "src/http/http_date.h"

namespace uring_http::http {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

void AppendPercent(std::string& out, unsigned char c) {
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}

bool IsTokenChar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// RFC 6265 cookie-octet: %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E.
bool IsCookieOctet(unsigned char c) {
  return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) ||
         (c >= 0x3c && c <= 0x5b) || (c >= 0x5d && c <= 0x7e);
}

std::string_view StatusText(int status) {
  switch (status) {
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 307:
      return "Temporary Redirect";
    default:
      return "Permanent Redirect";
  }
}

}  // namespace

bool Redirect(Response& response, std::string_view location, int status) {
  if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308) {
    return false;
  }
  if (location.empty()) return false;
  std::string safe;
  safe.reserve(location.size());
  for (unsigned char c : location) {
    if (IsControl(c)) return false;
    if (c >= 0x80 || c == ' ' || std::strchr("\"<>\\^`{|}", c) != nullptr) {
      AppendPercent(safe, c);
    } else {
      safe.push_back(static_cast<char>(c));
    }
  }
  response.RemoveHeader("Location");
  if (!response.AddHeader("Location", safe)) return false;
  response.set_status(status);
  response.set_content_type("text/plain; charset=utf-8");
  response.set_body(std::to_string(status) + " " + std::string(StatusText(status)) + ": " + safe + "\n");
  return true;
}

std::string ToggleTrailingSlash(std::string_view path, std::string_view query) {
  while (path.size() > 1 && path[0] == '/' && path[1] == '/') path.remove_prefix(1);
  std::string out(path);
  if (out.size() > 1 && out.back() == '/') {
    out.pop_back();
  } else {
    out.push_back('/');
  }
  if (out.empty() || out.front() != '/') out.insert(out.begin(), '/');
  if (!query.empty()) {
    out.push_back('?');
    out.append(query);
  }
  return out;
}

std::string CacheControl::ToString() const {
  std::string out;
  const auto add = [&out](std::string_view directive) {
    if (!out.empty()) out += ", ";
    out += directive;
  };
  const auto seconds = [](int64_t s) { return s < 0 ? int64_t{0} : s; };
  if (is_public) add("public");
  if (is_private) add("private");
  if (no_cache) add("no-cache");
  if (no_store) add("no-store");
  if (must_revalidate) add("must-revalidate");
  if (max_age) add("max-age=" + std::to_string(seconds(*max_age)));
  if (s_maxage) add("s-maxage=" + std::to_string(seconds(*s_maxage)));
  if (stale_while_revalidate) {
    add("stale-while-revalidate=" + std::to_string(seconds(*stale_while_revalidate)));
  }
  if (immutable) add("immutable");
  return out;
}

bool SetCacheControl(Response& response, const CacheControl& directives) {
  response.RemoveHeader("Cache-Control");
  return response.AddHeader("Cache-Control", directives.ToString());
}

std::string ContentDispositionValue(std::string_view filename, Disposition disposition) {
  std::string out = disposition == Disposition::kInline ? "inline" : "attachment";
  // Only the last path segment is a file name.
  std::string name;
  bool beyond_ascii = false;
  for (size_t i = 0; i < filename.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(filename[i]);
    if (IsControl(c)) continue;
    if (c == '/' || c == '\\') {
      name.push_back('_');
    } else {
      name.push_back(static_cast<char>(c));
    }
    beyond_ascii |= c >= 0x80;
  }
  if (name.empty()) return out;
  out += "; filename=\"";
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80) {
      // One '_' per UTF-8 character: skip its continuation bytes.
      out.push_back('_');
      while (i + 1 < name.size() && (static_cast<unsigned char>(name[i + 1]) & 0xc0) == 0x80) ++i;
      continue;
    }
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(static_cast<char>(c));
  }
  out.push_back('"');
  if (beyond_ascii) {
    // RFC 8187 ext-value: attr-char stays, everything else is %XX.
    out += "; filename*=UTF-8''";
    for (unsigned char c : name) {
      const bool attr_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || std::strchr("!#$&+-.^_`|~", c) != nullptr;
      if (attr_char && c != 0) {
        out.push_back(static_cast<char>(c));
      } else {
        AppendPercent(out, c);
      }
    }
  }
  return out;
}

bool SetContentDisposition(Response& response, std::string_view filename,
                           Disposition disposition) {
  response.RemoveHeader("Content-Disposition");
  return response.AddHeader("Content-Disposition", ContentDispositionValue(filename, disposition));
}

absl::StatusOr<std::string> SetCookieValue(std::string_view name, std::string_view value,
                                           const SetCookieOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("cookie name is empty");
  for (unsigned char c : name) {
    if (!IsTokenChar(c)) return absl::InvalidArgumentError("cookie name is not a token");
  }
  std::string_view inner = value;
  if (inner.size() >= 2 && inner.front() == '"' && inner.back() == '"') {
    inner = inner.substr(1, inner.size() - 2);
  }
  for (unsigned char c : inner) {
    if (!IsCookieOctet(c)) {
      return absl::InvalidArgumentError(
          "cookie value holds a byte outside cookie-octet (encode it first)");
    }
  }
  for (unsigned char c : options.path) {
    if (IsControl(c) || c == ';') {
      return absl::InvalidArgumentError("cookie Path holds a control byte or ';'");
    }
  }
  for (unsigned char c : options.domain) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) return absl::InvalidArgumentError("cookie Domain is not a host name");
  }
  if (options.same_site == SameSite::kNone && !options.secure) {
    return absl::InvalidArgumentError("SameSite=None needs Secure (browsers reject it otherwise)");
  }
  std::string out(name);
  out.push_back('=');
  out.append(value);
  if (!options.path.empty()) {
    out += "; Path=";
    out.append(options.path);
  }
  if (!options.domain.empty()) {
    out += "; Domain=";
    out.append(options.domain);
  }
  if (options.expires) {
    char date[kHttpDateSize];
    FormatHttpDate(*options.expires, date);
    out += "; Expires=";
    out.append(date, sizeof(date));
  }
  if (options.max_age) {
    // RFC 6265 5.2.2: zero or less expires the cookie at once.
    out += "; Max-Age=" + std::to_string(*options.max_age < 0 ? int64_t{0} : *options.max_age);
  }
  if (options.secure) out += "; Secure";
  if (options.http_only) out += "; HttpOnly";
  switch (options.same_site) {
    case SameSite::kStrict:
      out += "; SameSite=Strict";
      break;
    case SameSite::kLax:
      out += "; SameSite=Lax";
      break;
    case SameSite::kNone:
      out += "; SameSite=None";
      break;
    case SameSite::kUnset:
      break;
  }
  return out;
}

absl::Status SetCookie(Response& response, std::string_view name, std::string_view value,
                       const SetCookieOptions& options) {
  absl::StatusOr<std::string> line = SetCookieValue(name, value, options);
  if (!line.ok()) return line.status();
  if (!response.AddHeader("Set-Cookie", *line)) {
    return absl::ResourceExhaustedError("no room for Set-Cookie in the response head");
  }
  return absl::OkStatus();
}

}  // namespace uring_http::http
