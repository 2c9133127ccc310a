// uring-http's public API: the one header a program embedding the server
// includes, from the one public Bazel target `@uring_http//:uring_http`
// (`//:uring_http` inside this repository).
//
//   #include "uring_http/uring_http.h"
//
//   int main(int argc, char** argv) {
//     using namespace uring_http;
//     auto options = serving::ParseOptions(argc, argv);  // the server's flags
//     if (!options.ok()) return 2;
//     router::Router router;
//     (void)router.Fast("GET", "/", [](const http::Request&, http::Response& r) {
//       r.set_static_body("hello\n");
//     });
//     serving::Server server(options->config, std::move(router));
//     return server.Run().ok() ? 0 : 1;
//   }
//
// The API is what the headers below declare; each says at its top what its
// types are for and which thread may call them:
//   src/serving/server.h   Server (Run, Start, Stop, Wait, port, plain_port,
//                          listening, Stats, RenderMetrics, ReadyLine,
//                          ReloadTls), ServerStats, ListeningAddress
//   src/serving/config.h   ServerConfig: address, port, listen, threads,
//                          workers, limits and timeouts, TLS (by hand, or
//                          ParseOptions); ListenAddress
//   src/tls/tls_settings.h TlsSettings (ServerConfig::tls): certificate and
//                          key files, handshake timeout, ticket rotation,
//                          handshake offload
//   src/serving/options.h  ParseOptions(argc, argv): the shipped server's
//                          command line into Options (config, root, ...)
//   src/serving/systemd_notify.h  SystemdNotify("READY=1") for Type=notify
//   src/router/router.h    Router (Fast, Slow, FastStream, SetFallback,
//                          Static, Use, SetErrorHandler), Handler,
//                          RouteOptions, BodyMode, StaticOptions,
//                          BodySink, kUnlimitedBody
//   src/http/parser.h      Request (method, path, query, headers, body,
//                          QueryParam, FormParam, Cookie, HeaderValues,
//                          HeaderElements, ReadBody, body_error,
//                          client_address), BodyError, BodyErrorName,
//                          Method, Version,
//                          ParseLimits
//   src/http/response.h    Response (status, headers, bodies, Write, Stream,
//                          AddTrailer), BodyOutput, ReasonPhrase
//   src/router/middleware.h  Middleware (before/after hooks), Flow,
//                          ErrorHandler (Router::Use, SetErrorHandler)
//   src/middleware/cors.h, request_id.h  the two shipped middlewares
//   src/http/path_params.h  PathParams (Request::path_params, PathParam),
//                          DecodePathParam
//   src/http/client_address.h  ClientAddress (known, port, Format)
//   src/http/form.h, cookies.h, header_values.h  the request helpers' parsers,
//                          usable on any text (ParamValue, RawParam, ...)
// Everything else under src/ (the ring, buffers, connections, event loops,
// the worker pool's insides) is internal: its Bazel targets are visible only
// inside this repository, and it changes without notice. Names in a header
// above that serve the server itself (the serializer in response.h, the
// parse functions in parser.h) are public for the tests and may change too.
#ifndef URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_
#define URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_

#include "src/http/client_address.h"
#include "src/http/cookies.h"
#include "src/http/form.h"
#include "src/http/header_values.h"
#include "src/http/path_params.h"
#include "src/http/parser.h"
#include "src/http/response.h"
#include "src/middleware/cors.h"
#include "src/middleware/request_id.h"
#include "src/router/middleware.h"
#include "src/router/router.h"
#include "src/serving/config.h"
#include "src/serving/options.h"
#include "src/serving/server.h"
#include "src/serving/systemd_notify.h"
#include "src/tls/tls_settings.h"

#endif  // URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_
