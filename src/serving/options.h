// Command line of the shipped server: compatible with the reference design
// (server-demo: -p -A -C -w -D -v -d) plus --workers and the limits and
// timeouts. Both --name=value and --name value work, and the short flags.
#ifndef URING_HTTP_SRC_SERVING_OPTIONS_H_
#define URING_HTTP_SRC_SERVING_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "src/serving/config.h"

namespace uring_http::serving {

struct Options {
  ServerConfig config;
  uint32_t slow_duration_ms = 30;  // what GET /test/slow sleeps on a worker
  bool daemonize = false;
  std::string pid_file;  // written once serving, removed on exit
  std::string root;      // --root: files for paths no route claims
  bool static_dotfiles = false;  // --static-dotfiles=allow: serve hidden paths
  bool help = false;
};

// Parses argv. Errors name the option and the accepted range; the caller
// prints them and exits with status 2.
absl::StatusOr<Options> ParseOptions(int argc, char** argv);

std::string UsageText(const char* program);

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_OPTIONS_H_
