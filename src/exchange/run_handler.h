// RunHandler: the handler step of an exchange (one request and its
// answer), whichever protocol carried the request and whichever thread runs
// it: a FAST handler on the ring thread, a SLOW one on a worker. Written
// once so that the two agree on what a user sees:
//   - the router's middlewares (global, then the route's) around the
//     handler: befores, the handler unless one answered, afters last first;
//   - a bare 4xx or 5xx left without a body gets its error page;
//   - an exception from the handler is logged once and becomes the 500
//     answer (its page if set); once a streamed answer's head has gone
//     (StreamedHead::started), it cannot become one: the stream is cut
//     instead (the afters still run);
//   - whether the client takes gzip (Accept-Encoding), and the compression
//     of a buffered answer's body, where the answer is built.
//
// Thread-safety: runs on the thread that answers the request; reads only
// what is immutable once the server runs (the route, the pipeline).
#ifndef URING_HTTP_SRC_EXCHANGE_RUN_HANDLER_H_
#define URING_HTTP_SRC_EXCHANGE_RUN_HANDLER_H_

#include "src/http/compress.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/router/middleware.h"
#include "src/router/router.h"

namespace uring_http::exchange {

// A streamed answer (a SLOW handler's Write()s) as the handler run sees
// it: past its head, the response can no longer be replaced.
class StreamedHead {
 public:
  virtual bool started() const = 0;
  // Cuts the stream short: the client sees it end early.
  virtual void Break() = 0;

 protected:
  ~StreamedHead() = default;
};

// The handler's throw, caught: logged, and the 500 answer in `response`.
void AnswerThrow(const router::Pipeline& pipeline, const router::Route& route,
                 const http::Request& request, http::Response& response);
// The chain (middlewares, or a stream whose head may go), run_handler.cc.
void RunChained(const router::Pipeline& pipeline, const router::Route& route,
                const http::Request& request, http::Response& response, StreamedHead* stream);

// Runs route.handler on `request` inside the pipeline's and the route's
// middlewares; `response` holds the answer. `stream`: the answer streams
// (null: it is buffered or has a producer, and a throw always becomes 500).
inline void RunHandler(const router::Pipeline& pipeline, const router::Route& route,
                       const http::Request& request, http::Response& response,
                       StreamedHead* stream = nullptr) {
  if (stream != nullptr || pipeline.Active(route.options.middleware)) {
    return RunChained(pipeline, route, request, response, stream);
  }
  // No middleware: the handler alone, without the chain's bookkeeping (the
  // common FAST request; inline, as the ring's hot path).
  try {
    route.handler(request, response);
    pipeline.MaybeFailPage(request, response);
  } catch (...) {
    AnswerThrow(pipeline, route, request, response);
  }
}

// Whether the answer to `request` may be gzipped: compression is on and
// the client's Accept-Encoding prefers gzip (compress.h).
inline bool GzipAccepted(const http::CompressionOptions& compression,
                         const http::Request& request) {
  return compression.enabled && http::PrefersGzip(request.HeaderValues("accept-encoding"));
}

// A buffered answer's body, compressed if it should be (compress.h says
// when: a compressible type, large enough, not already encoded); its Vary
// either way. Nothing is allocated unless the body is compressed.
// `head_only`: a HEAD request (the headers say what a GET would get).
inline void FinishBuffered(const http::CompressionOptions& compression, bool gzip_accepted,
                           bool head_only, http::Response& response) {
  if (compression.enabled) {
    http::CompressBufferedResponse(compression, gzip_accepted, head_only, response);
  }
}

}  // namespace uring_http::exchange

#endif  // URING_HTTP_SRC_EXCHANGE_RUN_HANDLER_H_
