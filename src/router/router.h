// Router: maps (method, path) to a handler and says whether it runs inline on
// the ring thread (FAST: must not block) or on a worker (SLOW: may block).
//
// Routes are registered before the server starts and never change after, so
// lookups from every ring thread and worker need no lock. HEAD is served by
// the GET handler when no HEAD route exists (the body is not sent).
//
// Thread-safety: Add*() before Server::Start(); Find() from any thread after.
#ifndef URING_HTTP_SRC_ROUTER_ROUTER_H_
#define URING_HTTP_SRC_ROUTER_ROUTER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "src/http/parser.h"
#include "src/http/response.h"

namespace uring_http::router {

using Handler = std::function<void(const http::Request&, http::Response&)>;

enum class HandlerKind { kFast, kSlow };

struct Route {
  std::string method;
  std::string path;
  HandlerKind kind;
  Handler handler;
  uint32_t id = 0;  // 0..size()-1 in registration order (metrics index)
};

struct Match {
  const Route* route = nullptr;  // null: see path_known
  bool path_known = false;       // path exists with other methods: 405
  std::string_view allow;        // "GET, HEAD" for the 405 Allow header
};

class Router {
 public:
  // Fails on a duplicate (method, path) or a path not starting with '/'.
  absl::Status Add(HandlerKind kind, std::string_view method, std::string_view path,
                   Handler handler);
  absl::Status Fast(std::string_view method, std::string_view path, Handler handler) {
    return Add(HandlerKind::kFast, method, path, std::move(handler));
  }
  absl::Status Slow(std::string_view method, std::string_view path, Handler handler) {
    return Add(HandlerKind::kSlow, method, path, std::move(handler));
  }

  Match Find(std::string_view method, std::string_view path) const;

  size_t size() const { return count_; }
  // Every route, indexed by Route::id.
  std::vector<const Route*> Routes() const;

 private:
  struct PathRoutes {
    std::vector<Route> routes;  // a handful per path: a linear scan wins
    std::string allow;
  };
  absl::flat_hash_map<std::string, PathRoutes> paths_;
  uint32_t count_ = 0;
};

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_ROUTER_H_
