// Directory listings for a static mount that asks for them
// (StaticOptions::list_directories; off by default): the names in a
// directory that has no index.html, as an HTML page of links.
//
// What is listed: every entry but the dotfiles (a name starting with '.':
// they are hidden from listings even where a mount serves them), sorted by
// name, byte for byte; a directory's name ends in '/'. The names are
// HTML-escaped and the links percent-encoded (every byte but A-Z a-z 0-9
// "-._~"), absolute from the mount's prefix, so that no name can break out
// of its element or act as a scheme ("javascript:x").
//
// ReadDirectory does blocking I/O (openat2 beneath the root, then
// getdents64): io_uring has no operation that reads a directory. nginx's
// autoindex reads them the same way on its event loop; a listing is meant
// for small directories, and at most kMaxListingEntries are listed.
//
// Thread-safety: stateless; any thread may call it.
#ifndef URING_HTTP_SRC_FILES_DIR_LISTING_H_
#define URING_HTTP_SRC_FILES_DIR_LISTING_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace uring_http::files {

inline constexpr size_t kMaxListingEntries = 10000;

struct ListingEntry {
  std::string name;
  bool directory = false;
};

// The entries of directory `relative` ("" for the root) beneath `root_fd`
// (opened with RESOLVE_BENEATH, as files are), dotfiles left out, sorted,
// at most kMaxListingEntries. Returns 0 or an errno.
int ReadDirectory(int root_fd, std::string_view relative, std::vector<ListingEntry>* entries);

// The listing page of directory `relative` under mount `prefix` ("/" or
// "/assets/"). `entries` as ReadDirectory gives them; dotfiles are dropped
// here too and the order is made sure.
std::string RenderListing(std::string_view prefix, std::string_view relative,
                          std::vector<ListingEntry> entries);

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_DIR_LISTING_H_
