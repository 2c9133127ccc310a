// Admission on its own: per-route and server-wide in-flight limits, the
// per-client rates, and which routes the server-wide ones cover.
#include "src/limits/request_limits.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::limits {
namespace {

using Verdict = RequestLimits::Verdict;
constexpr int64_t kSecond = 1'000'000'000;

http::ClientAddress Client(uint8_t last) {
  const uint8_t a[4] = {192, 0, 2, last};
  return http::ClientAddress::V4(a, 1);
}

TEST(RequestLimitsTest, NothingLimitedIsNone) {
  RequestLimits none({{}, {}}, 0, {}, 64);
  EXPECT_TRUE(none.none());
  const auto d = none.Admit(0, Client(1), kSecond);
  EXPECT_EQ(d.verdict, Verdict::kAdmit);
  EXPECT_FALSE(d.holds);
  RouteLimitConfig limited;
  limited.max_in_flight = 1;
  EXPECT_FALSE(RequestLimits({{}, limited}, 0, {}, 64).none());
  EXPECT_FALSE(RequestLimits({{}}, 5, {}, 64).none());
  EXPECT_FALSE(RequestLimits({{}}, 0, {1, 1}, 64).none());
}

TEST(RequestLimitsTest, RouteInFlight) {
  RouteLimitConfig two;
  two.max_in_flight = 2;
  RequestLimits limits({two, {}}, 0, {}, 64);
  const auto a = limits.Admit(0, Client(1), kSecond);
  const auto b = limits.Admit(0, Client(2), kSecond);
  EXPECT_EQ(a.verdict, Verdict::kAdmit);
  EXPECT_TRUE(a.holds);
  EXPECT_EQ(b.verdict, Verdict::kAdmit);
  const auto c = limits.Admit(0, Client(3), kSecond);
  EXPECT_EQ(c.verdict, Verdict::kInFlight);
  EXPECT_EQ(c.retry_after_s, 1u);
  // The other route has no limit (and counts nothing).
  const auto other = limits.Admit(1, Client(3), kSecond);
  EXPECT_EQ(other.verdict, Verdict::kAdmit);
  EXPECT_FALSE(other.holds);
  EXPECT_EQ(limits.Counts(0).in_flight, 2u);
  EXPECT_EQ(limits.Counts(0).shed_in_flight, 1u);
  limits.Release(0);
  EXPECT_EQ(limits.Admit(0, Client(3), kSecond).verdict, Verdict::kAdmit);
  // Unmatched requests (route id past the table) are never limited.
  EXPECT_EQ(limits.Admit(2, Client(3), kSecond).verdict, Verdict::kAdmit);
}

TEST(RequestLimitsTest, ServerWideCoversEveryRouteButTheBuiltIns) {
  RouteLimitConfig builtin;
  builtin.server_wide = false;
  RequestLimits limits({{}, {}, builtin}, 2, {}, 64);
  EXPECT_TRUE(limits.Admit(0, Client(1), kSecond).holds);
  EXPECT_TRUE(limits.Admit(1, Client(1), kSecond).holds);
  EXPECT_EQ(limits.Admit(0, Client(1), kSecond).verdict, Verdict::kInFlight);
  EXPECT_EQ(limits.Admit(1, Client(1), kSecond).verdict, Verdict::kInFlight);
  const auto scrape = limits.Admit(2, Client(1), kSecond);
  EXPECT_EQ(scrape.verdict, Verdict::kAdmit);
  EXPECT_FALSE(scrape.holds);
  EXPECT_EQ(limits.server_in_flight(), 2u);
  limits.Release(1);
  EXPECT_EQ(limits.server_in_flight(), 1u);
  EXPECT_EQ(limits.Admit(0, Client(1), kSecond).verdict, Verdict::kAdmit);
}

// A route's own limit and the server's: a request refused by the second
// gives its place in the first back.
TEST(RequestLimitsTest, BothInFlightLimits) {
  RouteLimitConfig five;
  five.max_in_flight = 5;
  RequestLimits limits({five, {}}, 1, {}, 64);
  EXPECT_TRUE(limits.Admit(1, Client(1), kSecond).holds);  // the server's one place
  EXPECT_EQ(limits.Admit(0, Client(1), kSecond).verdict, Verdict::kInFlight);
  EXPECT_EQ(limits.Counts(0).in_flight, 0u);
}

TEST(RequestLimitsTest, RatesPerRouteAndServerWide) {
  RouteLimitConfig strict;
  strict.rate_per_client = {1, 2};
  RouteLimitConfig builtin;
  builtin.server_wide = false;
  RequestLimits limits({strict, {}, builtin}, 0, RateLimit{1, 3}, 64);
  // Route 0: its own bucket of 2 runs out first.
  EXPECT_EQ(limits.Admit(0, Client(1), kSecond).verdict, Verdict::kAdmit);
  EXPECT_EQ(limits.Admit(0, Client(1), kSecond).verdict, Verdict::kAdmit);
  const auto d = limits.Admit(0, Client(1), kSecond);
  EXPECT_EQ(d.verdict, Verdict::kRate);
  EXPECT_EQ(d.retry_after_s, 1u);
  // The server's bucket of 3 had 2 taken: route 1 gets one more.
  EXPECT_EQ(limits.Admit(1, Client(1), kSecond).verdict, Verdict::kAdmit);
  EXPECT_EQ(limits.Admit(1, Client(1), kSecond).verdict, Verdict::kRate);
  // Another client is served; the built-in route is not limited.
  EXPECT_EQ(limits.Admit(1, Client(2), kSecond).verdict, Verdict::kAdmit);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(limits.Admit(2, Client(1), kSecond).verdict, Verdict::kAdmit);
  }
  EXPECT_EQ(limits.Counts(0).shed_rate, 1u);
  EXPECT_EQ(limits.Counts(1).shed_rate, 1u);
  // A client without an address is not limited.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(limits.Admit(1, http::ClientAddress(), kSecond).verdict, Verdict::kAdmit);
  }
}

// Rings admitting and releasing at once never let more than the limit in.
TEST(RequestLimitsTest, InFlightHoldsAcrossThreads) {
  RouteLimitConfig three;
  three.max_in_flight = 3;
  RequestLimits limits({three}, 0, {}, 64);
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!limits.Admit(0, Client(1), kSecond).holds) continue;
        const int now = inside.fetch_add(1) + 1;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        inside.fetch_sub(1);
        limits.Release(0);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(limits.Counts(0).in_flight, 0u);
}

}  // namespace
}  // namespace uring_http::limits
