// hello: the smallest uring-http server; GET / answers "hello, world".
// Run: bazel run //examples:hello -- --port=8080   (--help lists the flags)
#include <iostream>
#include "uring_http/uring_http.h"

int main(int argc, char** argv) {
  using namespace uring_http;
  serving::Options options = serving::ParseOptions(argc, argv);  // --help, bad flags: exits
  options.config.handle_signals = true;  // SIGTERM/SIGINT: drain, then Run() returns
  router::Router router;
  router.Fast("GET", "/", [](auto&, auto& r) { r.set_static_body("hello, world\n"); });
  serving::Server server(options.config, std::move(router));
  return server.Run([](auto& s) { std::cout << s.ReadyLine() << std::endl; }).ok() ? 0 : 1;
}
