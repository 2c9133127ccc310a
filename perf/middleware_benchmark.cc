// What the middleware chain costs a FAST request: a handler run through
// RunChain with no middleware, with the request id middleware (an id
// generated, or one echoed), and with request id + CORS for an allowed
// origin; each builds and drops a Response as the ring thread does.
//
// Run: bazel run -c opt //perf:middleware_benchmark
#include <string_view>

#include "benchmark/benchmark.h"
#include "src/http/parser.h"
#include "src/middleware/cors.h"
#include "src/middleware/request_id.h"
#include "src/router/middleware.h"

namespace uring_http::router {
namespace {

constexpr std::string_view kPlain = "GET /api HTTP/1.1\r\nHost: h\r\n\r\n";
constexpr std::string_view kWithId =
    "GET /api HTTP/1.1\r\nHost: h\r\nX-Request-Id: 0123456789abcdef\r\n\r\n";
constexpr std::string_view kWithOrigin =
    "GET /api HTTP/1.1\r\nHost: h\r\nOrigin: https://app.example\r\n\r\n";

void Handler(const http::Request&, http::Response& r) { r.set_static_body("ok"); }

void Run(benchmark::State& state, const Pipeline& pipeline, std::string_view text) {
  http::Header headers[16];
  http::Request request;
  http::ParseRequestHead(text, http::ParseLimits{}, &request, headers, 16);
  static const std::vector<Middleware> kNone;
  for (auto _ : state) {
    http::Response response;
    if (pipeline.Active(kNone)) {
      RunChain(pipeline, kNone, request, response, Handler);
    } else {
      Handler(request, response);
    }
    benchmark::DoNotOptimize(response.headers().size());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_NoMiddleware(benchmark::State& state) { Run(state, Pipeline(), kPlain); }

void BM_RequestIdGenerated(benchmark::State& state) {
  Pipeline p;
  p.Use(middleware::RequestId());
  Run(state, p, kPlain);
}

void BM_RequestIdEchoed(benchmark::State& state) {
  Pipeline p;
  p.Use(middleware::RequestId());
  Run(state, p, kWithId);
}

void BM_RequestIdAndCors(benchmark::State& state) {
  Pipeline p;
  p.Use(middleware::RequestId());
  middleware::CorsOptions cors;
  cors.allowed_origins = {"https://other.example", "https://app.example"};
  p.Use(middleware::Cors(cors).value());  // valid options: never an error
  Run(state, p, kWithOrigin);
}

BENCHMARK(BM_NoMiddleware);
BENCHMARK(BM_RequestIdGenerated);
BENCHMARK(BM_RequestIdEchoed);
BENCHMARK(BM_RequestIdAndCors);

}  // namespace
}  // namespace uring_http::router

BENCHMARK_MAIN();
