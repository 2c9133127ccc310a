// Router::Find with 10 and 1,000 routes, static and parameterized: the
// lookup cost should not grow with the number of routes (a hash lookup for
// exact paths, one tree level per segment for patterns).
// Run: ./bazelw run -c opt //perf:router_benchmark
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "src/router/router.h"

namespace uring_http::router {
namespace {

void Noop(const http::Request&, http::Response&) {}

// n resources, each with a static route /api/vN/items and a parameterized
// one /api/vN/items/{id}/parts/{part}.
Router Make(int n) {
  Router router;
  for (int i = 0; i < n; ++i) {
    const std::string base = "/api/v" + std::to_string(i) + "/items";
    (void)router.Fast("GET", base, Noop);
    (void)router.Fast("GET", base + "/{id}/parts/{part}", Noop);
  }
  return router;
}

void BM_FindStatic(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Router router = Make(n / 2);
  const std::string path = "/api/v" + std::to_string(n / 4) + "/items";
  http::PathParams params;
  for (auto _ : state) {
    Match m = router.Find("GET", path, &params);
    benchmark::DoNotOptimize(m.route);
  }
}
BENCHMARK(BM_FindStatic)->Arg(10)->Arg(1000);

void BM_FindParams(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Router router = Make(n / 2);
  const std::string path = "/api/v" + std::to_string(n / 4) + "/items/12345/parts/7";
  http::PathParams params;
  for (auto _ : state) {
    Match m = router.Find("GET", path, &params);
    benchmark::DoNotOptimize(m.route);
    benchmark::DoNotOptimize(params.size());
  }
}
BENCHMARK(BM_FindParams)->Arg(10)->Arg(1000);

void BM_FindMiss(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Router router = Make(n / 2);
  http::PathParams params;
  for (auto _ : state) {
    Match m = router.Find("GET", "/api/nowhere/x", &params);
    benchmark::DoNotOptimize(m.path_known);
  }
}
BENCHMARK(BM_FindMiss)->Arg(10)->Arg(1000);

}  // namespace
}  // namespace uring_http::router

BENCHMARK_MAIN();
