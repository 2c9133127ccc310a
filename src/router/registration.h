// What a Router registration (Fast, Slow, FastStream, SetFallback, Static,
// SetErrorHandler, SetDefaultErrorHandler) returns: its outcome, which a
// program may look at, or may ignore without a cast.
//
// Ignoring it loses nothing: the Router also records every failed
// registration, naming the route ("GET /users/{name}: ..."), and a Server
// refuses to start with such a router (Server::Run returns that error, and
// the shipped binary prints it). So a duplicate route cannot be silently
// lost, as it could when registration returned an absl::Status, whose
// [[nodiscard]] taught programs to write `(void)router.Fast(...)`.
//
// It converts to absl::Status for code that wants one (`absl::Status s =
// router.Fast(...)`, `return router.Static(...)`).
//
// Thread-safety: a plain value.
#ifndef URING_HTTP_SRC_ROUTER_REGISTRATION_H_
#define URING_HTTP_SRC_ROUTER_REGISTRATION_H_

#include <ostream>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

namespace uring_http::router {

class Registration {
 public:
  Registration() = default;
  Registration(absl::Status status) : status_(std::move(status)) {}  // NOLINT: implicit

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  absl::StatusCode code() const { return status_.code(); }
  std::string_view message() const {
    const auto m = status_.message();
    return std::string_view(m.data(), m.size());
  }
  operator const absl::Status&() const { return status_; }  // NOLINT: implicit

 private:
  absl::Status status_;
};

inline std::ostream& operator<<(std::ostream& out, const Registration& r) {
  return out << r.status();
}

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_REGISTRATION_H_
