// The WebSocket opening handshake, server side (RFC 6455 4.2): whether a
// request may be upgraded, and what the 101 says.
//
// CheckUpgrade (4.2.1): a GET of HTTP/1.1 with an Upgrade field naming
// "websocket", a Connection field naming "Upgrade" (tokens, any case, in
// any of their fields), one Sec-WebSocket-Key that is the base64 of 16
// bytes, and Sec-WebSocket-Version 13. A version other than 13 is a 426
// with "Sec-WebSocket-Version: 13" (4.4); anything else missing or
// malformed a 400.
//
// permessage-deflate (RFC 7692 7): the client's offers, in order; the
// first one whose parameters are all known, each at most once, with valid
// values, is taken, within the server's own limits (its window and its
// context takeover); an offer that asks for what cannot be given
// (server_max_window_bits below what the server allows) is declined
// (7.1.2.1). The response names what was agreed.
//
// Thread-safety: stateless.
#ifndef URING_HTTP_SRC_WS_HANDSHAKE_H_
#define URING_HTTP_SRC_WS_HANDSHAKE_H_

#include <optional>
#include <string>
#include <string_view>

#include "src/http/request.h"

namespace uring_http::ws {

struct UpgradeCheck {
  int status = 0;                 // 0: it may be upgraded; else 400 or 426
  const char* error = nullptr;    // why not
  std::string_view key;           // Sec-WebSocket-Key
  std::string_view protocols;     // Sec-WebSocket-Protocol (first field), for the route
  std::string_view origin;        // Origin, for the route
};
UpgradeCheck CheckUpgrade(const http::Request& request);

// Sec-WebSocket-Accept for `key`: base64(SHA-1(key + the RFC's GUID)).
std::string AcceptKey(std::string_view key);

struct DeflateParams {
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  int server_max_window_bits = 15;  // our compressor's window (8 is used as 9: zlib)
  int client_max_window_bits = 15;  // the client's, which we inflate with
  bool client_window_asked = false;  // we asked for that smaller window
};

struct DeflateLimits {
  bool enabled = true;
  int max_window_bits = 15;      // our compressor's largest window (9..15)
  bool context_takeover = true;  // false: we never keep a context between messages
  // The client's side: false asks it to keep no context between messages
  // (client_no_context_takeover, which a server may ask for unoffered,
  // RFC 7692 7.1.1.2); a smaller window is asked for only of a client that
  // offered client_max_window_bits (7.1.2.2).
  bool client_context_takeover = true;
  int client_max_window_bits = 15;
};

// The agreed parameters for the Sec-WebSocket-Extensions fields' values
// (`offers`, joined by ", " if there were several), or nullopt (no
// permessage-deflate).
std::optional<DeflateParams> NegotiateDeflate(std::string_view offers, const DeflateLimits& ours);
// The response's Sec-WebSocket-Extensions value for `agreed`.
std::string DeflateResponse(const DeflateParams& agreed);

}  // namespace uring_http::ws

#endif  // URING_HTTP_SRC_WS_HANDSHAKE_H_
