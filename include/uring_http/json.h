// uring-http's JSON helpers: the public header of
// `@uring_http//:uring_http_json` (`//:uring_http_json` inside this
// repository), a library apart from `@uring_http//:uring_http` so that a
// server without JSON does not depend on nlohmann-json (Debian's
// nlohmann-json3-dev). It includes uring_http/uring_http.h.
//
//   #include "uring_http/json.h"
//
//   router.Fast("POST", "/api/echo", [](const http::Request& req, http::Response& resp) {
//     json::Result<> in = json::Parse(req);        // 415 / 400 saying where
//     if (!in.ok()) return in.ReplyError(resp);    // {"error": "..."}
//     json::Reply(resp, {{"got", *in}});           // application/json
//   });
//
// The API is src/json/json.h (the rules are at its top): json::Json
// (nlohmann::json), Parse, ParseAs, ParseText, Result, ParseOptions, Reply,
// ReplyError, IsJsonContentType. Callable from FAST and SLOW handlers.
#ifndef URING_HTTP_INCLUDE_URING_HTTP_JSON_H_
#define URING_HTTP_INCLUDE_URING_HTTP_JSON_H_

#include "src/json/json.h"
#include "uring_http/uring_http.h"

#endif  // URING_HTTP_INCLUDE_URING_HTTP_JSON_H_
