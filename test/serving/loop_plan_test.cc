// PlanLoop: the fixed-file table bounds connections (with the acceptor's
// reserve and the files' entries), and the pools follow the capacity.
#include "src/serving/loop_plan.h"

#include "gtest/gtest.h"
#include "src/serving/acceptor.h"

namespace uring_http::serving {
namespace {

constexpr uint32_t kReserve = Acceptor::kRefuseReserve;

ServerConfig Config(uint32_t capacity) {
  ServerConfig c;
  c.accept_capacity = capacity;
  return c;
}

TEST(LoopPlanTest, AmpleLimitGivesTheConfiguredCapacity) {
  auto plan = PlanLoop(Config(10'000), /*files=*/false, 1 << 20, 1024, 1 << 20);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->capacity, 10'000u);
  EXPECT_EQ(plan->file_table_size, 10'000u + kReserve);
  EXPECT_FALSE(plan->files);
  EXPECT_EQ(plan->sq_entries, 4096u);          // clamped
  EXPECT_EQ(plan->cq_entries, 16384u);         // the power of two above capacity + 1024
  EXPECT_EQ(plan->recv_buffers, 1024u);
  EXPECT_EQ(plan->chunks, 1250u);
}

TEST(LoopPlanTest, TheTableLimitBoundsConnections) {
  auto plan = PlanLoop(Config(10'000), false, 4096, 4096, 4096);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->file_table_size, 4096u);
  EXPECT_EQ(plan->capacity, 4096u - kReserve);
}

TEST(LoopPlanTest, FilesTakeTheirEntriesBeforeConnections) {
  ServerConfig c = Config(10'000);
  c.open_file_cache_entries = 1000;
  auto plan = PlanLoop(c, /*files=*/true, 8192, 8192, 8192);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->files);
  EXPECT_EQ(plan->file_table_size, 8192u);
  // The cache's 1000 and 1024 files open outside it.
  EXPECT_EQ(plan->capacity, 8192u - kReserve - 1000 - kUncachedFiles);
  EXPECT_EQ(plan->file_service.cache.max_entries, 1000u);
  EXPECT_EQ(plan->file_service.max_pipes, 256u);
  EXPECT_GE(plan->file_service.buffer_count, 64u);
  EXPECT_LE(plan->file_service.buffer_count, 512u);
  // A small capacity needs fewer entries for files outside the cache.
  auto small = PlanLoop(Config(100), true, 1 << 20, 1024, 1 << 20);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->capacity, 100u);
  EXPECT_EQ(small->file_table_size, 100u + kReserve + c.open_file_cache_entries + 100u);
  EXPECT_EQ(small->file_service.max_pipes, 100u);
}

TEST(LoopPlanTest, NoRoomForConnectionsIsAnErrorNamingTheLimit) {
  ServerConfig c = Config(10'000);
  c.open_file_cache_entries = 1000;
  auto plan = PlanLoop(c, true, 1500, 64, 1500);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("RLIMIT_NOFILE (64, hard 1500)"), std::string::npos);
  EXPECT_NE(plan.status().message().find("files"), std::string::npos);
  EXPECT_FALSE(PlanLoop(Config(10), false, kReserve, 64, 64).ok());
}

TEST(LoopPlanTest, ExplicitSizesWin) {
  ServerConfig c = Config(1000);
  c.ring_sq_entries = 128;
  c.ring_cq_entries = 512;
  c.recv_buffer_count = 100;  // rounded up to a power of two
  c.bulk_buffer_count = 3;
  auto plan = PlanLoop(c, false, 1 << 20, 1024, 1 << 20);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->sq_entries, 128u);
  EXPECT_EQ(plan->cq_entries, 512u);
  EXPECT_EQ(plan->recv_buffers, 128u);
  EXPECT_EQ(plan->bulk_buffers, 4u);
  const exchange::ConnectionConfig cc = ConnectionConfigFor(c, *plan);
  EXPECT_TRUE(cc.bulk_receives);
  EXPECT_EQ(cc.tick_ms, kTickMs);
  EXPECT_EQ(cc.recv_pool_bytes, size_t{128} * plan->recv_buffer_size +
                                    size_t{4} * plan->bulk_buffer_size);
}

}  // namespace
}  // namespace uring_http::serving
