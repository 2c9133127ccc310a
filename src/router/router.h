// Router: maps (method, path) to a handler and says whether it runs inline on
// the ring thread (FAST: must not block) or on a worker (SLOW: may block),
// and how the route takes its request body: buffered whole before the
// handler runs (the default, up to --max-body-bytes or the route's own
// limit), or streamed as it arrives (a SLOW handler reads it with
// Request::ReadBody on its worker; a FAST route gets it through a BodySink
// on the ring thread). A route may also answer paths no other route claims
// (SetFallback), and a directory of files may be served at a URL prefix
// (Static: the ring thread serves them, see src/http1/file_answer.cc).
//
// Paths are patterns (path_pattern.h): "/users/{id}" takes one non-empty
// segment as the parameter id, "/files/{path...}" the rest of the path
// (possibly empty, '/' included; "/files" itself does not match it), and a
// pattern without braces is an exact path. Handlers read the values with
// Request::PathParam("id"), percent-decoded (Request::RawPathParam: as
// sent). Paths are matched clean (clean_path.h: the server answers 400 to a
// malformed escape and redirects "//", "." and ".." to the clean path first)
// and segment by segment decoded ("/%61pi" is "/api"; a "%2F" stays inside
// its segment, and a parameter gets it as '/'). Precedence, per segment from the
// left: a static segment beats a parameter, which beats a catch-all; if the
// more specific branch has no route for the method further down, the next
// is tried (route_tree.h). Add refuses, with a message: a duplicate
// (method, pattern); a parameter named differently from one already at the
// same place, by any method ("/u/{id}" then "/u/{name}"); a catch-all not
// last; "{}" or a name that is not [A-Za-z0-9_]+; a name twice in one
// pattern; more than 8 parameters; an empty segment but the last, a "." or
// ".." segment, or a broken escape (no clean path could match them).
//
// Answers from the table itself: a path that some pattern matches, but
// not for the method, is a 405 whose Allow lists that pattern's methods
// (with HEAD when GET is there, and OPTIONS); OPTIONS on such a path, with
// no OPTIONS route of its own, is a 204 with that Allow; "OPTIONS *" a 204
// listing every method of the server. A path no pattern matches is a 404.
// Patterns come before Static mounts, which come before the fallback; a
// fallback also takes the known paths' other methods (not their OPTIONS).
//
// Routes are registered before the server starts and never change after, so
// lookups from every ring thread and worker need no lock. HEAD is served by
// the GET handler when no HEAD route exists (the body is not sent).
//
// Thread-safety: Add*() before Server::Start(); Find() from any thread after.
#ifndef URING_HTTP_SRC_ROUTER_ROUTER_H_
#define URING_HTTP_SRC_ROUTER_ROUTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "src/http/request.h"
#include "src/http/path_params.h"
#include "src/http/response.h"
#include "src/limits/rate_limit.h"
#include "src/router/clean_path.h"
#include "src/router/failure_log.h"
#include "src/router/middleware.h"
#include "src/router/path_pattern.h"
#include "src/router/registration.h"
#include "src/ws/websocket.h"

// Named only: ASYNC handlers' types stand above the router (src/async/),
// which the router does not include. (Task's default argument, void, is
// task.h's; here it is spelled out.)
namespace uring_http::async {
class Exchange;
template <typename T>
class Task;
}  // namespace uring_http::async

namespace uring_http::router {

using Handler = std::function<void(const http::Request&, http::Response&)>;
// An ASYNC handler: a coroutine on the ring thread (src/async/exchange.h).
using AsyncHandler = std::function<async::Task<void>(async::Exchange&)>;

// A FAST route's streamed request body, on the ring thread: OnData for each
// piece as it arrives, then OnEnd to answer, or OnAbort if the body never
// completes (the client left, or sent a malformed or oversized body). The
// request given to the factory and to OnEnd is valid during that call only.
class BodySink {
 public:
  virtual ~BodySink() = default;
  virtual void OnData(std::string_view piece) = 0;
  virtual void OnEnd(const http::Request& request, http::Response& response) = 0;
  virtual void OnAbort() {}
  // True once the sink has seen enough to answer before the body's end (a
  // multipart form refused part-way, see multipart_sink.h): checked after
  // each OnData, it makes the server call OnEnd at once, read no more of
  // the body, and close the connection after the answer.
  virtual bool answer_now() const { return false; }
};
using BodySinkFactory = std::function<std::unique_ptr<BodySink>(const http::Request&)>;

// FAST: inline on the ring thread, must not block. SLOW: on a worker
// thread, may block. ASYNC: a coroutine on the ring thread that awaits
// (timers, worker calls, ...) without holding any thread (Router::Async).
enum class HandlerKind { kFast, kSlow, kAsync };

enum class BodyMode : uint8_t {
  kBuffered,  // the whole body is in Request::body when the handler runs
  kStreamed,  // read as it arrives (Request::ReadBody, or a BodySink)
};

// No limit on a route's body (streamed routes: the memory stays bounded).
inline constexpr uint64_t kUnlimitedBody = UINT64_MAX;

struct RouteOptions {
  BodyMode body = BodyMode::kBuffered;
  // Largest body accepted (413 beyond it); 0: the server's --max-body-bytes.
  uint64_t max_body_bytes = 0;
  // Run around this route's handler, after the global ones (middleware.h).
  std::vector<Middleware> middleware;
  // Load shedding (src/limits/request_limits.h): this route's requests in
  // flight at once (from the match to the end of the response); one more
  // is answered 503 with Retry-After: 1. 0: no limit of its own (the
  // server's --max-in-flight still applies).
  uint32_t max_in_flight = 0;
  // A token bucket per client for this route, besides the server's
  // --rate-limit: an empty one is answered 429 with Retry-After. Off
  // unless per_second > 0.
  limits::RateLimit rate_per_client;
  // ASYNC and SLOW routes: the most a request may take, from its head to
  // its answer. When it passes, the exchange is stopped
  // (http::StopReason::kDeadline): an ASYNC handler's await in flight is
  // cancelled; a SLOW handler, which cannot be interrupted, is told
  // (Request::stop_reason(), and Request::WaitForStop wakes). Either way
  // the answer is a 503 whatever the handler made of it, or the stream is
  // cut if its head has gone. Checked at the ring's tick (100 ms). 0:
  // none. A FAST route refuses one (its handler never waits).
  std::chrono::milliseconds timeout{0};
};

// How a Static() mount serves its files.
struct StaticOptions {
  // Paths with a segment starting with '.' (".env", ".git/config") are 404
  // as if absent, except /.well-known/ under "/" (files/url_path.h,
  // IsHiddenPath); true serves them like any file (--static-dotfiles=allow).
  bool serve_dotfiles = false;
  // Run around this mount's files, after the global ones (middleware.h:
  // what an after may change on a file's answer).
  std::vector<Middleware> middleware;
  // Precompressed siblings, as nginx's gzip_static: "app.js.gz" (or ".br",
  // ".zst") beside "app.js", not older than it, is sent instead with its
  // Content-Encoding to a client that accepts that coding (ties: br, zstd,
  // gzip). Ranges and validators apply to the sibling's bytes; its ETag is
  // its own, marked with the coding. Which siblings a file has is kept in
  // the open-file cache for the valid interval: a file without any costs
  // no extra statx per request once cached.
  bool precompressed = false;
  // On-the-fly gzip of compressible files (src/http/compress.h's types)
  // when ServerConfig::compression is enabled and there is no sibling: done
  // once per file version and kept in the open-file cache beside the
  // file's bytes, so only files the cache keeps in memory qualify
  // (--file-cache-max-file, 64 KiB by default; larger ones are read or
  // spliced as they are). Not for a request with a Range (the identity
  // bytes answer it). The gzip's ETag is weak.
  bool gzip = true;
  // The Cache-Control value for this mount's files ("" sends none), e.g.
  // "public, max-age=31536000, immutable" for fingerprinted assets.
  std::string cache_control;
  // A directory without index.html answers with a listing of its names
  // (HTML, sorted, dotfiles left out: files/dir_listing.h) instead of 404.
  bool list_directories = false;
};

// A directory whose files answer GET and HEAD under a URL prefix.
struct FileMount {
  std::string prefix;  // "/assets/" or "/": always ends in '/'
  std::string root;    // the directory as registered
  StaticOptions options;
  int dir_fd = -1;     // O_PATH descriptor of root: files open beneath it
  uint32_t index = 0;  // 0..mounts-1 in registration order
};

struct Route {
  std::string method;
  std::string path;  // the pattern as registered
  PathPattern pattern;  // empty for a mount's or the fallback's route
  HandlerKind kind;
  Handler handler;
  AsyncHandler async;    // ASYNC routes (handler is empty)
  BodySinkFactory sink;  // FAST routes with a streamed body
  RouteOptions options;
  uint32_t id = 0;  // 0..size()-1 in registration order (metrics index)
  // Set for a Static() mount: no handler, the server serves its files.
  const FileMount* mount = nullptr;
  // A WebSocket route (Router::WebSocket): HTTP/1 upgrades a handshake for
  // it; `handler` answers any other request (over HTTP/2) with 426.
  std::shared_ptr<const ws::Behavior> websocket;

  // For the failure log (failure_log.h).
  RouteName name() const { return {method, path}; }
};

struct Match {
  const Route* route = nullptr;  // null: see path_known (a mount's route: route->mount)
  bool path_known = false;       // path exists with other methods: 405
  std::string_view allow;        // "GET, HEAD, OPTIONS" for the Allow header
  // `allow` is a view of the calling thread's scratch, valid until its next
  // Find (else of the router, valid as long as it is).
  bool allow_scratch = false;
  // OPTIONS of a known path (or "*") that no route takes: the server
  // answers 204 with `allow`.
  bool options = false;
};

class RouteTree;  // route_tree.h (internal: abseil's hash maps)

// Every registration returns a Registration (registration.h): its outcome,
// which may be ignored without a cast, because a failed one is also
// recorded here, naming the route, and a Server refuses to start with a
// router that has any (registration_error()).
class Router {
 public:
  Router();
  ~Router();
  Router(Router&&) noexcept;
  Router& operator=(Router&&) noexcept;

  // Fails on a pattern that is malformed or conflicts (see the top), or a
  // FAST handler asked to stream its body (a FAST route streams through a
  // BodySink: FastStream).
  Registration Add(HandlerKind kind, std::string_view method, std::string_view path,
                   Handler handler, RouteOptions options = {});
  Registration Fast(std::string_view method, std::string_view path, Handler handler,
                    RouteOptions options = {}) {
    return Add(HandlerKind::kFast, method, path, std::move(handler), options);
  }
  Registration Slow(std::string_view method, std::string_view path, Handler handler,
                    RouteOptions options = {}) {
    return Add(HandlerKind::kSlow, method, path, std::move(handler), options);
  }
  // An ASYNC route (async/exchange.h): the handler's coroutine runs on the
  // ring thread and awaits without holding a thread. Its body is buffered,
  // or with options.body = kStreamed read as it arrives (co_await
  // Exchange::ReadBody).
  Registration Async(std::string_view method, std::string_view path, AsyncHandler handler,
                     RouteOptions options = {});
  // A FAST route whose body streams into a sink the factory makes per request.
  Registration FastStream(std::string_view method, std::string_view path, BodySinkFactory sink,
                          uint64_t max_body_bytes = kUnlimitedBody);
  // The same with the route's middleware (options.body is ignored).
  Registration FastStream(std::string_view method, std::string_view path, BodySinkFactory sink,
                          RouteOptions options);
  // A WebSocket endpoint (RFC 6455; src/ws/websocket.h): a GET with a
  // valid handshake becomes a WebSocket on its ring; any other request to
  // the path is answered 426 (Upgrade Required). Over HTTP/2 (no RFC 8441
  // extended CONNECT) it is answered 426 too.
  Registration WebSocket(std::string_view path, ws::Behavior behavior,
                         RouteOptions options = {});
  // Answers every request no route matches (instead of 404/405), any method.
  Registration SetFallback(HandlerKind kind, Handler handler, RouteOptions options = {});
  // The same with an ASYNC handler (a reverse proxy's: examples/proxy).
  Registration SetAsyncFallback(AsyncHandler handler, RouteOptions options = {});
  // Serves the files under directory `root` for GET and HEAD of paths that
  // start with `prefix` (which must start and end with '/': "/assets/", or
  // "/" for every path) and that no exact route claims; "/assets" (no
  // slash) names the mount's root directory. Other methods get 405. The
  // longest matching prefix wins; mounts come before the fallback. Hidden
  // paths (a segment starting with '.') are 404 unless `options` says
  // otherwise (StaticOptions). Fails if `root` is not a directory that can
  // be opened, or the prefix is taken. The prefix is compared with the
  // path as sent (not decoded).
  Registration Static(std::string_view prefix, std::string_view root,
                      StaticOptions options = {});

  // Trailing-slash redirects (off by default, as in Go's ServeMux for
  // patterns; Gin's RedirectTrailingSlash): a path no pattern knows whose
  // twin with the final '/' added or removed has a route for the method is
  // answered with a redirect there (301 for GET and HEAD, 308 otherwise, so
  // the method and body are kept), the query kept and leading slashes
  // collapsed (never a "//host" Location). Patterns only: mounts redirect
  // their directories themselves, and the redirect comes before mounts and
  // the fallback. Global middleware runs around it as around any route.
  void RedirectTrailingSlash(bool on = true);

  // `params` (if given) receives the matched route's path parameters.
  Match Find(std::string_view method, std::string_view path,
             http::PathParams* params = nullptr) const;

  // Middleware around every route, static mount and the router's and the
  // server's own answers, in Use() order before the route's own; error
  // pages for any status from 400 to 599, and one for all of them. See
  // middleware.h.
  void Use(Middleware middleware) { pipeline_.Use(std::move(middleware)); }
  Registration SetErrorHandler(int status, ErrorHandler handler);
  Registration SetDefaultErrorHandler(ErrorHandler handler);

  // OK, or FailedPrecondition listing every failed registration so far,
  // each named ("GET /users/{id}: ..."); Server::Run() returns it.
  absl::Status registration_error() const;
  const Pipeline& pipeline() const { return pipeline_; }

  size_t size() const { return count_; }
  // Every route, indexed by Route::id.
  std::vector<const Route*> Routes() const;
  size_t mount_count() const { return mounts_.size(); }
  // Whether any route is ASYNC (a loop makes its coroutine runner then).
  bool has_async() const { return has_async_; }

 private:
  absl::Status AddRoute(HandlerKind kind, std::string_view method, std::string_view path,
                        Handler handler, RouteOptions options);
  absl::Status AddStream(std::string_view method, std::string_view path, BodySinkFactory sink,
                         RouteOptions options);
  absl::Status AddAsync(std::string_view method, std::string_view path, AsyncHandler handler,
                        RouteOptions options);
  absl::Status AddWebSocket(std::string_view path, ws::Behavior behavior, RouteOptions options);
  absl::Status AddFallback(HandlerKind kind, Handler handler, RouteOptions options);
  absl::Status AddAsyncFallback(AsyncHandler handler, RouteOptions options);
  absl::Status AddStatic(std::string_view prefix, std::string_view root, StaticOptions options);
  absl::Status Insert(Route route);
  // Keeps a failure, named by `what`, for registration_error().
  Registration Record(std::string_view what, absl::Status status);

  std::vector<std::string> errors_;

  std::vector<std::unique_ptr<Route>> routes_;  // the tree points into them
  std::unique_ptr<RouteTree> tree_;  // never null (but after a move)
  // Longest prefix first. Each owns its mount (the route points into it)
  // and closes the directory descriptor with it.
  struct Mount {
    Mount() = default;
    Mount(const Mount&) = delete;
    Mount& operator=(const Mount&) = delete;
    ~Mount();
    FileMount files;
    Route route;
  };
  std::vector<std::unique_ptr<Mount>> mounts_;
  std::unique_ptr<Route> fallback_;
  std::unique_ptr<Route> slash_redirect_;  // RedirectTrailingSlash()
  uint32_t count_ = 0;
  bool has_async_ = false;
  Pipeline pipeline_;
};

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_ROUTER_H_
