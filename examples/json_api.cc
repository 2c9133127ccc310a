// json_api: a small JSON API on uring-http, with its JSON helpers
// (//:uring_http_json, uring_http/json.h: nlohmann-json from Debian's
// nlohmann-json3-dev).
//
//   POST /api/sum     {"numbers": [1, 2, 3.5]}  ->  {"sum": 6.5, "count": 3}
//                     malformed JSON or a wrong shape -> 400 {"error": "..."},
//                     a Content-Type other than application/json -> 415
//   GET  /api/health  {"status": "ok", "uptime_seconds": 12}
//   GET  /api/items/{id}  {"id": 2, "name": "bolt"}; an unknown id -> 404,
//                     one that is not a number -> 400 (a path parameter)
//
// Every answer carries an X-Request-Id (the client's, or a new one; also at
// the end of each --access-log line), browsers on any origin may call the API
// (CORS: preflights answered 204), and unknown paths and failures answer in
// JSON too (custom 404 and 500 pages).
//
// Both handlers are FAST: parsing a request body of at most --max-body-bytes
// (default 1 MiB) and adding numbers is cheap enough to run inline on the
// accept thread. Work that blocks or takes milliseconds belongs in a SLOW
// handler (see calc.cc).
//
// Run: bazel run //examples:json_api -- --port=8080   (--help lists the flags)
//      curl --json '{"numbers":[1,2,3]}' http://127.0.0.1:8080/api/sum
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <iterator>
#include <string>
#include <string_view>

#include "uring_http/json.h"

namespace {

using uring_http::json::Json;  // nlohmann::json
using uring_http::http::Request;
using uring_http::http::Response;

void Reply(Response& response, int status, const Json& body) {
  uring_http::json::Reply(response, body, status);
}

void ReplyError(Response& response, int status, std::string message) {
  uring_http::json::ReplyError(response, status, message);
}

// The number as an int64_t, if it is an integer that fits in one.
std::optional<int64_t> AsInt64(const Json& n) {
  if (n.is_number_unsigned()) {
    const uint64_t u = n.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (n.is_number_integer()) return n.get<int64_t>();
  return std::nullopt;
}

// POST /api/sum: the sum of "numbers", exact while every number is an
// integer and the sum fits in 64 bits, a double otherwise.
void Sum(const Request& request, Response& response) {
  // 415 for a Content-Type that is not JSON, 400 saying where the text
  // broke; no exception either way.
  const uring_http::json::Result<> parsed = uring_http::json::Parse(request);
  if (!parsed.ok()) return parsed.ReplyError(response);
  const Json& input = *parsed;
  if (!input.is_object() || !input.contains("numbers") || !input["numbers"].is_array()) {
    return ReplyError(response, 400, "expected an object {\"numbers\": [...]}");
  }
  const Json& numbers = input["numbers"];
  bool exact = true;  // every number so far an integer, and no overflow
  int64_t exact_sum = 0;
  double sum = 0;
  for (size_t i = 0; i < numbers.size(); ++i) {
    const Json& n = numbers[i];
    if (!n.is_number()) {
      return ReplyError(response, 400, "numbers[" + std::to_string(i) + "] is not a number");
    }
    sum += n.get<double>();
    if (exact) {
      const std::optional<int64_t> value = AsInt64(n);
      exact = value && !__builtin_add_overflow(exact_sum, *value, &exact_sum);
    }
  }
  if (!std::isfinite(sum)) return ReplyError(response, 400, "the sum overflows a double");
  Json output = {{"count", numbers.size()}};
  if (exact) {
    output["sum"] = exact_sum;
  } else {
    output["sum"] = sum;
  }
  Reply(response, 200, output);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  // --help: the usage, exit 0; a bad flag: the reason, exit 2.
  serving::Options options = serving::ParseOptions(argc, argv);

  router::Router router;
  // First in, so that its after hook runs last and sees the final answer.
  router.Use(middleware::RequestId());
  middleware::CorsOptions cors;  // any origin, no credentials
  cors.allowed_methods = "GET, POST";
  cors.allowed_headers = "Content-Type, X-Request-Id";
  cors.exposed_headers = "X-Request-Id";
  absl::StatusOr<router::Middleware> cors_middleware = middleware::Cors(cors);
  if (!cors_middleware.ok()) {
    std::cerr << "json_api: " << cors_middleware.status().message() << "\n";
    return 1;
  }
  router.Use(*std::move(cors_middleware));
  router.SetErrorHandler(404, [](const Request& request, Response& response) {
    Reply(response, 404, Json{{"error", "no such endpoint"}, {"path", request.path}});
  });
  router.SetErrorHandler(500, [](const Request&, Response& response) {
    Reply(response, 500, Json{{"error", "internal error"}});
  });
  router.Fast("POST", "/api/sum", Sum);
  const auto started = std::chrono::steady_clock::now();
  router.Fast("GET", "/api/health", [started](const Request&, Response& response) {
    const auto uptime = std::chrono::steady_clock::now() - started;
    Reply(response, 200,
          {{"status", "ok"},
           {"uptime_seconds", std::chrono::duration_cast<std::chrono::seconds>(uptime).count()}});
  });

  // A path parameter: Request::PathParam gives the segment percent-decoded
  // ("/api/items/%31" is item 1; RawPathParam gives "%31").
  router.Fast("GET", "/api/items/{id}", [](const Request& request, Response& response) {
    static constexpr const char* kItems[] = {"nut", "bolt", "washer"};
    const std::string_view id = request.PathParam("id");
    uint64_t n = 0;
    for (char c : id) {
      if (c < '0' || c > '9' || n > 1000) return ReplyError(response, 400, "id is not a number");
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n == 0 || n > std::size(kItems)) return ReplyError(response, 404, "no such item");
    Reply(response, 200, {{"id", n}, {"name", kItems[n - 1]}});
  });

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  const absl::Status status =
      server.Run([](const serving::Server& s) { std::cout << s.ReadyLine() << std::endl; });
  if (!status.ok()) {
    std::cerr << "json_api: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
