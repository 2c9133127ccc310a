#include "src/files/dir_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uring_http::files {
namespace {

void AppendHtmlEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
}

// Every byte but the unreserved ones as %XX; '/' kept when `keep_slash`.
void AppendPercentEncoded(std::string& out, std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' ||
                      (keep_slash && c == '/');
    if (keep) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

bool Hidden(const ListingEntry& e) { return e.name.empty() || e.name.front() == '.'; }

}  // namespace

int ReadDirectory(int root_fd, std::string_view relative, std::vector<ListingEntry>* entries) {
  entries->clear();
  const std::string path = relative.empty() ? std::string(".") : std::string(relative);
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long fd = syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how));
  if (fd < 0) return errno;
  DIR* dir = fdopendir(static_cast<int>(fd));
  if (dir == nullptr) {
    const int err = errno;
    close(static_cast<int>(fd));
    return err;
  }
  while (entries->size() < kMaxListingEntries) {
    errno = 0;
    const dirent* d = readdir(dir);
    if (d == nullptr) break;
    ListingEntry e;
    e.name = d->d_name;
    if (Hidden(e)) continue;  // ".", ".." and dotfiles
    if (d->d_type == DT_DIR) {
      e.directory = true;
    } else if (d->d_type == DT_UNKNOWN || d->d_type == DT_LNK) {
      // A link to a directory lists as one (following it is the open's
      // business, which stays beneath the root).
      struct stat st;
      e.directory = fstatat(dirfd(dir), d->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
    }
    entries->push_back(std::move(e));
  }
  closedir(dir);
  std::sort(entries->begin(), entries->end(),
            [](const ListingEntry& a, const ListingEntry& b) { return a.name < b.name; });
  return 0;
}

std::string RenderListing(std::string_view prefix, std::string_view relative,
                          std::vector<ListingEntry> entries) {
  entries.erase(std::remove_if(entries.begin(), entries.end(), Hidden), entries.end());
  std::sort(entries.begin(), entries.end(),
            [](const ListingEntry& a, const ListingEntry& b) { return a.name < b.name; });
  std::string base(prefix);
  if (!relative.empty()) {
    AppendPercentEncoded(base, relative, /*keep_slash=*/true);
    base.push_back('/');
  }
  std::string title(prefix);
  if (!relative.empty()) {
    title.append(relative);
    title.push_back('/');
  }
  std::string out = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Index of ";
  AppendHtmlEscaped(out, title);
  out += "</title></head>\n<body><h1>Index of ";
  AppendHtmlEscaped(out, title);
  out += "</h1>\n<ul>\n";
  for (const ListingEntry& e : entries) {
    std::string href = base;
    AppendPercentEncoded(href, e.name, /*keep_slash=*/false);
    if (e.directory) href.push_back('/');
    out += "<li><a href=\"";
    AppendHtmlEscaped(out, href);  // nothing to escape after encoding, but cheap
    out += "\">";
    AppendHtmlEscaped(out, e.name);
    if (e.directory) out.push_back('/');
    out += "</a></li>\n";
  }
  out += "</ul>\n</body></html>\n";
  return out;
}

}  // namespace uring_http::files
