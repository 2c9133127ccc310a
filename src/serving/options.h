// The server's command line: every flag sets a ServerConfig field (and
// nothing else), so a program embedding the server gets the same flags as
// the shipped binary, and each of them does what it says. A program adds
// its own flags (flags.h) to the same parser and the same --help:
//
//   serving::Flags flags("inventory: the stock API");
//   std::string db = "stock.db";
//   flags.Add("db", &db, "Path of the database").Value("FILE");
//   serving::Options options = serving::ParseOptions(argc, argv, &flags);
//   // here db and options.config hold what the command line said
//
// Flags that concern the program rather than the server are the program's
// to declare: the shipped binary declares -D (its test routes), --root and
// --static-dotfiles (its one static mount), -d and --pid-file in src/main.cc.
//
// Both --name=value and --name value work, and the short flags (-p 9000,
// -p9000, -vd). Errors name the option and what it accepts.
//
// Thread-safety: call from main(), before serving.
#ifndef URING_HTTP_SRC_SERVING_OPTIONS_H_
#define URING_HTTP_SRC_SERVING_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "src/serving/config.h"
#include "src/serving/flags.h"

namespace uring_http::serving {

struct Options {
  ServerConfig config;
  bool help = false;  // -h, --help or -? was given (TryParseOptions only)
};

// Parses argv: the server's flags and `app_flags`' (may be null). As Go's
// flag.Parse and absl::ParseCommandLine do, it does not return when the
// command line asks for help or is wrong: --help (-h, -?) prints UsageText
// on stdout and exits 0; a bad flag or value prints the reason and "Try
// '<program> --help'." on stderr and exits 2.
Options ParseOptions(int argc, char** argv, const Flags* app_flags = nullptr);

// The same without exiting or printing: a bad flag is an InvalidArgument
// error naming the option and what it accepts, and --help sets
// Options::help (for tests, and programs that report errors their way).
absl::StatusOr<Options> TryParseOptions(int argc, char** argv,
                                        const Flags* app_flags = nullptr);

// What --help prints: `app_flags`' description and flags, then the server's.
std::string UsageText(const char* program, const Flags* app_flags = nullptr);

// The exit status for a server that stopped with `status` (Run's), by the
// rule ParseOptions follows: 0 when it is OK; 2 when it is InvalidArgument,
// that is the configuration or a file or directory it names (a
// certificate, a key, the access log) or systemd's LISTEN_FDS cannot be
// used, as for a bad flag; 1 for anything else (the port is in use,
// io_uring is refused, ...).
int ExitStatus(const absl::Status& status);

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_OPTIONS_H_
