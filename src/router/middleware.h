// Middleware: hooks that run around a route's handler (and around static
// files and the server's own answers), and the error pages that answer any
// 4xx or 5xx when the application wants its own.
//
// A Middleware has an optional `before` (may answer early: it fills the
// response and returns Flow::kAnswered, and then neither the handler nor the
// later befores run) and an optional `after` (sees the final response and may
// add headers or change the status before it is serialized). The order is an
// onion: the global middlewares (Router::Use) in Use() order, then the
// route's own (RouteOptions::middleware) in their order; afters run in the
// reverse order, and exactly for those middlewares whose before returned
// (the one that answered early included). A middleware without a before
// counts as one whose before returned kNext.
//
// What they run around:
//   - a route's handler (FAST on the ring thread: they must not block, and
//     should not allocate; SLOW on the worker: a blocking check is fine).
//     For a route whose body streams (FastStream, SLOW with
//     BodyMode::kStreamed) the befores run before any body is read; an early
//     answer leaves the body unread (FAST: discarded as for a 404; SLOW: the
//     connection closes after the answer). For a streamed response, afters
//     run once the handler returns: before the head is sent for a FAST
//     producer, but after it for a SLOW handler's Write() (its changes are
//     lost).
//   - a static mount's files (Router::Static; the global middlewares, then
//     StaticOptions::middleware), on the ring thread: the befores run before
//     the file is looked up (one may answer: a 401 for a missing token), the
//     afters once its answer is known. On a file's 200 or 206 an after may
//     add headers (Cache-Control, a request id, CORS) and read the status;
//     the status and body are the file's (its bytes follow the head with
//     their length): an after's change to either is not applied. On the
//     mount's other answers (304, 412, 416, the 301 to a directory, the
//     errors) it may change anything, as on a handler's. A mount with no
//     middleware (none global, none of its own) costs nothing more.
//   - the answers the router gives for a path (404, 405, the 204 of an
//     OPTIONS from the table, the redirect to a clean path, the 400 of a
//     malformed one: clean_path.h), with the global middlewares only (a
//     CORS preflight for a path without an OPTIONS route is answered there).
//   - the server's own answers given before any route's chain began: a
//     malformed or oversized head (400, 414, 431, 501, 505), a body refused
//     (413) or failed (400, 408, 413, 431) before its handler ran, a head
//     too slow (408), a full worker queue (503). No before runs (the answer
//     is given), but every global after does, in reverse Use() order, so
//     that logging, request ids and CORS headers see every response. Where
//     no head was parsed (a malformed request line, a head that timed out)
//     the Request they get is a minimal one: method, target and path empty,
//     no headers; client_address set.
//   A response the connection gives after a chain ran in full (a SLOW
//   handler returned, then its streamed body failed: the server's 400
//   replaces its answer) gets its error page but no second run of afters.
//   Only the 503 of a connection arriving at a full connection pool is
//   written before any request is read: no hook sees it (the access log
//   does not either).
//
// Failures: a before, handler or after that throws is answered 500 (the 500
// page, see below) and the afters of the middlewares whose before returned
// still run on that answer; a thrower's own after does not. Each exception
// is logged once (failure_log.h: the route, the request, its id and
// what()); RunChain logs them after the afters have run, so that the line
// carries the request id the client got.
//
// Error pages: Router::SetErrorHandler(status, handler) for any status
// from 400 to 599, and SetDefaultErrorHandler(handler) for every such
// status without a page of its own. A page gets the request (minimal as
// above when no head was parsed) and a response whose status is set (and,
// for 405, its Allow header); it fills in the body, the type, headers. It
// may change the status to another 4xx or 5xx; a status below 400 is put
// back (a page cannot turn a failure into a success). A page that throws is
// replaced by the server's plain text for the status. Pages answer: the
// router's 404, 405 and 400; the server's own errors above; the static
// files' errors (400, 403, 404, 500, 503); a handler, body sink or before
// that throws (500); and a response a handler or an answering before
// leaves with a 4xx or 5xx status and an empty body (no producer): the
// page fills it, keeping the headers set. Without pages and without global
// middlewares the router's and the server's answers take the
// allocation-free path, as before.
//
// Thread-safety: configured before Server::Start(); then read-only, used
// from every ring thread and worker at once (a middleware's hooks must be
// safe to call concurrently).
#ifndef URING_HTTP_SRC_ROUTER_MIDDLEWARE_H_
#define URING_HTTP_SRC_ROUTER_MIDDLEWARE_H_

#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/router/failure_log.h"

namespace uring_http::router {

enum class Flow : bool { kNext, kAnswered };

struct Middleware {
  std::function<Flow(const http::Request&, http::Response&)> before;
  std::function<void(const http::Request&, http::Response&)> after;
};

using ErrorHandler = std::function<void(const http::Request&, http::Response&)>;
using HandlerRef = absl::FunctionRef<void(const http::Request&, http::Response&)>;

// The global middlewares and the error pages of one Router.
class Pipeline {
 public:
  void Use(Middleware middleware) { global_.push_back(std::move(middleware)); }
  // A page for one status, 400 to 599 (another call replaces it).
  absl::Status SetErrorHandler(int status, ErrorHandler handler);
  // The page of every 4xx and 5xx without one of its own.
  absl::Status SetDefaultErrorHandler(ErrorHandler handler);

  const std::vector<Middleware>& global() const { return global_; }
  // Whether the router's and the server's own answers go through a
  // Response (global middlewares or pages), else the plain path.
  bool HandlesNotFound() const { return !global_.empty() || has_pages(); }
  bool has_pages() const { return !pages_.empty() || default_page_ != nullptr; }
  bool HasServerErrorPage() const { return PageFor(500) != nullptr; }
  // The page for `status`: its own, else the default one; null if neither.
  const ErrorHandler* PageFor(int status) const;
  // Whether a route with these middlewares needs the chain at all.
  bool Active(const std::vector<Middleware>& route) const {
    return !global_.empty() || !route.empty();
  }

  // The router's answer for a path (`status` 404, 405 with `allow`, 400,
  // or the 204 with `allow`, no page and no body, of an OPTIONS answered
  // from the route table) in `response`: the page, or the default text,
  // with the global middlewares around it.
  void AnswerUnmatched(int status, std::string_view allow, const http::Request& request,
                       http::Response& response) const;
  // The router's redirect of an unclean path to `location` (301 or 308),
  // with the global middlewares around it.
  void AnswerRedirect(int status, std::string_view location, const http::Request& request,
                      http::Response& response) const;
  // The server's own answer `status` (see the top): the page or the default
  // text, then every global after. `allow` as for AnswerUnmatched.
  void AnswerServer(int status, const http::Request& request, http::Response& response) const;
  // Fills `response`, whose status is `status` (>= 400), with the page or
  // the server's text. Never throws.
  void ErrorPage(int status, const http::Request& request, http::Response& response) const;
  // Replaces `response` with the 500 answer (the page if set; never throws).
  void Fail(const http::Request& request, http::Response& response) const;
  // A response left with a 4xx or 5xx status and no body gets its page.
  void MaybeFailPage(const http::Request& request, http::Response& response) const {
    if (has_pages() && response.status() >= 400 && response.body_view().empty() &&
        !response.has_producer()) {
      ApplyPage(request, response);
    }
  }

 private:
  // Runs the page of response.status(), if any, on `response` as it is.
  void ApplyPage(const http::Request& request, http::Response& response) const;

  std::vector<Middleware> global_;
  std::vector<std::pair<int, ErrorHandler>> pages_;  // a handful: a scan
  ErrorHandler default_page_;
};

// The onion, in pieces (for a streamed body the befores and the afters run
// at different times). Befores: globals then `route`'s; returns how many
// returned (all of them when nothing answered; `*answered` says which).
// A throwing before: the response becomes the 500 answer, *answered is set,
// and it is not counted. `name` is the route's, for the failure log (an
// exception is logged at once here).
size_t RunBefores(const Pipeline& pipeline, const std::vector<Middleware>& route,
                  const http::Request& request, http::Response& response, bool* answered,
                  RouteName name = {});
// The afters of the first `ran` middlewares, last first.
void RunAfters(const Pipeline& pipeline, const std::vector<Middleware>& route, size_t ran,
               const http::Request& request, http::Response& response, RouteName name = {});
// Befores, the handler unless one answered, afters; exceptions become 500.
// `head_sent` (a SLOW handler's Write() has sent the head): when it turns
// true, the response is past replacing, and a bare 500 keeps its stream.
void RunChain(const Pipeline& pipeline, const std::vector<Middleware>& route,
              const http::Request& request, http::Response& response, HandlerRef handler,
              const bool* head_sent = nullptr, RouteName name = {});

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_MIDDLEWARE_H_
