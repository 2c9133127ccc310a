#include "src/router/router.h"

#include "absl/strings/str_cat.h"

namespace uring_http::router {
namespace {

// Debian's abseil is built with its own string_view type, not std's.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

absl::Status Router::Add(HandlerKind kind, std::string_view method, std::string_view path,
                         Handler handler) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("route path must start with '/': ", AbslView(path)));
  }
  if (method.empty()) return absl::InvalidArgumentError("route method is empty");
  if (!handler) return absl::InvalidArgumentError("route handler is empty");
  PathRoutes& entry = paths_[std::string(path)];
  for (const Route& r : entry.routes) {
    if (r.method == method) {
      return absl::AlreadyExistsError(absl::StrCat("duplicate route ", AbslView(method), " ", AbslView(path)));
    }
  }
  entry.routes.push_back(
      Route{std::string(method), std::string(path), kind, std::move(handler), count_++});
  // Allow lists what Find() accepts, including the implicit HEAD.
  entry.allow.clear();
  bool has_get = false, has_head = false;
  for (const Route& r : entry.routes) {
    has_get |= r.method == "GET";
    has_head |= r.method == "HEAD";
  }
  for (const Route& r : entry.routes) {
    absl::StrAppend(&entry.allow, entry.allow.empty() ? "" : ", ", r.method);
  }
  if (has_get && !has_head) absl::StrAppend(&entry.allow, ", HEAD");
  return absl::OkStatus();
}

std::vector<const Route*> Router::Routes() const {
  std::vector<const Route*> all(count_);
  for (const auto& [path, entry] : paths_) {
    for (const Route& r : entry.routes) all[r.id] = &r;
  }
  return all;
}

Match Router::Find(std::string_view method, std::string_view path) const {
  Match match;
  auto it = paths_.find(AbslView(path));
  if (it == paths_.end()) return match;
  match.path_known = true;
  match.allow = it->second.allow;
  const Route* get = nullptr;
  for (const Route& r : it->second.routes) {
    if (r.method == method) {
      match.route = &r;
      return match;
    }
    if (r.method == "GET") get = &r;
  }
  if (method == "HEAD") match.route = get;
  return match;
}

}  // namespace uring_http::router
