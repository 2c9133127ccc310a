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
  http1::Counter failed_client_cert; // a client certificate missing or not verified
  // Client certificates (--tls-client-ca): handshakes with one verified,
  // and failures by reason (ClientCertFailure in tls_context.h).
  http1::Counter client_certs_verified;
  http1::Counter client_cert_missing;
  http1::Counter client_cert_untrusted;
  http1::Counter client_cert_expired;
  http1::Counter client_cert_invalid;
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_STATS_H_
