// BodyPipe: bytes cross in order through any mix of piece sizes and wrap
// points; a blocked worker wakes for every change it waits for (bytes,
// room, finish, abort) and never otherwise sleeps through one; the ring is
// asked to be messaged only when it must be. The threaded cases are what
// ThreadSanitizer checks in CI.
#include "src/worker/body_pipe.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace uring_http::worker {
namespace {

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(BodyPipeTest, CapacityIsAPowerOfTwo) {
  EXPECT_EQ(BodyPipe(1000).capacity(), 1024u);
  EXPECT_EQ(BodyPipe(4096).capacity(), 4096u);
  EXPECT_EQ(BodyPipe(1).capacity(), 64u);
}

TEST(BodyPipeTest, WritesWhatFitsAndWrapsAround) {
  BodyPipe pipe(64);
  const std::string data = Pattern(1000, 1);
  std::string out;
  size_t written = 0;
  while (out.size() < data.size()) {
    written += pipe.Write(data.data() + written, std::min<size_t>(data.size() - written, 37));
    EXPECT_LE(pipe.readable(), 64u);
    char buf[23];
    out.append(buf, pipe.Read(buf, sizeof buf));
  }
  EXPECT_EQ(out, data);
  EXPECT_EQ(pipe.Write(data.data(), 100), 64u);  // full at 64
  EXPECT_EQ(pipe.Write(data.data(), 1), 0u);
  EXPECT_EQ(pipe.writable(), 0u);
}

TEST(BodyPipeTest, PeekAtSkipsWhatIsQueuedAndStopsAtTheWrap) {
  BodyPipe pipe(64);
  const std::string data = Pattern(64, 2);
  pipe.Write(data.data(), 48);
  pipe.Consume(40);  // the front is now at 40
  pipe.Write(data.data() + 48, 16);
  pipe.Write(data.data(), 20);  // wraps
  EXPECT_EQ(pipe.readable(), 44u);
  EXPECT_EQ(pipe.PeekAt(0), data.substr(40, 24));  // up to the end of the buffer
  EXPECT_EQ(pipe.PeekAt(24), data.substr(0, 20));  // the wrapped rest
  EXPECT_TRUE(pipe.PeekAt(44).empty());
}

// A one-thread pipe (a ring's ASYNC stream) holds a buffer only while it
// has bytes, and each use starts at the buffer's front: an idle event
// stream holds none, a long one of small pieces touches one page.
TEST(BodyPipeTest, OneThreadPipeHoldsItsBufferOnlyWhileItHasBytes) {
  BodyPipe pipe(4096, BodyPipe::Ends::kOneThread);
  EXPECT_FALSE(pipe.holds_buffer());
  EXPECT_TRUE(pipe.PeekAt(0).empty());
  const std::string data = Pattern(5000, 3);
  ASSERT_EQ(pipe.Write(data.data(), 100), 100u);
  EXPECT_TRUE(pipe.holds_buffer());
  const char* front = pipe.PeekAt(0).data();
  pipe.Consume(60);
  EXPECT_TRUE(pipe.holds_buffer());  // 40 bytes are still unsent
  EXPECT_EQ(pipe.PeekAt(0), data.substr(60, 40));
  pipe.Consume(40);
  EXPECT_FALSE(pipe.holds_buffer());
  for (int round = 0; round < 100; ++round) {
    // The shelved buffer comes back, its next bytes at its front again.
    ASSERT_EQ(pipe.Write(data.data() + round, 30), 30u);
    EXPECT_EQ(pipe.PeekAt(0).data(), front) << round;
    EXPECT_EQ(pipe.PeekAt(0), data.substr(static_cast<size_t>(round), 30));
    pipe.Consume(30);
    EXPECT_FALSE(pipe.holds_buffer());
  }
  // Full and wrapping as a kept buffer does; emptied, given back.
  std::string out;
  size_t written = 0;
  while (out.size() < data.size()) {
    written += pipe.Write(data.data() + written, std::min<size_t>(data.size() - written, 3000));
    EXPECT_LE(pipe.readable(), 4096u);
    char buf[1700];
    out.append(buf, pipe.Read(buf, sizeof buf));
  }
  EXPECT_EQ(out, data);
  EXPECT_FALSE(pipe.holds_buffer());
  EXPECT_EQ(pipe.Write(data.data(), 5000), 4096u);
  EXPECT_EQ(pipe.writable(), 0u);
  pipe.Finish();
  EXPECT_EQ(pipe.Read(out.data(), 5000), 4096u);
  EXPECT_TRUE(pipe.finished());
  EXPECT_FALSE(pipe.holds_buffer());
}

// A two-thread pipe keeps its one buffer for its life.
TEST(BodyPipeTest, TwoThreadPipeKeepsItsBuffer) {
  BodyPipe pipe(64);
  EXPECT_TRUE(pipe.holds_buffer());
  pipe.Write("abc", 3);
  pipe.Consume(3);
  EXPECT_TRUE(pipe.holds_buffer());
}

TEST(BodyPipeTest, ReadNotifyIsAskedOnlyWhenNothingNewIsReadable) {
  BodyPipe pipe(1024);
  EXPECT_TRUE(pipe.ArmReadNotify(0));  // empty: asked
  EXPECT_FALSE(pipe.TakeNotify());     // nothing written yet
  pipe.Write("abc", 3);
  EXPECT_TRUE(pipe.TakeNotify());      // the worker's write answers it, once
  EXPECT_FALSE(pipe.TakeNotify());
  EXPECT_FALSE(pipe.ArmReadNotify(0)); // readable already: go on, no message
  EXPECT_TRUE(pipe.ArmReadNotify(3));  // all 3 are queued by the ring: wait for more
  pipe.Finish();
  EXPECT_TRUE(pipe.TakeNotify());      // the end counts as news
}

TEST(BodyPipeTest, WriteNotifyWaitsForEnoughRoom) {
  BodyPipe pipe(1024);
  const std::string data = Pattern(1024, 3);
  pipe.Write(data.data(), 1024);
  EXPECT_TRUE(pipe.ArmWriteNotify(512));
  char buf[1024];
  pipe.Read(buf, 100);
  EXPECT_FALSE(pipe.TakeNotify());  // 100 free: not yet
  pipe.Read(buf, 500);
  EXPECT_TRUE(pipe.TakeNotify());   // 600 free
  EXPECT_FALSE(pipe.ArmWriteNotify(512));
}

TEST(BodyPipeTest, AbortFailsBothSidesAndWakesTheSleeper) {
  BodyPipe pipe(64);
  std::atomic<bool> woke{false};
  std::thread reader([&] {
    pipe.WaitReadable();
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke);
  pipe.Abort();
  reader.join();
  EXPECT_TRUE(woke);
  EXPECT_TRUE(pipe.aborted());
  EXPECT_TRUE(pipe.ArmReadNotify(0) == false);  // aborted counts as ready
}

// A reader waiting for a good share of the pipe is not woken by each small
// write (each would be a context switch), only once its share is there, or
// when the ring hands over what there is (WakeReader), or at the end.
TEST(BodyPipeTest, ReaderWaitingForMoreSleepsThroughSmallWrites) {
  BodyPipe pipe(4096);
  std::atomic<int> woke{0};
  std::thread reader([&] {
    pipe.WaitReadable(2048);
    woke = 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int i = 0; i < 10; ++i) pipe.Write("0123456789", 10);  // 100 bytes in all
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(woke.load(), 0) << "woken by writes short of what it waits for";
  pipe.WakeReader();
  reader.join();
  EXPECT_EQ(woke.load(), 1);
  EXPECT_EQ(pipe.readable(), 100u);

  // Its share arriving wakes it too.
  char buf[100];
  pipe.Read(buf, sizeof buf);
  std::thread second([&] { pipe.WaitReadable(2048); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string big(2048, 'b');
  pipe.Write(big.data(), big.size());
  second.join();
  // And the end of the stream.
  char rest[4096];
  pipe.Read(rest, sizeof rest);
  std::thread third([&] { pipe.WaitReadable(2048); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  pipe.Finish();
  third.join();
}

// A writer waiting for room is woken once that much is free.
TEST(BodyPipeTest, WriterWaitsForTheRoomItAskedFor) {
  BodyPipe pipe(4096);
  const std::string fill(4096, 'f');
  pipe.Write(fill.data(), fill.size());
  std::atomic<bool> woke{false};
  std::thread writer([&] {
    pipe.WaitWritable(2048);
    woke = true;
  });
  char buf[4096];
  pipe.Read(buf, 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(woke.load());
  pipe.Read(buf, 1100);
  writer.join();
  EXPECT_TRUE(woke.load());
  EXPECT_GE(pipe.writable(), 2048u);
}

// A ring-like producer that never blocks (it arms a notification and waits
// for the "message" when full) and a worker that blocks in WaitReadable:
// every byte arrives, in order, and neither side stalls.
TEST(BodyPipeTest, RingFeedsABlockingWorker) {
  BodyPipe pipe(4096);
  const std::string data = Pattern(2 << 20, 4);
  std::atomic<int> messages{0};
  std::string out;
  std::thread worker([&] {
    char buf[3000];
    for (;;) {
      const size_t n = pipe.Read(buf, sizeof buf);
      if (n > 0) {
        out.append(buf, n);
        if (pipe.TakeNotify()) messages.fetch_add(1);
        continue;
      }
      if (pipe.finished() && pipe.readable() == 0) break;
      pipe.WaitReadable();
    }
  });
  std::mt19937 rng(5);
  size_t written = 0;
  int seen = 0;
  while (written < data.size()) {
    const size_t piece = std::min<size_t>(data.size() - written, 1 + rng() % 5000);
    const size_t n = pipe.Write(data.data() + written, piece);
    written += n;
    if (n == 0 && pipe.ArmWriteNotify(2048)) {
      // The ring would return to its event loop; here, wait for the message.
      while (messages.load() == seen) std::this_thread::yield();
      seen = messages.load();
    }
  }
  pipe.Finish();
  worker.join();
  EXPECT_EQ(out.size(), data.size());
  EXPECT_TRUE(out == data);
}

// The other direction: a worker that blocks in WaitWritable and a ring that
// sends (consumes) from the pipe's memory without copying.
TEST(BodyPipeTest, BlockingWorkerFeedsTheRing) {
  BodyPipe pipe(4096);
  const std::string data = Pattern(2 << 20, 6);
  std::atomic<int> messages{0};
  std::thread worker([&] {
    std::mt19937 rng(7);
    size_t written = 0;
    while (written < data.size()) {
      const size_t piece = std::min<size_t>(data.size() - written, 1 + rng() % 6000);
      size_t done = 0;
      while (done < piece) {
        const size_t n = pipe.Write(data.data() + written + done, piece - done);
        done += n;
        if (n > 0 && pipe.TakeNotify()) messages.fetch_add(1);
        if (done < piece) pipe.WaitWritable(std::min<size_t>(piece - done, 2048));
      }
      written += piece;
    }
    pipe.Finish();
    if (pipe.TakeNotify()) messages.fetch_add(1);
  });
  std::string out;
  int seen = 0;
  for (;;) {
    const std::string_view piece = pipe.PeekAt(0);
    if (!piece.empty()) {
      out.append(piece);
      pipe.Consume(piece.size());
      continue;
    }
    if (pipe.finished() && pipe.readable() == 0) break;
    if (pipe.ArmReadNotify(0)) {
      while (messages.load() == seen) std::this_thread::yield();
      seen = messages.load();
    }
  }
  worker.join();
  EXPECT_EQ(out.size(), data.size());
  EXPECT_TRUE(out == data);
}

}  // namespace
}  // namespace uring_http::worker
