// Tests for BufferRing on a real ring: argument checks, registration (and
// unregistration on destruction), a multishot receive landing in a provided
// buffer, exhaustion (-ENOBUFS) and recovery after Recycle().
#include "src/io/buffer_ring.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "src/io/arena.h"
#include "src/io/ring.h"

namespace uring_http::io {
namespace {

constexpr uint16_t kGroup = 7;

class BufferRingTest : public testing::Test {
 protected:
  void SetUp() override {
    auto arena = Arena::Create(1 << 20);
    ASSERT_TRUE(arena.ok());
    arena_ = *std::move(arena);
    RingOptions options;
    options.sq_entries = 16;
    options.cq_entries = 64;
    auto ring = Ring::Create(options);
    ASSERT_TRUE(ring.ok()) << ring.status();
    ring_ = *std::move(ring);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
  }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  // Arms a multishot receive on our end of the socket pair.
  void ArmRecv(const BufferRing& buffers, uint64_t user_data) {
    io_uring_sqe* sqe = ring_->GetSqe();
    io_uring_prep_recv_multishot(sqe, fds_[0], nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = buffers.group_id();
    io_uring_sqe_set_data64(sqe, user_data);
    ASSERT_EQ(io_uring_submit(ring_->raw()), 1);
  }

  void Send(std::string_view bytes) {
    ASSERT_EQ(write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

  struct Completion {
    uint64_t user_data;
    int res;
    unsigned flags;
  };
  Completion Wait() {
    io_uring_cqe* cqe = nullptr;
    int ret = io_uring_wait_cqe(ring_->raw(), &cqe);
    if (ret < 0) {
      ADD_FAILURE() << "io_uring_wait_cqe: " << ret;
      return {0, ret, 0};
    }
    Completion c{cqe->user_data, cqe->res, cqe->flags};
    io_uring_cqe_seen(ring_->raw(), cqe);
    return c;
  }

  // Declared in destruction order: buffers (in each test) before the ring,
  // the ring before the arena that holds the buffer memory.
  Arena arena_;
  std::unique_ptr<Ring> ring_;
  int fds_[2] = {-1, -1};
};

TEST_F(BufferRingTest, RejectsCountsThatAreNotPowersOfTwo) {
  for (uint32_t count : {0u, 3u, 6u, 100u, 65536u, 65535u}) {
    BufferRing buffers;
    absl::Status status = buffers.Init(ring_->raw(), arena_, kGroup, count, 64);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << count;
  }
  EXPECT_EQ(arena_.used(), 0u);  // nothing carved for a rejected size
}

TEST_F(BufferRingTest, AcceptsPowersOfTwoUpToTheKernelLimit) {
  for (uint32_t count : {1u, 2u, 1024u, 32768u}) {
    BufferRing buffers;
    absl::Status status =
        buffers.Init(ring_->raw(), arena_, static_cast<uint16_t>(count), count, 4);
    EXPECT_TRUE(status.ok()) << count << ": " << status;
    EXPECT_EQ(buffers.count(), count);
  }
}

TEST_F(BufferRingTest, ReportsAnArenaThatIsTooSmall) {
  BufferRing buffers;
  absl::Status status = buffers.Init(ring_->raw(), arena_, kGroup, 1024, 4096);  // 4 MB
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(BufferRingTest, BuffersAreDistinctAndInsideTheArena) {
  BufferRing buffers;
  ASSERT_TRUE(buffers.Init(ring_->raw(), arena_, kGroup, 8, 100).ok());
  EXPECT_EQ(buffers.buffer_size(), 100u);
  EXPECT_EQ(buffers.group_id(), kGroup);
  for (uint16_t id = 0; id < 8; ++id) {
    char* b = buffers.Buffer(id);
    EXPECT_GE(b, arena_.base());
    EXPECT_LE(b + 100, arena_.base() + arena_.used());
    if (id > 0) {
      EXPECT_EQ(b - buffers.Buffer(id - 1), 100);
    }
  }
}

TEST_F(BufferRingTest, SameGroupTwiceIsRefusedAndDestructionUnregisters) {
  {
    BufferRing first;
    ASSERT_TRUE(first.Init(ring_->raw(), arena_, kGroup, 4, 64).ok());
    BufferRing second;
    absl::Status status = second.Init(ring_->raw(), arena_, kGroup, 4, 64);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    BufferRing other_group;
    EXPECT_TRUE(other_group.Init(ring_->raw(), arena_, kGroup + 1, 4, 64).ok());
  }
  // Both registrations are gone with their owners: the ids can be used again.
  BufferRing again;
  EXPECT_TRUE(again.Init(ring_->raw(), arena_, kGroup, 4, 64).ok());
  BufferRing again_other;
  EXPECT_TRUE(again_other.Init(ring_->raw(), arena_, kGroup + 1, 4, 64).ok());
}

TEST_F(BufferRingTest, MultishotReceiveFillsAProvidedBuffer) {
  BufferRing buffers;
  ASSERT_TRUE(buffers.Init(ring_->raw(), arena_, kGroup, 4, 64).ok());
  ArmRecv(buffers, 42);
  Send("hello");
  Completion c = Wait();
  EXPECT_EQ(c.user_data, 42u);
  ASSERT_EQ(c.res, 5);
  ASSERT_TRUE(c.flags & IORING_CQE_F_BUFFER);
  EXPECT_TRUE(c.flags & IORING_CQE_F_MORE);  // still armed
  const uint16_t id = static_cast<uint16_t>(c.flags >> IORING_CQE_BUFFER_SHIFT);
  ASSERT_LT(id, 4);
  EXPECT_EQ(std::string_view(buffers.Buffer(id), 5), "hello");

  // The same receive delivers the next bytes into another buffer.
  Send("world!");
  Completion d = Wait();
  ASSERT_EQ(d.res, 6);
  ASSERT_TRUE(d.flags & IORING_CQE_F_BUFFER);
  const uint16_t id2 = static_cast<uint16_t>(d.flags >> IORING_CQE_BUFFER_SHIFT);
  EXPECT_NE(id2, id);
  EXPECT_EQ(std::string_view(buffers.Buffer(id2), 6), "world!");
  EXPECT_EQ(std::string_view(buffers.Buffer(id), 5), "hello");  // untouched
}

TEST_F(BufferRingTest, ExhaustionEndsTheReceiveAndRecycleRecovers) {
  BufferRing buffers;
  ASSERT_TRUE(buffers.Init(ring_->raw(), arena_, kGroup, 2, 32).ok());
  ArmRecv(buffers, 1);

  Send("a");
  Completion first = Wait();
  ASSERT_EQ(first.res, 1);
  Send("bb");
  Completion second = Wait();
  ASSERT_EQ(second.res, 2);
  const uint16_t id1 = static_cast<uint16_t>(first.flags >> IORING_CQE_BUFFER_SHIFT);
  const uint16_t id2 = static_cast<uint16_t>(second.flags >> IORING_CQE_BUFFER_SHIFT);
  EXPECT_NE(id1, id2);

  // Both buffers are held: the next bytes find none, and the multishot
  // receive ends (no F_MORE), leaving the bytes in the socket.
  Send("ccc");
  Completion none = Wait();
  EXPECT_EQ(none.user_data, 1u);
  EXPECT_EQ(none.res, -ENOBUFS);
  EXPECT_FALSE(none.flags & IORING_CQE_F_MORE);

  // Hand one buffer back and re-arm: the waiting bytes land in it.
  buffers.Recycle(id1);
  ArmRecv(buffers, 2);
  Completion after = Wait();
  EXPECT_EQ(after.user_data, 2u);
  ASSERT_EQ(after.res, 3);
  ASSERT_TRUE(after.flags & IORING_CQE_F_BUFFER);
  EXPECT_EQ(after.flags >> IORING_CQE_BUFFER_SHIFT, id1);
  EXPECT_EQ(std::string_view(buffers.Buffer(id1), 3), "ccc");
  EXPECT_EQ(std::string_view(buffers.Buffer(id2), 2), "bb");  // still ours

  // Recycling the other one lets the receive continue.
  buffers.Recycle(id2);
  Send("dddd");
  Completion more = Wait();
  ASSERT_EQ(more.res, 4);
  EXPECT_EQ(more.flags >> IORING_CQE_BUFFER_SHIFT, id2);
  EXPECT_EQ(std::string_view(buffers.Buffer(id2), 4), "dddd");
}

TEST_F(BufferRingTest, RecycledBuffersServeManyReceives) {
  // A 2-buffer ring carries far more messages than it has buffers as long as
  // each is recycled once read: the ring's head and tail wrap its mask.
  BufferRing buffers;
  ASSERT_TRUE(buffers.Init(ring_->raw(), arena_, kGroup, 2, 16).ok());
  ArmRecv(buffers, 9);
  for (int i = 0; i < 300; ++i) {
    const std::string msg = std::to_string(i);
    Send(msg);
    Completion c = Wait();
    ASSERT_EQ(c.res, static_cast<int>(msg.size())) << i;
    ASSERT_TRUE(c.flags & IORING_CQE_F_MORE) << i;
    const uint16_t id = static_cast<uint16_t>(c.flags >> IORING_CQE_BUFFER_SHIFT);
    ASSERT_EQ(std::string_view(buffers.Buffer(id), msg.size()), msg);
    buffers.Recycle(id);
  }
}

TEST_F(BufferRingTest, ReceiveLargerThanABufferIsSplit) {
  BufferRing buffers;
  ASSERT_TRUE(buffers.Init(ring_->raw(), arena_, kGroup, 4, 8).ok());
  Send("0123456789abcdef");  // sent before arming: two full 8-byte buffers
  ArmRecv(buffers, 3);
  std::string got;
  while (got.size() < 16) {
    Completion c = Wait();
    ASSERT_GT(c.res, 0);
    ASSERT_LE(c.res, 8);
    const uint16_t id = static_cast<uint16_t>(c.flags >> IORING_CQE_BUFFER_SHIFT);
    got.append(buffers.Buffer(id), static_cast<size_t>(c.res));
  }
  EXPECT_EQ(got, "0123456789abcdef");
}

}  // namespace
}  // namespace uring_http::io
