// Tests for the takeover handshake: the message format as pure functions
// (round trips, every malformation refused, another version named), then a
// ControlServer and a Successor in one process over a real control socket:
// the sockets handed over are the same sockets, and the old side hears
// "ready", an abort, a successor that vanishes, or its own shutdown, and
// does what the header says for each.
#include "src/serving/takeover.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace uring_http::serving::takeover {
namespace {

Message Make(Verb verb, int64_t pid = 0, std::string roles = "", std::string reason = "") {
  Message m;
  m.verb = verb;
  m.pid = pid;
  m.roles = std::move(roles);
  m.reason = std::move(reason);
  return m;
}

TEST(TakeoverMessageTest, WireFormat) {
  EXPECT_EQ(Format(Make(Verb::kHello, 1234)), "uring-http-takeover 1 hello pid=1234");
  EXPECT_EQ(Format(Make(Verb::kSockets, 99, "mmp")),
            "uring-http-takeover 1 sockets pid=99 roles=mmp");
  EXPECT_EQ(Format(Make(Verb::kReady)), "uring-http-takeover 1 ready");
  EXPECT_EQ(Format(Make(Verb::kDraining)), "uring-http-takeover 1 draining");
  EXPECT_EQ(Format(Make(Verb::kRefused, 0, "", "it is draining already")),
            "uring-http-takeover 1 refused reason=it is draining already");
  // A reason never breaks the line, and is never empty.
  EXPECT_EQ(Format(Make(Verb::kAbort, 0, "", "a\nb\x01")), "uring-http-takeover 1 abort reason=a?b?");
  EXPECT_EQ(Format(Make(Verb::kAbort)), "uring-http-takeover 1 abort reason=-");
}

TEST(TakeoverMessageTest, RoundTrips) {
  for (const Message& m :
       {Make(Verb::kHello, 7), Make(Verb::kSockets, 123456, "m"),
        Make(Verb::kSockets, 1, std::string(64, 'p')), Make(Verb::kReady),
        Make(Verb::kDraining), Make(Verb::kRefused, 0, "", "not this server's user"),
        Make(Verb::kAbort, 0, "", "reason= with pid=3 roles=m inside")}) {
    const std::string text = Format(m);
    auto parsed = Parse(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(parsed->verb, m.verb) << text;
    EXPECT_EQ(parsed->pid, m.pid) << text;
    EXPECT_EQ(parsed->roles, m.roles) << text;
    EXPECT_EQ(parsed->reason, m.reason) << text;
  }
}

TEST(TakeoverMessageTest, MalformedMessagesAreRefused) {
  for (const char* text : {
           "",
           "uring-http-takeover",
           "uring-http-takeover 1",
           "uring-http-takeover x hello pid=1",
           "uring-http-takeover 1 goodbye",
           "uring-http-takeover 1 hello",                   // no pid
           "uring-http-takeover 1 hello pid=",              // empty
           "uring-http-takeover 1 hello pid=0",             // not a process
           "uring-http-takeover 1 hello pid=-3",
           "uring-http-takeover 1 hello pid=12a",
           "uring-http-takeover 1 hello pid=1 pid=2",       // twice
           "uring-http-takeover 1 hello pid=1 roles=m",     // not a hello's field
           "uring-http-takeover 1 hello pid=1 colour=blue",
           "uring-http-takeover 1 hello  pid=1",            // two spaces
           "uring-http-takeover 1 sockets pid=1",           // no roles
           "uring-http-takeover 1 sockets pid=1 roles=",
           "uring-http-takeover 1 sockets pid=1 roles=mx",
           "uring-http-takeover 1 ready pid=1",
           "uring-http-takeover 1 ready ",
           "uring-http-takeover 1 refused",                 // no reason
           "uring-http-takeover 1 refused reason=",
           "uring-http-takeover 1 abort reason=a\tb",       // not printable
           "uring-http-takeover 1 ready\n",
           "nginx-upgrade 1 hello pid=1",
       }) {
    auto parsed = Parse(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << "'" << text << "' gave " << parsed.status();
  }
  EXPECT_FALSE(Parse("uring-http-takeover 1 sockets pid=1 roles=" + std::string(65, 'm')).ok());
  EXPECT_FALSE(Parse("uring-http-takeover 1 ready" + std::string(600, ' ')).ok());
}

TEST(TakeoverMessageTest, AnotherVersionIsNamed) {
  auto parsed = Parse("uring-http-takeover 2 hello pid=1 features=x");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(parsed.status().message().find("version 2"), absl::string_view::npos);
  EXPECT_NE(parsed.status().message().find("version 1"), absl::string_view::npos);
}

TEST(TakeoverMessageTest, DefaultControlSocketNamesAddressAndPort) {
  EXPECT_EQ(DefaultControlSocket("0.0.0.0", 9000), "@uring-http/0.0.0.0:9000");
  EXPECT_EQ(DefaultControlSocket("127.0.0.1", 80), "@uring-http/127.0.0.1:80");
}

// ---------------------------------------------------------- over a socket

std::string Name(const char* what) {
  return std::string("@uring-http-test/takeover/") + what + "/" + std::to_string(getpid());
}

bool SameFile(int a, int b) {
  struct stat sa{}, sb{};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Polls `done` for up to 10 s.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

absl::StatusOr<std::unique_ptr<ControlServer>> Start(const std::string& name,
                                                     ControlServer::Hooks hooks) {
  auto control = ControlServer::Listen(name, std::move(hooks));
  if (control.ok()) (*control)->Serve();
  return control;
}

struct OldSide {
  int fds[3] = {-1, -1, -1};
  std::atomic<int> offers{0};
  std::atomic<int64_t> handed_to{0};
  std::atomic<int> withdrawals{0};
  absl::Status refuse = absl::OkStatus();

  OldSide() {
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fds[2] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }
  ~OldSide() {
    for (int fd : fds) close(fd);
  }
  ControlServer::Hooks Hooks() {
    ControlServer::Hooks hooks;
    hooks.offer = [this]() -> absl::StatusOr<ControlServer::Offer> {
      ++offers;
      if (!refuse.ok()) return refuse;
      return ControlServer::Offer{"mmp", {fds[0], fds[1], fds[2]}};
    };
    hooks.handed_over = [this](int64_t pid) { handed_to = pid; };
    hooks.withdrawn = [this] { ++withdrawals; };
    return hooks;
  }
};

TEST(TakeoverTest, HandsTheSameSocketsOverAndDrains) {
  OldSide old;
  const std::string name = Name("handover");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok()) << control.status();

  auto successor = Successor::Connect(name);
  ASSERT_TRUE(successor.ok()) << successor.status();
  EXPECT_EQ(successor->pid(), getpid());  // the old side's pid: this process
  EXPECT_EQ(successor->roles(), "mmp");
  ASSERT_EQ(successor->fds().size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(successor->fds()[i].get(), old.fds[i]);  // a descriptor of its own,
    EXPECT_TRUE(SameFile(successor->fds()[i].get(), old.fds[i]));  // the same socket
  }
  EXPECT_EQ(old.handed_to.load(), 0);  // nothing happens before "ready"

  ASSERT_TRUE(successor->Complete().ok());
  EXPECT_EQ(old.handed_to.load(), getpid());
  EXPECT_EQ(old.withdrawals.load(), 0);
  // The control socket's name is free for the successor right away.
  EXPECT_TRUE(io::UnixListener::Listen(name).ok());
}

TEST(TakeoverTest, AnAbortLeavesTheOldServerServing) {
  OldSide old;
  const std::string name = Name("abort");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  {
    auto successor = Successor::Connect(name);
    ASSERT_TRUE(successor.ok());
    successor->Abort("listens on another address");
  }
  ASSERT_TRUE(Eventually([&] { return old.withdrawals.load() == 1; }));
  EXPECT_EQ(old.handed_to.load(), 0);
  // Still there for the next one, which succeeds.
  auto next = Successor::Connect(name);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(next->Complete().ok());
  EXPECT_NE(old.handed_to.load(), 0);
  EXPECT_EQ(old.offers.load(), 2);
}

TEST(TakeoverTest, ASuccessorThatVanishesLeavesTheOldServerServing) {
  OldSide old;
  const std::string name = Name("vanish");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  {
    auto successor = Successor::Connect(name);
    ASSERT_TRUE(successor.ok());
  }  // closed without a word, as a process that dies
  ASSERT_TRUE(Eventually([&] { return old.withdrawals.load() == 1; }));
  EXPECT_EQ(old.handed_to.load(), 0);
  EXPECT_TRUE(Successor::Connect(name).ok());
}

TEST(TakeoverTest, ARefusalIsNamed) {
  OldSide old;
  old.refuse = absl::FailedPreconditionError("it is draining already");
  const std::string name = Name("refuse");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  auto successor = Successor::Connect(name);
  EXPECT_EQ(successor.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(successor.status().message().find("draining already"), absl::string_view::npos)
      << successor.status();
  EXPECT_EQ(old.withdrawals.load(), 0);  // nothing was offered
}

TEST(TakeoverTest, NobodyThereIsNotFound) {
  EXPECT_EQ(Successor::Connect(Name("nobody")).status().code(), absl::StatusCode::kNotFound);
}

TEST(TakeoverTest, AnotherVersionOrGarbageIsRefused) {
  OldSide old;
  const std::string name = Name("garbage");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  for (const char* hello : {"uring-http-takeover 2 hello pid=5", "GET / HTTP/1.1"}) {
    auto conn = io::ConnectUnix(name);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(io::SendMessage(conn->get(), hello).ok());
    auto reply = io::ReceiveMessage(conn->get(), 10'000);
    ASSERT_TRUE(reply.ok()) << reply.status();
    auto m = Parse(reply->bytes);
    ASSERT_TRUE(m.ok()) << reply->bytes;
    EXPECT_EQ(m->verb, Verb::kRefused) << reply->bytes;
    EXPECT_TRUE(reply->fds.empty());
  }
  EXPECT_EQ(old.offers.load(), 0);
}

TEST(TakeoverTest, ShutdownDuringAHandshakeEndsTheControlThread) {
  OldSide old;
  const std::string name = Name("shutdown");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  auto successor = Successor::Connect(name);
  ASSERT_TRUE(successor.ok());
  (*control)->Shutdown();
  // The old side stops waiting for "ready" and closes the control socket;
  // it neither hands over nor withdraws (its sockets stay open: the
  // successor may be serving on them already).
  ASSERT_TRUE(Eventually([&] { return !io::ConnectUnix(name).ok(); }));
  EXPECT_FALSE(successor->Complete().ok());
  EXPECT_EQ(old.handed_to.load(), 0);
  EXPECT_EQ(old.withdrawals.load(), 0);
  control->reset();  // joins
}

TEST(TakeoverTest, ShutdownWhileIdleFreesTheName) {
  OldSide old;
  const std::string name = Name("idle");
  auto control = Start(name, old.Hooks());
  ASSERT_TRUE(control.ok());
  EXPECT_EQ((*control)->name(), name);
  EXPECT_EQ(Start(name, old.Hooks()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  (*control)->Shutdown();
  ASSERT_TRUE(Eventually([&] { return io::UnixListener::Listen(name).ok(); }));
}

}  // namespace
}  // namespace uring_http::serving::takeover
