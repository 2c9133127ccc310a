// Per-client token buckets with the clock given: the burst, the refill,
// Retry-After, IPv6 clients keyed by /64, eviction within the fixed table.
#include "src/limits/token_buckets.h"

#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "src/limits/client_key.h"

namespace uring_http::limits {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

http::ClientAddress V4(const char* text) {
  uint8_t a[4];
  EXPECT_EQ(inet_pton(AF_INET, text, a), 1);
  return http::ClientAddress::V4(a, 1234);
}

http::ClientAddress V6(const char* text) {
  uint8_t a[16];
  EXPECT_EQ(inet_pton(AF_INET6, text, a), 1);
  return http::ClientAddress::V6(a, 1234);
}

TEST(ClientKeyTest, IPv4ByAddressIPv6ByPrefixMappedAsIPv4) {
  EXPECT_EQ(KeyOf(V4("192.0.2.1")), KeyOf(V4("192.0.2.1")));
  EXPECT_FALSE(KeyOf(V4("192.0.2.1")) == KeyOf(V4("192.0.2.2")));
  // One /64: one client, whichever address in it.
  EXPECT_EQ(KeyOf(V6("2001:db8:1:2::1")), KeyOf(V6("2001:db8:1:2:ffff:1:2:3")));
  EXPECT_FALSE(KeyOf(V6("2001:db8:1:2::1")) == KeyOf(V6("2001:db8:1:3::1")));
  // A dual-stack listener's IPv4 client is the IPv4 client.
  EXPECT_EQ(KeyOf(V6("::ffff:192.0.2.1")), KeyOf(V4("192.0.2.1")));
  EXPECT_FALSE(KeyOf(http::ClientAddress()).known());
  EXPECT_TRUE(KeyOf(V6("::1")).known());
}

TEST(TokenBucketsTest, BurstThenRate) {
  TokenBuckets buckets(RateLimit{2, 5}, 1024);  // 2/s, burst 5
  const ClientKey a = KeyOf(V4("192.0.2.1"));
  const ClientKey b = KeyOf(V4("192.0.2.2"));
  uint32_t retry = 0;
  int64_t t = 100 * kSecond;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(buckets.Take(a, t, &retry)) << i;
  EXPECT_FALSE(buckets.Take(a, t, &retry));
  EXPECT_EQ(retry, 1u);  // half a second to the next token: 1 s, rounded up
  // Another client has its own bucket.
  EXPECT_TRUE(buckets.Take(b, t, &retry));
  // Half a second later one token is back, and only one.
  t += kSecond / 2;
  EXPECT_TRUE(buckets.Take(a, t, &retry));
  EXPECT_FALSE(buckets.Take(a, t, &retry));
  // Long after, the bucket is full again but no fuller.
  t += 3600 * kSecond;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(buckets.Take(a, t, &retry)) << i;
  EXPECT_FALSE(buckets.Take(a, t, &retry));
}

TEST(TokenBucketsTest, RetryAfterCountsWholeSecondsToTheNextToken) {
  TokenBuckets buckets(RateLimit{0.1, 1}, 64);  // one request per 10 s
  const ClientKey a = KeyOf(V4("192.0.2.1"));
  uint32_t retry = 0;
  EXPECT_TRUE(buckets.Take(a, kSecond, &retry));
  EXPECT_FALSE(buckets.Take(a, kSecond, &retry));
  EXPECT_EQ(retry, 10u);
  EXPECT_FALSE(buckets.Take(a, 4 * kSecond + 1, &retry));
  EXPECT_EQ(retry, 7u);  // 6.99... s
}

TEST(TokenBucketsTest, DefaultBurstIsOneSecondsWorth) {
  EXPECT_EQ((RateLimit{10, 0}).bucket(), 10u);
  EXPECT_EQ((RateLimit{2.5, 0}).bucket(), 3u);
  EXPECT_EQ((RateLimit{0.2, 0}).bucket(), 1u);
  EXPECT_EQ((RateLimit{1e12, 0}).bucket(), UINT32_MAX);
  EXPECT_EQ((RateLimit{10, 3}).bucket(), 3u);
}

// The table never grows: past its size, the clients used least recently
// lose their entries, and an entry taken while its bucket was still short
// is counted.
TEST(TokenBucketsTest, FixedSizeEvictsLeastRecentlyUsed) {
  TokenBuckets buckets(RateLimit{1, 1}, 1);  // one set of 8 per shard
  EXPECT_EQ(buckets.capacity(), TokenBuckets::kShards * TokenBuckets::kWays);
  uint32_t retry = 0;
  const int64_t t = kSecond;
  // Many more clients than entries, each emptying its bucket.
  for (uint32_t i = 0; i < 10 * buckets.capacity(); ++i) {
    uint8_t a[4] = {10, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8),
                    static_cast<uint8_t>(i)};
    EXPECT_TRUE(buckets.Take(KeyOf(http::ClientAddress::V4(a, 1)), t, &retry));
  }
  EXPECT_GE(buckets.evictions(), 9 * buckets.capacity() - TokenBuckets::kShards);
  // A client that keeps coming back stays: one request a second for a
  // minute while others churn through the table (its set's other ways hold
  // older entries, which go first).
  const ClientKey steady = KeyOf(V4("192.0.2.9"));
  int refused = 0;
  for (int s = 0; s < 60; ++s) {
    const int64_t now = 2 * kSecond + s * kSecond;
    if (!buckets.Take(steady, now, &retry)) ++refused;
    EXPECT_FALSE(buckets.Take(steady, now, &retry));  // its bucket holds one
    for (uint32_t i = 0; i < 7; ++i) {
      uint8_t a[4] = {11, static_cast<uint8_t>(s), 0, static_cast<uint8_t>(i)};
      buckets.Take(KeyOf(http::ClientAddress::V4(a, 1)), now, &retry);
    }
  }
  EXPECT_EQ(refused, 0);
}

}  // namespace
}  // namespace uring_http::limits
