// Directory listings: escaping, link encoding, order, dotfiles, and the
// read of a real directory beneath a root.
#include "src/files/dir_listing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

TEST(DirListingTest, EscapedEncodedSortedWithoutDotfiles) {
  const std::string page = RenderListing(
      "/files/", "a&b dir",
      {{"z.txt", false}, {"<script>alert(1)</script>", false}, {".env", false}, {"sub", true},
       {"100%\"'.txt", false}, {"javascript:x", false}, {"caf\xc3\xa9", false}});
  EXPECT_NE(page.find("<title>Index of /files/a&amp;b dir/</title>"), std::string::npos) << page;
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/files/a%26b%20dir/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">"
                      "&lt;script&gt;alert(1)&lt;/script&gt;</a>"),
            std::string::npos);
  EXPECT_NE(page.find("href=\"/files/a%26b%20dir/100%25%22%27.txt\">100%&quot;&#39;.txt<"),
            std::string::npos);
  EXPECT_NE(page.find("href=\"/files/a%26b%20dir/sub/\">sub/</a>"), std::string::npos);
  EXPECT_NE(page.find("href=\"/files/a%26b%20dir/javascript%3Ax\""), std::string::npos);
  EXPECT_NE(page.find("href=\"/files/a%26b%20dir/caf%C3%A9\""), std::string::npos);
  EXPECT_EQ(page.find(".env"), std::string::npos);
  // Byte order: '1' < '<' < 'c' < 'j' < 's' < 'z'.
  EXPECT_LT(page.find("100%"), page.find("&lt;script"));
  EXPECT_LT(page.find("&lt;script"), page.find(">caf"));
  EXPECT_LT(page.find("sub/"), page.find("z.txt"));
}

TEST(DirListingTest, ReadsBeneathTheRootOnly) {
  char tmpl[] = "/tmp/dir_listing_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  mkdir((root + "/d").c_str(), 0755);
  mkdir((root + "/d/inner").c_str(), 0755);
  std::ofstream(root + "/d/b") << "b";
  std::ofstream(root + "/d/a") << "a";
  std::ofstream(root + "/d/.hidden") << "h";
  ASSERT_EQ(symlink("/etc", (root + "/d/out").c_str()), 0);
  const int fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<ListingEntry> entries;
  ASSERT_EQ(ReadDirectory(fd, "d", &entries), 0);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_EQ(entries[1].name, "b");
  EXPECT_EQ(entries[2].name, "inner");
  EXPECT_TRUE(entries[2].directory);
  EXPECT_EQ(entries[3].name, "out");
  ASSERT_EQ(ReadDirectory(fd, "", &entries), 0);
  ASSERT_EQ(entries.size(), 1u);
  // A link that leaves the root is not listed through.
  EXPECT_NE(ReadDirectory(fd, "d/out", &entries), 0);
  EXPECT_EQ(ReadDirectory(fd, "missing", &entries), ENOENT);
  close(fd);
  ASSERT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace uring_http::files
