// A program's own flags (serving::Flags) parsed beside the server's by
// TryParseOptions: each kind of value, refusals worded as the server's,
// --help listing them first with their defaults, names the server's flags
// already take, and the shipped binary's own flags (issue 23 item 2).
#include <chrono>
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "src/serving/flags.h"
#include "src/serving/options.h"
#include "test/serving/parse_args.h"

namespace uring_http::serving {
namespace {

using options_testing::ExpectError;
using options_testing::Parse;

// The shipped binary's own flags are not the server's: a program that does
// not declare them cannot be handed one that does nothing (issue 23 item
// 2: --root, --daemonize, --pid-file and -D parsed and were ignored).
TEST(OptionsTest, TheShippedBinarysOwnFlagsAreNotTheServers) {
  for (const std::string& arg : {"--root=/srv", "--daemonize", "-d", "--pid-file=/run/x.pid",
                                 "--slow-duration=5", "--static-dotfiles=allow"}) {
    ExpectError({arg}, "unknown option");
  }
  ExpectError({"-D", "5"}, "unknown option '-D'");
}

// A program's flags, as an app declares them.
struct AppFlags {
  std::string db = "stock.db";
  int slow_ms = 30;
  int offset = -5;
  bool dry_run = false;
  std::chrono::milliseconds query_timeout{2000};
  uint64_t cache = 64 << 20;
  std::string mode = "fast";
  Flags flags{"inventory: the stock API"};

  AppFlags() {
    flags.Section("Inventory");
    flags.Add("db", &db, "Path of the database").Value("FILE");
    flags.Add("slow-ms", &slow_ms, "What a slow query sleeps", 0, 3'600'000).Short('D');
    flags.Add("offset", &offset, "Clock offset", -100, 100);
    flags.Add("dry-run", &dry_run, "Change nothing").Short('n');
    flags.Add("query-timeout", &query_timeout, "Longest a query may run");
    flags.AddSize("cache", &cache, "Cache size");
    flags.AddChoice("mode", &mode, {"fast", "safe"}, "How to write");
  }
};

TEST(OptionsTest, AProgramsFlagsParseBesideTheServers) {
  AppFlags app;
  absl::StatusOr<Options> options =
      Parse({"--db=/var/lib/stock.db", "-p", "8080", "-D250", "-vn", "--offset", "-7",
             "--query-timeout=500ms", "--cache=1GiB", "--mode", "safe", "--max-body-bytes=8M"},
            &app.flags);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(app.db, "/var/lib/stock.db");
  EXPECT_EQ(app.slow_ms, 250);
  EXPECT_EQ(app.offset, -7);
  EXPECT_TRUE(app.dry_run);
  EXPECT_EQ(app.query_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(app.cache, 1ull << 30);
  EXPECT_EQ(app.mode, "safe");
  EXPECT_EQ(options->config.port, 8080);
  EXPECT_TRUE(options->config.verbose);
  EXPECT_EQ(options->config.limits.max_body_bytes, 8u << 20);
}

TEST(OptionsTest, AProgramsFlagsAreRefusedAsTheServersAre) {
  AppFlags app;
  ExpectError({"-D", "0x10"}, "invalid value '0x10' for --slow-ms: expected an integer in [0, 3600000]",
              &app.flags);
  ExpectError({"--offset=-101"}, "expected an integer in [-100, 100]", &app.flags);
  ExpectError({"--offset=101"}, "--offset", &app.flags);
  ExpectError({"--db"}, "option '--db' needs a value", &app.flags);
  ExpectError({"--dry-run=yes"}, "option '--dry-run' takes no value", &app.flags);
  ExpectError({"--query-timeout=soon"}, "--query-timeout", &app.flags);
  ExpectError({"--cache=1X"}, "invalid value '1X' for --cache: expected a size", &app.flags);
  ExpectError({"--mode=quick"}, "invalid value 'quick' for --mode: expected fast or safe",
              &app.flags);
  // Without the program's flags they are unknown.
  ExpectError({"--db=x"}, "unknown option '--db'");
}

TEST(OptionsTest, UsageListsAProgramsFlagsFirstWithTheirDefaults) {
  AppFlags app;
  const std::string usage = UsageText("inventory", &app.flags);
  const size_t description = usage.find("inventory: the stock API");
  const size_t section = usage.find("\nInventory:\n");
  const size_t db = usage.find("      --db=FILE");
  const size_t port = usage.find("  -p, --port=N");
  EXPECT_EQ(description, 0u) << usage;
  EXPECT_NE(usage.find("Usage: inventory [flags]"), std::string::npos) << usage;
  ASSERT_NE(section, std::string::npos) << usage;
  ASSERT_NE(db, std::string::npos) << usage;
  ASSERT_NE(port, std::string::npos) << usage;
  EXPECT_LT(section, db);
  EXPECT_LT(db, port);  // the program's flags, then the server's
  for (const char* line : {"Path of the database (default: stock.db)",
                           "  -D, --slow-ms=N", "What a slow query sleeps (default: 30)",
                           "(default: -5)", "  -n, --dry-run", "(default: off)",
                           "--query-timeout=DURATION", "(default: 2s)", "--cache=SIZE",
                           "(default: 64MiB)", "--mode=fast|safe", "(default: fast)"}) {
    EXPECT_NE(usage.find(line), std::string::npos) << line << " in\n" << usage;
  }
}

TEST(OptionsTest, AProgramCannotTakeAServerFlagsName) {
  Flags clash;
  int port = 0;
  clash.Add("port", &port, "mine");
  absl::StatusOr<Options> options = Parse({}, &clash);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(options.status().message().find("--port"), absl::string_view::npos)
      << options.status();

  Flags letter;
  bool x = false;
  letter.Add("extra", &x, "mine").Short('v');
  options = Parse({}, &letter);
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("-v"), absl::string_view::npos) << options.status();

  Flags alias;
  alias.Add("mine", &x, "mine").Alias("worker-threads");
  EXPECT_FALSE(Parse({}, &alias).ok());
}

TEST(OptionsTest, HelpWinsOverAMistake) {
  absl::StatusOr<Options> options = Parse({"--bogus", "--help"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->help);
  options = Parse({"-p", "abc", "-?"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->help);
  // An operand after "--" is not a request for help.
  ExpectError({"--", "--help"}, "unexpected argument '--help'");
}

}  // namespace
}  // namespace uring_http::serving
