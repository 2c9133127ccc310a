// systemd's readiness protocol (Type=notify), without libsystemd: one
// datagram to the socket named in $NOTIFY_SOCKET, if the variable is set.
// Messages: "READY=1" once serving, "STOPPING=1" when the drain begins.
#ifndef URING_HTTP_SRC_SERVING_SYSTEMD_NOTIFY_H_
#define URING_HTTP_SRC_SERVING_SYSTEMD_NOTIFY_H_

#include <string_view>

namespace uring_http::serving {

// Returns false when $NOTIFY_SOCKET is unset or the send failed.
bool SystemdNotify(std::string_view message);

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_SYSTEMD_NOTIFY_H_
