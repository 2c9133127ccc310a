// Tests for TimerWheel: scheduling, cancelling and moving timers; expiry at
// the first Advance() whose tick reaches the deadline (never earlier, never a
// lap later), deadlines more than one lap ahead, large jumps of `now`, an
// expire callback that reschedules its own slot, and size() accounting. A
// randomized run checks all of it against a plain reference model.
#include "src/serving/timer_wheel.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::serving {
namespace {

// Advances `wheel` to `now` and returns the expired slots in firing order.
std::vector<uint32_t> AdvanceTo(TimerWheel& wheel, uint64_t now) {
  std::vector<uint32_t> fired;
  wheel.Advance(now, [&](uint32_t slot) {
    EXPECT_FALSE(wheel.scheduled(slot)) << "expire(" << slot << ") before unlinking";
    fired.push_back(slot);
  });
  return fired;
}

using Slots = std::vector<uint32_t>;

TEST(TimerWheelTest, StartsEmpty) {
  TimerWheel wheel;
  wheel.Init(8, 16, 100);
  EXPECT_EQ(wheel.size(), 0u);
  for (uint32_t slot = 0; slot < 8; ++slot) EXPECT_FALSE(wheel.scheduled(slot));
  EXPECT_TRUE(AdvanceTo(wheel, 1000).empty());
}

TEST(TimerWheelTest, FiresAtTheDeadlineTickNotBefore) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(2, 5);
  EXPECT_TRUE(wheel.scheduled(2));
  EXPECT_EQ(wheel.deadline(2), 5u);
  EXPECT_EQ(wheel.size(), 1u);

  for (uint64_t now = 1; now < 5; ++now) {
    EXPECT_TRUE(AdvanceTo(wheel, now).empty()) << now;
  }
  EXPECT_EQ(AdvanceTo(wheel, 5), Slots{2});
  EXPECT_FALSE(wheel.scheduled(2));
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_TRUE(AdvanceTo(wheel, 6).empty());  // once only
}

TEST(TimerWheelTest, FiresWhenAdvancedPastTheDeadline) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(0, 5);
  wheel.Schedule(1, 7);
  wheel.Schedule(3, 12);
  EXPECT_EQ(AdvanceTo(wheel, 8), (Slots{0, 1}));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_TRUE(wheel.scheduled(3));
  EXPECT_EQ(AdvanceTo(wheel, 12), Slots{3});
}

TEST(TimerWheelTest, PastOrPresentDeadlineFiresOnTheNextTick) {
  TimerWheel wheel;
  wheel.Init(4, 16, 50);
  wheel.Schedule(0, 50);  // now
  wheel.Schedule(1, 3);   // long ago
  EXPECT_EQ(wheel.deadline(0), 51u);
  EXPECT_EQ(wheel.deadline(1), 51u);
  EXPECT_TRUE(AdvanceTo(wheel, 50).empty());  // not within the current tick
  Slots fired = AdvanceTo(wheel, 51);
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, (Slots{0, 1}));
}

TEST(TimerWheelTest, CancelPreventsExpiry) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(0, 3);
  wheel.Schedule(1, 3);  // same bucket
  wheel.Schedule(2, 3);
  wheel.Cancel(1);       // from the middle of the bucket's list
  EXPECT_FALSE(wheel.scheduled(1));
  EXPECT_EQ(wheel.size(), 2u);
  wheel.Cancel(1);  // twice: no effect
  wheel.Cancel(3);  // never scheduled: no effect
  EXPECT_EQ(wheel.size(), 2u);
  Slots fired = AdvanceTo(wheel, 3);
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, (Slots{0, 2}));
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheelTest, CancelHeadAndTailOfABucket) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(0, 4);
  wheel.Schedule(1, 4);
  wheel.Schedule(2, 4);  // the list is 2 -> 1 -> 0
  wheel.Cancel(2);       // head
  wheel.Cancel(0);       // tail
  EXPECT_EQ(AdvanceTo(wheel, 4), Slots{1});
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheelTest, RescheduleMovesTheDeadline) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(0, 5);
  wheel.Schedule(0, 9);  // later
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.deadline(0), 9u);
  EXPECT_TRUE(AdvanceTo(wheel, 8).empty());
  EXPECT_EQ(AdvanceTo(wheel, 9), Slots{0});

  wheel.Schedule(1, 20);
  wheel.Schedule(1, 12);  // earlier
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(AdvanceTo(wheel, 12), Slots{1});
  EXPECT_TRUE(AdvanceTo(wheel, 20).empty());
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheelTest, DeadlinesBeyondOneLapDoNotFireEarly) {
  TimerWheel wheel;
  wheel.Init(4, 8, 0);  // a lap is 8 ticks
  wheel.Schedule(0, 3);
  wheel.Schedule(1, 3 + 8);       // same bucket, one lap later
  wheel.Schedule(2, 3 + 8 * 5);   // five laps later
  EXPECT_EQ(AdvanceTo(wheel, 3), Slots{0});
  for (uint64_t now = 4; now < 11; ++now) EXPECT_TRUE(AdvanceTo(wheel, now).empty()) << now;
  EXPECT_EQ(AdvanceTo(wheel, 11), Slots{1});
  for (uint64_t now = 12; now < 43; ++now) EXPECT_TRUE(AdvanceTo(wheel, now).empty()) << now;
  EXPECT_EQ(AdvanceTo(wheel, 43), Slots{2});
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheelTest, BigJumpExpiresEverythingDueAndNothingElse) {
  TimerWheel wheel;
  wheel.Init(64, 16, 0);
  // Deadlines 1..64 spread over every bucket several times over.
  for (uint32_t slot = 0; slot < 64; ++slot) wheel.Schedule(slot, slot + 1);
  Slots fired = AdvanceTo(wheel, 40);  // 40 ticks at once: more than 2 laps
  std::sort(fired.begin(), fired.end());
  Slots expected;
  for (uint32_t slot = 0; slot < 40; ++slot) expected.push_back(slot);
  EXPECT_EQ(fired, expected);
  EXPECT_EQ(wheel.size(), 24u);
  for (uint32_t slot = 40; slot < 64; ++slot) EXPECT_TRUE(wheel.scheduled(slot)) << slot;

  // A jump far beyond any lap: the rest, all at once.
  fired = AdvanceTo(wheel, 1'000'000);
  EXPECT_EQ(fired.size(), 24u);
  EXPECT_EQ(wheel.size(), 0u);

  // The wheel keeps working from the new position.
  wheel.Schedule(5, 1'000'003);
  EXPECT_TRUE(AdvanceTo(wheel, 1'000'002).empty());
  EXPECT_EQ(AdvanceTo(wheel, 1'000'003), Slots{5});
}

TEST(TimerWheelTest, GoingBackwardsExpiresNothing) {
  TimerWheel wheel;
  wheel.Init(4, 16, 100);
  wheel.Schedule(0, 105);
  EXPECT_TRUE(AdvanceTo(wheel, 90).empty());
  EXPECT_TRUE(AdvanceTo(wheel, 104).empty());
  EXPECT_EQ(AdvanceTo(wheel, 105), Slots{0});
}

TEST(TimerWheelTest, ExpireMayRescheduleTheSameSlot) {
  TimerWheel wheel;
  wheel.Init(4, 8, 0);
  wheel.Schedule(1, 3);
  std::vector<uint64_t> fired_at;
  uint64_t now = 0;
  auto periodic = [&](uint32_t slot) {
    fired_at.push_back(now);
    wheel.Schedule(slot, now + 3);  // a repeating timer, every 3 ticks
  };
  for (now = 1; now <= 20; ++now) wheel.Advance(now, periodic);
  EXPECT_EQ(fired_at, (std::vector<uint64_t>{3, 6, 9, 12, 15, 18}));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.deadline(1), 21u);
}

TEST(TimerWheelTest, RescheduleDuringABigJumpWaitsForItsNewDeadline) {
  TimerWheel wheel;
  wheel.Init(4, 8, 0);
  wheel.Schedule(0, 2);
  wheel.Schedule(1, 2);  // same bucket as 0: rescheduling must not disturb it
  int calls = 0;
  // One Advance over 100 ticks (12 laps); each expiry moves its slot past
  // `now`: slot 1 into the very bucket being walked (106 % 8 == 2), slot 0
  // into one already walked (105 % 8 == 1). Neither may fire again now.
  wheel.Advance(100, [&](uint32_t slot) {
    ++calls;
    wheel.Schedule(slot, 105 + slot);
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(wheel.size(), 2u);
  EXPECT_EQ(wheel.deadline(0), 105u);
  EXPECT_EQ(wheel.deadline(1), 106u);
  EXPECT_TRUE(AdvanceTo(wheel, 104).empty());
  EXPECT_EQ(AdvanceTo(wheel, 105), Slots{0});
  EXPECT_EQ(AdvanceTo(wheel, 106), Slots{1});
}

// Random schedules, cancels and advances (small steps and big jumps) against
// a reference: slot -> deadline. Each Advance must fire exactly the timers
// whose deadline is <= now, each once.
TEST(TimerWheelTest, ExtendPushesTheDeadlineWithoutFiringEarly) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(1, 5);
  wheel.Extend(1, 9);  // later: the entry stays filed at 5
  EXPECT_EQ(wheel.deadline(1), 9u);
  EXPECT_TRUE(AdvanceTo(wheel, 5).empty());  // re-filed at 9, not fired
  EXPECT_TRUE(wheel.scheduled(1));
  EXPECT_TRUE(AdvanceTo(wheel, 8).empty());
  EXPECT_EQ(AdvanceTo(wheel, 9), Slots({1}));
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheelTest, ExtendToAnEarlierDeadlineReschedules) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(2, 10);
  wheel.Extend(2, 3);
  EXPECT_EQ(wheel.deadline(2), 3u);
  EXPECT_EQ(AdvanceTo(wheel, 3), Slots({2}));
  wheel.Extend(3, 4);  // not scheduled: a plain Schedule
  EXPECT_TRUE(wheel.scheduled(3));
  EXPECT_EQ(AdvanceTo(wheel, 4), Slots({3}));
}

TEST(TimerWheelTest, ExpireSchedulingAtOrBeforeNowFiresOnTheNextTickNotALapLater) {
  TimerWheel wheel;
  wheel.Init(4, 16, 0);
  wheel.Schedule(0, 2);
  bool rescheduled = false;
  wheel.Advance(6, [&](uint32_t slot) {
    if (!rescheduled) {
      rescheduled = true;
      wheel.Schedule(slot, 1);  // in the past
    }
  });
  // Re-filed one tick after the bucket being processed (3): reached by the
  // same pass, not 16 ticks later.
  EXPECT_FALSE(wheel.scheduled(0));
}

TEST(TimerWheelTest, MatchesAReferenceModel) {
  constexpr uint32_t kSlots = 200;
  constexpr uint32_t kBuckets = 32;
  std::mt19937_64 rng(12345);
  TimerWheel wheel;
  uint64_t now = 1000;
  wheel.Init(kSlots, kBuckets, now);
  std::map<uint32_t, uint64_t> model;

  for (int step = 0; step < 20000; ++step) {
    const uint32_t slot = static_cast<uint32_t>(rng() % kSlots);
    switch (rng() % 4) {
      case 0:
      case 1: {
        // Deadlines from the past up to several laps ahead.
        const uint64_t deadline = now - 5 + rng() % (kBuckets * 4);
        wheel.Schedule(slot, deadline);
        model[slot] = deadline <= now ? now + 1 : deadline;
        break;
      }
      case 2:
        wheel.Cancel(slot);
        model.erase(slot);
        break;
      case 3: {
        const uint64_t r = rng() % 100;
        const uint64_t next = now + (r < 90 ? r % 3 : r < 98 ? kBuckets + r : 50 * kBuckets);
        std::vector<uint32_t> expected;
        for (auto it = model.begin(); it != model.end();) {
          if (it->second <= next) {
            expected.push_back(it->first);
            it = model.erase(it);
          } else {
            ++it;
          }
        }
        std::vector<uint32_t> fired = AdvanceTo(wheel, next);
        std::sort(fired.begin(), fired.end());
        ASSERT_EQ(fired, expected) << "step " << step << ": " << now << " -> " << next;
        now = next;
        break;
      }
    }
    ASSERT_EQ(wheel.size(), model.size()) << "step " << step;
    ASSERT_EQ(wheel.scheduled(slot), model.count(slot) == 1) << "step " << step;
    if (model.count(slot) == 1) {
      ASSERT_EQ(wheel.deadline(slot), model[slot]);
    }
  }
}

}  // namespace
}  // namespace uring_http::serving
