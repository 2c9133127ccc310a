// Which precompressed sibling a client gets, and when a sibling counts.
#include "src/files/encodings.h"

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

Encoding Choose(std::string_view accept_encoding, uint8_t present, bool sent = true) {
  http::AcceptEncoding ae;
  if (sent) ae.AddFieldValue(accept_encoding);
  return ChooseSibling(ae, present);
}

constexpr uint8_t kAll = EncodingBit(Encoding::kGzip) | EncodingBit(Encoding::kBrotli) |
                         EncodingBit(Encoding::kZstd);
constexpr uint8_t kGz = EncodingBit(Encoding::kGzip);

TEST(EncodingsTest, ChoosesByWeightThenBrZstdGzip) {
  EXPECT_EQ(Choose("gzip, deflate, br, zstd", kAll), Encoding::kBrotli);
  EXPECT_EQ(Choose("gzip, zstd", kAll), Encoding::kZstd);
  EXPECT_EQ(Choose("gzip", kAll), Encoding::kGzip);
  EXPECT_EQ(Choose("br;q=0.5, gzip", kAll), Encoding::kGzip);
  EXPECT_EQ(Choose("*", kAll), Encoding::kBrotli);
  EXPECT_EQ(Choose("*", kGz), Encoding::kGzip);
  EXPECT_EQ(Choose("br", kGz), Encoding::kIdentity);
  EXPECT_EQ(Choose("gzip;q=0", kGz), Encoding::kIdentity);
  EXPECT_EQ(Choose("*;q=0", kGz), Encoding::kIdentity);
  EXPECT_EQ(Choose("gzip;q=0.5, identity", kGz), Encoding::kIdentity);
  EXPECT_EQ(Choose("gzip;q=0.5", kGz), Encoding::kGzip);  // identity unranked
  EXPECT_EQ(Choose("GZIP", kGz), Encoding::kGzip);
  EXPECT_EQ(Choose("x-gzip", kGz), Encoding::kGzip);
  EXPECT_EQ(Choose("", kGz), Encoding::kIdentity);  // sent empty: identity only
  EXPECT_EQ(Choose("", kGz, /*sent=*/false), Encoding::kIdentity);
  EXPECT_EQ(Choose("gzip", 0), Encoding::kIdentity);
}

TEST(EncodingsTest, SuffixesTokensAndCurrency) {
  EXPECT_EQ(SiblingSuffix(Encoding::kGzip), ".gz");
  EXPECT_EQ(SiblingSuffix(Encoding::kBrotli), ".br");
  EXPECT_EQ(SiblingSuffix(Encoding::kZstd), ".zst");
  EXPECT_EQ(EncodingToken(Encoding::kZstd), "zstd");
  EXPECT_EQ(EtagSuffix(Encoding::kGzip), "-gz");
  FileVersion original;
  original.mtime_sec = 100;
  original.mtime_nsec = 500;
  FileVersion sibling = original;
  EXPECT_TRUE(SiblingIsCurrent(original, sibling));
  sibling.mtime_nsec = 499;
  EXPECT_FALSE(SiblingIsCurrent(original, sibling));
  sibling.mtime_sec = 101;
  sibling.mtime_nsec = 0;
  EXPECT_TRUE(SiblingIsCurrent(original, sibling));
}

}  // namespace
}  // namespace uring_http::files
