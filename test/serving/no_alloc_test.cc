// Proves the FAST path allocates nothing per request: global operator new and
// malloc are counted while thousands of keep-alive requests are served after a
// warm-up. The client below allocates nothing in its loop either.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "src/async/exchange.h"
#include "src/http/sse.h"
#include "src/middleware/cors.h"
#include "src/middleware/request_id.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"
#include "test/serving/test_routes.h"
#include "test/testing/alloc_counter.h"

using uring_http::testing::g_allocations;
using uring_http::testing::g_counting;
using uring_http::testing::g_live_bytes;

namespace uring_http::serving {
namespace {

// A server on a free loopback port.
ServerConfig LoopbackConfig(uint32_t accept_threads, uint32_t workers, uint32_t capacity) {
  ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.accept_threads = accept_threads;
  config.accept_capacity = capacity;
  config.workers = workers;
  return config;
}

TEST(NoAllocationTest, FastPathAllocatesNothingPerRequest) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/2, /*workers=*/2, /*capacity=*/64);
  router::Router router = testing::MakeTestRouter();
  // A parameterized route: the tree's walk and the params cost nothing
  // either. 200 (empty body) only if the handler saw the right values.
  ASSERT_TRUE(router
                  .Fast("GET", "/users/{id}/posts/{post}",
                        [](const http::Request& req, http::Response& resp) {
                          const bool right = req.PathParam("id") == "42" &&
                                             req.PathParam("post") == "7";
                          resp.set_status(right ? 200 : 500);
                        })
                  .ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());

  constexpr int kConnections = 4;
  constexpr int kRequests = 5000;
  static const char kStatic[] = "GET /fast HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  static const char kParams[] = "GET /users/42/posts/7 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::string_view request = kStatic;
  std::unique_ptr<testing::TestClient> clients[kConnections];
  for (auto& c : clients) c = std::make_unique<testing::TestClient>(server.port());

  char buf[4096];
  auto round_trip = [&](testing::TestClient& c) {
    if (send(c.fd(), request.data(), request.size(), MSG_NOSIGNAL) <= 0) return false;
    // Read until the end of one response (empty body: ends at the blank line).
    size_t got = 0;
    for (;;) {
      ssize_t n = recv(c.fd(), buf + got, sizeof(buf) - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (got >= 4 && std::memcmp(buf + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    return std::memcmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0;
  };
  for (std::string_view r : {std::string_view(kStatic), std::string_view(kParams)}) {
    request = r;
    for (int i = 0; i < 500; ++i) {  // warm-up: lazy initialisations happen here
      for (auto& c : clients) ASSERT_TRUE(round_trip(*c)) << request;
    }
    g_allocations.store(0);
    g_counting.store(true);
    bool ok = true;
    for (int i = 0; i < kRequests && ok; ++i) {
      for (auto& c : clients) ok = ok && round_trip(*c);
    }
    g_counting.store(false);
    ASSERT_TRUE(ok) << request;
    EXPECT_EQ(g_allocations.load(), 0u)
        << "allocations during " << kRequests * kConnections << " FAST requests: " << request;
  }
  // The counter works: a handler whose body outgrows the small-string
  // buffer allocates, and that is seen.
  g_counting.store(true);
  static const char kEcho[] = "GET /echo?0123456789abcdefghij HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_GT(send(clients[0]->fd(), kEcho, sizeof(kEcho) - 1, MSG_NOSIGNAL), 0);
  ASSERT_GT(recv(clients[0]->fd(), buf, sizeof(buf), 0), 0);
  g_counting.store(false);
  EXPECT_GT(g_allocations.load(), 0u);
  server.Stop();
  server.Wait();
}

// An ASYNC request allocates nothing either once warm: its task comes from
// the ring's chunks, its exchange and coroutine frame from the runner's
// pools, a zero wait is a yield in user space, and a 1 ms wait one
// IORING_OP_TIMEOUT.
TEST(NoAllocationTest, AsyncRequestsAllocateNothingPerRequest) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/2, /*workers=*/1, /*capacity=*/64);
  router::Router router;
  ASSERT_TRUE(router
                  .Async("GET", "/yield",
                         [](async::Exchange& ex) -> async::Task<> {
                           (void)co_await ex.Sleep(std::chrono::nanoseconds(0));
                         })
                  .ok());
  ASSERT_TRUE(router
                  .Async("GET", "/nap/{n}",
                         [](async::Exchange& ex) -> async::Task<> {
                           absl::Status napped = co_await ex.Sleep(std::chrono::milliseconds(1));
                           ex.response().set_status(napped.ok() && ex.request().PathParam("n") == "7"
                                                        ? 200
                                                        : 500);
                         })
                  .ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());

  constexpr int kConnections = 4;
  std::unique_ptr<testing::TestClient> clients[kConnections];
  for (auto& c : clients) c = std::make_unique<testing::TestClient>(server.port());
  char buf[4096];
  static const char kYield[] = "GET /yield HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  static const char kNap[] = "GET /nap/7 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (std::string_view request : {std::string_view(kYield), std::string_view(kNap)}) {
    // All connections' requests go out before any answer is read, so the
    // exchanges wait side by side.
    auto round = [&] {
      for (auto& c : clients) {
        if (send(c->fd(), request.data(), request.size(), MSG_NOSIGNAL) <= 0) return false;
      }
      for (auto& c : clients) {
        size_t got = 0;
        for (;;) {
          ssize_t n = recv(c->fd(), buf + got, sizeof(buf) - got, 0);
          if (n <= 0) return false;
          got += static_cast<size_t>(n);
          if (got >= 4 && std::memcmp(buf + got - 4, "\r\n\r\n", 4) == 0) break;
        }
        if (std::memcmp(buf, "HTTP/1.1 200 OK\r\n", 17) != 0) return false;
      }
      return true;
    };
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(round()) << request;  // warm-up
    const int rounds = request == kYield ? 2000 : 300;
    g_allocations.store(0);
    g_counting.store(true);
    bool ok = true;
    for (int i = 0; i < rounds && ok; ++i) ok = round();
    g_counting.store(false);
    ASSERT_TRUE(ok) << request;
    EXPECT_EQ(g_allocations.load(), 0u)
        << "allocations during " << rounds * kConnections << " ASYNC requests: " << request;
  }
  EXPECT_EQ(server.Stats().slow_dispatched, 0u);
  server.Stop();
  server.Wait();
}

// HTTP/2 (h2c, prior knowledge) over a real socket: a warm connection's
// FAST requests allocate nothing on the server's side either, ten streams
// in flight at a time. The client is frames built by hand (HPACK's static
// table and literals, no dynamic table), so it allocates nothing. malloc
// is counted too (outside the sanitizers), so nghttp2's blocks are
// (src/http2/codec_memory.h).
TEST(NoAllocationTest, Http2StreamsAllocateNothingPerRequest) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/64);
  Server server(config, testing::MakeTestRouter());
  ASSERT_TRUE(server.Start().ok());
  testing::TestClient client(server.port());
  ASSERT_TRUE(client.connected());

  // A HEADERS frame (END_STREAM | END_HEADERS) for GET /fast, its stream id
  // at bytes 5-8: :method GET and :scheme http by static index, then :path
  // and :authority as literals without indexing, names by static index.
  unsigned char headers[9 + 20] = {0, 0, 20, 1, 0x05, 0, 0, 0, 0,
                                   0x82, 0x86, 0x04, 5, '/', 'f', 'a', 's', 't',
                                   0x01, 9, '1', '2', '7', '.', '0', '.', '0', '.', '1'};
  constexpr int kInFlight = 10;
  unsigned char batch[kInFlight * sizeof(headers)];
  uint32_t next_id = 1;
  char in[16384];
  size_t have = 0;
  // Sends kInFlight requests at once and reads until each stream has ended
  // (a HEADERS or DATA frame with END_STREAM); false on anything else that
  // ends the connection or a stream (GOAWAY, RST_STREAM) or a status that is
  // not a bare 200 (":status: 200" is static index 8: 0x88).
  auto round = [&] {
    for (int i = 0; i < kInFlight; ++i) {
      const uint32_t id = next_id;
      next_id += 2;
      headers[5] = static_cast<unsigned char>(id >> 24);
      headers[6] = static_cast<unsigned char>(id >> 16);
      headers[7] = static_cast<unsigned char>(id >> 8);
      headers[8] = static_cast<unsigned char>(id);
      std::memcpy(batch + i * sizeof(headers), headers, sizeof(headers));
    }
    if (send(client.fd(), batch, sizeof(batch), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(batch))) {
      return false;
    }
    int ended = 0;
    while (ended < kInFlight) {
      ssize_t n = recv(client.fd(), in + have, sizeof(in) - have, 0);
      if (n <= 0) return false;
      have += static_cast<size_t>(n);
      size_t at = 0;
      while (have - at >= 9) {
        const auto* f = reinterpret_cast<const unsigned char*>(in + at);
        const size_t length = (size_t{f[0]} << 16) | (size_t{f[1]} << 8) | f[2];
        if (have - at < 9 + length) break;
        const unsigned char type = f[3], flags = f[4];
        if (type == 7 || type == 3) return false;                           // GOAWAY, RST_STREAM
        if (type == 1 && (length == 0 || f[9] != 0x88)) return false;       // not :status 200
        if ((type == 0 || type == 1) && (flags & 0x01) != 0) ++ended;      // END_STREAM
        if (type == 0 && length > 0) {  // DATA: the connection's window back (a stream's is ample)
          const unsigned char update[13] = {0, 0, 4, 8, 0, 0, 0, 0, 0,
                                            static_cast<unsigned char>(length >> 24),
                                            static_cast<unsigned char>(length >> 16),
                                            static_cast<unsigned char>(length >> 8),
                                            static_cast<unsigned char>(length)};
          if (send(client.fd(), update, sizeof(update), MSG_NOSIGNAL) != 13) return false;
        }
        if (type == 4 && (flags & 0x01) == 0) {                             // the server's SETTINGS
          static const unsigned char kAck[9] = {0, 0, 0, 4, 1, 0, 0, 0, 0};
          if (send(client.fd(), kAck, sizeof(kAck), MSG_NOSIGNAL) != 9) return false;
        }
        at += 9 + length;
      }
      std::memmove(in, in + at, have - at);
      have -= at;
    }
    return true;
  };

  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";  // + empty SETTINGS
  ASSERT_TRUE(client.Send(std::string_view(kPreface, sizeof(kPreface) - 1)));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(round()) << "warm-up round " << i;
  constexpr int kRounds = 1000;
  const auto second = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t first_second = second();
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < kRounds && ok; ++i) ok = round();
  g_counting.store(false);
  ASSERT_TRUE(ok);
  // Each new second's `date` value enters HPACK's dynamic table: nghttp2
  // takes two blocks for it until its 4 KiB table is full (about 40 s of
  // dates), after which the entries it evicts serve the new ones. That is
  // per second, not per request.
  const uint64_t per_second = 2 * static_cast<uint64_t>(second() - first_second);
  EXPECT_LE(g_allocations.load(), per_second)
      << "allocations during " << kRounds * kInFlight << " h2c requests";
  client.Close();  // else the drain's lingering close waits 5 s for our FIN
  server.Stop();
  server.Wait();
}

// What an open event stream holds: a warm server (its exchanges, frames,
// stream states and pipe buffers made by an earlier round of streams)
// holds next to nothing more on the heap for each stream it has open, each
// idle between events. (It held 33 KB before: a 32 KiB pipe buffer kept
// for the stream's life, and its 1.3 KB head.) The exchange slots and
// frames the first round made are the pools' (their sizes are the
// runner's), and the task's block is malloc's (through the ring thread's
// size classes), which g_live_bytes does not see (it counts operator new):
// all of them are in the figure perf/compare_async measures with VmRSS.
TEST(NoAllocationTest, AnOpenEventStreamHoldsNoHeapOfItsOwnOnceWarm) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/512);
  router::Router router;
  ASSERT_TRUE(router
                  .Async("GET", "/events",
                         [](async::Exchange& ex) -> async::Task<> {
                           http::StartEventStream(ex.response());
                           absl::Status wrote = co_await ex.Write("data: first\n\n");
                           if (!wrote.ok()) co_return;
                           // Idle until the client leaves (the sleep is cancelled).
                           (void)co_await ex.Sleep(std::chrono::seconds(60));
                         })
                  .ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());

  constexpr int kStreams = 200;
  int fds[kStreams];
  static const char kRequest[] = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  // Opens every stream and reads each one's first event (no heap here).
  auto open_all = [&] {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int& fd : fds) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
          send(fd, kRequest, sizeof kRequest - 1, MSG_NOSIGNAL) <= 0) {
        return false;
      }
    }
    char buf[1024];
    for (int fd : fds) {
      size_t got = 0;
      for (;;) {
        const ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0) return false;
        got += static_cast<size_t>(n);
        buf[got] = '\0';
        if (std::strstr(buf, "data: first\n\n") != nullptr) break;
        if (got == sizeof(buf) - 1) return false;
      }
    }
    return true;
  };
  auto close_all = [&] {
    for (int fd : fds) close(fd);
    for (int i = 0; i < 500 && (server.Stats().async_active != 0 || server.Stats().active != 0);
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return server.Stats().async_active == 0 && server.Stats().active == 0;
  };
  ASSERT_TRUE(open_all());  // warm-up: the pools grow to 200 streams
  ASSERT_TRUE(close_all());
  ASSERT_TRUE(open_all());
  ASSERT_EQ(server.Stats().async_active, static_cast<uint64_t>(kStreams));
  const int64_t with_streams = g_live_bytes.load();
  ASSERT_TRUE(close_all());
  // What the streams held is what their end gave back. (Not the difference
  // from before they opened: the ring's shelf of pipe buffers keeps as many
  // as the most streams that had unsent bytes at one moment, which timing
  // decides, so it may grow in this round; what it keeps stays after the
  // close as before it.)
  const int64_t held = with_streams - g_live_bytes.load();
  EXPECT_LT(held / kStreams, 512) << held << " bytes held by " << kStreams << " open streams";
  server.Stop();
  server.Wait();
}

// The shipped middlewares on a FAST route allocate nothing per request
// either: a request id generated or echoed, the CORS headers of an allowed
// origin, a route middleware of the application's.
TEST(NoAllocationTest, FastRouteWithMiddlewareAllocatesNothingPerRequest) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/64);
  router::Router router;
  router.Use(middleware::RequestId());
  middleware::CorsOptions cors;
  cors.allowed_origins = {"https://a.example", "https://b.example"};
  absl::StatusOr<router::Middleware> cors_middleware = middleware::Cors(cors);
  ASSERT_TRUE(cors_middleware.ok()) << cors_middleware.status();
  router.Use(*cors_middleware);
  router::RouteOptions options;
  router::Middleware tag;
  tag.after = [](const http::Request&, http::Response& r) { (void)r.AddHeader("X-Tag", "t"); };
  options.middleware.push_back(tag);
  ASSERT_TRUE(router.Fast("GET", "/fast", [](const http::Request&, http::Response&) {}, options)
                  .ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  testing::TestClient client(server.port());

  static const char kGenerated[] =
      "GET /fast HTTP/1.1\r\nHost: x\r\nOrigin: https://b.example\r\n\r\n";
  static const char kEchoed[] =
      "GET /fast HTTP/1.1\r\nHost: x\r\nX-Request-Id: 0123456789abcdef0123456789\r\n\r\n";
  char buf[4096];
  auto round_trip = [&](const char* request, size_t size, std::string_view expect) {
    if (send(client.fd(), request, size, MSG_NOSIGNAL) <= 0) return false;
    size_t got = 0;
    for (;;) {
      ssize_t n = recv(client.fd(), buf + got, sizeof(buf) - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (got >= 4 && std::memcmp(buf + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    const std::string_view response(buf, got);
    return response.substr(0, 17) == "HTTP/1.1 200 OK\r\n" &&
           response.find(expect) != std::string_view::npos &&
           response.find("X-Tag: t\r\n") != std::string_view::npos;
  };
  auto both = [&] {
    return round_trip(kGenerated, sizeof(kGenerated) - 1,
                      "Access-Control-Allow-Origin: https://b.example\r\n") &&
           round_trip(kEchoed, sizeof(kEchoed) - 1,
                      "X-Request-Id: 0123456789abcdef0123456789\r\n");
  };
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(both());  // warm-up
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < 2000 && ok; ++i) ok = both();
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u) << "allocations during 4,000 FAST requests with middleware";
  server.Stop();
  server.Wait();
}

// Static files: a cached hit answered from memory, a larger file read into
// the ring's buffers, and one spliced, allocate nothing per request either.
TEST(NoAllocationTest, CachedFilesAllocateNothingPerRequest) {
  char dir[] = "/tmp/no_alloc_files_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  const std::string small(3000, 's'), medium(200'000, 'm'), large(600'000, 'l');
  for (const auto& [name, content] :
       {std::pair<std::string, const std::string*>{"/small-file-with-a-long-name.txt", &small},
        {"/medium.bin", &medium},
        {"/large.bin", &large}}) {
    FILE* f = std::fopen((root + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(content->data(), 1, content->size(), f);
    std::fclose(f);
  }
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/64);
  config.file_splice_min_bytes = 500'000;  // large.bin is spliced, medium.bin read
  config.open_file_cache_valid_ms = 3'600'000;
  router::Router router = testing::MakeTestRouter();
  ASSERT_TRUE(router.Static("/", root).ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  testing::TestClient client(server.port());

  static char buf[1 << 20];
  auto get = [&](const char* request, size_t body) {
    if (send(client.fd(), request, std::strlen(request), MSG_NOSIGNAL) <= 0) return false;
    size_t got = 0, need = SIZE_MAX;
    while (got < need) {
      ssize_t n = recv(client.fd(), buf + got, sizeof(buf) - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (need == SIZE_MAX) {
        for (size_t i = 3; i < got; ++i) {
          if (std::memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
            need = i + 1 + body;
            break;
          }
        }
      }
    }
    return got == need && std::memcmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0;
  };
  const char* kSmall = "GET /small-file-with-a-long-name.txt HTTP/1.1\r\nHost: x\r\n\r\n";
  const char* kMedium = "GET /medium.bin HTTP/1.1\r\nHost: x\r\n\r\n";
  const char* kLarge = "GET /large.bin HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 50; ++i) {  // warm-up: cache entries, contents, pipes
    ASSERT_TRUE(get(kSmall, small.size()));
    ASSERT_TRUE(get(kMedium, medium.size()));
    ASSERT_TRUE(get(kLarge, large.size()));
  }
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < 500 && ok; ++i) {
    ok = get(kSmall, small.size()) && get(kMedium, medium.size()) && get(kLarge, large.size());
  }
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u) << "allocations during 1,500 cached file requests";
  const ServerStats stats = server.Stats();
  EXPECT_GE(stats.file_splices, 500u);
  server.Stop();
  server.Wait();
  ASSERT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

// Limits on: a FAST route under its own and the server's in-flight limits
// and per-client buckets is admitted, counted and released without an
// allocation, and a request a bucket refuses (429 with Retry-After) costs
// none either.
TEST(NoAllocationTest, LimitsAllocateNothingPerRequest) {
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/64);
  config.max_in_flight = 100;
  config.rate_limit = limits::RateLimit{1e9, 0};  // never empty
  router::Router router;
  router::RouteOptions limited;
  limited.max_in_flight = 10;
  limited.rate_per_client = limits::RateLimit{1e9, 0};
  ASSERT_TRUE(router.Fast("GET", "/fast", [](const http::Request&, http::Response&) {}, limited)
                  .ok());
  router::RouteOptions strict;
  strict.rate_per_client = limits::RateLimit{0.001, 1};  // one request, then 429s
  ASSERT_TRUE(router.Fast("GET", "/strict", [](const http::Request&, http::Response&) {}, strict)
                  .ok());
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  testing::TestClient client(server.port());

  char buf[4096];
  // Reads one response (its head, then Content-Length bytes).
  auto get = [&](const char* request, std::string_view status) {
    if (send(client.fd(), request, std::strlen(request), MSG_NOSIGNAL) <= 0) return false;
    size_t got = 0, need = SIZE_MAX;
    while (got < need) {
      ssize_t n = recv(client.fd(), buf + got, sizeof(buf) - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (need == SIZE_MAX) {
        const std::string_view seen(buf, got);
        const size_t end = seen.find("\r\n\r\n");
        const size_t length = seen.find("Content-Length: ");
        if (end == std::string_view::npos || length == std::string_view::npos) continue;
        need = end + 4 + std::strtoul(buf + length + 16, nullptr, 10);
      }
    }
    return got == need && std::string_view(buf, got).starts_with(status);
  };
  const char* kFast = "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n";
  const char* kStrict = "GET /strict HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(get(kStrict, "HTTP/1.1 200 OK\r\n"));
  for (int i = 0; i < 200; ++i) {  // warm-up
    ASSERT_TRUE(get(kFast, "HTTP/1.1 200 OK\r\n"));
    ASSERT_TRUE(get(kStrict, "HTTP/1.1 429 Too Many Requests\r\n"));
  }
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < 2000 && ok; ++i) {
    ok = get(kFast, "HTTP/1.1 200 OK\r\n") && get(kStrict, "HTTP/1.1 429 Too Many Requests\r\n");
  }
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u) << "allocations during 4,000 requests under limits";
  server.Stop();
  server.Wait();
}

// gzip on: the FAST answers it leaves uncompressed (a client that does not
// accept gzip, a body below --gzip-min-bytes) allocate nothing either; the
// Accept-Encoding parse and the added Vary work in place. A compressed one
// does allocate (its body), and the counter sees it.
TEST(NoAllocationTest, UncompressedAnswersWithGzipOnAllocateNothing) {
  static const std::string page(3000, 'p');
  router::Router router;
  (void)router.Fast("GET", "/page", [](const http::Request&, http::Response& resp) {
    resp.set_content_type("text/html");
    resp.set_static_body(page);
  });
  (void)router.Fast("GET", "/small", [](const http::Request&, http::Response& resp) {
    resp.set_content_type("text/plain");
    resp.set_static_body("small");
  });
  ServerConfig config = LoopbackConfig(/*accept_threads=*/1, /*workers=*/1, /*capacity=*/64);
  config.compression.enabled = true;
  Server server(config, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  testing::TestClient client(server.port());

  static char buf[65536];
  // Reads one response: its head, then Content-Length bytes.
  auto get = [&](const char* request, bool expect_gzip) {
    if (send(client.fd(), request, std::strlen(request), MSG_NOSIGNAL) <= 0) return false;
    size_t got = 0, need = SIZE_MAX;
    while (got < need) {
      ssize_t n = recv(client.fd(), buf + got, sizeof(buf) - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (need == SIZE_MAX) {
        const std::string_view seen(buf, got);
        const size_t end = seen.find("\r\n\r\n");
        const size_t length = seen.find("Content-Length: ");
        if (end == std::string_view::npos || length == std::string_view::npos) continue;
        need = end + 4 + std::strtoul(buf + length + 16, nullptr, 10);
      }
    }
    const std::string_view head(buf, got);
    return got == need && head.starts_with("HTTP/1.1 200 OK\r\n") &&
           head.find("Vary: Accept-Encoding\r\n") != std::string_view::npos &&
           (head.find("Content-Encoding: gzip\r\n") != std::string_view::npos) == expect_gzip;
  };
  const char* kIdentity = "GET /page HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n";
  const char* kSmall = "GET /small HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n";
  const char* kGzip = "GET /page HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n";
  for (int i = 0; i < 50; ++i) {  // warm-up, and the thread's compressor
    ASSERT_TRUE(get(kIdentity, false));
    ASSERT_TRUE(get(kSmall, false));
    ASSERT_TRUE(get(kGzip, true));
  }
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < 1000 && ok; ++i) ok = get(kIdentity, false) && get(kSmall, false);
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u) << "allocations during 2,000 uncompressed answers";
  g_counting.store(true);
  ASSERT_TRUE(get(kGzip, true));
  g_counting.store(false);
  EXPECT_GT(g_allocations.load(), 0u);
  server.Stop();
  server.Wait();
}

}  // namespace
}  // namespace uring_http::serving
