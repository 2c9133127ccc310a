#include "src/io/socket_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uring_http::io {
namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 6761 section 6.3: "localhost" and names under it are the loopback
// addresses, whatever a resolver (or /etc/hosts, which often lacks ::1)
// says; curl and the browsers answer them the same way.
bool IsLocalhost(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  constexpr std::string_view kName = "localhost";
  if (EqualsIgnoringCase(host, kName)) return true;
  return host.size() > kName.size() + 1 && host[host.size() - kName.size() - 1] == '.' &&
         EqualsIgnoringCase(host.substr(host.size() - kName.size()), kName);
}

}  // namespace

SocketAddress SocketAddress::FromSockaddr(const sockaddr* addr, socklen_t len) {
  SocketAddress a;
  len = std::min<socklen_t>(len, sizeof(a.storage_));
  std::memcpy(&a.storage_, addr, len);
  a.len_ = len;
  return a;
}

absl::StatusOr<SocketAddress> SocketAddress::ParseIp(std::string_view host, uint16_t port) {
  const std::string original(host);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto bad = [&original] {
    return absl::InvalidArgumentError(
        absl::StrCat("not an IPv4 or IPv6 address: '", original, "'"));
  };
  // inet_pton, not inet_aton: "127.1" and "1.2.3" are not addresses here.
  SocketAddress a;
  const bool v6 = host.find(':') != std::string_view::npos;
  if (!v6) {
    if (host.size() != original.size()) return bad();  // brackets around IPv4
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    if (inet_pton(AF_INET, std::string(host).c_str(), &in.sin_addr) != 1) return bad();
    return FromSockaddr(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
  }
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  const size_t percent = host.find('%');
  if (inet_pton(AF_INET6, std::string(host.substr(0, percent)).c_str(), &in6.sin6_addr) != 1) {
    return bad();
  }
  if (percent != std::string_view::npos) {
    // A zone: an interface's name or number (link-local addresses need one).
    const std::string zone(host.substr(percent + 1));
    unsigned index = zone.empty() ? 0 : if_nametoindex(zone.c_str());
    if (index == 0 && !zone.empty() &&
        zone.find_first_not_of("0123456789") == std::string::npos && zone.size() < 10) {
      index = static_cast<unsigned>(std::stoul(zone));
    }
    if (index == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no network interface '", zone, "' (in '", original, "')"));
    }
    in6.sin6_scope_id = index;
  }
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
}

absl::StatusOr<SocketAddress> SocketAddress::Unix(std::string_view path) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const bool abstract = !path.empty() && path.front() == '@';
  if (path.empty() || (!abstract && path.front() != '/') || path == "@") {
    return absl::InvalidArgumentError(absl::StrCat(
        "a Unix socket needs an absolute path or @name, not '", std::string(path), "'"));
  }
  if (path.size() >= sizeof(un.sun_path) || path.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("Unix socket name too long (at most ",
                                                   sizeof(un.sun_path) - 1, " bytes): '",
                                                   std::string(path), "'"));
  }
  std::memcpy(un.sun_path, path.data(), path.size());
  // An abstract name starts with a NUL and is exactly as long as given.
  if (abstract) un.sun_path[0] = '\0';
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&un),
                      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() +
                                             (abstract ? 0 : 1)));
}

SocketAddress SocketAddress::Any(bool ipv6, uint16_t port) {
  if (ipv6) {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    in6.sin6_addr = in6addr_any;
    return FromSockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
  }
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  in.sin_addr.s_addr = htonl(INADDR_ANY);
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
}

bool SocketAddress::is_wildcard() const {
  if (family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (family() == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  }
  return false;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

std::string SocketAddress::unix_path() const {
  if (!is_unix()) return "";
  const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
  const size_t base = offsetof(sockaddr_un, sun_path);
  if (len_ <= base) return "";  // unnamed
  std::string path(un->sun_path, len_ - base);
  if (path[0] == '\0') {
    path[0] = '@';
    return path;
  }
  return std::string(path.c_str());  // up to its NUL
}

std::string SocketAddress::HostText() const {
  char text[INET6_ADDRSTRLEN] = "";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text,
              sizeof(text));
    return text;
  }
  if (family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    std::string host = text;
    if (in6->sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = "";
      absl::StrAppend(&host, "%",
                      if_indextoname(in6->sin6_scope_id, name) != nullptr
                          ? std::string(name)
                          : absl::StrCat(in6->sin6_scope_id));
    }
    return host;
  }
  if (is_unix()) return absl::StrCat("unix:", unix_path());
  return "-";
}

std::string SocketAddress::ToString() const {
  if (family() == AF_INET) return absl::StrCat(HostText(), ":", port());
  if (family() == AF_INET6) return absl::StrCat("[", HostText(), "]:", port());
  return HostText();
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage_);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage_);
    return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id &&
           IN6_ARE_ADDR_EQUAL(&a->sin6_addr, &b->sin6_addr);
  }
  if (is_unix()) return unix_path() == other.unix_path();
  return family() == AF_UNSPEC;
}

bool Ipv6Available() {
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int zero = 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  const SocketAddress any = SocketAddress::Any(/*ipv6=*/true, 0);
  const bool ok = bind(fd, any.get(), any.size()) == 0;
  close(fd);  // bound to an ephemeral port, never listened: nothing to undo
  return ok;
}

absl::StatusOr<std::vector<SocketAddress>> ResolveListenHost(std::string_view host,
                                                             uint16_t port, bool ipv6) {
  std::vector<SocketAddress> out;
  if (host.empty()) {
    out.push_back(SocketAddress::Any(ipv6, port));
    return out;
  }
  const bool literal = host.find(':') != std::string_view::npos || host.front() == '[' ||
                       host.find_first_not_of("0123456789.") == std::string_view::npos;
  if (literal) {
    auto a = SocketAddress::ParseIp(host, port);
    if (!a.ok()) return a.status();
    if (a->family() == AF_INET6 && !ipv6) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", a->ToString(), ": this host has no IPv6"));
    }
    out.push_back(*a);
    return out;
  }
  if (IsLocalhost(host)) {
    if (ipv6) out.push_back(*SocketAddress::ParseIp("::1", port));
    out.push_back(*SocketAddress::ParseIp("127.0.0.1", port));
    return out;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string name(host);
  if (const int e = getaddrinfo(name.c_str(), nullptr, &hints, &found); e != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", name, "' to listen on: ", gai_strerror(e)));
  }
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && !(ai->ai_family == AF_INET6 && ipv6)) continue;
    SocketAddress a = SocketAddress::FromSockaddr(ai->ai_addr, ai->ai_addrlen);
    a.set_port(port);
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  freeaddrinfo(found);
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name, "' resolves to no address this host can listen on",
        ipv6 ? "" : " (IPv6 ones left out: this host has no IPv6)"));
  }
  return out;
}

namespace {

constexpr std::string_view kUnixPrefix = "unix:";

// Splits "HOST:PORT" (or "[V6]:PORT"); *host keeps the brackets.
absl::Status SplitHostPort(std::string_view text, std::string_view* host, uint16_t* port) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", std::string(text), "': ", std::string(why)));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return bad("HOST:PORT (\":8080\" for every address), or unix:PATH");
  }
  *host = text.substr(0, colon);
  if (host->find(':') != std::string_view::npos &&
      !(host->front() == '[' && host->back() == ']')) {
    return bad("an IPv6 address goes in brackets ([::1]:8080)");
  }
  const std::string_view digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad("no port after the last ':'");
  }
  const unsigned long value = std::stoul(std::string(digits));
  if (value > 65535) return bad("port above 65535");
  *port = static_cast<uint16_t>(value);
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckListenAddress(std::string_view text) {
  if (text.starts_with(kUnixPrefix)) {
    return SocketAddress::Unix(text.substr(kUnixPrefix.size())).status();
  }
  std::string_view host;
  uint16_t port = 0;
  if (absl::Status s = SplitHostPort(text, &host, &port); !s.ok()) return s;
  const bool literal =
      host.find(':') != std::string_view::npos ||
      (!host.empty() && host.find_first_not_of("0123456789.") == std::string_view::npos);
  if (literal) return SocketAddress::ParseIp(host, port).status();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SocketAddress>> ResolveListenAddress(std::string_view text,
                                                                bool ipv6) {
  if (text.starts_with(kUnixPrefix)) {
    auto named = SocketAddress::Unix(text.substr(kUnixPrefix.size()));
    if (!named.ok()) return named.status();
    return std::vector<SocketAddress>{*named};
  }
  std::string_view host;
  uint16_t port = 0;
  if (absl::Status s = SplitHostPort(text, &host, &port); !s.ok()) return s;
  return ResolveListenHost(host, port, ipv6);
}

}  // namespace uring_http::io
