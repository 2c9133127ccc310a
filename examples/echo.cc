// echo: answers every method on every path with the request body, streamed
// back as it arrives (a subject for external HTTP conformance suites).
//
//   <ANY METHOD> <any target>   200, the request's body as the response body;
//                               Content-Type: the request's (else
//                               application/octet-stream), and
//                               X-Echo-Method / X-Echo-Target: what was asked
//
// One SLOW fallback route takes every request no other route claims: all
// but GET/HEAD of the built-in /metrics and /healthz, which
// --metrics-path= --health-path= (empty) turn off for a suite. Its body is
// streamed with no size limit: the handler reads it on a worker with
// Request::ReadBody and writes each piece straight back with Response::Write,
// so a body of any size and framing (Content-Length or chunked) goes through
// in bounded memory. The answer is chunked in HTTP/1.1 and close-delimited in
// HTTP/1.0; a request without a body gets an empty one (Content-Length: 0).
// HEAD gets the headers only (the server drops the body).
//
// The echo is full duplex: the answer leaves while the request still
// arrives, and the server reads the request only as fast as the client takes
// the answer (backpressure). A client that sends all of a large body before
// it reads anything therefore stalls once the buffers between them are full
// (a few hundred KiB plus the sockets'); send and receive at the same time,
// as curl does.
//
// Each request in progress holds one worker thread: -w/--workers bounds how
// many bodies are echoed at once (the rest wait in the queue). With
// --workers=0 the handler runs on the ring thread and gets the body buffered
// instead, up to --max-body-bytes (413 beyond it).
//
// Run: bazel run //examples:echo -- --port=8080 --workers=8   (--help lists the flags)
//      curl -T bigfile http://127.0.0.1:8080/anything
//      curl -X PROPFIND -d 'hello' -i 'http://127.0.0.1:8080/a/b?c=d'
#include <iostream>
#include <string_view>

#include "uring_http/uring_http.h"

namespace {

using uring_http::http::Request;
using uring_http::http::Response;

// Any request (runs on a worker, with its body streamed).
void Echo(const Request& request, Response& response) {
  const std::string_view type = request.FindHeader("Content-Type");
  response.set_content_type(type.empty() ? "application/octet-stream" : type);
  // The parser has rejected CR, LF and NUL in both already, and a target
  // is far below the response header limit (64 KiB by default). A refused
  // header fails the response (a 500, logged): nothing more to do then.
  if (!response.AddHeader("X-Echo-Method", request.method) ||
      !response.AddHeader("X-Echo-Target", request.target)) {
    return;
  }

  char buffer[64 * 1024];
  long n;
  while ((n = request.ReadBody(buffer, sizeof buffer)) > 0) {
    // false: the client is gone (or its body failed); nothing more to do.
    if (!response.Write(std::string_view(buffer, static_cast<size_t>(n)))) return;
  }
  // n < 0: the body failed (request.body_error() says why): the server
  // answers it (400, 408, 413) if nothing was echoed yet, else cuts the echo
  // short and closes. n == 0: the end; a body that was never written is sent
  // empty, with Content-Length: 0.
}

}  // namespace

int main(int argc, char** argv) {
  using namespace uring_http;
  // --help: the usage, exit 0; a bad flag: the reason, exit 2.
  serving::Options options = serving::ParseOptions(argc, argv);

  router::Router router;
  router::RouteOptions streamed;
  streamed.body = router::BodyMode::kStreamed;     // read on the worker as it arrives
  streamed.max_body_bytes = router::kUnlimitedBody;  // memory stays bounded: no limit
  const absl::Status routed = router.SetFallback(router::HandlerKind::kSlow, Echo, streamed);
  if (!routed.ok()) {
    std::cerr << "echo: " << routed.message() << "\n";
    return 1;
  }

  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  serving::Server server(options.config, std::move(router));
  const absl::Status status =
      server.Run([](const serving::Server& s) { std::cout << s.ReadyLine() << std::endl; });
  if (!status.ok()) {
    std::cerr << "echo: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
