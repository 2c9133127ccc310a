// A worker's message names the stream it is about: PostToRing's `stream`
// arrives as the CQE's res (MSG_RING's len) on the target ring, and beside
// the user_data when it goes through the ring's mailbox instead. An HTTP/2
// connection finds the stream from it without looking through the others.
#include "src/worker/ring_post.h"

#include <gtest/gtest.h>
#include <liburing.h>

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "src/worker/mailbox.h"

namespace uring_http::worker {
namespace {

TEST(RingPostTest, TheStreamArrivesAsTheCompletionsRes) {
  io_uring ring;
  ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);
  Mailbox mailbox(16);
  const RingAddress address{ring.ring_fd, &mailbox};
  // From another thread, as a worker posts (it keeps its own sender ring).
  std::thread worker([&] {
    EXPECT_EQ(PostToRing(address, 0x0102030405060708ull, 7), PostResult::kSent);
    EXPECT_EQ(PostToRing(address, 42, 0x7fffffff), PostResult::kSent);
  });
  worker.join();
  std::vector<std::pair<uint64_t, int32_t>> seen;
  for (int i = 0; i < 2; ++i) {
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
    seen.emplace_back(cqe->user_data, cqe->res);
    io_uring_cqe_seen(&ring, cqe);
  }
  EXPECT_EQ(seen[0], (std::pair<uint64_t, int32_t>{0x0102030405060708ull, 7}));
  EXPECT_EQ(seen[1], (std::pair<uint64_t, int32_t>{42, 0x7fffffff}));
  EXPECT_EQ(mailbox.posted(), 0u);
  io_uring_queue_exit(&ring);
}

TEST(RingPostTest, TheMailboxKeepsTheStreamBesideTheUserData) {
  Mailbox mailbox(4);
  mailbox.Post(11, 3);
  mailbox.Post(12);  // HTTP/1's, and the ring's own messages: stream 0
  std::vector<std::pair<uint64_t, uint32_t>> drained;
  EXPECT_EQ(mailbox.Drain([&](uint64_t ud, uint32_t stream) { drained.emplace_back(ud, stream); }),
            2u);
  ASSERT_EQ(drained.size(), 2u);
  EXPECT_EQ(drained[0], (std::pair<uint64_t, uint32_t>{11, 3}));
  EXPECT_EQ(drained[1], (std::pair<uint64_t, uint32_t>{12, 0}));
  EXPECT_EQ(mailbox.Drain([](uint64_t, uint32_t) { FAIL(); }), 0u);
}

}  // namespace
}  // namespace uring_http::worker
