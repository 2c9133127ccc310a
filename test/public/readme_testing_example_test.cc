#include "gtest/gtest.h"
#include "uring_http/testing.h"
#include "uring_http/uring_http.h"

namespace {

using uring_http::testing::Client;
using uring_http::testing::TestServer;
namespace http = uring_http::http;

TEST(UsersTest, GetsAUserAndEchoes) {
  uring_http::router::Router router;
  ASSERT_TRUE(router.Fast("GET", "/users/{id}", [](const http::Request& req, http::Response& r) {
    r.set_content_type("application/json");
    r.set_body("{\"id\":\"" + std::string(req.PathParam("id")) + "\"}");
  }).ok());
  ASSERT_TRUE(router.Slow("POST", "/echo", [](const http::Request& req, http::Response& r) {
    r.set_body(std::string(req.body));
  }).ok());

  TestServer server(uring_http::serving::ServerConfig(), std::move(router));
  ASSERT_TRUE(server.ok()) << server.status();
  Client client = server.client();

  auto r = client.Get("/users/42", {{"Accept", "application/json"}});
  EXPECT_EQ(r.status, 200) << r;  // a failure prints the whole response, or why none came
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.body, R"({"id":"42"})");

  EXPECT_EQ(client.Post("/echo", "hello", "text/plain").body, "hello");
  EXPECT_EQ(client.Request("PUT", "/echo").status, 405);
  EXPECT_EQ(client.connections_opened(), 1);  // one kept-alive connection
}

}  // namespace
