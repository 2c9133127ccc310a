// Server's listening sockets: the addresses it wants (ServerConfig::address
// and port with plain_port, or ServerConfig::listen), where their sockets
// come from (systemd, a predecessor, bind()), and how they are shared out
// over the rings.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/io/listen_fds.h"
#include "src/io/socket_address.h"
#include "src/serving/server_core.h"

namespace uring_http::serving {
namespace {

// The same place: family, address and port (the port any when `want`'s is
// 0), or the same Unix path.
bool Fits(const io::SocketAddress& want, const io::SocketAddress& got) {
  if (want.is_ip() && want.port() == 0 && got.is_ip()) {
    io::SocketAddress any_port = want;
    any_port.set_port(got.port());
    return any_port == got;
  }
  return want == got;
}

std::string Texts(const std::vector<io::SocketAddress>& addresses) {
  std::vector<std::string> texts;
  for (const io::SocketAddress& a : addresses) texts.push_back(a.ToString());
  return absl::StrJoin(texts, ", ");
}

}  // namespace

absl::StatusOr<std::vector<ServerCore::Wanted>> ServerCore::WantedAddresses() const {
  const bool ipv6 = io::Ipv6Available();
  std::vector<Wanted> wanted;
  if (config_.listen.empty()) {
    if (config_.plain_port >= 0 && !config_.tls.enabled()) {
      return absl::InvalidArgumentError("a plain-HTTP port (--plain-port) goes with TLS");
    }
    auto main = io::ResolveListenHost(config_.address, config_.port, ipv6);
    if (!main.ok()) return main.status();
    for (const io::SocketAddress& a : *main) wanted.push_back({a, takeover::kRoleMain, 0});
    if (config_.plain_port >= 0) {
      auto plain =
          io::ResolveListenHost(config_.address, static_cast<uint16_t>(config_.plain_port), ipv6);
      if (!plain.ok()) return plain.status();
      for (const io::SocketAddress& a : *plain) wanted.push_back({a, takeover::kRolePlain, 1});
    }
    return wanted;
  }
  if (config_.plain_port >= 0) {
    return absl::InvalidArgumentError(
        "a plain-HTTP port (--plain-port) beside listen addresses (--listen): list the "
        "plain-HTTP address with the others");
  }
  for (size_t i = 0; i < config_.listen.size(); ++i) {
    const ListenAddress& l = config_.listen[i];
    if (l.tls && !config_.tls.enabled()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "listen address ", l.address, " speaks TLS: it needs a certificate and key"));
    }
    if (l.tls && l.admin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "admin listen address ", l.address, ": the admin endpoints speak plain HTTP only"));
    }
    auto resolved = io::ResolveListenAddress(l.address, ipv6);
    if (!resolved.ok()) return resolved.status();
    const char role = l.admin                            ? takeover::kRoleAdmin
                      : l.tls || !config_.tls.enabled() ? takeover::kRoleMain
                                                        : takeover::kRolePlain;
    for (const io::SocketAddress& a : *resolved) wanted.push_back({a, role, i});
  }
  const bool any_main = std::any_of(wanted.begin(), wanted.end(),
                                    [](const Wanted& w) { return w.role == takeover::kRoleMain; });
  if (!any_main) {
    return absl::InvalidArgumentError(
        config_.tls.enabled()
            ? "TLS certificates, but no listen address speaks TLS (--listen=ADDR:PORT,tls)"
            : "no listen address but admin ones: nothing would serve the routes");
  }
  return wanted;
}

std::vector<io::Listener>& ServerCore::ListenersFor(char role) {
  if (role == takeover::kRolePlain) return plain_listeners_;
  if (role == takeover::kRoleAdmin) return admin_listeners_;
  return listeners_;
}

absl::Status ServerCore::SetUpListeners(std::optional<takeover::Successor>* successor) {
  auto wanted = WantedAddresses();
  if (!wanted.ok()) return wanted.status();
  std::vector<bool> have(wanted->size(), false);
  const int defer_accept_s = static_cast<int>(config_.defer_accept_s);
  bool from_systemd = false;
  if (config_.systemd_sockets) {
    auto fds = io::TakeListenFds();
    if (!fds.ok()) return fds.status();
    if (!fds->empty() && config_.takeover) {
      return absl::InvalidArgumentError(
          "--takeover with systemd's sockets (LISTEN_FDS): systemd keeps them across restarts "
          "itself");
    }
    for (int fd : *fds) {
      auto listener = io::Listener::Adopt(fd);
      if (!listener.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("systemd's socket (LISTEN_FDS): ", listener.status().message()));
      }
      if (absl::Status s = listener->SetOptions(defer_accept_s); !s.ok()) return s;
      // Its role is the wanted address it is; else the one on its port (or
      // path: systemd's unit names the address, not this command line);
      // else a main one.
      char role = takeover::kRoleMain;
      const io::SocketAddress& local = listener->local();
      const auto by_place = [&](const Wanted& w) { return Fits(w.address, local); };
      const auto by_port = [&](const Wanted& w) {
        return local.is_ip() && w.address.is_ip() && w.address.port() != 0 &&
               w.address.port() == local.port();
      };
      auto it = std::find_if(wanted->begin(), wanted->end(), by_place);
      if (it == wanted->end()) it = std::find_if(wanted->begin(), wanted->end(), by_port);
      if (it != wanted->end()) role = it->role;
      ListenersFor(role).push_back(*std::move(listener));
    }
    if (!fds->empty()) {
      if (listeners_.empty()) {
        return absl::InvalidArgumentError(
            "systemd passed sockets for the plain-HTTP or admin addresses only");
      }
      listeners_origin_ = "from systemd";
      keep_default_ = true;
      keep_listeners_.store(true);
      from_systemd = true;
      // What systemd did not pass for a role is bound; the main ones are its.
      for (size_t i = 0; i < wanted->size(); ++i) {
        have[i] = !ListenersFor((*wanted)[i].role).empty();
      }
    }
  }
  if (!from_systemd && config_.takeover) {
    const std::string name =
        config_.takeover_from.empty()
            ? takeover::DefaultControlSocket((*wanted)[0].address.HostText(),
                                             (*wanted)[0].address.port())
            : config_.takeover_from;
    auto connected = takeover::Successor::Connect(name);
    if (absl::IsNotFound(connected.status())) {
      // Nobody to take over from: a first start with the same command line
      // as every restart. The port check below still refuses a port that
      // some other program listens on.
      std::fprintf(stderr, "uring-http: --takeover: no server answers on %s: starting afresh\n",
                   name.c_str());
    } else if (!connected.ok()) {
      return absl::Status(connected.status().code(),
                          absl::StrCat("--takeover: ", connected.status().message()));
    } else {
      *successor = *std::move(connected);
      if (absl::Status s = TakeOver(**successor, *wanted, &have); !s.ok()) return s;
    }
  }
  if (absl::Status s = BindListeners(*wanted, have); !s.ok()) return s;

  port_.store(listeners_[0].port(), std::memory_order_release);
  listen_address_ = listeners_[0].address();
  if (!plain_listeners_.empty()) {
    plain_port_.store(plain_listeners_[0].port(), std::memory_order_release);
    plain_address_ = plain_listeners_[0].local().ToString();
  }
  // Each address once, in the order wanted; then any other a predecessor or
  // systemd gave.
  const auto add = [this](const io::Listener& l, char role) {
    const std::string text = l.local().ToString();
    for (const ListeningAddress& a : listening_) {
      if (a.text == text) return;
    }
    ListeningAddress a;
    a.text = text;
    a.host = l.address();
    a.port = l.port();
    a.tls = role == takeover::kRoleMain && config_.tls.enabled();
    a.admin = role == takeover::kRoleAdmin;
    listening_.push_back(a);
  };
  for (const Wanted& w : *wanted) {
    for (const io::Listener& l : ListenersFor(w.role)) {
      if (Fits(w.address, l.local())) add(l, w.role);
    }
  }
  for (char role : {takeover::kRoleMain, takeover::kRolePlain, takeover::kRoleAdmin}) {
    for (const io::Listener& l : ListenersFor(role)) add(l, role);
  }
  return absl::OkStatus();
}

absl::Status ServerCore::TakeOver(takeover::Successor& successor, const std::vector<Wanted>& wanted,
                              std::vector<bool>* have) {
  // From now on the sockets are the old server's too: stopping (a failed
  // start, a signal) must not shut them down under it.
  keep_listeners_.store(true);
  const std::string from = absl::StrCat("PID ", successor.pid());
  for (size_t i = 0; i < successor.fds().size(); ++i) {
    const char role = successor.roles()[i];
    // A Unix socket's path is the predecessor's to hand on: ours to remove.
    auto listener = io::Listener::Adopt(successor.fds()[i].get(), /*owns_path=*/true);
    if (!listener.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--takeover: a socket from ", from, ": ", listener.status().message()));
    }
    successor.fds()[i].Release();  // the Listener's now
    const io::SocketAddress local = listener->local();
    std::vector<io::SocketAddress> same_role;
    bool fits = false;
    for (size_t j = 0; j < wanted.size(); ++j) {
      if (wanted[j].role != role) continue;
      same_role.push_back(wanted[j].address);
      if (Fits(wanted[j].address, local)) {
        (*have)[j] = true;
        fits = true;
      }
    }
    if (!fits) {
      // Its queue would be lost with the old server if nobody took it.
      if (role == takeover::kRolePlain && config_.listen.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "--takeover: ", from, " also serves plain HTTP on ", local.ToString(),
            ": start this one with --plain-port=", local.port(),
            " (and TLS) to take that over too"));
      }
      const char* kind = role == takeover::kRolePlain   ? " (plain HTTP)"
                         : role == takeover::kRoleAdmin ? " (admin)"
                                                        : "";
      return absl::FailedPreconditionError(absl::StrCat(
          "--takeover: ", from, " listens on ", local.ToString(), kind,
          same_role.empty() ? ", where this server would not"
                            : absl::StrCat(", this server would on ", Texts(same_role))));
    }
    ListenersFor(role).push_back(*std::move(listener));
  }
  if (listeners_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("--takeover: ", from, " sent no listener"));
  }
  // They fit: this server's options on them (its --defer-accept may differ).
  for (char role : {takeover::kRoleMain, takeover::kRolePlain, takeover::kRoleAdmin}) {
    for (io::Listener& l : ListenersFor(role)) {
      if (absl::Status s = l.SetOptions(static_cast<int>(config_.defer_accept_s)); !s.ok()) {
        return s;
      }
    }
  }
  listeners_origin_ = absl::StrCat("inherited from ", from);
  return absl::OkStatus();
}

absl::Status ServerCore::BindListeners(const std::vector<Wanted>& wanted,
                                   const std::vector<bool>& have) {
  io::Listener::BindOptions options;
  options.backlog = config_.listen_backlog;
  options.defer_accept_s = static_cast<int>(config_.defer_accept_s);
  // A port 0 is picked for an entry's first address; its others (localhost's
  // ::1 and 127.0.0.1) take the same.
  std::vector<std::pair<size_t, uint16_t>> picked;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (have[i]) continue;
    io::SocketAddress address = wanted[i].address;
    if (address.is_ip() && address.port() == 0) {
      for (const auto& [entry, port] : picked) {
        if (entry == wanted[i].entry) address.set_port(port);
      }
    }
    // Our own listeners join each other's SO_REUSEPORT group, and so would
    // another process's of the same user: a server started by mistake while
    // the old one still runs would silently share its traffic. Refuse that.
    if (absl::Status s = io::Listener::CheckNotListening(address); !s.ok()) {
      if (!absl::IsAlreadyExists(s)) return s;
      return absl::FailedPreconditionError(absl::StrCat(
          s.message(),
          ". Is a server still running there? Stop it first, or start this one with --takeover "
          "to take its listening sockets over without losing a connection"));
    }
    // One per accept thread, so that the kernel spreads connections over
    // them; with port 0 the first one picks the port and the others join
    // it. A Unix socket is one, shared (SO_REUSEPORT is TCP's and UDP's).
    const int count = address.is_unix() ? 1 : config_.accept_threads;
    for (int k = 0; k < count; ++k) {
      auto listener = io::Listener::Bind(address, options);
      if (!listener.ok()) return listener.status();
      address = listener->local();
      ListenersFor(wanted[i].role).push_back(*std::move(listener));
    }
    picked.emplace_back(wanted[i].entry, address.port());
  }
  return absl::OkStatus();
}

std::vector<int> ServerCore::ListenersOf(const std::vector<io::Listener>& listeners,
                                     int loop) const {
  // Address by address (several of them: --listen, localhost's two). Of an
  // address's N sockets over M loops: bound, N = M, one each. Taken over
  // from a server with another -A: every socket must be accepted from (its
  // queue would be lost otherwise), so with N > M loop i takes sockets i,
  // i + M, ...; with N < M (a Unix socket, systemd's one socket) loops
  // share them, each accepting from the same socket through its own ring.
  std::vector<int> fds;
  const size_t m = static_cast<size_t>(config_.accept_threads);
  std::vector<bool> done(listeners.size(), false);
  for (size_t first = 0; first < listeners.size(); ++first) {
    if (done[first]) continue;
    std::vector<int> group;
    for (size_t j = first; j < listeners.size(); ++j) {
      if (!done[j] && listeners[j].local() == listeners[first].local()) {
        group.push_back(listeners[j].fd());
        done[j] = true;
      }
    }
    const size_t n = group.size();
    if (n >= m) {
      for (size_t j = static_cast<size_t>(loop); j < n; j += m) fds.push_back(group[j]);
    } else {
      fds.push_back(group[static_cast<size_t>(loop) % n]);
    }
  }
  return fds;
}

}  // namespace uring_http::serving
