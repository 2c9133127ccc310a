#include "src/http/gzip_encoder.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "test/http/gzip_testing.h"

namespace uring_http::http {
namespace {

using testing::Gunzip;
using testing::GunzipStream;

std::string Prose(size_t size) {
  static const char* words[] = {"the ", "server ", "answers ", "with ", "bytes ", "ring ",
                                "worker ", "gzip ", "compressed ", "body\n"};
  std::mt19937 rng(3);
  std::string s;
  while (s.size() < size) s += words[rng() % 10];
  s.resize(size);
  return s;
}

std::string RandomBytes(size_t size) {
  std::mt19937 rng(5);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(GzipBufferTest, RoundTripsAndShrinksText) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{1500}, size_t{200000}}) {
    const std::string in = Prose(size);
    for (int level : {1, 6, 9}) {
      std::string out;
      ASSERT_TRUE(GzipBuffer(in, level, &out));
      ASSERT_GE(out.size(), 18u);  // header and trailer at least
      EXPECT_EQ(static_cast<unsigned char>(out[0]), 0x1f);
      EXPECT_EQ(static_cast<unsigned char>(out[1]), 0x8b);
      EXPECT_EQ(Gunzip(out), in) << size << " at level " << level;
      if (size >= 1500) {
        EXPECT_LT(out.size(), in.size() / 3);
      }
    }
  }
}

TEST(GzipBufferTest, RandomBytesRoundTripButDoNotShrink) {
  const std::string in = RandomBytes(10000);
  std::string out;
  ASSERT_TRUE(GzipBuffer(in, 1, &out));
  EXPECT_EQ(Gunzip(out), in);
  EXPECT_GE(out.size(), in.size());
}

TEST(GzipStreamTest, EachWriteDecodesBeforeTheNext) {
  GzipStream stream(1);
  ASSERT_TRUE(stream.ok());
  GunzipStream client;
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    const std::string event = "data: event " + std::to_string(i) + "\n\n";
    std::string out;
    ASSERT_TRUE(stream.Write(event, &out));
    ASSERT_FALSE(out.empty());
    ASSERT_TRUE(client.Feed(out));
    expected += event;
    // The sync flush: everything written so far decodes now, not at the end.
    EXPECT_EQ(client.decoded(), expected) << "after write " << i;
    EXPECT_FALSE(client.ended());
  }
  std::string tail;
  ASSERT_TRUE(stream.Finish(&tail));
  ASSERT_TRUE(client.Feed(tail));
  EXPECT_TRUE(client.ended());  // the trailer's CRC and length were checked
  EXPECT_EQ(client.decoded(), expected);
}

TEST(GzipStreamTest, LargeAndEmptyWritesAndNothingAfterFinish) {
  GzipStream stream(6);
  ASSERT_TRUE(stream.ok());
  const std::string big = Prose(1 << 20);
  const std::string noise = RandomBytes(300000);  // grows: several output rounds
  std::string out;
  ASSERT_TRUE(stream.Write(big, &out));
  const size_t before = out.size();
  ASSERT_TRUE(stream.Write("", &out));
  EXPECT_EQ(out.size(), before);
  ASSERT_TRUE(stream.Write(noise, &out));
  ASSERT_TRUE(stream.Finish(&out));
  EXPECT_EQ(Gunzip(out), big + noise);
  EXPECT_FALSE(stream.Write("more", &out));
  EXPECT_FALSE(stream.Finish(&out));
}

TEST(GzipStreamTest, EmptyBodyIsAValidMember) {
  GzipStream stream(1);
  std::string out;
  ASSERT_TRUE(stream.Finish(&out));
  EXPECT_EQ(Gunzip(out), "");
}

}  // namespace
}  // namespace uring_http::http
