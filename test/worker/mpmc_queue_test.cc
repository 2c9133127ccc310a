// Tests for MpmcQueue: single-threaded semantics (capacity, FIFO, full and
// empty, ownership of move-only and non-default-constructible elements,
// wrap-around) and a multi-producer/multi-consumer stress that checks no
// element is lost or duplicated and each producer's elements stay in order.
#include "src/worker/mpmc_queue.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::worker {
namespace {

// Sanitizers slow the stress down 5-20x; fewer items keep it within seconds
// while still wrapping the ring thousands of times.
#ifdef URING_HTTP_SANITIZED
constexpr uint32_t kItemsPerProducer = 50'000;
#else
constexpr uint32_t kItemsPerProducer = 200'000;
#endif

TEST(MpmcQueueTest, CapacityRoundsUpToPowerOfTwoAtLeastTwo) {
  EXPECT_EQ(MpmcQueue<int>(0).capacity(), 2u);
  EXPECT_EQ(MpmcQueue<int>(1).capacity(), 2u);
  EXPECT_EQ(MpmcQueue<int>(2).capacity(), 2u);
  EXPECT_EQ(MpmcQueue<int>(3).capacity(), 4u);
  EXPECT_EQ(MpmcQueue<int>(5).capacity(), 8u);
  EXPECT_EQ(MpmcQueue<int>(1000).capacity(), 1024u);
  EXPECT_EQ(MpmcQueue<int>(1024).capacity(), 1024u);
  EXPECT_EQ(MpmcQueue<int>(1025).capacity(), 2048u);
}

TEST(MpmcQueueTest, PositionsDoNotShareACacheLine) {
  EXPECT_EQ(alignof(MpmcQueue<int>) % 64, 0u);
  EXPECT_EQ(sizeof(MpmcQueue<int>) % 64, 0u);
  EXPECT_GE(sizeof(MpmcQueue<int>), 3 * 64u);
}

TEST(MpmcQueueTest, EmptyQueuePopsNothing) {
  MpmcQueue<int> queue(4);
  int out = -1;
  EXPECT_FALSE(queue.TryPop(out));
  EXPECT_EQ(out, -1);
  EXPECT_EQ(queue.ApproxSize(), 0u);

  ASSERT_TRUE(queue.TryPush(7));
  ASSERT_TRUE(queue.TryPop(out));
  EXPECT_FALSE(queue.TryPop(out));
  EXPECT_EQ(out, 7);
}

TEST(MpmcQueueTest, SingleThreadedFifo) {
  MpmcQueue<int> queue(8);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(queue.TryPush(i));
  EXPECT_EQ(queue.ApproxSize(), 8u);
  for (int i = 0; i < 8; ++i) {
    int out = -1;
    ASSERT_TRUE(queue.TryPop(out));
    EXPECT_EQ(out, i);
  }
  EXPECT_EQ(queue.ApproxSize(), 0u);
}

TEST(MpmcQueueTest, FullQueueRejectsPushAndKeepsEverything) {
  MpmcQueue<int> queue(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.TryPush(i));
  EXPECT_FALSE(queue.TryPush(100));
  EXPECT_FALSE(queue.TryPush(101));
  EXPECT_EQ(queue.ApproxSize(), 4u);

  // A pop frees exactly one cell.
  int out = -1;
  ASSERT_TRUE(queue.TryPop(out));
  EXPECT_EQ(out, 0);
  EXPECT_TRUE(queue.TryPush(4));
  EXPECT_FALSE(queue.TryPush(102));

  for (int expected = 1; expected <= 4; ++expected) {
    ASSERT_TRUE(queue.TryPop(out));
    EXPECT_EQ(out, expected);
  }
  EXPECT_FALSE(queue.TryPop(out));
}

TEST(MpmcQueueTest, CopyPushLeavesSourceIntact) {
  MpmcQueue<std::string> queue(2);
  const std::string hello = "a string long enough to live on the heap";
  ASSERT_TRUE(queue.TryPush(hello));
  EXPECT_EQ(hello, "a string long enough to live on the heap");
  std::string out;
  ASSERT_TRUE(queue.TryPop(out));
  EXPECT_EQ(out, hello);
}

TEST(MpmcQueueTest, RejectedMovePushLeavesValueWithCaller) {
  MpmcQueue<std::unique_ptr<int>> queue(2);
  ASSERT_TRUE(queue.TryPush(std::make_unique<int>(1)));
  ASSERT_TRUE(queue.TryPush(std::make_unique<int>(2)));

  auto rejected = std::make_unique<int>(3);
  EXPECT_FALSE(queue.TryPush(std::move(rejected)));
  ASSERT_NE(rejected, nullptr);  // still ours: nothing was moved out
  EXPECT_EQ(*rejected, 3);
}

// Counts destructions of the pointee, so the test sees exactly which
// elements the queue destroyed.
struct Tracked {
  explicit Tracked(int v, int* destroyed) : value(v), destroyed(destroyed) {}
  ~Tracked() { ++*destroyed; }
  int value;
  int* destroyed;
};

TEST(MpmcQueueTest, MoveOnlyElementsAndRemainingOnesDestroyed) {
  int destroyed = 0;
  {
    MpmcQueue<std::unique_ptr<Tracked>> queue(8);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(queue.TryPush(std::make_unique<Tracked>(i, &destroyed)));
    }
    std::unique_ptr<Tracked> out;
    ASSERT_TRUE(queue.TryPop(out));
    EXPECT_EQ(out->value, 0);
    ASSERT_TRUE(queue.TryPop(out));  // the previous `out` is destroyed here
    EXPECT_EQ(out->value, 1);
    EXPECT_EQ(destroyed, 1);
    out.reset();
    EXPECT_EQ(destroyed, 2);
    // Three elements are left for the queue's destructor.
  }
  EXPECT_EQ(destroyed, 5);
}

// Counts live instances of itself; has no default constructor, so the queue
// must construct elements in place rather than assign into default ones.
class Live {
 public:
  explicit Live(int v) : value_(v) { ++count; }
  Live(Live&& other) noexcept : value_(other.value_) { ++count; }
  Live& operator=(Live&& other) noexcept = default;
  ~Live() { --count; }
  int value() const { return value_; }

  static inline int count = 0;

 private:
  int value_;
};

TEST(MpmcQueueTest, ElementsLiveOnlyWhileQueued) {
  ASSERT_EQ(Live::count, 0);
  {
    MpmcQueue<Live> queue(4);
    EXPECT_EQ(Live::count, 0);  // empty cells hold no object
    ASSERT_TRUE(queue.TryPush(Live(1)));
    ASSERT_TRUE(queue.TryPush(Live(2)));
    ASSERT_TRUE(queue.TryPush(Live(3)));
    EXPECT_EQ(Live::count, 3);
    {
      Live out(0);
      ASSERT_TRUE(queue.TryPop(out));
      EXPECT_EQ(out.value(), 1);
      EXPECT_EQ(Live::count, 3);  // two queued plus `out`
    }
    EXPECT_EQ(Live::count, 2);
  }
  EXPECT_EQ(Live::count, 0);
}

TEST(MpmcQueueTest, DestructorAfterWrapAroundDestroysExactlyTheRemainder) {
  ASSERT_EQ(Live::count, 0);
  {
    MpmcQueue<Live> queue(4);
    Live out(0);
    for (int i = 0; i < 1002; ++i) {
      ASSERT_TRUE(queue.TryPush(Live(i)));
      ASSERT_TRUE(queue.TryPop(out));
    }
    // The positions have wrapped the ring hundreds of times; the remainder
    // occupies cells 2, 3 and 0, across the wrap.
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(queue.TryPush(Live(i)));
    EXPECT_EQ(Live::count, 1 + 3);
  }
  EXPECT_EQ(Live::count, 0);
}

struct alignas(64) OverAligned {
  uint64_t value = 0;
};

TEST(MpmcQueueTest, OverAlignedElementsAreAligned) {
  MpmcQueue<OverAligned> queue(4);
  for (uint64_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(queue.TryPush(OverAligned{i}));
    OverAligned out;
    ASSERT_TRUE(queue.TryPop(out));  // UBSan flags a misaligned access
    EXPECT_EQ(out.value, i);
  }
}

TEST(MpmcQueueTest, WrapsAroundManyTimesInOrder) {
  MpmcQueue<uint64_t> queue(4);
  uint64_t next_push = 0;
  uint64_t next_pop = 0;
  // Vary the fill level so every cell is seen at every offset from the head.
  for (int round = 0; round < 10'000; ++round) {
    const int pushes = 1 + round % 4;
    for (int i = 0; i < pushes; ++i) {
      if (queue.TryPush(next_push)) ++next_push;
    }
    const int pops = 1 + (round * 7) % 4;
    for (int i = 0; i < pops; ++i) {
      uint64_t out = 0;
      if (!queue.TryPop(out)) break;
      ASSERT_EQ(out, next_pop);
      ++next_pop;
    }
    ASSERT_LE(next_push - next_pop, queue.capacity());
    ASSERT_EQ(queue.ApproxSize(), next_push - next_pop);
  }
  EXPECT_GT(next_pop, 1000 * queue.capacity());
}

struct Item {
  uint32_t producer;
  uint32_t seq;
};

// Pushes kItemsPerProducer items from each producer through a small queue
// (so producers often find it full and consumers often find it empty) and
// checks: every (producer, seq) arrives exactly once, and each consumer sees
// each producer's sequence numbers strictly increasing. `make` wraps an Item
// into the queue's element type and `read` unwraps it.
template <typename Element, typename Make, typename Read>
void RunStress(int producers, int consumers, Make make, Read read) {
  MpmcQueue<Element> queue(64);
  const uint64_t total = uint64_t{kItemsPerProducer} * producers;
  std::atomic<uint64_t> consumed{0};

  // Each consumer's record; compared only after join.
  std::vector<std::vector<Item>> received(consumers);
  for (auto& r : received) r.reserve(total);
  std::vector<std::thread> threads;

  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      Element element{};
      while (consumed.load(std::memory_order_relaxed) < total) {
        if (queue.TryPop(element)) {
          received[c].push_back(read(element));
          consumed.fetch_add(1, std::memory_order_relaxed);
        } else {
          // Two cores and eight threads: let the producer holding the head
          // cell run instead of spinning against it.
          std::this_thread::yield();
        }
      }
    });
  }
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (uint32_t seq = 0; seq < kItemsPerProducer; ++seq) {
        Element element = make(Item{static_cast<uint32_t>(p), seq});
        while (!queue.TryPush(std::move(element))) std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();

  std::vector<std::vector<uint8_t>> seen(
      producers, std::vector<uint8_t>(kItemsPerProducer, 0));
  uint64_t count = 0;
  for (int c = 0; c < consumers; ++c) {
    std::vector<int64_t> last_seq(producers, -1);
    for (const Item& item : received[c]) {
      ASSERT_LT(item.producer, static_cast<uint32_t>(producers));
      ASSERT_LT(item.seq, kItemsPerProducer);
      ASSERT_GT(static_cast<int64_t>(item.seq), last_seq[item.producer])
          << "consumer " << c << " saw producer " << item.producer
          << " out of order";
      last_seq[item.producer] = item.seq;
      ASSERT_EQ(seen[item.producer][item.seq]++, 0)
          << "duplicate: producer " << item.producer << " seq " << item.seq;
      ++count;
    }
  }
  EXPECT_EQ(count, total);  // with no duplicates, this means no loss
  uint64_t leftover = 0;
  Element element{};
  while (queue.TryPop(element)) ++leftover;
  EXPECT_EQ(leftover, 0u);
}

TEST(MpmcQueueStressTest, FourProducersFourConsumers) {
  RunStress<Item>(
      4, 4, [](Item item) { return item; }, [](const Item& item) { return item; });
}

TEST(MpmcQueueStressTest, OneProducerOneConsumer) {
  RunStress<Item>(
      1, 1, [](Item item) { return item; }, [](const Item& item) { return item; });
}

// Heap-allocated payloads: the consumer reads memory the producer wrote
// before the push, so TSan checks the push/pop hand-over publishes it.
TEST(MpmcQueueStressTest, MoveOnlyPayloadsTwoProducersThreeConsumers) {
  RunStress<std::unique_ptr<Item>>(
      2, 3, [](Item item) { return std::make_unique<Item>(item); },
      [](const std::unique_ptr<Item>& item) { return *item; });
}

}  // namespace
}  // namespace uring_http::worker
