// http1::Connection, a WebSocket route's request: the opening handshake
// (RFC 6455 4.2) checked, the route's `upgrade` asked, and the socket
// handed to a ws::Connection, which sends the 101; or the refusal.
#include <cstdio>
#include <string>

#include "src/http1/connection.h"
#include "src/router/middleware.h"
#include "src/ws/connection.h"
#include "src/ws/handshake.h"

namespace uring_http::http1 {

void Connection::AnswerWebSocketRoute(http::Request& request, const router::Route& route,
                                      std::string_view rest) {
  const router::Pipeline& pipeline = env_->router->pipeline();
  if (pipeline.Active(route.options.middleware)) {
    // The befores run on the handshake (an auth check, a rate limit): one
    // that answers refuses it. The afters of those that pass see no
    // answer: the 101 is the WebSocket's.
    http::Response response;
    bool answered = false;
    const size_t ran =
        router::RunBefores(pipeline, route.options.middleware, request, response, &answered);
    if (answered) {
      pipeline.MaybeFailPage(request, response);
      router::RunAfters(pipeline, route.options.middleware, ran, request, response);
      ex_.chain_done = true;
      unparsed_ = rest;
      Respond(response);
      return;
    }
  }
  unparsed_ = rest;
  const ws::UpgradeCheck check = ws::CheckUpgrade(request);
  bool asked = false;
  for (std::string_view token : request.HeaderElements("upgrade")) {
    asked = asked || http::HeaderNameEquals(token, "websocket");
  }
  if (!asked || check.status == 426) {
    // Not a handshake (a plain GET), or a version we do not speak: 426
    // names what to upgrade to (RFC 9110 15.5.22, RFC 6455 4.4).
    return RespondUpgradeRequired(check.error != nullptr ? check.error
                                                         : "this is a WebSocket endpoint");
  }
  if (check.status != 0) {
    env_->stats->bad_requests.Add();
    return AnswerError(check.status, /*close=*/false, &request);
  }
  if (!out_.empty() || out_.send_inflight() || out_.notification_pending() || task_inflight_ ||
      shutdown_inflight_) {
    // Earlier answers are still going out (a pipelined handshake): the
    // socket cannot change hands under them.
    env_->stats->bad_requests.Add();
    return AnswerError(400, /*close=*/true, &request);
  }
  ws::Upgrade upgrade;
  upgrade.request = &request;
  upgrade.offered_protocols = check.protocols;
  upgrade.origin = check.origin;
  const ws::Behavior& behavior = *route.websocket;
  if (behavior.upgrade) {
    const int status = behavior.upgrade(upgrade);
    if (status != 0) {
      return AnswerError(status >= 400 && status <= 599 ? status : 403, /*close=*/false,
                         &request);
    }
  }
  const std::string accept = ws::AcceptKey(check.key);
  ws::Accepted accepted;
  accepted.behavior = &behavior;
  accepted.accept = accept;
  accepted.upgrade = &upgrade;
  const ws::Compression compression = behavior.compression == ws::Compression::kDefault
                                          ? env_->config->ws_deflate
                                          : behavior.compression;
  if (compression == ws::Compression::kShared || compression == ws::Compression::kDedicated) {
    // Every Sec-WebSocket-Extensions field, as one list of offers.
    std::string offers;
    for (std::string_view value : request.HeaderValues("sec-websocket-extensions")) {
      if (!offers.empty()) offers.append(", ");
      offers.append(value);
    }
    ws::DeflateLimits ours;
    if (compression == ws::Compression::kShared) {
      // No context either way: the thread's zlib streams serve every socket.
      ours.context_takeover = false;
      ours.client_context_takeover = false;
    } else {
      ours.max_window_bits = ws::kDedicatedWindowBits;
      ours.client_max_window_bits = ws::kDedicatedWindowBits;
    }
    if (!offers.empty()) {
      accepted.deflate = ws::NegotiateDeflate(offers, ours);
      accepted.dedicated = compression == ws::Compression::kDedicated;
    }
  }
  // The exchange ends with the 101 (metrics, the access log); nothing of
  // HTTP/1 follows it, so it is not finished as an answer would be (that
  // would read the next request from what are now frames).
  ex_.status = 101;
  env_->host->ExchangeDone(
      slot_, exchange::ConnectionHost::Exchange{ex_.route_id, 101, ex_.started_ns,
                                                env_->access_log ? RequestLine() : std::string_view(),
                                                0, &client_address(), {}});
  ReleaseLimits();
  conn::Handoff handoff = Detach();
  handoff.bytes = rest;
  handoff.websocket = &accepted;
  env_->host->HandOff(slot_, conn::ProtocolId::kWebSocket, handoff);
}

void Connection::RespondUpgradeRequired(std::string_view why) {
  const SerializeOptions options = HeadOptions(/*can_keep=*/true);
  std::string body = "426 Upgrade Required: ";
  body.append(why);
  body.append(" (RFC 6455: GET with Upgrade: websocket, Sec-WebSocket-Version: 13)\n");
  char head[256];
  const int n = std::snprintf(
      head, sizeof(head),
      "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nConnection: Upgrade%s\r\n"
      "Sec-WebSocket-Version: 13\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
      options.keep_alive ? "" : ", close", body.size());
  URING_CHECK(n > 0 && static_cast<size_t>(n) < sizeof(head));
  URING_CHECK(out_.Append(std::string_view(head, static_cast<size_t>(n))));
  if (!ex_.head) URING_CHECK(out_.Append(body));
  ex_.status = 426;
  ex_.response_bytes = body.size();
  Answered();
}

}  // namespace uring_http::http1
