// Allocations per request once a connection is warm: nghttp2's, counted by
// the nghttp2_mem the Session gives it (Session::allocations()), and the
// codec's own C++ ones, counted by the operator new below while the server
// side runs (the test client's work is not counted). The figures are
// printed for the log; the test fails if any is made once warm.
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/http2/session.h"
#include "src/http2/stream.h"
#include "test/http2/h2_test_peer.h"

namespace {
std::atomic<uint64_t> g_new_calls{0};
std::atomic<bool> g_counting{false};
}  // namespace

// Only C++ allocations: nghttp2 allocates with malloc through the Session's
// nghttp2_mem, which counts those apart.
void* operator new(size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_new_calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_new_calls.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace uring_http::http2 {
namespace {

using testing::Fields;
using testing::TestClient;

// Answers each request at once with a small body; allocates nothing itself.
class Responder : public SessionEvents {
 public:
  Session* session = nullptr;
  http::HeaderTable fields;
  int closed = 0;

  void OnRequest(int32_t id, const RequestHead& head) override {
    session->SubmitResponse(id, 200, fields, true);
    session->WriteData(id, "hello, world");
    session->EndData(id);
  }
  void OnRequestRefused(int32_t, int) override {}
  void OnRequestData(int32_t id, std::string_view data) override { session->Consume(id, data.size()); }
  void OnRequestTrailers(int32_t, const http::Header*, size_t) override {}
  void OnRequestEnd(int32_t) override {}
  void OnStreamClosed(int32_t, uint32_t) override { ++closed; }
  void OnStreamWritable(int32_t) override {}
};

// Moves bytes both ways, counting only while the server works.
void CountedPump(Session& server, TestClient& client) {
  static char buf[16384];
  for (int round = 0; round < 100; ++round) {
    const std::string up = client.Output();
    std::string down;
    g_counting = true;
    if (!up.empty()) server.Receive(up.data(), up.size());
    for (;;) {
      const size_t n = server.Send(buf, sizeof(buf));
      if (n == 0) break;
      g_counting = false;
      down.append(buf, n);
      g_counting = true;
    }
    g_counting = false;
    if (!down.empty()) client.Input(down);
    if (up.empty() && down.empty()) break;
  }
}

TEST(SessionAllocTest, WarmConnectionAllocatesNothingPerRequest) {
  Responder events;
  Session server(&events, {});
  events.session = &server;
  events.fields.Add("Content-Type", "text/plain");
  events.fields.Add("Cache-Control", "no-store");
  TestClient client;
  const Fields request = {{":method", "GET"}, {":scheme", "https"}, {":authority", "example.com"},
                          {":path", "/index.html"}, {"user-agent", "alloc-test/1.0"}, {"accept", "*/*"}};
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i) client.Request(request);
    CountedPump(server, client);
  };
  run(20);  // warm-up: pools, HPACK tables, buffers
  ASSERT_EQ(events.closed, 20);

  constexpr int kRequests = 200;
  const uint64_t nghttp2_before = server.allocations();
  g_new_calls = 0;
  for (int i = 0; i < kRequests / 10; ++i) run(10);  // ten streams in flight at a time
  ASSERT_EQ(events.closed, 20 + kRequests);
  const double nghttp2_per_request = static_cast<double>(server.allocations() - nghttp2_before) / kRequests;
  const double ours_per_request = static_cast<double>(g_new_calls.load()) / kRequests;
  std::printf("allocations per request after warm-up: nghttp2 %.2f, codec (operator new) %.2f\n",
              nghttp2_per_request, ours_per_request);
  RecordProperty("nghttp2_allocations_per_request", std::to_string(nghttp2_per_request));
  RecordProperty("codec_allocations_per_request", std::to_string(ours_per_request));
  EXPECT_EQ(g_new_calls.load(), 0u);  // the codec's own buffers are pooled
  // nghttp2's blocks come back to the thread's lists (codec_memory.h).
  EXPECT_EQ(server.allocations(), nghttp2_before);
}

// A closed stream waits among its thread's spares, not in its session: a
// connection between requests keeps no Stream, and another connection's
// next request takes it.
TEST(SessionAllocTest, ClosedStreamsAreTheThreadsSparesNotTheSessions) {
  std::thread([] {
    const Fields request = {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}};
    ASSERT_EQ(internal::SpareStreams(), 0u);
    auto serve = [&request](Session& server, TestClient& client, int streams) {
      for (int i = 0; i < streams; ++i) client.Request(request);
      CountedPump(server, client);
    };
    Responder a_events;
    auto a = std::make_unique<Session>(&a_events, SessionSettings{});
    a_events.session = a.get();
    TestClient a_client;
    serve(*a, a_client, 10);  // ten at once: ten Streams made
    ASSERT_EQ(a_events.closed, 10);
    EXPECT_EQ(internal::SpareStreams(), 10u);

    Responder b_events;
    Session b(&b_events, {});
    b_events.session = &b;
    TestClient b_client;
    serve(b, b_client, 10);  // served by a's ten: none made, none kept twice
    ASSERT_EQ(b_events.closed, 10);
    EXPECT_EQ(internal::SpareStreams(), 10u);
    a.reset();  // holds none of them
    EXPECT_EQ(internal::SpareStreams(), 10u);
  }).join();
}

}  // namespace
}  // namespace uring_http::http2
