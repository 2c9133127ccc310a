// calc: a CPU-heavy SLOW endpoint.
//
//   GET /calc?value=x   sums the series  sum_{i=0}^{4,999,999} (-1)^i x^(i+1) / (i+1),
//                       which converges to ln(1+x) for -1 < x <= 1, and answers
//                       the sum with ln(1+x) beside it for comparison.
//
// The answer is text (first line: the sum), or JSON with ?format=json or
// "Accept: application/json". A missing or non-numeric value, or one outside
// (-1, 1], is answered 400.
//
// Five million terms take milliseconds of CPU, so the handler is SLOW: it runs
// on a worker thread (-w, by default one per CPU) and the accept threads keep
// answering other connections meanwhile. Many concurrent requests keep every
// core busy; a single event loop computing inline would use one core and
// stall every other connection while it computes.
//
// Run: bazel run //examples:calc -- --port=8080   (--help lists the flags)
//      curl 'http://127.0.0.1:8080/calc?value=0.5'
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string_view>
#include <system_error>

#include "uring_http/uring_http.h"

namespace {

using uring_http::http::ParamValue;
using uring_http::http::Request;
using uring_http::http::Response;

constexpr int kTerms = 5'000'000;

// The partial sum of the Mercator series for ln(1+x), first kTerms terms.
double LogSeries(double x) {
  double sum = 0;
  double power = 1;  // x^(i+1) once multiplied below
  for (int i = 0; i < kTerms; ++i) {
    power *= x;
    const double term = power / (i + 1);
    sum += (i % 2 == 0) ? term : -term;
  }
  return sum;
}

// The whole of `text` as a finite double ("0.5", "-.25", "1e-3").
std::optional<double> ParseNumber(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

void BadRequest(Response& response, std::string_view message) {
  response.set_status(400);
  response.set_content_type("text/plain");
  response.set_body(message);
  response.body() += '\n';
}

// GET /calc?value=x (runs on a worker).
void Calc(const Request& request, Response& response) {
  // The first "value" in the query, percent-decoded ('+' is a space): a view
  // into the request unless it had to be decoded.
  const ParamValue text = request.QueryParam("value");
  if (text.malformed()) return BadRequest(response, "badly encoded parameter: value");
  if (!text) return BadRequest(response, "missing parameter: value (/calc?value=0.5)");
  const std::optional<double> x = ParseNumber(*text);
  if (!x) return BadRequest(response, "value is not a number");
  if (!(*x > -1 && *x <= 1)) return BadRequest(response, "value must be in (-1, 1]");

  const double sum = LogSeries(*x);
  const double exact = std::log1p(*x);
  const bool as_json =
      request.QueryParam("format") == "json" ||
      request.FindHeader("Accept").find("application/json") != std::string_view::npos;
  char body[256];
  int n;
  if (as_json) {
    response.set_content_type("application/json");
    n = std::snprintf(body, sizeof body,
                      "{\"value\":%.17g,\"terms\":%d,\"sum\":%.17g,\"ln1p\":%.17g}\n", *x, kTerms,
                      sum, exact);
  } else {
    response.set_content_type("text/plain");
    n = std::snprintf(body, sizeof body, "%.17g\nln(1+x) = %.17g (x = %.17g, %d terms)\n", sum,
                      exact, *x, kTerms);
  }
  response.set_body(std::string_view(body, static_cast<size_t>(n)));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  // --help: the usage, exit 0; a bad flag: the reason, exit 2.
  serving::Options options = serving::ParseOptions(argc, argv);

  router::Router router;
  router.Slow("GET", "/calc", Calc);

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  const absl::Status status =
      server.Run([](const serving::Server& s) { std::cout << s.ReadyLine() << std::endl; });
  if (!status.ok()) {
    std::cerr << "calc: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
