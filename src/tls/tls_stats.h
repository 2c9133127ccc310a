// TlsStats: what the TLS layer of one loop counts (the ring thread writes,
// anyone reads; /metrics sums over loops).
#ifndef URING_HTTP_SRC_TLS_TLS_STATS_H_
#define URING_HTTP_SRC_TLS_TLS_STATS_H_

#include "src/http1/connection_host.h"

namespace uring_http::tls {

// Counters (the ring thread writes, anyone reads; summed over loops).
struct TlsStats {
  http1::Counter handshakes;         // completed
  http1::Counter resumed;            // of those, resumed from a ticket
  http1::Counter tls13;
  http1::Counter tls12;
  http1::Counter offloaded;          // handshake steps given to a worker
  http1::Counter steps_reclaimed;    // ... that waited too long: run on the ring
  // Failures, by reason.
  http1::Counter failed_timeout;     // no complete handshake within the timeout
  http1::Counter failed_plain_http;  // plain HTTP sent to the TLS port: 400
  http1::Counter failed_protocol;    // not TLS, bad records, alerts, no shared cipher
  http1::Counter failed_peer_closed; // the peer closed or reset mid-handshake
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_STATS_H_
