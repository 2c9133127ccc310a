// uring-http's public API: the one header a program embedding the server
// includes, from the one public Bazel target `@uring_http//:uring_http`
// (`//:uring_http` inside this repository).
//
//   #include "uring_http/uring_http.h"
//
//   int main(int argc, char** argv) {
//     using namespace uring_http;
//     // The server's flags (--help: usage, exit 0; a bad flag: exit 2).
//     serving::Options options = serving::ParseOptions(argc, argv);
//     router::Router router;
//     router.Fast("GET", "/", [](const http::Request&, http::Response& r) {
//       r.set_static_body("hello\n");
//     });
//     serving::Server server(options.config, std::move(router));
//     return server.Run().ok() ? 0 : 1;
//   }
//
// The API is what the headers below declare; each says at its top what its
// types are for and which thread may call them:
//   src/serving/server.h   Server (Run, Start, Stop, Wait, port, plain_port,
//                          listening, Stats, RenderMetrics, metrics,
//                          ReadyLine, ReloadTls): a facade, the rings and
//                          loops stay behind it
//   src/serving/server_stats.h  ServerStats (and WorkerPoolStats),
//                          ListeningAddress
//   src/serving/config.h   ServerConfig: address, port, listen, threads,
//                          workers, limits and timeouts, TLS (by hand, or
//                          ParseOptions); ListenAddress
//   src/limits/rate_limit.h  limits::RateLimit: a per-client request rate
//                          (ServerConfig::rate_limit,
//                          RouteOptions::rate_per_client)
//   src/metrics/registry.h  metrics::Registry (Counter, Gauge, Histogram):
//                          the application's metrics on /metrics
//                          (ServerConfig::metrics, Server::metrics)
//   src/tls/tls_settings.h TlsSettings (ServerConfig::tls): certificate and
//                          key files, handshake timeout, ticket rotation,
//                          handshake offload
//   src/serving/options.h  ParseOptions(argc, argv, &flags): the server's
//                          command line into Options::config, beside the
//                          program's own flags; TryParseOptions, UsageText
//   src/serving/flags.h    Flags, Flag: a program's own flags (Add, AddSize,
//                          AddChoice, AddParsed, Section), ParseSize,
//                          FormatSize, ParseDuration, FormatDuration
//   src/serving/systemd_notify.h  SystemdNotify("READY=1") for Type=notify
//   src/async/exchange.h, task.h  ASYNC handlers: async::Task (the
//                          coroutine type), async::Exchange (request,
//                          response, Sleep, OnWorker, stop_reason, Push)
//   src/async/deferral.h   Deferrable, DeferrableOnWorker, Deferral:
//                          FAST- and SLOW-style handlers that answer later
//                          from any thread (async::DeferredAnswer, a whole
//                          answer; async::PushStream, a body)
//   src/client/client.h    client::Client (Fetch, Get: co_await from an
//                          ASYNC handler; FetchBlocking, GetBlocking from
//                          a SLOW one), ClientOptions, Request, Response,
//                          ParseUrl
//   src/client/call.h      client::Call: one upstream exchange streamed
//                          both ways (a reverse proxy's), RequestHead,
//                          CallOptions; client/transport.h Transport
//   src/client/response_parser.h  ResponseHead, ResponseFraming
//   src/http/stop_reason.h  StopReason: why a handler should stop
//   src/http/sse.h         server-sent events: Event, AppendEvent,
//                          EventComment, StartEventStream
//   src/router/router.h    Router (Fast, Slow, Async, FastStream, WebSocket,
//                          SetFallback,
//                          Static, Use, SetErrorHandler,
//                          SetDefaultErrorHandler, RedirectTrailingSlash),
//                          Registration, Handler,
//                          RouteOptions (max_in_flight,
//                          rate_per_client, ...), BodyMode, StaticOptions,
//                          BodySink, kUnlimitedBody
//   src/http/request.h     Request (method, path, query, headers, body, secure,
//                          QueryParam, FormParam, Cookie, HeaderValues,
//                          HeaderElements, ReadBody, body_error,
//                          client_address, PathParam, RawPathParam,
//                          allowed_methods), BodyError, BodyErrorName,
//                          Method, Version
//   src/http/parser.h      ParseLimits
//   src/http/response.h    Response (status, headers, bodies, Write, Stream,
//                          AddTrailer), BodyOutput, ReasonPhrase
//   src/ws/websocket.h     WebSocket routes (Router::WebSocket): Behavior
//                          (upgrade, open, message, drain, close, limits),
//                          WebSocket (Send, Close, buffered, protocol,
//                          user, sender), Upgrade, MessageKind, SendResult
//   src/ws/sender.h        Sender (a socket's sends from any thread),
//                          Topics (pub/sub fan-out), PreparedMessage (a
//                          message framed and compressed once for many:
//                          Frame, MakeFrame, Sender::SendFrame)
//   src/router/registration.h  Registration (what registering returns)
//   src/http/response_helpers.h  Redirect, CacheControl/SetCacheControl,
//                          SetContentDisposition, SetCookie/SetCookieOptions,
//                          SameSite
//   src/router/middleware.h  Middleware (before/after hooks), Flow,
//                          ErrorHandler (Router::Use, SetErrorHandler)
//   src/middleware/cors.h, request_id.h, https_redirect.h  the shipped
//                          middlewares
//   src/http/path_params.h  PathParams (Request::path_params, PathParam),
//                          DecodePathParam
//   src/http/client_address.h  ClientAddress (known, port, Format)
//   src/http/client_certificate.h  ClientCertificate (Request::
//                          client_certificate: a verified TLS client's
//                          subject, issuer, serial, sha256, chain_pem)
//   src/http/form.h, cookies.h, header_values.h  the request helpers' parsers,
//                          usable on any text (ParamValue, RawParam, ...)
//   src/http/multipart_form.h, multipart_files.h, multipart.h
//                          multipart/form-data: ParseMultipartForm
//                          (MultipartForm, FormPart), ReadMultipart
//                          (MultipartReceiver), SaveMultipart
//                          (UploadOptions, SavedUpload), MultipartLimits,
//                          MultipartError, the parser itself
//   src/router/multipart_sink.h  MultipartSink, SaveMultipartSink: the same
//                          on a FAST route (FastStream)
// Not here, so that a server without JSON does not need nlohmann-json: the
// JSON helpers (json::Parse, ParseAs, Reply, ReplyError in src/json/json.h),
// a target of their own, //:uring_http_json, header uring_http/json.h.
// Beside it, for tests only (its own target, //:testing, testonly):
//   uring_http/testing.h   TestServer (a Server on 127.0.0.1 and a free
//                          port, for a test's process), Client (GET, POST,
//                          ..., streamed bodies both ways, timeouts, TLS),
//                          Response
// These headers include the C++ standard library, abseil's Status and each
// other only (test/public:public_header_test): no liburing, no kernel
// io_uring header, no OpenSSL, no abseil container, and none of their macros.
// Everything else under src/ (the ring, buffers, connections, event loops,
// the worker pool's insides) is internal: its Bazel targets are visible only
// inside this repository, and it changes without notice. Names in a header
// above that serve the server itself (the parse functions in parser.h)
// are public for the tests and may change too.
#ifndef URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_
#define URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_

#include "src/async/deferral.h"
#include "src/async/deferred_answer.h"
#include "src/async/exchange.h"
#include "src/async/task.h"
#include "src/client/call.h"
#include "src/client/client.h"
#include "src/http/client_address.h"
#include "src/http/client_certificate.h"
#include "src/http/cookies.h"
#include "src/http/form.h"
#include "src/http/header_values.h"
#include "src/http/multipart.h"
#include "src/http/multipart_files.h"
#include "src/http/multipart_form.h"
#include "src/http/path_params.h"
#include "src/http/parser.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/http/sse.h"
#include "src/http/stop_reason.h"
#include "src/limits/rate_limit.h"
#include "src/metrics/registry.h"
#include "src/http/response_helpers.h"
#include "src/middleware/cors.h"
#include "src/middleware/https_redirect.h"
#include "src/middleware/request_id.h"
#include "src/router/middleware.h"
#include "src/router/multipart_sink.h"
#include "src/router/router.h"
#include "src/serving/config.h"
#include "src/serving/flags.h"
#include "src/serving/options.h"
#include "src/serving/server.h"
#include "src/serving/systemd_notify.h"
#include "src/tls/tls_settings.h"
#include "src/ws/sender.h"
#include "src/ws/websocket.h"

#endif  // URING_HTTP_INCLUDE_URING_HTTP_URING_HTTP_H_
