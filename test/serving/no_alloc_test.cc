// Proves the FAST path allocates nothing per request: global operator new and
// malloc are counted while thousands of keep-alive requests are served after a
// warm-up. The client below allocates nothing in its loop either.
#include <dlfcn.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "gtest/gtest.h"
#include "src/serving/server.h"
#include "test/serving/http_client.h"
#include "test/serving/test_routes.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
std::atomic<bool> g_counting{false};

void Count() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}
}  // namespace

// Every C++ allocation in the process goes through these.
void* operator new(size_t size) {
  Count();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// And the C allocator too (the server's heap fallbacks use malloc). The
// sanitizers interpose malloc themselves, so under them only operator new
// is counted.
extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
#endif

namespace uring_http::serving {
namespace {

TEST(NoAllocationTest, FastPathAllocatesNothingPerRequest) {
  ServerConfig config;
  config.address = "127.0.0.1";
  config.port = 0;
  config.accept_threads = 2;
  config.accept_capacity = 64;
  config.workers = 2;
  Server server(config, testing::MakeTestRouter());
  ASSERT_TRUE(server.Start().ok());

  constexpr int kConnections = 4;
  constexpr int kRequests = 5000;
  static const char kRequest[] = "GET /fast HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::unique_ptr<testing::TestClient> clients[kConnections];
  for (auto& c : clients) c = std::make_unique<testing::TestClient>(server.port());

  char buf[4096];
  auto round_trip = [&](testing::TestClient& c) {
    if (send(c.fd(), kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL) <= 0) return false;
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
  for (int i = 0; i < 500; ++i) {  // warm-up: lazy initialisations happen here
    for (auto& c : clients) ASSERT_TRUE(round_trip(*c));
  }
  g_allocations.store(0);
  g_counting.store(true);
  bool ok = true;
  for (int i = 0; i < kRequests && ok; ++i) {
    for (auto& c : clients) ok = ok && round_trip(*c);
  }
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u)
      << "allocations during " << kRequests * kConnections << " FAST requests";
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

}  // namespace
}  // namespace uring_http::serving
