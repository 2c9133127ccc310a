// BufferShelf: a buffer given back comes out again for the same size, up to
// `keep` of them; one of another size is freed, not kept.
#include "src/base/buffer_shelf.h"

#include "gtest/gtest.h"

namespace uring_http::base {
namespace {

TEST(BufferShelfTest, KeepsUpToItsBoundAndHandsTheSameBuffersBack) {
  BufferShelf shelf(2);
  std::unique_ptr<char[]> a = shelf.Take(4096);
  std::unique_ptr<char[]> b = shelf.Take(4096);
  std::unique_ptr<char[]> c = shelf.Take(4096);
  const char* kept_a = a.get();
  const char* kept_b = b.get();
  shelf.Put(std::move(a), 4096);
  shelf.Put(std::move(b), 4096);
  shelf.Put(std::move(c), 4096);  // past the bound: freed
  EXPECT_EQ(shelf.kept(), 2u);
  EXPECT_EQ(shelf.Take(4096).get(), kept_b);  // last in, first out
  EXPECT_EQ(shelf.Take(4096).get(), kept_a);
  EXPECT_EQ(shelf.kept(), 0u);
}

TEST(BufferShelfTest, ABufferOfAnotherSizeIsNeitherKeptNorHandedOut) {
  BufferShelf shelf(4);
  shelf.Put(shelf.Take(1024), 1024);
  EXPECT_EQ(shelf.kept(), 1u);
  shelf.Put(shelf.Take(2048), 2048);  // 1024's are kept: this one is freed
  EXPECT_EQ(shelf.kept(), 1u);
  std::unique_ptr<char[]> other = shelf.Take(2048);  // made, not the kept 1024
  EXPECT_EQ(shelf.kept(), 1u);
  // Once empty, the shelf takes the next size it is given.
  (void)shelf.Take(1024);
  shelf.Put(std::move(other), 2048);
  EXPECT_EQ(shelf.kept(), 1u);
  EXPECT_NE(shelf.Take(2048), nullptr);
  EXPECT_EQ(shelf.kept(), 0u);
}

}  // namespace
}  // namespace uring_http::base
