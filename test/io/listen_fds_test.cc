// Tests for the sd_listen_fds protocol: ParseListenFds as a pure function
// (unset, another process's, malformed, limits), and TakeListenFds on this
// process's environment and descriptor 3.
#include "src/io/listen_fds.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace uring_http::io {
namespace {

TEST(ListenFdsTest, UnsetMeansNone) {
  EXPECT_EQ(*ParseListenFds(nullptr, nullptr, 42), 0);
  EXPECT_EQ(*ParseListenFds("42", nullptr, 42), 0);
  EXPECT_EQ(*ParseListenFds(nullptr, "2", 42), 0);
}

TEST(ListenFdsTest, ForThisProcess) {
  EXPECT_EQ(*ParseListenFds("42", "1", 42), 1);
  EXPECT_EQ(*ParseListenFds("42", "3", 42), 3);
  EXPECT_EQ(*ParseListenFds("1234567", "256", 1234567), 256);
}

TEST(ListenFdsTest, AnotherProcessesSocketsAreNotOurs) {
  // A child that inherited the variables from an activated parent.
  EXPECT_EQ(*ParseListenFds("41", "2", 42), 0);
  // Even if LISTEN_FDS is nonsense: it is not for us to judge.
  EXPECT_EQ(*ParseListenFds("41", "x", 42), 0);
}

TEST(ListenFdsTest, MalformedIsAnErrorNamingTheVariable) {
  struct Case {
    const char* pid;
    const char* fds;
    const char* names;
  };
  for (const Case& c : {Case{"", "1", "LISTEN_PID"}, Case{"x", "1", "LISTEN_PID"},
                        Case{"-42", "1", "LISTEN_PID"}, Case{"0", "1", "LISTEN_PID"},
                        Case{"42 ", "1", "LISTEN_PID"}, Case{"99999999999", "1", "LISTEN_PID"},
                        Case{"42", "", "LISTEN_FDS"}, Case{"42", "0", "LISTEN_FDS"},
                        Case{"42", "-1", "LISTEN_FDS"}, Case{"42", "1x", "LISTEN_FDS"},
                        Case{"42", "257", "LISTEN_FDS"}, Case{"42", "+1", "LISTEN_FDS"}}) {
    auto n = ParseListenFds(c.pid, c.fds, 42);
    ASSERT_FALSE(n.ok()) << c.pid << " " << c.fds;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(n.status().message().find(c.names), absl::string_view::npos) << n.status();
  }
  EXPECT_EQ(*ParseListenFds("42", "8", 42, /*max=*/8), 8);
  EXPECT_FALSE(ParseListenFds("42", "9", 42, /*max=*/8).ok());
}

// Descriptor 3 replaced by `fd` for one test, and given back after.
class Fd3 {
 public:
  explicit Fd3(int fd) : saved_(fcntl(3, F_DUPFD_CLOEXEC, 100)) { dup2(fd, 3); }
  ~Fd3() {
    if (saved_ >= 0) {
      dup2(saved_, 3);
      close(saved_);
    } else {
      close(3);
    }
  }

 private:
  int saved_;
};

TEST(ListenFdsTest, TakeGivesDescriptorThreeAndUnsetsTheVariables) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);  // not close-on-exec
  Fd3 fd3(pair[0]);
  setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
  setenv("LISTEN_FDS", "1", 1);
  setenv("LISTEN_FDNAMES", "http", 1);
  auto fds = TakeListenFds();
  ASSERT_TRUE(fds.ok()) << fds.status();
  ASSERT_EQ(fds->size(), 1u);
  EXPECT_EQ((*fds)[0], kListenFdsStart);
  EXPECT_TRUE(fcntl(3, F_GETFD) & FD_CLOEXEC);  // not for a program we start
  EXPECT_EQ(std::getenv("LISTEN_PID"), nullptr);
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
  EXPECT_EQ(std::getenv("LISTEN_FDNAMES"), nullptr);
  // Taken once: a second look finds nothing.
  EXPECT_TRUE(TakeListenFds()->empty());
  close(pair[0]);
  close(pair[1]);
}

TEST(ListenFdsTest, TakeRefusesADescriptorThatIsNotOpen) {
  const int saved = fcntl(3, F_DUPFD_CLOEXEC, 100);
  close(3);
  setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
  setenv("LISTEN_FDS", "1", 1);
  auto fds = TakeListenFds();
  EXPECT_FALSE(fds.ok());
  EXPECT_NE(fds.status().message().find("descriptor 3"), absl::string_view::npos)
      << fds.status();
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
  if (saved >= 0) {
    dup2(saved, 3);
    close(saved);
  }
}

TEST(ListenFdsTest, TakeIgnoresAnotherProcessesButUnsetsThem) {
  setenv("LISTEN_PID", std::to_string(getpid() + 1).c_str(), 1);
  setenv("LISTEN_FDS", "2", 1);
  auto fds = TakeListenFds();
  ASSERT_TRUE(fds.ok());
  EXPECT_TRUE(fds->empty());
  EXPECT_EQ(std::getenv("LISTEN_PID"), nullptr);
}

}  // namespace
}  // namespace uring_http::io
