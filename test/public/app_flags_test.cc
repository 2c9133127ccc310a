// A program built on the public header, with a flag of its own, as a user
// writes one (issue 23 item 2: --help started serving; --root, --daemonize,
// --pid-file and -D parsed and did nothing in an app).
//
// The program's main() runs in a death test's child, which checks its exit
// status and what it printed (stdout joined to stderr).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace {

using namespace uring_http;

// argv as main() gets it.
class Args {
 public:
  Args(std::initializer_list<std::string> args) : storage_{"inventory"} {
    storage_.insert(storage_.end(), args.begin(), args.end());
    for (std::string& s : storage_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(argv_.size()) - 1; }
  char** argv() { return argv_.data(); }

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
};

// The whole answer to one GET on its own connection ("" if it failed).
std::string Get(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  close(fd);
  return response;
}

// The program: GET /db answers the --db flag's value. Exits 3 once it
// serves, which a death test expecting 0 or 2 reports as a failure.
[[noreturn]] void Inventory(Args args) {
  dup2(2, 1);  // what it prints to stdout, where the death test sees it
  serving::Flags flags("inventory: the stock API");
  std::string db = "stock.db";
  flags.Add("db", &db, "Path of the database").Value("FILE");
  serving::Options options = serving::ParseOptions(args.argc(), args.argv(), &flags);
  router::Router router;
  router.Fast("GET", "/db",
                    [db](const http::Request&, http::Response& r) { r.set_body(db); });
  options.config.address = "127.0.0.1";
  options.config.port = 0;
  serving::Server server(options.config, std::move(router));
  if (server.Start().ok()) {
    std::fprintf(stderr, "SERVING\n");
    std::exit(3);
  }
  std::exit(4);
}

class AppFlagsTest : public testing::Test {
 protected:
  // The child runs the test binary again up to the statement: no thread of
  // this process is forked.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(AppFlagsTest, HelpPrintsUsageWithTheProgramsFlagsAndExitsZero) {
  for (const char* help : {"--help", "-h", "-?"}) {
    EXPECT_EXIT(Inventory({help}), testing::ExitedWithCode(0),
                "inventory: the stock API\nUsage: inventory \\[flags\\]") << help;
    EXPECT_EXIT(Inventory({help}), testing::ExitedWithCode(0),
                "--db=FILE +Path of the database \\(default: stock.db\\)") << help;
    EXPECT_EXIT(Inventory({help}), testing::ExitedWithCode(0), "-p, --port=N") << help;
  }
  // Among other flags, even a wrong one, help is what was asked for.
  EXPECT_EXIT(Inventory({"--db", "x", "--bogus", "--help"}), testing::ExitedWithCode(0),
              "Usage: inventory");
}

TEST_F(AppFlagsTest, ABadFlagPrintsTheReasonAndExitsTwo) {
  EXPECT_EXIT(Inventory({"--db"}), testing::ExitedWithCode(2),
              "inventory: option '--db' needs a value\nTry 'inventory --help'.");
  EXPECT_EXIT(Inventory({"--port=http"}), testing::ExitedWithCode(2),
              "invalid value 'http' for --port: expected an integer in \\[0, 65535\\]");
  EXPECT_EXIT(Inventory({"--max-body-bytes=1.5G"}), testing::ExitedWithCode(2),
              "invalid value '1.5G' for --max-body-bytes: expected a size");
}

// The shipped binary's own flags, which a program that does not declare
// them cannot be given: refused, never accepted and ignored.
TEST_F(AppFlagsTest, TheShippedBinarysFlagsAreRefused) {
  for (const char* flag : {"--root=/srv/www", "--daemonize", "-d", "--pid-file=/run/x.pid",
                           "--slow-duration=5", "--static-dotfiles=allow"}) {
    EXPECT_EXIT(Inventory({flag}), testing::ExitedWithCode(2), "unknown option") << flag;
  }
  EXPECT_EXIT(Inventory({"-D", "5"}), testing::ExitedWithCode(2), "unknown option '-D'");
}

TEST_F(AppFlagsTest, TheProgramsFlagReachesItsHandler) {
  serving::Flags flags("inventory: the stock API");
  std::string db = "stock.db";
  flags.Add("db", &db, "Path of the database").Value("FILE");
  Args args({"--db=/var/lib/stock.db", "--address", "127.0.0.1", "-p", "0", "-A1"});
  serving::Options options = serving::ParseOptions(args.argc(), args.argv(), &flags);
  EXPECT_EQ(options.config.accept_threads, 1);
  router::Router router;
  router.Fast("GET", "/db",
                    [db](const http::Request&, http::Response& r) { r.set_body(db); });
  serving::Server server(options.config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  const std::string answer = Get(server.port(), "/db");
  server.Stop();
  server.Wait();
  EXPECT_EQ(answer.substr(0, 15), "HTTP/1.1 200 OK") << answer;
  EXPECT_EQ(answer.substr(answer.size() - 17), "/var/lib/stock.db") << answer;
}

// Sizes take units wherever one is taken, the program's own flags too
// (issue 23 item 8: --max-body-bytes=1GB was refused).
TEST(SizesTest, EverySizeTakesUnits) {
  serving::Flags flags("inventory: the stock API");
  uint64_t cache = 0;
  flags.AddSize("cache", &cache, "Cache size");
  Args args({"--max-body-bytes=1GB", "--file-cache-bytes=64MiB", "--send-zc=128k",
             "--recv-buffer-size=4k", "--gzip-min-bytes=2KiB", "--file-splice=1M",
             "--cache=1GiB"});
  absl::StatusOr<serving::Options> options =
      serving::TryParseOptions(args.argc(), args.argv(), &flags);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.limits.max_body_bytes, 1'000'000'000u);
  EXPECT_EQ(options->config.file_cache_bytes, 64u << 20);
  EXPECT_EQ(options->config.send_zc_min_bytes, 128u << 10);
  EXPECT_EQ(options->config.recv_buffer_size, 4096u);
  EXPECT_EQ(options->config.compression.min_bytes, 2048u);
  EXPECT_EQ(options->config.file_splice_min_bytes, 1u << 20);
  EXPECT_EQ(cache, uint64_t{1} << 30);
}

// One rule for the exit status: 2 for what the command line says wrong,
// a flag or a file it names; 1 for the rest (issue 23 item 8).
TEST(ExitStatusTest, AnUnusableFileIsTwoAsABadFlagIs) {
  EXPECT_EQ(serving::ExitStatus(absl::OkStatus()), 0);
  serving::ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.accept_threads = 1;
  config.tls.certificates.push_back({"/no/such/cert.pem", "/no/such/key.pem"});
  serving::Server server(config, router::Router());
  const absl::Status status = server.Start();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(serving::ExitStatus(status), 2) << status;

  // The port another server listens on: not the command line's fault.
  serving::ServerConfig first_config;
  first_config.address = "127.0.0.1";
  first_config.port = 0;
  first_config.accept_threads = 1;
  serving::Server first(first_config, router::Router());
  ASSERT_TRUE(first.Start().ok());
  serving::ServerConfig second_config = first_config;
  second_config.port = first.port();
  serving::Server second(second_config, router::Router());
  const absl::Status in_use = second.Start();
  first.Stop();
  first.Wait();
  ASSERT_FALSE(in_use.ok());
  EXPECT_EQ(serving::ExitStatus(in_use), 1) << in_use;
}

}  // namespace
