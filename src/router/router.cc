#include "src/router/router.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uring_http::router {
namespace {

// Debian's abseil is built with its own string_view type, not std's.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

absl::Status Router::Add(HandlerKind kind, std::string_view method, std::string_view path,
                         Handler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("route handler is empty");
  if (kind == HandlerKind::kFast && options.body == BodyMode::kStreamed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FAST route ", AbslView(method), " ", AbslView(path),
        " cannot block reading a streamed body: use FastStream (a BodySink) or a SLOW route"));
  }
  Route route;
  route.method = std::string(method);
  route.path = std::string(path);
  route.kind = kind;
  route.handler = std::move(handler);
  route.options = options;
  return Insert(std::move(route));
}

absl::Status Router::FastStream(std::string_view method, std::string_view path,
                                BodySinkFactory sink, uint64_t max_body_bytes) {
  RouteOptions options;
  options.max_body_bytes = max_body_bytes;
  return FastStream(method, path, std::move(sink), std::move(options));
}

absl::Status Router::FastStream(std::string_view method, std::string_view path,
                                BodySinkFactory sink, RouteOptions options) {
  if (!sink) return absl::InvalidArgumentError("route body sink factory is empty");
  Route route;
  route.method = std::string(method);
  route.path = std::string(path);
  route.kind = HandlerKind::kFast;
  route.sink = std::move(sink);
  route.options = std::move(options);
  route.options.body = BodyMode::kStreamed;
  return Insert(std::move(route));
}

absl::Status Router::SetFallback(HandlerKind kind, Handler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("fallback handler is empty");
  if (fallback_ != nullptr) return absl::AlreadyExistsError("a fallback route is already set");
  if (kind == HandlerKind::kFast && options.body == BodyMode::kStreamed) {
    return absl::InvalidArgumentError("a FAST fallback cannot stream its body");
  }
  fallback_ = std::make_unique<Route>();
  fallback_->method = "*";
  fallback_->path = "*";
  fallback_->kind = kind;
  fallback_->handler = std::move(handler);
  fallback_->options = options;
  fallback_->id = count_++;
  return absl::OkStatus();
}

Router::Mount::~Mount() {
  if (files.dir_fd >= 0) close(files.dir_fd);
}

absl::Status Router::Static(std::string_view prefix, std::string_view root) {
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("static prefix must start and end with '/': ", AbslView(prefix)));
  }
  for (const auto& m : mounts_) {
    if (m->files.prefix == prefix) {
      return absl::AlreadyExistsError(absl::StrCat("duplicate static prefix ", AbslView(prefix)));
    }
  }
  auto mount = std::make_unique<Mount>();
  mount->files.prefix = std::string(prefix);
  mount->files.root = std::string(root);
  // O_PATH: the descriptor only anchors lookups (openat2 RESOLVE_BENEATH,
  // statx); it needs no read permission on the directory itself.
  mount->files.dir_fd = open(mount->files.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (mount->files.dir_fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("static root ", AbslView(root),
                                                   ": not a directory that can be opened: ",
                                                   strerror(errno)));
  }
  mount->files.index = static_cast<uint32_t>(mounts_.size());
  Route& route = mount->route;
  route.method = "GET";
  route.path = absl::StrCat(AbslView(prefix), "*");
  route.kind = HandlerKind::kFast;
  route.mount = &mount->files;
  route.id = count_++;
  mounts_.push_back(std::move(mount));
  std::stable_sort(mounts_.begin(), mounts_.end(), [](const auto& a, const auto& b) {
    return a->files.prefix.size() > b->files.prefix.size();
  });
  return absl::OkStatus();
}

absl::Status Router::Insert(Route route) {
  const std::string& path = route.path;
  const std::string& method = route.method;
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("route path must start with '/': ", path));
  }
  if (method.empty()) return absl::InvalidArgumentError("route method is empty");
  PathRoutes& entry = paths_[path];
  for (const Route& r : entry.routes) {
    if (r.method == method) {
      return absl::AlreadyExistsError(absl::StrCat("duplicate route ", method, " ", path));
    }
  }
  route.id = count_++;
  entry.routes.push_back(std::move(route));
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
  for (const auto& m : mounts_) all[m->route.id] = &m->route;
  if (fallback_ != nullptr) all[fallback_->id] = fallback_.get();
  return all;
}

Match Router::Find(std::string_view method, std::string_view path) const {
  Match match;
  auto it = paths_.find(AbslView(path));
  if (it == paths_.end()) {
    for (const auto& m : mounts_) {
      const std::string_view prefix = m->files.prefix;
      // "/assets" names the mount's root as "/assets/" does.
      if (path.substr(0, prefix.size()) != prefix && path != prefix.substr(0, prefix.size() - 1)) {
        continue;
      }
      match.path_known = true;
      match.allow = "GET, HEAD";
      if (method == "GET" || method == "HEAD") match.route = &m->route;
      return match;
    }
    match.route = fallback_.get();
    return match;
  }
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
  if (match.route == nullptr && fallback_ != nullptr) match.route = fallback_.get();
  return match;
}

}  // namespace uring_http::router
