// TlsStats: what the TLS layer of one loop counts (the ring thread writes,
// anyone reads; /metrics sums over loops).
#ifndef URING_HTTP_SRC_TLS_TLS_STATS_H_
#define URING_HTTP_SRC_TLS_TLS_STATS_H_

#include "src/base/counter.h"

namespace uring_http::tls {

// Counters (the ring thread writes, anyone reads; summed over loops).
struct TlsStats {
  base::Counter handshakes;         // completed
  base::Counter resumed;            // of those, resumed from a ticket
  base::Counter tls13;
  base::Counter tls12;
  base::Counter offloaded;          // handshake steps given to a worker
  base::Counter steps_reclaimed;    // ... that waited too long: run on the ring
  // Failures, by reason.
  base::Counter failed_timeout;     // no complete handshake within the timeout
  base::Counter failed_plain_http;  // plain HTTP sent to the TLS port: 400
  base::Counter failed_protocol;    // not TLS, bad records, alerts, no shared cipher
  base::Counter failed_peer_closed; // the peer closed or reset mid-handshake
  base::Counter failed_client_cert; // a client certificate missing or not verified
  // Client certificates (--tls-client-ca): handshakes with one verified,
  // and failures by reason (ClientCertFailure in tls_context.h).
  base::Counter client_certs_verified;
  base::Counter client_cert_missing;
  base::Counter client_cert_untrusted;
  base::Counter client_cert_expired;
  base::Counter client_cert_invalid;
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TLS_STATS_H_
