// Middleware: hooks that run around a route's handler, and the pages that
// answer 404, 405 and 500 when the application wants its own.
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
// Where they run: around a FAST handler on the ring thread (they must not
// block, and should not allocate), around a SLOW one on the worker (a
// blocking check is fine there). For a route whose body streams (FastStream,
// SLOW with BodyMode::kStreamed) the befores run before any body is read;
// an early answer leaves the body unread (FAST: discarded as for a 404;
// SLOW: the connection closes after the answer). For a streamed response,
// afters run once the handler returns: before the head is sent for a FAST
// producer, but after it for a SLOW handler's Write() (its changes are lost).
//
// Failures: a before, handler or after that throws is answered 500 (the 500
// page, see below) and the afters of the middlewares whose before returned
// still run on that answer; a thrower's own after does not. Each exception
// is logged once (failure_log.h: the route, the request, its id and
// what()); RunChain logs them after the afters have run, so that the line
// carries the request id the client got.
//
// Error pages: Router::SetErrorHandler(404 | 405 | 500, handler). 404/405
// answer requests no route takes (with a fallback route set there are
// none); the response handed to the 405 handler already carries the Allow
// header. The global middlewares run around 404/405 answers too (so a CORS
// preflight for a path without an OPTIONS route is answered, and a request
// id is set on errors), but only when some are installed or a page is set:
// otherwise those answers take the server's allocation-free path. The 500
// page answers a handler that throws, or that returns status 500 with an
// empty body; a 500 page that throws is replaced by the plain 500.
//
// Thread-safety: configured before Server::Start(); then read-only, used
// from every ring thread and worker at once (a middleware's hooks must be
// safe to call concurrently).
#ifndef URING_HTTP_SRC_ROUTER_MIDDLEWARE_H_
#define URING_HTTP_SRC_ROUTER_MIDDLEWARE_H_

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "src/http/parser.h"
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
  // Only 404, 405 and 500 can be handled.
  absl::Status SetErrorHandler(int status, ErrorHandler handler);

  const std::vector<Middleware>& global() const { return global_; }
  // Whether 404/405 answers go through a Response (else the plain path).
  bool HandlesNotFound() const {
    return !global_.empty() || not_found_ != nullptr || not_allowed_ != nullptr;
  }
  bool HasServerErrorPage() const { return server_error_ != nullptr; }
  // Whether a route with these middlewares needs the chain at all.
  bool Active(const std::vector<Middleware>& route) const {
    return !global_.empty() || !route.empty();
  }

  // A 404 or 405 (with `allow`) answer in `response`: the page, or the
  // default text, with the global middlewares around it. Also the 204 (with
  // `allow`, no page, no body) of an OPTIONS answered from the route table.
  void AnswerUnmatched(int status, std::string_view allow, const http::Request& request,
                       http::Response& response) const;
  // Replaces `response` with the 500 answer (the page if set; never throws).
  void Fail(const http::Request& request, http::Response& response) const;
  // A response a handler left as a bare 500 gets the 500 page.
  void MaybeFailPage(const http::Request& request, http::Response& response) const {
    if (server_error_ != nullptr && response.status() == 500 && response.body_view().empty() &&
        !response.has_producer()) {
      Fail(request, response);
    }
  }

 private:
  std::vector<Middleware> global_;
  ErrorHandler not_found_;
  ErrorHandler not_allowed_;
  ErrorHandler server_error_;
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
