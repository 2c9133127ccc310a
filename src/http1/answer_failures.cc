// Connection, part five: what the failure log says of an exchange, and the
// 500 that replaces a handler's response when one of its headers was refused
// (Response::header_refused: the response is never sent without it).
#include <algorithm>
#include <string>
#include <string_view>

#include "src/http1/connection.h"
#include "src/router/failure_log.h"

namespace uring_http::http1 {

void Connection::RespondRefused(const http::Response& response, bool close) {
  router::LogFailure(FailureWhere(&response, /*head_at_hand=*/true),
                     response.HeaderRefusal() + ": answered 500");
  if (env_->access_log) NoteRequestId(response);
  RespondError(500, close);
}

router::FailureContext Connection::FailureWhere(const http::Response* response,
                                                bool head_at_hand) const {
  router::FailureContext where;
  if (ex_.route != nullptr) where.route = ex_.route->name();
  // The head: where it is now while the exchange is being answered, else
  // what the access log kept ("-" without one).
  std::string_view head;
  if (head_at_hand && ex_.head_ptr != nullptr) {
    head = std::string_view(ex_.head_ptr, ex_.head_len);
  } else if (env_->access_log) {
    head = RequestLine();
  }
  const size_t line_end = std::min(head.find('\n'), head.size());
  const std::string_view line = head.substr(0, line_end);
  const size_t space = line.find(' ');
  if (space != std::string_view::npos && line != "-") {
    where.method = line.substr(0, space);
    std::string_view target = line.substr(space + 1);
    target = target.substr(0, std::min({target.find(' '), target.find('?'), target.size()}));
    where.path = target;
  }
  if (response != nullptr) {
    where.request_id = response->FindHeader("x-request-id").value_or(std::string_view());
  }
  if (where.request_id.empty() && head_at_hand && ex_.head_ptr != nullptr) {
    // The request's own, from its head's lines.
    for (std::string_view rest = head.substr(std::min(line_end + 1, head.size()));
         !rest.empty();) {
      const size_t end = std::min(rest.find('\n'), rest.size());
      std::string_view field = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));
      constexpr std::string_view kName = "x-request-id:";
      if (field.size() <= kName.size()) continue;
      bool same = true;
      for (size_t i = 0; i < kName.size() && same; ++i) same = (field[i] | 0x20) == kName[i];
      if (!same) continue;
      field.remove_prefix(kName.size());
      while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) {
        field.remove_prefix(1);
      }
      while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) {
        field.remove_suffix(1);
      }
      where.request_id = field;
      break;
    }
  }
  if (where.request_id.empty() && ex_.request_id_len > 0) {
    where.request_id = std::string_view(request_id_, ex_.request_id_len);
  }
  return where;
}

}  // namespace uring_http::http1
