// ParseRequestHead on the requests the load generators send. items/s is parsed
// requests per second on one core; compare with the server's requests/s to
// see what share of a core the parser costs.
//
// Run: bazel run -c opt //perf:parser_benchmark
#include <string>
#include <string_view>

#include "benchmark/benchmark.h"
#include "src/http/parser.h"

namespace uring_http::http {
namespace {

constexpr std::string_view kWrk =
    "GET /test/fast HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n";

constexpr std::string_view kAb =
    "GET /test/fast HTTP/1.0\r\nHost: 127.0.0.1:9000\r\n"
    "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n";

constexpr std::string_view kBrowser =
    "GET /static/app.js?v=1234 HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "Connection: keep-alive\r\n"
    "sec-ch-ua: \"Chromium\";v=\"120\", \"Not?A_Brand\";v=\"24\"\r\n"
    "sec-ch-ua-mobile: ?0\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36\r\n"
    "Accept: */*\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Sec-Fetch-Mode: no-cors\r\n"
    "Referer: https://www.example.com/index.html\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Accept-Language: en-US,en;q=0.9\r\n"
    "Cookie: session=0123456789abcdef; theme=dark\r\n"
    "\r\n";

void ParseOne(benchmark::State& state, std::string_view request) {
  Header headers[64];
  Request out;
  const ParseLimits limits;
  for (auto _ : state) {
    std::string_view data = request;
    benchmark::DoNotOptimize(data.data());
    const ParseResult r = ParseRequestHead(data, limits, &out, headers, 64);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(out);
    if (r.status != ParseStatus::kComplete) {
      state.SkipWithError("request did not parse");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(request.size()));
}

void BM_ParseWrk(benchmark::State& state) { ParseOne(state, kWrk); }
void BM_ParseAb(benchmark::State& state) { ParseOne(state, kAb); }
void BM_ParseBrowser(benchmark::State& state) { ParseOne(state, kBrowser); }

// 16 wrk requests in one receive buffer (wrk --pipeline 16), parsed one after
// another through `consumed` as the connection code does.
void BM_ParsePipeline16(benchmark::State& state) {
  std::string buffer;
  for (int i = 0; i < 16; ++i) buffer += kWrk;
  Header headers[64];
  Request out;
  const ParseLimits limits;
  for (auto _ : state) {
    std::string_view data = buffer;
    benchmark::DoNotOptimize(data.data());
    while (!data.empty()) {
      const ParseResult r = ParseRequestHead(data, limits, &out, headers, 64);
      benchmark::DoNotOptimize(out);
      if (r.status != ParseStatus::kComplete) {
        state.SkipWithError("pipeline did not parse");
        return;
      }
      data.remove_prefix(r.consumed);
    }
  }
  state.SetItemsProcessed(state.iterations() * 16);
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(buffer.size()));
}

BENCHMARK(BM_ParseWrk);
BENCHMARK(BM_ParseAb);
BENCHMARK(BM_ParseBrowser);
BENCHMARK(BM_ParsePipeline16);

}  // namespace
}  // namespace uring_http::http

BENCHMARK_MAIN();
