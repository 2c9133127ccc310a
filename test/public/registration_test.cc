// Registration mistakes from a user's side (issue 23 item 9): a program
// registers routes without looking at each result (no `(void)`), and a
// mistake among them (a duplicate route, a bad pattern, a missing static
// root, an error page for a success) stops the server from starting, with
// a message that names each one.
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "uring_http/uring_http.h"

namespace {

using namespace uring_http;

void Ok(const http::Request&, http::Response& r) { r.set_body("ok"); }

serving::ServerConfig LocalConfig() {
  serving::ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  return config;
}

TEST(RegistrationTest, ADuplicateRouteStopsTheServerNamingIt) {
  router::Router router;
  router.Fast("GET", "/items/{id}", Ok);
  router.Slow("POST", "/items", Ok);
  router.Fast("GET", "/items/{id}", Ok);  // the duplicate, unchecked
  serving::Server server(LocalConfig(), std::move(router));
  const absl::Status started = server.Start();
  EXPECT_FALSE(started.ok());
  const std::string message(started.message());
  EXPECT_NE(message.find("GET /items/{id}"), std::string::npos) << message;
  EXPECT_EQ(message.find("POST /items"), std::string::npos) << message;  // that one is fine
}

TEST(RegistrationTest, EveryMistakeIsNamed) {
  router::Router router;
  router.Fast("GET", "/ok", Ok);
  router.Fast("GET", "/users/{id", Ok);                         // a malformed pattern
  router.Static("/assets/", "/nonexistent/uring-http-test-dir");  // no such root
  router.SetErrorHandler(200, [](const http::Request&, http::Response&) {});  // not an error
  serving::Server server(LocalConfig(), std::move(router));
  const absl::Status started = server.Start();
  EXPECT_FALSE(started.ok());
  const std::string message(started.message());
  EXPECT_NE(message.find("GET /users/{id"), std::string::npos) << message;
  EXPECT_NE(message.find("/assets/"), std::string::npos) << message;
  EXPECT_NE(message.find("200"), std::string::npos) << message;
  EXPECT_EQ(message.find("GET /ok"), std::string::npos) << message;
}

// A result can still be looked at, as a Status or directly.
TEST(RegistrationTest, TheResultCanStillBeChecked) {
  router::Router router;
  EXPECT_TRUE(router.Fast("GET", "/a", Ok).ok());
  const auto again = router.Fast("GET", "/a", Ok);
  EXPECT_FALSE(again.ok());
  const absl::Status as_status = router.Fast("GET", "/a", Ok);
  EXPECT_EQ(as_status.code(), absl::StatusCode::kAlreadyExists);
}

// A clean router starts.
TEST(RegistrationTest, ACleanRouterStarts) {
  router::Router router;
  router.Fast("GET", "/a", Ok);
  router.Slow("GET", "/b", Ok);
  serving::Server server(LocalConfig(), std::move(router));
  ASSERT_TRUE(server.Start().ok());
  server.Stop();
  server.Wait();
}

}  // namespace
