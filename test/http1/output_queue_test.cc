// OutputQueue: bytes leave in order, however sends split them, and no buffer
// is freed (given back to the pool, where another connection would write
// into it) while a send in flight or a zero-copy notification still covers
// it: the orders of completions that broke the old flags-based code
// (defect 2 of the bodies issue) are driven here event by event.
#include "src/http1/output_queue.h"

#include <sys/uio.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/io/arena.h"

namespace uring_http::http1 {
namespace {

class OutputQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto arena = io::Arena::Create(64 * 4096);
    ASSERT_TRUE(arena.ok());
    arena_ = *std::move(arena);
    ASSERT_TRUE(chunks_.Init(arena_, 4096, 32).ok());
    queue_.Init(&chunks_);
  }

  // Prepares a send and returns its bytes (as the kernel would read them).
  std::string Prepare(size_t zc_min = 0, bool* zc = nullptr) {
    bool zero_copy = false;
    count_ = queue_.PrepareSend(zc_min, &zero_copy);
    iov_ = queue_.send_iov();
    if (zc != nullptr) *zc = zero_copy;
    return Gathered();
  }
  // What the prepared iovecs hold now.
  std::string Gathered() const {
    std::string bytes;
    for (unsigned i = 0; i < count_; ++i) {
      bytes.append(static_cast<const char*>(iov_[i].iov_base), iov_[i].iov_len);
    }
    return bytes;
  }

  io::Arena arena_;
  io::ChunkPool chunks_;
  OutputQueue queue_;
  const iovec* iov_ = nullptr;
  unsigned count_ = 0;
};

TEST_F(OutputQueueTest, IdleHoldsNoChunk) {
  EXPECT_TRUE(queue_.idle());
  EXPECT_EQ(chunks_.available(), 32u);
  ASSERT_TRUE(queue_.Append("hello"));
  EXPECT_EQ(chunks_.available(), 31u);  // the table and the first data share one chunk
  EXPECT_EQ(Prepare(), "hello");
  queue_.OnSent(5, false);
  EXPECT_TRUE(queue_.idle());
  EXPECT_EQ(chunks_.available(), 32u);
}

TEST_F(OutputQueueTest, ShortSendsLeaveTheRestInOrder) {
  std::string all;
  for (int i = 0; i < 50; ++i) {
    const std::string piece = "piece-" + std::to_string(i) + ";";
    ASSERT_TRUE(queue_.Append(piece));
    all += piece;
  }
  std::string sent;
  size_t step = 1;
  while (!queue_.empty()) {
    const std::string bytes = Prepare();
    ASSERT_FALSE(bytes.empty());
    const size_t n = std::min(step++, bytes.size());
    sent += bytes.substr(0, n);
    queue_.OnSent(n, false);
  }
  EXPECT_EQ(sent, all);
  EXPECT_TRUE(queue_.idle());
}

TEST_F(OutputQueueTest, AppendsWhileASendIsInFlightNeverMoveBytes) {
  ASSERT_TRUE(queue_.Append("first "));
  const std::string bytes = Prepare();
  EXPECT_EQ(bytes, "first ");
  // Appended behind the send in flight (in the same chunk): the kernel's
  // range must not change under it.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(queue_.Append(std::string(300, 'a' + i)));
  EXPECT_EQ(Gathered(), "first ");
  queue_.OnSent(6, false);
  std::string rest;
  while (!queue_.empty()) {
    rest += Prepare();
    queue_.OnSent(Gathered().size(), false);
  }
  std::string want;
  for (int i = 0; i < 20; ++i) want += std::string(300, 'a' + i);
  EXPECT_EQ(rest, want);
}

TEST_F(OutputQueueTest, LargeAndOwnedSegmentsGoWhole) {
  ASSERT_TRUE(queue_.Append("head:"));
  ASSERT_TRUE(queue_.AppendOwned(std::string(100000, 'b')));
  ASSERT_TRUE(queue_.Append(":tail"));
  EXPECT_EQ(queue_.pending(), 100010u);
  const std::string bytes = Prepare();
  EXPECT_EQ(count_, 3u);  // gathered into one sendmsg
  EXPECT_EQ(bytes, "head:" + std::string(100000, 'b') + ":tail");
  queue_.OnSent(bytes.size(), false);
  EXPECT_TRUE(queue_.idle());
}

TEST_F(OutputQueueTest, ZeroCopySegmentGoesAloneAndIsHeldUntilItsNotification) {
  ASSERT_TRUE(queue_.Append("small"));
  ASSERT_TRUE(queue_.AppendOwned(std::string(50000, 'z')));
  bool zc = true;
  EXPECT_EQ(Prepare(16384, &zc), "small");  // the big one waits for its own send
  EXPECT_FALSE(zc);
  queue_.OnSent(5, false);
  EXPECT_EQ(Prepare(16384, &zc), std::string(50000, 'z'));
  EXPECT_TRUE(zc);
  queue_.OnSent(50000, /*notification_follows=*/true);
  EXPECT_TRUE(queue_.empty());
  EXPECT_FALSE(queue_.idle());  // sent, but the kernel may still read it
  EXPECT_TRUE(queue_.notification_pending());
  queue_.OnNotification();
  EXPECT_TRUE(queue_.idle());
}

// Defect 2: a zero-copy send of a chunk, cut short; the rest of the same
// chunk then leaves with a plain send (no second zero-copy send while a
// notification is outstanding). The notification arriving while that plain
// send is in flight must not free the chunk.
TEST_F(OutputQueueTest, NotificationDuringALaterPlainSendOfTheSameChunkKeepsIt) {
  const std::string body(3000, 'q');
  ASSERT_TRUE(queue_.Append(body));  // in the table chunk
  bool zc = false;
  ASSERT_EQ(Prepare(1024, &zc), body);
  ASSERT_TRUE(zc);
  queue_.OnSent(1000, /*notification_follows=*/true);  // short
  const size_t before = chunks_.available();
  const std::string rest = Prepare(1024, &zc);
  EXPECT_FALSE(zc);  // a notification is outstanding: plain
  EXPECT_EQ(rest, body.substr(1000));
  queue_.OnNotification();  // the zero-copy send's bytes are free ...
  EXPECT_EQ(chunks_.available(), before);  // ... but the plain send still reads the chunk
  EXPECT_EQ(Gathered(), body.substr(1000));
  queue_.OnSent(rest.size(), false);
  EXPECT_TRUE(queue_.idle());
  EXPECT_EQ(chunks_.available(), 32u);
}

// The reverse order: the plain send completes first, the notification last.
TEST_F(OutputQueueTest, PlainSendDoneBeforeTheNotificationStillWaitsForIt) {
  const std::string body(3000, 'r');
  ASSERT_TRUE(queue_.Append(body));
  bool zc = false;
  Prepare(1024, &zc);
  queue_.OnSent(2000, true);
  Prepare(1024, &zc);
  queue_.OnSent(1000, false);
  EXPECT_TRUE(queue_.empty());
  EXPECT_FALSE(queue_.idle());
  queue_.OnNotification();
  EXPECT_TRUE(queue_.idle());
}

TEST_F(OutputQueueTest, FailedZeroCopySendWithoutNotificationReleases) {
  ASSERT_TRUE(queue_.AppendOwned(std::string(20000, 'f')));
  bool zc = false;
  Prepare(1024, &zc);
  ASSERT_TRUE(zc);
  queue_.OnSent(0, /*notification_follows=*/false);
  EXPECT_FALSE(queue_.notification_pending());
  queue_.DiscardUnsent();
  EXPECT_TRUE(queue_.idle());
}

TEST_F(OutputQueueTest, DiscardWhileInFlightFreesOnCompletion) {
  ASSERT_TRUE(queue_.Append("abc"));
  ASSERT_TRUE(queue_.AppendOwned(std::string(5000, 'x')));
  Prepare();
  queue_.DiscardUnsent();
  EXPECT_FALSE(queue_.idle());  // the send in flight still reads them
  EXPECT_EQ(queue_.pending(), 0u);
  queue_.OnSent(1, false);  // cancelled part-way
  EXPECT_TRUE(queue_.idle());
  // Usable again afterwards (a new connection in the slot).
  ASSERT_TRUE(queue_.Append("new"));
  EXPECT_EQ(Prepare(), "new");
  queue_.OnSent(3, false);
}

struct Released : ExternalOwner {
  void ReleaseOutput(size_t bytes) override { released.push_back(bytes); }
  std::vector<size_t> released;
};

TEST_F(OutputQueueTest, ExternalRegionsReturnToTheirOwnerInOrder) {
  static const std::string kRegion(10000, 'e');
  Released owner;
  ASSERT_TRUE(queue_.Append("h"));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data(), 6000, &owner));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data() + 6000, 4000, &owner));
  EXPECT_EQ(Prepare(), "h" + kRegion);
  queue_.OnSent(3000, false);
  EXPECT_TRUE(owner.released.empty());
  Prepare();
  queue_.OnSent(7001, false);
  EXPECT_EQ(owner.released, (std::vector<size_t>{6000, 4000}));
  EXPECT_TRUE(queue_.idle());
}

struct Retractable : ExternalOwner {
  void ReleaseOutput(size_t bytes) override { released.push_back(bytes); }
  void TakeBackOutput(size_t bytes) override { taken.push_back(bytes); }
  std::vector<size_t> released;
  std::vector<size_t> taken;
};

// A short send of an owner's regions: the unsent rest goes back to it,
// newest first, the partly sent region keeps only what was sent, and bytes
// of others (a head before them) stay queued.
TEST_F(OutputQueueTest, TakeBackReturnsTheOwnersUnsentTail) {
  static const std::string kRegion(10000, 'e');
  Retractable owner;
  ASSERT_TRUE(queue_.Append("head"));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data(), 6000, &owner));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data() + 6000, 4000, &owner));
  Prepare();
  EXPECT_EQ(queue_.inflight_bytes(), 10004u);
  queue_.OnSent(1004, false);  // the head and 1,000 bytes of the first region
  EXPECT_EQ(queue_.TakeBack(&owner), 9000u);
  EXPECT_EQ(owner.taken, (std::vector<size_t>{4000, 5000}));
  EXPECT_EQ(owner.released, (std::vector<size_t>{1000}));  // what was sent, now free
  EXPECT_TRUE(queue_.empty());
  EXPECT_TRUE(queue_.idle());

  // Nothing sent at all (-EAGAIN): the head stays, the region goes back.
  owner.taken.clear();
  owner.released.clear();
  ASSERT_TRUE(queue_.Append("head2"));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data(), 3000, &owner));
  Prepare();
  queue_.OnSent(0, false);
  EXPECT_EQ(queue_.TakeBack(&owner), 3000u);
  EXPECT_EQ(owner.taken, (std::vector<size_t>{3000}));
  EXPECT_TRUE(owner.released.empty());
  EXPECT_EQ(queue_.pending(), 5u);
  EXPECT_EQ(Prepare(), "head2");
  queue_.OnSent(5, false);
  EXPECT_TRUE(queue_.idle());

  // Another owner's region at the tail is not taken.
  Released other;
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data(), 100, &owner));
  ASSERT_TRUE(queue_.AppendExternal(kRegion.data(), 100, &other));
  EXPECT_EQ(queue_.TakeBack(&owner), 0u);
  Prepare();
  queue_.OnSent(200, false);
  EXPECT_TRUE(queue_.idle());
}

TEST_F(OutputQueueTest, TableFullRefusesAppendsUntilSent) {
  ASSERT_TRUE(queue_.Append("x"));
  for (unsigned i = 1; i < OutputQueue::kMaxSegments; ++i) {
    ASSERT_TRUE(queue_.AppendOwned(std::string(2000, 'y'))) << i;
  }
  EXPECT_EQ(queue_.room(), 0u);
  EXPECT_FALSE(queue_.AppendOwned(std::string(2000, 'y')));
  EXPECT_FALSE(queue_.Append("z"));  // the tail is a moved-in body: nothing appends to it
  while (!queue_.empty()) {
    Prepare();
    queue_.OnSent(Gathered().size(), false);
  }
  EXPECT_TRUE(queue_.idle());
}

}  // namespace
}  // namespace uring_http::http1
