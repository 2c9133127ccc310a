#include "src/serving/takeover.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace uring_http::serving::takeover {
namespace {

constexpr std::string_view kMagic = "uring-http-takeover";
constexpr size_t kMaxText = 512;
constexpr size_t kMaxRoles = 64;
constexpr size_t kMaxReason = 300;
// How long the new process waits for the old one's answers. The old one
// answers at once (its control thread does nothing else), so this only
// bounds a peer that is stuck or busy with another successor.
constexpr int kAnswerTimeoutMs = 10'000;
// How long the old one waits for a hello after a connection.
constexpr int kHelloTimeoutMs = 5'000;

struct VerbName {
  Verb verb;
  std::string_view name;
};
constexpr VerbName kVerbs[] = {
    {Verb::kHello, "hello"},   {Verb::kSockets, "sockets"}, {Verb::kRefused, "refused"},
    {Verb::kReady, "ready"},   {Verb::kAbort, "abort"},     {Verb::kDraining, "draining"},
};

std::string_view NameOf(Verb verb) {
  for (const VerbName& v : kVerbs) {
    if (v.verb == verb) return v.name;
  }
  return "?";
}

bool HasPid(Verb v) { return v == Verb::kHello || v == Verb::kSockets; }
bool HasRoles(Verb v) { return v == Verb::kSockets; }
bool HasReason(Verb v) { return v == Verb::kRefused || v == Verb::kAbort; }

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// A plain decimal in [1, 2^62); -1 otherwise.
int64_t Decimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return -1;
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n > 0 ? n : -1;
}

// The next space-separated token of `rest` (consumed, with its space);
// `*more` says whether a space followed it (then another token must).
std::string_view Token(std::string_view& rest, bool* more) {
  const size_t space = rest.find(' ');
  std::string_view token = rest.substr(0, space);
  *more = space != std::string_view::npos;
  rest = *more ? rest.substr(space + 1) : std::string_view();
  return token;
}

void Log(const std::string& line) { std::fprintf(stderr, "uring-http: %s\n", line.c_str()); }

}  // namespace

std::string Format(const Message& message) {
  std::string text = absl::StrCat(std::string(kMagic), " ", kVersion, " ",
                                  std::string(NameOf(message.verb)));
  if (HasPid(message.verb)) absl::StrAppend(&text, " pid=", message.pid);
  if (HasRoles(message.verb)) absl::StrAppend(&text, " roles=", message.roles);
  if (HasReason(message.verb)) {
    // Whatever the reason says, the message stays one parseable line.
    std::string reason = message.reason.substr(0, kMaxReason);
    for (char& c : reason) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    // (No NUL left in it: c_str() is all of it.)
    absl::StrAppend(&text, " reason=", reason.empty() ? "-" : reason.c_str());
  }
  return text;
}

absl::StatusOr<Message> Parse(std::string_view text) {
  auto bad = [&text](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed takeover message (", std::string(why), "): '", std::string(text.substr(0, 80)),
        "'"));
  };
  if (text.size() > kMaxText) return bad("too long");
  if (!Printable(text)) return bad("not printable ASCII");
  std::string_view rest = text;
  bool more = false;
  if (Token(rest, &more) != kMagic || !more) return bad("not the takeover protocol");
  const int64_t version = Decimal(Token(rest, &more));
  if (version < 0) return bad("no version");
  if (version != kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "takeover protocol version ", version, ", but this server speaks version ", kVersion));
  }
  if (!more) return bad("no verb");
  Message m;
  const std::string_view verb = Token(rest, &more);
  bool known = false;
  for (const VerbName& v : kVerbs) {
    if (v.name == verb) {
      m.verb = v.verb;
      known = true;
    }
  }
  if (!known) return bad("unknown verb");
  bool has_pid = false, has_roles = false, has_reason = false;
  while (more) {
    if (rest.substr(0, 7) == "reason=") {
      // The reason runs to the end: it may hold spaces.
      m.reason = std::string(rest.substr(7));
      if (m.reason.empty() || m.reason.size() > kMaxReason) return bad("reason");
      has_reason = true;
      break;
    }
    const std::string_view field = Token(rest, &more);
    const size_t eq = field.find('=');
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : field.substr(eq + 1);
    if (key == "pid" && !has_pid) {
      m.pid = Decimal(value);
      if (m.pid < 0) return bad("pid");
      has_pid = true;
    } else if (key == "roles" && !has_roles) {
      if (value.empty() || value.size() > kMaxRoles ||
          value.find_first_not_of("mpa") != std::string_view::npos) {
        return bad("roles");
      }
      m.roles = std::string(value);
      has_roles = true;
    } else {
      return bad("unexpected field");
    }
  }
  if (has_pid != HasPid(m.verb) || has_roles != HasRoles(m.verb) ||
      has_reason != HasReason(m.verb)) {
    return bad(absl::StrCat("fields of ", std::string(verb)));
  }
  return m;
}

std::string DefaultControlSocket(std::string_view address, uint16_t port) {
  return absl::StrCat("@uring-http/", std::string(address), ":", port);
}

// ------------------------------------------------------------- old side

ControlServer::ControlServer(io::UnixListener listener, Hooks hooks, io::OwnedFd wake)
    : listener_(std::move(listener)),
      name_(listener_.name()),
      hooks_(std::move(hooks)),
      wake_(std::move(wake)) {}

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Listen(std::string_view name,
                                                                     Hooks hooks) {
  auto listener = io::UnixListener::Listen(name);
  if (!listener.ok()) return listener.status();
  io::OwnedFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (wake.get() < 0) return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  return std::unique_ptr<ControlServer>(
      new ControlServer(*std::move(listener), std::move(hooks), std::move(wake)));
}

void ControlServer::Serve() {
  // A thread of its own, with plain blocking calls: a takeover happens once
  // per restart, never on a ring's hot path, and a handshake may wait on a
  // slow successor without holding up any connection.
  thread_ = std::thread([this] { Run(); });
}

ControlServer::~ControlServer() { Close(); }

void ControlServer::Close() {
  Shutdown();
  if (thread_.joinable()) thread_.join();
}

void ControlServer::Shutdown() {
  const uint64_t one = 1;
  // An eventfd write of 1 cannot fail short; it only saturates, which
  // still wakes.
  [[maybe_unused]] ssize_t n = write(wake_.get(), &one, sizeof(one));
}

void ControlServer::Run() {
  pthread_setname_np(pthread_self(), "uring-control");
  for (;;) {
    pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Log(absl::StrCat("control socket ", name_, ": poll: ", strerror(errno)));
      break;
    }
    if (p[1].revents != 0) break;
    if ((p[0].revents & POLLIN) == 0) continue;
    io::OwnedFd conn(accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      // EMFILE and the like: wait a little rather than spin.
      if (errno != EINTR && errno != ECONNABORTED) usleep(100'000);
      continue;
    }
    if (Serve(conn.get())) break;
  }
  listener_.Close();
}

bool ControlServer::WaitReadable(int conn) {
  for (;;) {
    pollfd p[2] = {{conn, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    // The successor first: an answer already there is read even if a
    // shutdown came at the same time.
    if (p[0].revents != 0) return true;
    if (p[1].revents != 0) return false;
  }
}

bool ControlServer::Serve(int conn) {
  auto refuse = [conn](const std::string& reason) {
    Message m;
    m.verb = Verb::kRefused;
    m.reason = reason;
    (void)io::SendMessage(conn, Format(m));
  };
  auto uid = io::PeerUid(conn);
  if (!uid.ok() || !io::TrustedPeer(*uid)) {
    Log(absl::StrCat("control socket ", name_, ": refused a takeover by uid ",
                     uid.ok() ? absl::StrCat(*uid) : "?", ": not this server's user"));
    refuse("not this server's user");
    return false;
  }
  // The hello: with a deadline (a peer that connects and says nothing must
  // not hold the control socket), and Shutdown() still heard.
  pollfd p[2] = {{conn, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  int ready;
  do {
    ready = poll(p, 2, kHelloTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0 || p[0].revents == 0) return p[1].revents != 0;
  auto hello_bytes = io::ReceiveMessage(conn, 0);
  if (!hello_bytes.ok()) return false;
  auto hello = Parse(hello_bytes->bytes);
  if (!hello.ok() || hello->verb != Verb::kHello || !hello_bytes->fds.empty()) {
    const std::string why =
        hello.ok() ? "expected a hello" : std::string(hello.status().message());
    Log(absl::StrCat("control socket ", name_, ": refused a takeover: ", why));
    refuse(why);
    return false;
  }
  const int64_t pid = hello->pid;
  auto offer = hooks_.offer();
  if (!offer.ok()) {
    Log(absl::StrCat("refused the takeover by PID ", pid, ": ", offer.status().message()));
    refuse(std::string(offer.status().message()));
    return false;
  }
  Message sockets;
  sockets.verb = Verb::kSockets;
  sockets.pid = getpid();
  sockets.roles = offer->roles;
  if (absl::Status s = io::SendMessage(conn, Format(sockets), offer->fds); !s.ok()) {
    Log(absl::StrCat("takeover by PID ", pid, " failed: ", s.message(), "; still serving"));
    hooks_.withdrawn();
    return false;
  }
  // Now the successor checks the sockets and starts its accept threads: no
  // deadline (see the header), but Shutdown() ends the wait.
  if (!WaitReadable(conn)) {
    Log(absl::StrCat("stopping during the takeover by PID ", pid,
                     ": it keeps the sockets, this server drains"));
    return true;
  }
  auto reply_bytes = io::ReceiveMessage(conn, 0);
  absl::StatusOr<Message> reply =
      reply_bytes.ok() ? Parse(reply_bytes->bytes) : absl::StatusOr<Message>(reply_bytes.status());
  if (reply.ok() && reply->verb == Verb::kReady && reply_bytes->fds.empty()) {
    hooks_.handed_over(pid);
    // The name goes before "draining": the successor listens on it next.
    listener_.Close();
    Message draining;
    draining.verb = Verb::kDraining;
    (void)io::SendMessage(conn, Format(draining));
    return true;
  }
  std::string why;
  if (!reply.ok()) {
    why = std::string(reply.status().message());
  } else if (reply->verb == Verb::kAbort) {
    why = reply->reason;
  } else {
    why = absl::StrCat("unexpected ", std::string(NameOf(reply->verb)));
  }
  Log(absl::StrCat("takeover by PID ", pid, " abandoned (", why, "); still serving"));
  hooks_.withdrawn();
  return false;
}

// ------------------------------------------------------------- new side

absl::StatusOr<Successor> Successor::Connect(std::string_view control_socket_view) {
  const std::string control_socket(control_socket_view);
  auto conn = io::ConnectUnix(control_socket);
  if (!conn.ok()) return conn.status();
  auto uid = io::PeerUid(conn->get());
  if (!uid.ok()) return uid.status();
  if (!io::TrustedPeer(*uid)) {
    return absl::PermissionDeniedError(absl::StrCat("the process on ", control_socket,
                                                    " runs as uid ", *uid,
                                                    ", neither this user nor root"));
  }
  Message hello;
  hello.verb = Verb::kHello;
  hello.pid = getpid();
  if (absl::Status s = io::SendMessage(conn->get(), Format(hello)); !s.ok()) return s;
  auto reply = io::ReceiveMessage(conn->get(), kAnswerTimeoutMs, kMaxText, kMaxRoles);
  if (!reply.ok()) {
    return absl::Status(reply.status().code(),
                        absl::StrCat("no sockets from ", control_socket, ": ",
                                     reply.status().message()));
  }
  auto m = Parse(reply->bytes);
  if (!m.ok()) return m.status();
  if (m->verb == Verb::kRefused) {
    return absl::FailedPreconditionError(
        absl::StrCat("the server on ", control_socket, " refused: ", m->reason));
  }
  if (m->verb != Verb::kSockets) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected sockets, got ", std::string(NameOf(m->verb))));
  }
  if (reply->fds.size() != m->roles.size()) {
    return absl::DataLossError(absl::StrCat("the server on ", control_socket, " sent ",
                                            reply->fds.size(), " descriptor(s) for roles ",
                                            m->roles));
  }
  Successor successor;
  successor.conn_ = *std::move(conn);
  successor.pid_ = m->pid;
  successor.roles_ = m->roles;
  successor.fds_ = std::move(reply->fds);
  return successor;
}

void Successor::Abort(std::string_view reason) {
  if (conn_.get() < 0) return;
  Message abort;
  abort.verb = Verb::kAbort;
  abort.reason = std::string(reason);
  (void)io::SendMessage(conn_.get(), Format(abort));
  conn_.Reset();
}

absl::Status Successor::Complete() {
  Message ready;
  ready.verb = Verb::kReady;
  if (absl::Status s = io::SendMessage(conn_.get(), Format(ready)); !s.ok()) return s;
  auto reply = io::ReceiveMessage(conn_.get(), kAnswerTimeoutMs);
  conn_.Reset();
  if (!reply.ok()) return reply.status();
  auto m = Parse(reply->bytes);
  if (!m.ok()) return m.status();
  if (m->verb != Verb::kDraining) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected draining, got ", std::string(NameOf(m->verb))));
  }
  return absl::OkStatus();
}

}  // namespace uring_http::serving::takeover
