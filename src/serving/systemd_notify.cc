#include "src/serving/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace uring_http::serving {

bool SystemdNotify(std::string_view message) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path, len);
  // A leading '@' names an abstract socket: its first byte is NUL.
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const bool ok = sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                         reinterpret_cast<sockaddr*>(&addr), addr_len) ==
                  static_cast<ssize_t>(message.size());
  close(fd);
  return ok;
}

}  // namespace uring_http::serving
