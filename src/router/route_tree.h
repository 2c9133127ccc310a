// The route table's index: a tree with one level per path segment. Each
// node holds its static children (compared when few, hashed when many), at
// most one parameter child and at most one catch-all child, and the routes
// (one per method) whose pattern ends there. A lookup walks the path's segments, so its cost
// depends on the path, not on how many routes exist, and it allocates
// nothing: names are views into the tree, parameters views into the path
// (decoded ones live in the PathParams). Static segments compare decoded:
// a path with escapes skips the exact-path hash and walks the tree.
//
// Precedence: at each segment a static child is tried first, then the
// parameter, then the catch-all; when a branch matches no route for the
// method deeper down, the search backtracks to the next choice. So with
// "/users/new/edit" and "/users/{id}/edit", "/users/new/edit" takes the
// first, "/users/7/edit" the second, and a method only the second has is
// served by it on either path. A path every pattern misses is unknown
// (404); a path some pattern matches with none for the method is known
// (405), and its Allow lists what every pattern matching it accepts
// (a method of "/users/{id}" is allowed on "/users/new" too, since that is
// where the search takes it).
//
// Conflicts, refused by Insert: the same (method, pattern) twice, and two
// different names for a parameter or catch-all at the same place
// ("/u/{id}" and "/u/{name}", whatever their methods: one node has one
// name, as in httprouter).
//
// Routes are opaque here (router.h defines them); HEAD is served by a GET
// at the same node when no HEAD route is there.
//
// Thread-safety: Insert before lookups start; Find from any thread after.
#ifndef URING_HTTP_SRC_ROUTER_ROUTE_TREE_H_
#define URING_HTTP_SRC_ROUTER_ROUTE_TREE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "src/http/path_params.h"
#include "src/router/path_pattern.h"

namespace uring_http::router {

struct Route;

class RouteTree {
 public:
  struct Result {
    const Route* route = nullptr;  // null: see path_known
    bool path_known = false;       // some pattern matches the path
    // What the path allows, "GET, HEAD, OPTIONS": the most specific
    // matching pattern's methods, or, on a miss where less specific
    // patterns match too, all of theirs (then a view valid until the next
    // Find on this thread).
    std::string_view allow;
    // `allow` is in the thread's scratch (the miss above), not the tree.
    bool allow_scratch = false;
    // True if that pattern's node has an OPTIONS route of its own.
    bool has_options = false;
  };

  RouteTree();
  ~RouteTree();
  // Movable (a Router is): the nodes stay where they are.
  RouteTree(RouteTree&&) noexcept;
  RouteTree& operator=(RouteTree&&) noexcept;

  absl::Status Insert(const PathPattern& pattern, std::string_view method, const Route* route);

  // On a match, `params` holds the route's parameters (else it is cleared).
  Result Find(std::string_view method, std::string_view path, http::PathParams* params) const;

  // Every method any route accepts, with HEAD and OPTIONS ("OPTIONS *").
  std::string_view all_methods() const { return all_methods_; }

 private:
  struct Node;
  struct Search;
  static bool Descend(const Node* node, std::string_view rest, Search* s);
  static bool Terminal(const Node* node, Search* s);
  // The Allow text of a set of methods (bits of methods_).
  std::string_view AllowOf(uint64_t method_bits) const;

  // A segment with escapes is decoded on the stack up to this size.
  static constexpr size_t kDecodeOnStack = 256;
  // Methods are bits of a 64-bit set (Insert refuses a 65th).
  static constexpr size_t kMaxMethods = 64;
  static constexpr size_t kMaxAllowText = 1024;

  std::unique_ptr<Node> root_;
  // Nodes reached by a wholly static pattern, by the pattern: the common
  // exact path costs one hash lookup.
  absl::flat_hash_map<std::string, const Node*> exact_;
  std::vector<std::string> methods_;
  std::string all_methods_ = "OPTIONS";
};

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_ROUTE_TREE_H_
