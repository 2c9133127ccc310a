// Takeover: a restart that loses no connection. A new server started with
// --takeover receives the running server's listening sockets over a Unix
// socket (SCM_RIGHTS): the same sockets, so the same accept queues, and a
// connection waiting in one is accepted by whichever process accepts next.
// Nothing depends on net.ipv4.tcp_migrate_req. The running server ("the
// old one") listens for this on its control socket; ControlServer is that
// side, Successor the new process's side.
//
// The handshake, one SOCK_SEQPACKET record per message (Message below):
//
//   new -> old   hello pid=N                 (after checking the old's uid)
//   old -> new   sockets pid=N roles=mmp     with one descriptor per role
//                                            letter: m -p, p --plain-port
//            or  refused reason=...          (draining already, version, ...)
//   new          checks the sockets against its configuration, then starts
//                its accept threads on them
//   new -> old   ready                       or abort reason=...
//   old          stops accepting (cancels its accepts; the sockets stay
//                open, never shut down: that would reset the connections in
//                the queues the new process now accepts from), closes its
//                control socket and drains, as on SIGTERM
//   old -> new   draining
//   new          listens on the control socket in its turn
//
// If the new process dies or aborts before "ready", the old one keeps
// serving as if nothing had happened (it never stopped accepting). Between
// "sockets" and "draining" both processes may accept from the queues: a
// connection the old one accepts then is served and drained like any other.
// The old side waits for "ready" without a deadline (a new process that
// hangs holds only the control thread; the kernel closes the connection if
// it dies), so that a late "ready" never meets an old server that gave up
// and will shut the sockets down later.
//
// Thread-safety: Format/Parse are pure. A ControlServer runs its own thread
// and calls its hooks there; Shutdown() from any thread. A Successor
// belongs to the thread that created it.
#ifndef URING_HTTP_SRC_SERVING_TAKEOVER_H_
#define URING_HTTP_SRC_SERVING_TAKEOVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/io/unix_socket.h"

namespace uring_http::serving::takeover {

inline constexpr int kVersion = 1;
inline constexpr char kRoleMain = 'm';   // a listener of -p
inline constexpr char kRolePlain = 'p';  // a listener of --plain-port (beside TLS)
inline constexpr char kRoleAdmin = 'a';  // an admin listener (--admin-listen)

enum class Verb { kHello, kSockets, kRefused, kReady, kAbort, kDraining };

// One message. On the wire:
//   "uring-http-takeover <version> <verb>[ pid=<n>][ roles=<letters>][ reason=<text>]"
// with exactly the fields its verb has: hello and sockets a pid, sockets its
// roles, refused and abort a reason (printable ASCII, to the end).
struct Message {
  Verb verb = Verb::kHello;
  int64_t pid = 0;
  std::string roles;
  std::string reason;
};
std::string Format(const Message& message);
// InvalidArgument for anything but a well-formed message of kVersion;
// FailedPrecondition naming both versions for another version.
absl::StatusOr<Message> Parse(std::string_view text);

// The control socket of a server listening on address:port:
// "@uring-http/ADDRESS:PORT" (abstract namespace, see src/io/unix_socket.h).
std::string DefaultControlSocket(std::string_view address, uint16_t port);

// The running server's side.
class ControlServer {
 public:
  struct Offer {
    std::string roles;     // one letter per descriptor
    std::vector<int> fds;  // still the server's: sent, not given away
  };
  struct Hooks {
    // The sockets to hand over, or why not (the message goes to the
    // successor). On the control thread.
    std::function<absl::StatusOr<Offer>()> offer;
    // The successor (process `pid`) serves on them: stop accepting and
    // drain, keeping the sockets open. The control socket is closed right
    // after, and "draining" sent.
    std::function<void(int64_t pid)> handed_over;
    // The successor gave up or died after the offer: keep serving.
    std::function<void()> withdrawn;
  };
  // Listens on `name`; successors wait in its queue until Serve().
  static absl::StatusOr<std::unique_ptr<ControlServer>> Listen(std::string_view name,
                                                               Hooks hooks);
  // Starts the control thread, which calls the hooks from now on. Once.
  void Serve();
  // Shutdown() and joins the thread.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // No more takeovers: the thread closes the control socket and ends (a
  // handshake under way is dropped: the successor sees the connection
  // close). Any thread, the control thread too; idempotent.
  void Shutdown();
  // Shutdown() and waits for the thread to end: the hooks are not called
  // any more once it returns. Not from the control thread.
  void Close();
  const std::string& name() const { return name_; }

 private:
  ControlServer(io::UnixListener listener, Hooks hooks, io::OwnedFd wake);
  void Run();
  // One successor's handshake; true when the sockets were handed over.
  bool Serve(int conn);
  // Waits for `conn` to be readable or for Shutdown(); false on Shutdown().
  bool WaitReadable(int conn);

  io::UnixListener listener_;
  const std::string name_;
  Hooks hooks_;
  io::OwnedFd wake_;  // an eventfd: Shutdown() writes it
  std::thread thread_;
};

// The new process's side.
class Successor {
 public:
  // Connects to the server on `control_socket`, checks it runs as this user
  // (or root), says hello and receives its sockets. NotFound when nobody
  // listens there; FailedPrecondition when it refused (the reason inside).
  static absl::StatusOr<Successor> Connect(std::string_view control_socket);
  Successor(Successor&&) = default;
  Successor& operator=(Successor&&) = default;

  int64_t pid() const { return pid_; }  // the old server's
  const std::string& roles() const { return roles_; }
  // The received descriptors, one per role letter. The caller takes them
  // (release each one it keeps); those left are closed with the Successor.
  std::vector<io::OwnedFd>& fds() { return fds_; }

  // The sockets do not fit this server: tell the old one, which keeps
  // serving. Best effort.
  void Abort(std::string_view reason);
  // This server accepts on the sockets: tell the old one to drain, and wait
  // (a few seconds at most) for it to confirm. An error says the old one did
  // not confirm; the sockets are this server's all the same.
  absl::Status Complete();

 private:
  Successor() = default;
  io::OwnedFd conn_;
  int64_t pid_ = 0;
  std::string roles_;
  std::vector<io::OwnedFd> fds_;
};

}  // namespace uring_http::serving::takeover

#endif  // URING_HTTP_SRC_SERVING_TAKEOVER_H_
