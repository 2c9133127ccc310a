// ws::Sender and ws::Topics without a ring: what each send returns, what
// the ring takes, and how often the ring's inbox is posted to.
#include "src/ws/sender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "src/async/push_stream.h"
#include "src/worker/mailbox.h"
#include "src/ws/deflate.h"

namespace uring_http::ws {
namespace {

// No ring behind the inbox (fd -1): its posts are recorded, the wake-up
// goes nowhere.
class SenderTest : public ::testing::Test {
 protected:
  std::vector<uint64_t> Posts() {
    std::vector<uint64_t> out;
    inbox_.Take(&out);
    return out;
  }
  worker::Mailbox mailbox_{64};
  async::RingInbox inbox_{worker::RingAddress{-1, &mailbox_}, 99};
};

TEST_F(SenderTest, FramesTheMessageForTheRing) {
  Sender s(&inbox_, 7, 1 << 20);
  EXPECT_EQ(s.Send("hello"), SendResult::kQueued);
  EXPECT_EQ(s.Send(std::string(200, 'b'), MessageKind::kBinary), SendResult::kQueued);
  Sender::Taken taken;
  s.Take(&taken);
  ASSERT_EQ(taken.frames.size(), 2u);
  EXPECT_EQ(taken.frames[0]->frame(), std::string("\x81\x05hello"));
  EXPECT_EQ(taken.frames[1]->frame().substr(0, 4), std::string("\x82\x7e\x00\xc8", 4));
  EXPECT_EQ(taken.frames[1]->frame().size(), 4u + 200);
  EXPECT_FALSE(taken.close);
}

TEST_F(SenderTest, OnePostPerBurst) {
  Sender s(&inbox_, 7, 1 << 20);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.Send("x"), SendResult::kQueued);
  EXPECT_EQ(Posts(), std::vector<uint64_t>{7});
  Sender::Taken taken;
  s.Take(&taken);
  EXPECT_EQ(taken.frames.size(), 5u);
  EXPECT_TRUE(Posts().empty());
  EXPECT_EQ(s.Send("y"), SendResult::kQueued);  // a new burst: posted again
  EXPECT_EQ(Posts(), std::vector<uint64_t>{7});
}

TEST_F(SenderTest, BoundCountsQueuedAndWhatTheRingHolds) {
  Sender s(&inbox_, 7, 100);
  EXPECT_EQ(s.Send(std::string(60, 'a')), SendResult::kQueued);      // 62 bytes framed
  EXPECT_EQ(s.Send(std::string(60, 'a')), SendResult::kBackpressure);  // 124: past the bound
  EXPECT_EQ(s.Send("z"), SendResult::kDropped);                       // already past: refused
  EXPECT_EQ(s.buffered(), 124u);
  Sender::Taken taken;
  s.Take(&taken);
  EXPECT_EQ(taken.frames.size(), 2u);
  // Taken, but the ring still holds it until it says otherwise.
  EXPECT_EQ(s.buffered(), 124u);
  EXPECT_EQ(s.Send("z"), SendResult::kDropped);
  s.Held(10);  // the client read most of it
  EXPECT_EQ(s.buffered(), 10u);
  EXPECT_EQ(s.Send("z"), SendResult::kQueued);
}

TEST_F(SenderTest, CloseGoesToTheRingAndEndsSending) {
  Sender s(&inbox_, 7, 1 << 20);
  EXPECT_EQ(s.Send("last"), SendResult::kQueued);
  s.Close(4001, "bye");
  EXPECT_EQ(s.Send("after"), SendResult::kClosed);
  Sender::Taken taken;
  s.Take(&taken);
  EXPECT_EQ(taken.frames.size(), 1u);
  EXPECT_TRUE(taken.close);
  EXPECT_EQ(taken.code, 4001);
  EXPECT_EQ(taken.reason, "bye");
}

TEST_F(SenderTest, ShutSenderRefusesAndNeverPosts) {
  Sender s(&inbox_, 7, 1 << 20);
  EXPECT_EQ(s.Send("a"), SendResult::kQueued);
  (void)Posts();
  Sender::Taken taken;
  s.Take(&taken);
  s.Shut();
  EXPECT_TRUE(s.closed());
  EXPECT_EQ(s.Send("b"), SendResult::kClosed);
  s.Close();
  EXPECT_TRUE(Posts().empty());
  EXPECT_EQ(s.buffered(), 0u);
}

TEST_F(SenderTest, SendsFromManyThreadsAllArriveInEachThreadsOrder) {
  Sender s(&inbox_, 7, size_t{1} << 30);
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&s, &finished, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_EQ(s.Send(std::to_string(t) + ":" + std::to_string(i)), SendResult::kQueued);
      }
      finished.fetch_add(1);
    });
  }
  // The ring takes while they send.
  std::vector<int> next(kThreads, 0);
  int total = 0;
  Sender::Taken taken;
  auto drain = [&] {
    s.Take(&taken);
    for (const Frame& f : taken.frames) {
      const std::string text(f->payload());
      const size_t colon = text.find(':');
      const int t = std::stoi(text.substr(0, colon));
      EXPECT_EQ(std::stoi(text.substr(colon + 1)), next[t]++);
      ++total;
    }
  };
  while (finished.load() < kThreads) {
    drain();
    std::this_thread::yield();
  }
  for (auto& th : threads) th.join();
  drain();
  EXPECT_EQ(total, kThreads * kEach);
}

TEST_F(SenderTest, TopicsShareOneFrameAndDropClosedSockets) {
  auto a = std::make_shared<Sender>(&inbox_, 1, 1 << 20);
  auto b = std::make_shared<Sender>(&inbox_, 2, 1 << 20);
  auto c = std::make_shared<Sender>(&inbox_, 3, 1 << 20);
  Topics topics;
  topics.Subscribe("room", a);
  topics.Subscribe("room", b);
  topics.Subscribe("room", b);  // once only
  topics.Subscribe("room", c);
  topics.Subscribe("other", c);
  EXPECT_EQ(topics.subscribers("room"), 3u);
  EXPECT_EQ(topics.Publish("room", "hi"), 3u);
  Sender::Taken ta, tb, tc;
  a->Take(&ta);
  b->Take(&tb);
  c->Take(&tc);
  ASSERT_EQ(ta.frames.size(), 1u);
  ASSERT_EQ(tb.frames.size(), 1u);
  ASSERT_EQ(tc.frames.size(), 1u);
  EXPECT_EQ(ta.frames[0].get(), tb.frames[0].get());  // framed once, shared
  EXPECT_EQ(ta.frames[0]->frame(), std::string("\x81\x02hi"));
  b->Shut();  // b's socket ended
  EXPECT_EQ(topics.Publish("room", "again"), 2u);
  EXPECT_EQ(topics.subscribers("room"), 2u);
  topics.Unsubscribe("room", a.get());
  EXPECT_EQ(topics.subscribers("room"), 1u);
  topics.Unsubscribe("room", c.get());
  EXPECT_EQ(topics.subscribers("room"), 0u);
  EXPECT_EQ(topics.Publish("room", "nobody"), 0u);
  EXPECT_EQ(topics.Publish("other", "c only"), 1u);
}

TEST_F(SenderTest, DropsAreCountedForTheRingAndOweADrain) {
  Sender s(&inbox_, 7, 100);
  EXPECT_EQ(s.Send(std::string(60, 'a')), SendResult::kQueued);
  Sender::Taken taken;
  s.Take(&taken);
  EXPECT_EQ(taken.dropped, 0u);
  EXPECT_FALSE(taken.drain_owed);
  (void)Posts();
  EXPECT_EQ(s.Send(std::string(60, 'a')), SendResult::kBackpressure);
  EXPECT_EQ(s.Send("x"), SendResult::kDropped);
  EXPECT_EQ(s.Send("y"), SendResult::kDropped);
  s.Take(&taken);
  EXPECT_EQ(taken.frames.size(), 1u);
  EXPECT_EQ(taken.dropped, 2u);
  EXPECT_TRUE(taken.drain_owed);
  // A drop with nothing else queued still reaches the ring.
  (void)Posts();
  EXPECT_EQ(s.Send("z"), SendResult::kDropped);
  EXPECT_EQ(Posts(), std::vector<uint64_t>{7});
  s.Take(&taken);
  EXPECT_TRUE(taken.frames.empty());
  EXPECT_EQ(taken.dropped, 1u);
  s.Held(0);  // the client read everything
  s.Take(&taken);
  EXPECT_EQ(taken.dropped, 0u);
  EXPECT_FALSE(taken.drain_owed);
  EXPECT_EQ(s.Send("w"), SendResult::kQueued);
}

TEST_F(SenderTest, TopicMembershipStaysRightAsSocketsComeAndGo) {
  Topics topics;
  std::vector<std::shared_ptr<Sender>> s;
  for (uint64_t i = 0; i < 50; ++i) {
    s.push_back(std::make_shared<Sender>(&inbox_, i, 1 << 20));
    topics.Subscribe("t", s.back());
  }
  for (uint64_t i = 0; i < 50; i += 3) topics.Unsubscribe("t", s[i].get());  // 17 leave
  for (uint64_t i = 1; i < 50; i += 3) s[i]->Shut();                       // 17 close
  topics.Unsubscribe("t", s[0].get());  // again: nothing
  topics.Subscribe("t", s[2]);          // already in: once
  EXPECT_EQ(topics.Publish("t", "m"), 16u);
  EXPECT_EQ(topics.subscribers("t"), 16u);
  for (uint64_t i = 0; i < 50; ++i) {
    Sender::Taken taken;
    s[i]->Take(&taken);
    EXPECT_EQ(taken.frames.size(), i % 3 == 2 ? 1u : 0u) << i;
  }
  for (uint64_t i = 2; i < 50; i += 3) topics.Unsubscribe("t", s[i].get());
  EXPECT_EQ(topics.subscribers("t"), 0u);
  EXPECT_EQ(topics.Publish("t", "m"), 0u);
}

std::string Repetitive(size_t n) {
  std::string s;
  while (s.size() < n) s += "the quick brown fox jumps over the lazy dog; ";
  s.resize(n);
  return s;
}

std::string Inflated(std::string_view frame, int window_bits) {
  // A compressed text or binary frame as a server sends it: FIN+RSV1, no mask.
  EXPECT_EQ(static_cast<uint8_t>(frame[0]) & 0x70, 0x40);
  size_t h = 2;
  uint64_t len = static_cast<uint8_t>(frame[1]) & 0x7F;
  if (len == 126) {
    len = (uint64_t{static_cast<uint8_t>(frame[2])} << 8) | static_cast<uint8_t>(frame[3]);
    h = 4;
  }
  EXPECT_EQ(frame.size(), h + len);
  Inflater inflater(/*context_takeover=*/false, window_bits);
  std::string out;
  EXPECT_EQ(inflater.Inflate(frame.substr(h), 1 << 20, &out), Inflater::Result::kOk);
  return out;
}

TEST_F(SenderTest, APreparedMessageIsCompressedOncePerWindow) {
  const std::string m = Repetitive(2000);
  const Frame f = MakeFrame(m, MessageKind::kText);
  const std::string_view w15 = f->FrameFor(15);
  EXPECT_EQ(f->FrameFor(15).data(), w15.data());  // made once, then the same bytes
  EXPECT_LT(w15.size(), m.size() / 4);
  EXPECT_EQ(static_cast<uint8_t>(w15[0]), 0xC1);  // FIN, RSV1, text
  EXPECT_EQ(Inflated(w15, 15), m);
  const std::string_view w9 = f->FrameFor(9);
  EXPECT_NE(w9.data(), w15.data());
  EXPECT_EQ(Inflated(w9, 9), m);
  EXPECT_EQ(f->frame().size(), 4 + m.size());  // the plain frame stays
}

TEST_F(SenderTest, ShortOrIncompressibleMessagesGoPlain) {
  const Frame short_one = MakeFrame("under sixty-four bytes", MessageKind::kText);
  EXPECT_EQ(short_one->FrameFor(15).data(), short_one->frame().data());
  std::string noise(4000, '\0');
  uint32_t x = 7;
  for (char& c : noise) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 24);
  }
  const Frame random = MakeFrame(noise, MessageKind::kBinary);
  EXPECT_EQ(random->FrameFor(15).data(), random->frame().data());
  EXPECT_EQ(random->FrameFor(15).data(), random->frame().data());  // decided once
  EXPECT_EQ(random->FrameFor(0).data(), random->frame().data());   // no window: plain
}

TEST_F(SenderTest, ASenderWithAWindowCompressesInTheSendingThreadAndCountsThat) {
  Sender plain(&inbox_, 1, 1 << 20);
  Sender deflating(&inbox_, 2, 1 << 20, /*deflate_window=*/15);
  const std::string m = Repetitive(5000);
  EXPECT_EQ(plain.Send(m), SendResult::kQueued);
  std::thread([&] { EXPECT_EQ(deflating.Send(m), SendResult::kQueued); }).join();
  EXPECT_EQ(plain.buffered(), 4 + m.size());
  EXPECT_LT(deflating.buffered(), m.size() / 4);
  Sender::Taken taken;
  deflating.Take(&taken);
  ASSERT_EQ(taken.frames.size(), 1u);
  EXPECT_EQ(deflating.Wire(*taken.frames[0]).size(), deflating.buffered());
  EXPECT_EQ(Inflated(deflating.Wire(*taken.frames[0]), 15), m);
}

TEST_F(SenderTest, ManyThreadsAskingForTheSameWindowGetOneCompression) {
  const Frame f = MakeFrame(Repetitive(100'000), MessageKind::kText);
  std::vector<const char*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&f, &seen, i] { seen[i] = f->FrameFor(12).data(); });
  }
  for (auto& t : threads) t.join();
  for (const char* p : seen) EXPECT_EQ(p, seen[0]);
}

}  // namespace
}  // namespace uring_http::ws
