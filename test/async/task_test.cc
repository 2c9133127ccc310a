// Task and FramePool without a ring: a coroutine chain run by hand (a
// "ring" that resumes the one suspended awaiter), results and exceptions
// through nested awaits, a deep chain that symmetric transfer keeps off
// the stack, and frames that come back to their pool and are reused.
#include "src/async/task.h"

#include <coroutine>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"
#include "src/async/frame_pool.h"

namespace uring_http::async {
namespace {

// One pending resumption, as a ring's completion would give it.
struct Resumer {
  std::coroutine_handle<> pending;
  auto Wait() {
    struct Awaiter {
      Resumer* r;
      bool await_ready() { return false; }
      void await_suspend(std::coroutine_handle<> h) { r->pending = h; }
      void await_resume() {}
    };
    return Awaiter{this};
  }
  bool Step() {
    if (!pending) return false;
    std::exchange(pending, {}).resume();
    return true;
  }
};

Task<int> Add(Resumer& r, int a, int b) {
  co_await r.Wait();
  co_return a + b;
}

Task<int> Sum(Resumer& r, int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total += co_await Add(r, i, 1);
  co_return total;
}

Task<std::string> Throws(Resumer& r) {
  co_await r.Wait();
  throw std::runtime_error("boom");
}

Task<> Catches(Resumer& r, std::string* seen) {
  try {
    (void)co_await Throws(r);
  } catch (const std::exception& e) {
    *seen = e.what();
  }
}

struct Done {
  bool called = false;
  static void Call(void* arg) { static_cast<Done*>(arg)->called = true; }
};

TEST(TaskTest, NestedAwaitsResumeThroughTheirCallersAndEndWithOnDone) {
  Resumer r;
  Task<int> t = Sum(r, 10);
  Done done;
  t.Start(&Done::Call, &done);
  int steps = 0;
  while (r.Step()) ++steps;
  EXPECT_EQ(steps, 10);  // one suspension per nested Add
  ASSERT_TRUE(done.called);
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.Result(), 55);
}

TEST(TaskTest, AnExceptionReachesTheAwaiterAndARootRethrowsItsOwn) {
  Resumer r;
  std::string seen;
  Task<> caught = Catches(r, &seen);
  Done done;
  caught.Start(&Done::Call, &done);
  while (r.Step()) {
  }
  EXPECT_TRUE(done.called);
  EXPECT_EQ(seen, "boom");
  EXPECT_NO_THROW(caught.Result());

  Task<std::string> thrower = Throws(r);
  Done done2;
  thrower.Start(&Done::Call, &done2);
  while (r.Step()) {
  }
  EXPECT_TRUE(done2.called);
  EXPECT_THROW(thrower.Result(), std::runtime_error);
}

Task<int> Immediate(int v) { co_return v; }

Task<long> Deep(int n) {
  long total = 0;
  // Each await of a task that ends at once transfers there and back: a
  // chain this long would overflow the stack if it nested calls.
  for (int i = 0; i < n; ++i) total += co_await Immediate(1);
  co_return total;
}

TEST(TaskTest, AMillionImmediateAwaitsDoNotGrowTheStack) {
  Task<long> t = Deep(1'000'000);
  Done done;
  t.Start(&Done::Call, &done);
  ASSERT_TRUE(done.called);
  EXPECT_EQ(t.Result(), 1'000'000);
}

TEST(TaskTest, ASuspendedTaskCanBeDestroyed) {
  Resumer r;
  FramePool pool(1);
  FramePool::SetCurrent(&pool);
  {
    Task<int> t = Sum(r, 3);
    Done done;
    t.Start(&Done::Call, &done);
    EXPECT_TRUE(r.pending);
    EXPECT_EQ(pool.stats().in_use, 2u);  // Sum and its first Add
    r.pending = {};
  }  // destroying Sum destroys the Add it awaits (its Task local)
  EXPECT_EQ(pool.stats().in_use, 0u);
  FramePool::SetCurrent(nullptr);
}

TEST(FramePoolTest, FramesComeBackAndAreReusedWithoutNewSlabs) {
  FramePool pool(2);
  FramePool::SetCurrent(&pool);
  Resumer r;
  for (int round = 0; round < 1000; ++round) {
    Task<int> t = Sum(r, 3);
    Done done;
    t.Start(&Done::Call, &done);
    while (r.Step()) {
    }
    ASSERT_EQ(t.Result(), 6);
  }
  EXPECT_EQ(pool.stats().in_use, 0u);
  EXPECT_EQ(pool.stats().slabs, 0u);  // the preallocated frames served them all
  EXPECT_EQ(pool.stats().oversized, 0u);
  FramePool::SetCurrent(nullptr);
}

TEST(FramePoolTest, SizesMapToClassesAndLargeFramesGoToTheHeap) {
  FramePool pool;
  FramePool::SetCurrent(&pool);
  void* small = FramePool::Allocate(1);
  void* exact = FramePool::Allocate(FramePool::kMaxFrame);
  void* large = FramePool::Allocate(FramePool::kMaxFrame + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % 16, 0u);
  EXPECT_EQ(pool.stats().oversized, 1u);
  EXPECT_EQ(pool.stats().slabs, 2u);  // one per class used
  EXPECT_EQ(pool.stats().in_use, 3u);
  // A frame goes back to its own pool whatever the thread's current one.
  FramePool::SetCurrent(nullptr);
  FramePool::Free(small);
  FramePool::Free(exact);
  FramePool::Free(large);
  EXPECT_EQ(pool.stats().in_use, 0u);
  // Without a pool: the heap, and still freed right.
  void* bare = FramePool::Allocate(100);
  FramePool::Free(bare);
}

// Every size gets a frame that holds it, and little more: two frames of a
// size taken one after the other do not overlap (a slab's frames are back
// to back, so a class too small for its size would overlap its neighbour),
// and a frame up to 1 KiB is in a class at most 64 bytes larger.
TEST(FramePoolTest, EverySizeFitsItsClassAndSmallFramesWasteLittle) {
  FramePool pool;
  FramePool::SetCurrent(&pool);
  for (size_t size = 1; size <= FramePool::kMaxFrame; ++size) {
    auto* a = static_cast<char*>(FramePool::Allocate(size));
    auto* b = static_cast<char*>(FramePool::Allocate(size));
    const size_t apart = static_cast<size_t>(a > b ? a - b : b - a);
    ASSERT_GE(apart, size + 16) << size;  // the frame and the next one's prefix
    if (size > FramePool::kMinFrame && size <= FramePool::kFineMax) {
      EXPECT_LT(apart, size + 16 + FramePool::kFineStep) << size;
    }
    FramePool::Free(a);
    FramePool::Free(b);
  }
  EXPECT_EQ(pool.stats().oversized, 0u);
  EXPECT_EQ(pool.stats().slabs, static_cast<uint64_t>(FramePool::kClasses));
  FramePool::SetCurrent(nullptr);
}

}  // namespace
}  // namespace uring_http::async
