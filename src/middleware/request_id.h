// Request id: a Middleware that gives every answer an X-Request-Id, so that
// a client's report, the access log line (--access-log writes the answer's
// X-Request-Id at its end) and the application's own logs can be matched.
//
// A request's own X-Request-Id is echoed when it is sane: 1 to
// kMaxRequestIdLength bytes of visible ASCII ('!' to '~'). Otherwise (absent,
// empty, too long, a space or a control byte) one is generated: 32 hex
// digits, a per-thread random prefix and a counter, unique within the
// process and unlikely to repeat across processes.
//
// The id is set by the after hook, on the final answer (an error page or an
// early answer of another middleware included): Use() it first, so that it
// runs last. It allocates nothing (the id is built in a fixed buffer).
// A handler sees an echoed id in the request's header; a generated one is
// made after the handler and is not known to it.
//
// Thread-safety: the hooks run on any thread at once.
#ifndef URING_HTTP_SRC_MIDDLEWARE_REQUEST_ID_H_
#define URING_HTTP_SRC_MIDDLEWARE_REQUEST_ID_H_

#include <cstddef>
#include <string_view>

#include "src/router/middleware.h"

namespace uring_http::middleware {

inline constexpr size_t kMaxRequestIdLength = 64;

// Whether a client's id may be echoed (see above).
bool IsValidRequestId(std::string_view id);

// A new id in out[0..32).
void GenerateRequestId(char out[32]);

router::Middleware RequestId();

}  // namespace uring_http::middleware

#endif  // URING_HTTP_SRC_MIDDLEWARE_REQUEST_ID_H_
