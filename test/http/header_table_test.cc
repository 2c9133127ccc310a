#include "src/http/header_table.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

std::string Dump(const HeaderTable& t) {
  std::string out;
  for (const auto [name, value] : t) out += std::string(name) + "=" + std::string(value) + ";";
  return out;
}

TEST(HeaderTableTest, KeepsOrderAndFindsCaseInsensitively) {
  HeaderTable t;
  EXPECT_TRUE(t.empty());
  t.Add("Content-Type", "text/plain");
  t.Add("X-Empty", "");
  t.Add("x-a", " spaced ");
  t.Add("X-A", "second");
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(Dump(t), "Content-Type=text/plain;X-Empty=;x-a= spaced ;X-A=second;");
  EXPECT_EQ(t.Find("CONTENT-type"), "text/plain");
  EXPECT_EQ(t.Find("x-A"), " spaced ");  // the first, as written
  EXPECT_EQ(t.Find("x-empty"), "");
  EXPECT_EQ(t.Find("x-none"), std::nullopt);
  EXPECT_EQ(t[1].name, "X-Empty");
  // As HTTP/1 lines: "Content-Type: text/plain\r\n" ...
  EXPECT_EQ(t.line_bytes(), 26u + 11u + 15u + 13u);
  EXPECT_EQ(HeaderTable::LineBytes("X-A", "second"), 13u);
}

TEST(HeaderTableTest, RemoveTakesEveryFieldOfTheNameAndKeepsTheRest) {
  HeaderTable t;
  t.Add("A", "1");
  t.Add("ETag", "\"x\"");
  t.Add("B", "22");
  t.Add("etag", "\"y\"");
  t.Add("C", "333");
  EXPECT_EQ(t.Remove("ETAG"), 2u);
  EXPECT_EQ(Dump(t), "A=1;B=22;C=333;");
  EXPECT_EQ(t.Remove("none"), 0u);
  EXPECT_EQ(t.line_bytes(), 6u + 7u + 8u);
  t.Add("D", "4");  // after a removal, appended at the end
  EXPECT_EQ(Dump(t), "A=1;B=22;C=333;D=4;");
  EXPECT_EQ(t.Remove("a"), 1u);
  EXPECT_EQ(t.Remove("d"), 1u);
  EXPECT_EQ(Dump(t), "B=22;C=333;");
  t.Clear();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.line_bytes(), 0u);
}

TEST(HeaderTableTest, PastTheInlineAreasOnTheHeapThenCopiedAndMoved) {
  HeaderTable t;
  for (size_t i = 0; i < HeaderTable::kInlineFields; ++i) t.Add("X-" + std::to_string(i), "v");
  EXPECT_FALSE(t.on_heap());
  t.Add("X-More", "fields");  // one field past the inline array
  EXPECT_TRUE(t.on_heap());
  const std::string big(HeaderTable::kInlineBytes, 'b');
  t.Add("X-Big", big);  // and bytes past the inline area
  EXPECT_EQ(t.size(), HeaderTable::kInlineFields + 2);
  EXPECT_EQ(t.Find("x-0"), "v");
  EXPECT_EQ(t.Find("x-big"), big);

  HeaderTable copy = t;
  EXPECT_EQ(Dump(copy), Dump(t));
  HeaderTable moved = std::move(copy);
  EXPECT_EQ(Dump(moved), Dump(t));
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a move leaves it empty
  copy.Add("After", "move");
  EXPECT_EQ(Dump(copy), "After=move;");

  HeaderTable small;
  small.Add("S", "1");
  HeaderTable small_moved = std::move(small);
  EXPECT_EQ(Dump(small_moved), "S=1;");
  small_moved = t;  // inline into heap-sized
  EXPECT_EQ(Dump(small_moved), Dump(t));
  EXPECT_EQ(moved.Remove("X-Big"), 1u);
  EXPECT_EQ(moved.Find("x-more"), "fields");
  EXPECT_EQ(moved.size(), HeaderTable::kInlineFields + 1);
}

}  // namespace
}  // namespace uring_http::http
