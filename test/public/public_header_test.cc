// The public header names the C++ standard library, abseil's Status and the
// public types only (issue 23 item 3): a program that embeds the server must
// not compile liburing's, the kernel's io_uring, OpenSSL's or abseil's
// container headers, nor see their macros. Before the Server and Router
// kept their insides behind pointers, this file failed to compile on every
// #error below.
#include "uring_http/uring_http.h"

#if defined(LIB_URING_H)
#error "the public header includes liburing.h"
#endif
#if defined(LINUX_IO_URING_H)
#error "the public header includes linux/io_uring.h"
#endif
#if defined(OPENSSL_SSL_H) || defined(OPENSSL_OPENSSLV_H)
#error "the public header includes OpenSSL"
#endif
#if defined(ABSL_CONTAINER_FLAT_HASH_MAP_H_) || defined(ABSL_CONTAINER_FLAT_HASH_SET_H_) || \
    defined(ABSL_CONTAINER_NODE_HASH_MAP_H_)
#error "the public header includes abseil's hash containers"
#endif

#include <type_traits>

#include "gtest/gtest.h"

namespace {

using uring_http::router::Router;
using uring_http::serving::Server;
using uring_http::serving::ServerConfig;

// What the facade promises besides compiling clean: a Router moves into a
// Server, and a Server serves and stops through the public API alone.
TEST(PublicHeaderTest, TheFacadeServesThroughThePublicApiAlone) {
  static_assert(std::is_nothrow_move_constructible_v<Router>);
  Router router;
  ASSERT_TRUE(router
                  .Fast("GET", "/x",
                        [](const uring_http::http::Request&, uring_http::http::Response& r) {
                          r.set_static_body("x\n");
                        })
                  .ok());
  ServerConfig config;
  config.port = 0;
  config.address = "127.0.0.1";
  config.handle_signals = false;
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_NE(server.port(), 0);
  EXPECT_NE(server.ReadyLine().find("listening on"), std::string::npos);
  server.Stop();
  server.Wait();
  EXPECT_EQ(server.Stats().accepted, 0u);
}

}  // namespace
