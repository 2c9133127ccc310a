#include "src/router/route_tree.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/http/percent.h"

namespace uring_http::router {
namespace {

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

struct RouteTree::Node {
  struct Entry {
    std::string method;
    const Route* route;
  };
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> statics;
  // The same children while they are few: comparing a handful of short
  // strings beats hashing the segment.
  static constexpr size_t kFew = 8;
  std::vector<std::pair<std::string_view, const Node*>> few;
  std::unique_ptr<Node> param;
  std::string param_name;
  std::unique_ptr<Node> catch_all;
  std::string catch_all_name;
  std::vector<Entry> routes;  // a handful per node: a linear scan wins
  const Route* get = nullptr;
  bool has_head = false;
  bool has_options = false;
  std::string allow;
  // Bit i: the tree's i-th method (methods_) has a route here.
  uint64_t method_bits = 0;

  const Node* Static(std::string_view segment) const {
    if (statics.size() <= kFew) {
      for (const auto& [text, child] : few) {
        if (text == segment) return child;
      }
      return nullptr;
    }
    auto it = statics.find(AbslView(segment));
    return it == statics.end() ? nullptr : it->second.get();
  }

  const Route* ForMethod(std::string_view method, bool head) const {
    for (const Entry& e : routes) {
      if (e.method == method) return e.route;
    }
    return head ? get : nullptr;
  }
};

struct RouteTree::Search {
  std::string_view method;
  bool head;
  http::PathParams* params;
  const Node* known = nullptr;  // the first (most specific) node matching the path
  const Route* route = nullptr;
  // The methods of every node matching the path that the search reached:
  // on a miss it has tried them all, so this is the resource's Allow.
  uint64_t method_bits = 0;
};

RouteTree::RouteTree() : root_(std::make_unique<Node>()) {}
RouteTree::~RouteTree() = default;
RouteTree::RouteTree(RouteTree&&) noexcept = default;
RouteTree& RouteTree::operator=(RouteTree&&) noexcept = default;

absl::Status RouteTree::Insert(const PathPattern& pattern, std::string_view method,
                               const Route* route) {
  auto conflict = [&](std::string_view why) {
    return absl::AlreadyExistsError(absl::StrCat("route ", AbslView(method), " ",
                                                 AbslView(pattern.text()), ": ",
                                                 AbslView(why)));
  };
  // Checked all the way down before anything is added, so that a refused
  // route leaves the tree as it was.
  const Node* probe = root_.get();
  for (const PatternSegment& s : pattern.segments()) {
    if (probe == nullptr) break;
    switch (s.kind) {
      case PatternSegment::Kind::kStatic: {
        auto it = probe->statics.find(AbslView(s.text));
        probe = it == probe->statics.end() ? nullptr : it->second.get();
        break;
      }
      case PatternSegment::Kind::kParam:
        if (probe->param != nullptr && probe->param_name != s.text) {
          return conflict(absl::StrCat("{", s.text, "} is already named {", probe->param_name,
                                       "} at that place by another route"));
        }
        probe = probe->param.get();
        break;
      case PatternSegment::Kind::kCatchAll:
        if (probe->catch_all != nullptr && probe->catch_all_name != s.text) {
          return conflict(absl::StrCat("{", s.text, "...} is already named {",
                                       probe->catch_all_name, "...} by another route"));
        }
        probe = probe->catch_all.get();
        break;
    }
  }
  if (probe != nullptr) {
    for (const Node::Entry& e : probe->routes) {
      if (e.method == method) return conflict("registered twice");
    }
  }
  const bool new_method = std::find(methods_.begin(), methods_.end(), method) == methods_.end();
  if (new_method && methods_.size() == kMaxMethods) {
    return conflict(absl::StrCat("more than ", kMaxMethods, " distinct methods"));
  }

  Node* node = root_.get();
  for (const PatternSegment& s : pattern.segments()) {
    std::unique_ptr<Node>* child = nullptr;
    switch (s.kind) {
      case PatternSegment::Kind::kStatic: {
        auto [it, added] = node->statics.try_emplace(s.text);
        child = &it->second;
        if (added) *child = std::make_unique<Node>();
        node->few.clear();
        if (node->statics.size() <= Node::kFew) {
          for (const auto& [text, c] : node->statics) node->few.emplace_back(text, c.get());
        }
        break;
      }
      case PatternSegment::Kind::kParam:
        child = &node->param;
        if (*child == nullptr) node->param_name = s.text;
        break;
      case PatternSegment::Kind::kCatchAll:
        child = &node->catch_all;
        if (*child == nullptr) node->catch_all_name = s.text;
        break;
    }
    if (*child == nullptr) *child = std::make_unique<Node>();
    node = child->get();
  }
  node->routes.push_back(Node::Entry{std::string(method), route});
  if (method == "GET") node->get = route;
  node->has_head |= method == "HEAD";
  node->has_options |= method == "OPTIONS";
  // Allow lists what Find() accepts: the implicit HEAD, and OPTIONS, which
  // the server answers from this table when no route takes it.
  node->allow.clear();
  for (const Node::Entry& e : node->routes) {
    absl::StrAppend(&node->allow, node->allow.empty() ? "" : ", ", e.method);
  }
  if (node->get != nullptr && !node->has_head) absl::StrAppend(&node->allow, ", HEAD");
  if (!node->has_options) absl::StrAppend(&node->allow, ", OPTIONS");
  if (pattern.param_count() == 0) {
    // Keyed by the decoded path, which a path without '%' is. A decoded
    // '/' in a segment ("/a%2Fb") would alias "/a/b": such a pattern is
    // found by the walk alone.
    std::string key;
    bool aliases = false;
    for (const PatternSegment& s : pattern.segments()) {
      absl::StrAppend(&key, "/", s.text);
      aliases |= s.text.find('/') != std::string::npos;
    }
    if (!aliases) exact_[key] = node;
  }

  if (new_method) methods_.emplace_back(method);
  const size_t bit = std::find(methods_.begin(), methods_.end(), method) - methods_.begin();
  node->method_bits |= uint64_t{1} << bit;
  if (new_method) {
    const bool head = std::find(methods_.begin(), methods_.end(), "HEAD") != methods_.end();
    all_methods_.clear();
    for (const std::string& m : methods_) {
      if (m == "OPTIONS") continue;
      absl::StrAppend(&all_methods_, m, ", ");
      if (m == "GET" && !head) absl::StrAppend(&all_methods_, "HEAD, ");
    }
    absl::StrAppend(&all_methods_, "OPTIONS");
  }
  return absl::OkStatus();
}

bool RouteTree::Terminal(const Node* node, Search* s) {
  if (node->routes.empty()) return false;
  if (s->known == nullptr) s->known = node;
  s->method_bits |= node->method_bits;
  s->route = node->ForMethod(s->method, s->head);
  return s->route != nullptr;
}

bool RouteTree::Descend(const Node* node, std::string_view rest, Search* s) {
  if (rest.empty()) return Terminal(node, s);
  const std::string_view after_slash = rest.substr(1);
  std::string_view segment;
  std::string_view next = rest;
  NextSegment(&next, &segment);
  if (!node->statics.empty()) {
    // Static segments compare decoded (path_pattern.h).
    const Node* child = nullptr;
    if (segment.find('%') == std::string_view::npos) {
      child = node->Static(segment);
    } else if (segment.size() <= kDecodeOnStack) {
      char decoded[kDecodeOnStack];
      child = node->Static(std::string_view(decoded, http::DecodeLenient(segment, decoded)));
    } else {
      // Longer than an ordinary segment: the thread's buffer, grown once.
      thread_local std::string decoded;
      decoded.resize(segment.size());
      decoded.resize(http::DecodeLenient(segment, decoded.data()));
      child = node->Static(decoded);
    }
    if (child != nullptr && Descend(child, next, s)) return true;
  }
  const size_t mark = s->params->size();
  if (node->param != nullptr && !segment.empty()) {
    s->params->Push(node->param_name, segment);
    if (Descend(node->param.get(), next, s)) return true;
    s->params->Truncate(mark);
  }
  if (node->catch_all != nullptr) {
    s->params->Push(node->catch_all_name, after_slash);
    if (Terminal(node->catch_all.get(), s)) return true;
    s->params->Truncate(mark);
  }
  return false;
}

RouteTree::Result RouteTree::Find(std::string_view method, std::string_view path,
                                  http::PathParams* params) const {
  params->Clear();
  Search s{method, method == "HEAD", params};
  Result result;
  if (path.empty() || path.front() != '/') return result;
  // A wholly static pattern is the most specific match there can be. (A
  // path with escapes is compared segment by segment, decoded, by the walk.)
  const bool escaped = path.find('%') != std::string_view::npos;
  auto exact = escaped ? exact_.end() : exact_.find(AbslView(path));
  if (exact != exact_.end() && Terminal(exact->second, &s)) {
    result.route = s.route;
  } else {
    s.known = nullptr;
    if (Descend(root_.get(), path, &s)) result.route = s.route;
  }
  if (result.route != nullptr) params->Decode();
  if (s.known != nullptr) {
    result.path_known = true;
    result.allow = s.known->allow;
    result.has_options = s.known->has_options;
    if (result.route == nullptr && s.method_bits != s.known->method_bits) {
      // Less specific patterns match the path too ("/users/new" and
      // "/users/{id}"): the resource allows what any of them does (RFC 9110
      // 10.2.1). Rare, so spelled out here rather than kept per node.
      result.allow = AllowOf(s.method_bits);
      result.allow_scratch = true;
    }
  }
  return result;
}

std::string_view RouteTree::AllowOf(uint64_t method_bits) const {
  // A 405 is answered before the next lookup on the same thread: one
  // buffer per thread, nothing allocated.
  thread_local char buffer[kMaxAllowText];
  size_t len = 0;
  auto append = [&](std::string_view m) {
    const size_t sep = len == 0 ? 0 : 2;
    if (len + sep + m.size() > sizeof(buffer)) return;
    if (sep != 0) {
      buffer[len++] = ',';
      buffer[len++] = ' ';
    }
    m.copy(buffer + len, m.size());
    len += m.size();
  };
  bool has = false, get = false, head = false, options = false;
  for (size_t i = 0; i < methods_.size(); ++i) {
    if ((method_bits >> i & 1) == 0) continue;
    has = true;
    get |= methods_[i] == "GET";
    head |= methods_[i] == "HEAD";
    options |= methods_[i] == "OPTIONS";
    append(methods_[i]);
  }
  if (get && !head) append("HEAD");
  if (has && !options) append("OPTIONS");
  return std::string_view(buffer, len);
}

}  // namespace uring_http::router
