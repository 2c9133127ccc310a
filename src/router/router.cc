#include "src/router/router.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/router/route_tree.h"
#include "absl/strings/str_join.h"
#include "src/http/response_helpers.h"

namespace uring_http::router {
namespace {

// Debian's abseil is built with its own string_view type, not std's.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

Router::Router() : tree_(std::make_unique<RouteTree>()) {}
Router::~Router() = default;
Router::Router(Router&&) noexcept = default;
Router& Router::operator=(Router&&) noexcept = default;

Registration Router::Record(std::string_view what, absl::Status status) {
  if (!status.ok()) {
    errors_.push_back(absl::StrCat(AbslView(what), ": ", status.message()));
  }
  return status;
}

absl::Status Router::registration_error() const {
  if (errors_.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the router has ", errors_.size(), " failed registration",
                   errors_.size() == 1 ? "" : "s", ", so the server does not start: ",
                   absl::StrJoin(errors_, "; ")));
}

Registration Router::Add(HandlerKind kind, std::string_view method, std::string_view path,
                         Handler handler, RouteOptions options) {
  return Record(absl::StrCat(AbslView(method), " ", AbslView(path)),
                AddRoute(kind, method, path, std::move(handler), std::move(options)));
}

Registration Router::FastStream(std::string_view method, std::string_view path,
                                BodySinkFactory sink, RouteOptions options) {
  return Record(absl::StrCat(AbslView(method), " ", AbslView(path)),
                AddStream(method, path, std::move(sink), std::move(options)));
}

Registration Router::SetFallback(HandlerKind kind, Handler handler, RouteOptions options) {
  return Record("fallback route", AddFallback(kind, std::move(handler), std::move(options)));
}

Registration Router::SetAsyncFallback(AsyncHandler handler, RouteOptions options) {
  return Record("fallback route", AddAsyncFallback(std::move(handler), std::move(options)));
}

Registration Router::Static(std::string_view prefix, std::string_view root,
                            StaticOptions options) {
  return Record(absl::StrCat("static ", AbslView(prefix)),
                AddStatic(prefix, root, std::move(options)));
}

Registration Router::SetErrorHandler(int status, ErrorHandler handler) {
  return Record(absl::StrCat("error handler ", status),
                pipeline_.SetErrorHandler(status, std::move(handler)));
}

Registration Router::SetDefaultErrorHandler(ErrorHandler handler) {
  return Record("default error handler", pipeline_.SetDefaultErrorHandler(std::move(handler)));
}

Registration Router::Async(std::string_view method, std::string_view path,
                           AsyncHandler handler, RouteOptions options) {
  return Record(absl::StrCat(AbslView(method), " ", AbslView(path)),
                AddAsync(method, path, std::move(handler), std::move(options)));
}

absl::Status Router::AddAsync(std::string_view method, std::string_view path,
                              AsyncHandler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("route handler is empty");
  if (options.timeout.count() < 0) {
    return absl::InvalidArgumentError("a route's timeout cannot be negative");
  }
  Route route;
  route.method = std::string(method);
  route.path = std::string(path);
  route.kind = HandlerKind::kAsync;
  route.async = std::move(handler);
  route.options = std::move(options);
  has_async_ = true;
  return Insert(std::move(route));
}

Registration Router::WebSocket(std::string_view path, ws::Behavior behavior,
                               RouteOptions options) {
  return Record(absl::StrCat("WebSocket ", AbslView(path)),
                AddWebSocket(path, std::move(behavior), std::move(options)));
}

absl::Status Router::AddWebSocket(std::string_view path, ws::Behavior behavior,
                                  RouteOptions options) {
  if (!behavior.message && !behavior.open) {
    return absl::InvalidArgumentError("a WebSocket route needs an open or a message callback");
  }
  if (options.timeout.count() != 0 || options.body != BodyMode::kBuffered) {
    return absl::InvalidArgumentError(
        "a WebSocket route takes no timeout and no request body (its limits are ws::Behavior's)");
  }
  Route route;
  route.method = "GET";
  route.path = std::string(path);
  route.kind = HandlerKind::kFast;
  route.handler = [](const http::Request&, http::Response& response) {
    // Not a handshake (HTTP/1 upgrades those before the handler), or over
    // HTTP/2, where the Upgrade field is not sent (RFC 9113 8.2.2).
    response.set_status(426);
    (void)response.AddHeader("Upgrade", "websocket");
    (void)response.AddHeader("Connection", "Upgrade");
    (void)response.AddHeader("Sec-WebSocket-Version", "13");
    response.set_content_type("text/plain");
    response.set_static_body("426 Upgrade Required: this is a WebSocket endpoint (RFC 6455)\n");
  };
  route.websocket = std::make_shared<const ws::Behavior>(std::move(behavior));
  route.options = std::move(options);
  return Insert(std::move(route));
}

absl::Status Router::AddRoute(HandlerKind kind, std::string_view method, std::string_view path,
                              Handler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("route handler is empty");
  if (kind == HandlerKind::kAsync) {
    return absl::InvalidArgumentError("an ASYNC handler is a coroutine: register it with Async()");
  }
  if (options.timeout.count() < 0) {
    return absl::InvalidArgumentError("a route's timeout cannot be negative");
  }
  if (kind == HandlerKind::kFast && options.timeout.count() != 0) {
    return absl::InvalidArgumentError(
        "RouteOptions::timeout does not apply to a FAST route: its handler never waits (use "
        "SLOW or ASYNC for one that may)");
  }
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

Registration Router::FastStream(std::string_view method, std::string_view path,
                                BodySinkFactory sink, uint64_t max_body_bytes) {
  RouteOptions options;
  options.max_body_bytes = max_body_bytes;
  return FastStream(method, path, std::move(sink), std::move(options));
}

absl::Status Router::AddStream(std::string_view method, std::string_view path,
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

absl::Status Router::AddFallback(HandlerKind kind, Handler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("fallback handler is empty");
  if (kind == HandlerKind::kAsync) {
    return absl::InvalidArgumentError("an ASYNC fallback is a coroutine: set it with SetAsyncFallback()");
  }
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

absl::Status Router::AddAsyncFallback(AsyncHandler handler, RouteOptions options) {
  if (!handler) return absl::InvalidArgumentError("fallback handler is empty");
  if (options.timeout.count() < 0) {
    return absl::InvalidArgumentError("a route's timeout cannot be negative");
  }
  if (fallback_ != nullptr) return absl::AlreadyExistsError("a fallback route is already set");
  fallback_ = std::make_unique<Route>();
  fallback_->method = "*";
  fallback_->path = "*";
  fallback_->kind = HandlerKind::kAsync;
  fallback_->async = std::move(handler);
  fallback_->options = std::move(options);
  fallback_->id = count_++;
  has_async_ = true;
  return absl::OkStatus();
}

Router::Mount::~Mount() {
  if (files.dir_fd >= 0) close(files.dir_fd);
}

absl::Status Router::AddStatic(std::string_view prefix, std::string_view root,
                               StaticOptions options) {
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("static prefix must start and end with '/': ", AbslView(prefix)));
  }
  for (const auto& m : mounts_) {
    if (m->files.prefix == prefix) {
      return absl::AlreadyExistsError(absl::StrCat("duplicate static prefix ", AbslView(prefix)));
    }
  }
  for (char c : options.cache_control) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("static ", AbslView(prefix), ": cache_control holds a control byte"));
    }
  }
  auto mount = std::make_unique<Mount>();
  mount->files.prefix = std::string(prefix);
  mount->files.root = std::string(root);
  mount->files.options = std::move(options);
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
  // (options has moved into the mount by now.)
  route.options.middleware = mount->files.options.middleware;
  route.id = count_++;
  mounts_.push_back(std::move(mount));
  std::stable_sort(mounts_.begin(), mounts_.end(), [](const auto& a, const auto& b) {
    return a->files.prefix.size() > b->files.prefix.size();
  });
  return absl::OkStatus();
}

absl::Status Router::Insert(Route route) {
  if (route.method.empty()) return absl::InvalidArgumentError("route method is empty");
  absl::StatusOr<PathPattern> pattern = PathPattern::Parse(route.path);
  if (!pattern.ok()) return pattern.status();
  route.pattern = *std::move(pattern);
  auto owned = std::make_unique<Route>(std::move(route));
  if (absl::Status added = tree_->Insert(owned->pattern, owned->method, owned.get()); !added.ok()) {
    return added;
  }
  owned->id = count_++;
  routes_.push_back(std::move(owned));
  return absl::OkStatus();
}

void Router::RedirectTrailingSlash(bool on) {
  if (!on) {
    if (slash_redirect_ != nullptr) slash_redirect_->handler = nullptr;
    return;
  }
  if (slash_redirect_ == nullptr) {
    slash_redirect_ = std::make_unique<Route>();
    slash_redirect_->method = "*";
    slash_redirect_->path = "(trailing slash)";
    slash_redirect_->kind = HandlerKind::kFast;
    slash_redirect_->id = count_++;
  }
  slash_redirect_->handler = [](const http::Request& request, http::Response& response) {
    const bool safe = request.method == "GET" || request.method == "HEAD";
    // A path that fits a request head always fits a Location.
    (void)http::Redirect(response, http::ToggleTrailingSlash(request.path, request.query),
                         safe ? 301 : 308);
  };
}

std::vector<const Route*> Router::Routes() const {
  std::vector<const Route*> all(count_);
  for (const auto& r : routes_) all[r->id] = r.get();
  for (const auto& m : mounts_) all[m->route.id] = &m->route;
  if (fallback_ != nullptr) all[fallback_->id] = fallback_.get();
  if (slash_redirect_ != nullptr) all[slash_redirect_->id] = slash_redirect_.get();
  return all;
}

Match Router::Find(std::string_view method, std::string_view path,
                   http::PathParams* params) const {
  if (params == nullptr) {
    http::PathParams scratch;
    return Find(method, path, &scratch);
  }
  Match match;
  if (path == "*") {
    // "OPTIONS *" asks about the server itself (RFC 9110 9.3.7).
    if (method == "OPTIONS") {
      match.path_known = true;
      match.options = true;
      match.allow = tree_->all_methods();
    }
    return match;
  }
  const RouteTree::Result found = tree_->Find(method, path, params);
  if (!found.path_known && slash_redirect_ != nullptr && slash_redirect_->handler &&
      path.size() > 1 && path.size() < 1024) {
    // The twin path, on the stack: a 404 costs no allocation.
    char twin[1024];
    size_t n = path.size();
    std::memcpy(twin, path.data(), n);
    if (twin[n - 1] == '/') {
      --n;
    } else {
      twin[n++] = '/';
    }
    http::PathParams scratch;
    if (tree_->Find(method, std::string_view(twin, n), &scratch).route != nullptr) {
      match.path_known = true;
      match.route = slash_redirect_.get();
      return match;
    }
  }
  if (!found.path_known) {
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
  match.allow = found.allow;
  match.allow_scratch = found.allow_scratch;
  match.route = found.route;
  if (match.route == nullptr) {
    if (method == "OPTIONS" && !found.has_options) {
      match.options = true;
    } else {
      match.route = fallback_.get();
    }
  }
  return match;
}

}  // namespace uring_http::router
