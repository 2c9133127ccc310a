// Tests for OpenFileCache: hits and the valid interval, revalidation (a
// changed file, chmod and chown included, is dropped), LRU eviction that
// spares entries being read, removal while read (closed at the last Unref,
// never twice), replacement of a path, the content bound, and that every
// descriptor is closed exactly once.
#include "src/files/open_file_cache.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

class RecordingCloser : public FileCloser {
 public:
  void CloseFile(int file_index) override { closed.push_back(file_index); }
  bool Closed(int i) const { return std::count(closed.begin(), closed.end(), i) == 1; }
  std::vector<int> closed;
};

FileVersion Version(uint64_t size, int64_t mtime = 1000) {
  FileVersion v;
  v.size = size;
  v.mtime_sec = mtime;
  v.inode = 42;
  return v;
}

OpenFileCacheLimits Limits(size_t entries, uint64_t valid_ticks = 10) {
  OpenFileCacheLimits l;
  l.max_entries = entries;
  l.valid_ticks = valid_ticks;
  l.max_content_bytes = 1000;
  l.max_content_file = 600;
  return l;
}

TEST(OpenFileCacheTest, HitWithinTheValidIntervalThenStale) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4, 10));
  bool fresh = true;
  EXPECT_EQ(cache.Find(0, "a.html", 100, &fresh), nullptr);
  OpenFileCache::Entry* e = cache.Insert(0, "a.html", 7, Version(10), 100);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(cache.Find(0, "a.html", 110, &fresh), e);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(cache.Find(0, "a.html", 111, &fresh), e);
  EXPECT_FALSE(fresh);
  cache.Revalidated(e, 111);
  EXPECT_EQ(cache.Find(0, "a.html", 121, &fresh), e);
  EXPECT_TRUE(fresh);
  // The mount is part of the key.
  EXPECT_EQ(cache.Find(1, "a.html", 121, &fresh), nullptr);
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().revalidations, 1u);
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_TRUE(closer.closed.empty());
}

// Issue 19 item 11: a file made unreadable (chmod) or given to another
// owner (chown) keeps its inode, size and mtime; only its status change
// time moves. A hot entry must not go on serving it: the path is opened
// again, and the open says 403 if it may no longer be read.
TEST(OpenFileCacheTest, RevalidationSeesChmodAndChownThroughTheChangeTime) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4, 10));
  FileVersion v = Version(10);
  v.ctime_sec = 5000;
  v.ctime_nsec = 1;
  OpenFileCache::Entry* e = cache.Insert(0, "a.html", 7, v, 100);
  ASSERT_NE(e, nullptr);
  bool fresh = true;
  ASSERT_EQ(cache.Find(0, "a.html", 111, &fresh), e);
  EXPECT_FALSE(fresh);
  // Unchanged: fresh again, still cached.
  EXPECT_TRUE(cache.Revalidate(e, v, 111));
  ASSERT_EQ(cache.Find(0, "a.html", 121, &fresh), e);
  EXPECT_TRUE(fresh);
  // chmod 000: the same content, a new change time.
  FileVersion chmodded = v;
  chmodded.ctime_nsec = 2;
  ASSERT_EQ(cache.Find(0, "a.html", 122, &fresh), e);
  EXPECT_FALSE(cache.Revalidate(e, chmodded, 122));
  EXPECT_EQ(cache.Find(0, "a.html", 122, &fresh), nullptr);
  EXPECT_TRUE(closer.Closed(7));
  EXPECT_EQ(cache.stats().invalidations, 1u);
  // The same for a change in whole seconds (chown a second later).
  OpenFileCache::Entry* f = cache.Insert(0, "b.html", 8, v, 200);
  FileVersion chowned = v;
  chowned.ctime_sec = 5001;
  EXPECT_FALSE(cache.Revalidate(f, chowned, 211));
  EXPECT_TRUE(closer.Closed(8));
}

TEST(OpenFileCacheTest, EvictsTheLeastRecentlyUsedThatNobodyReads) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(2));
  bool fresh;
  OpenFileCache::Entry* a = cache.Insert(0, "a", 1, Version(1), 0);
  ASSERT_NE(cache.Insert(0, "b", 2, Version(1), 0), nullptr);
  cache.Ref(a);                            // a is being sent
  ASSERT_EQ(cache.Find(0, "a", 0, &fresh), a);  // a is the most recent, b the LRU
  ASSERT_NE(cache.Insert(0, "c", 3, Version(1), 0), nullptr);
  EXPECT_TRUE(closer.Closed(2));           // b went
  EXPECT_EQ(cache.Find(0, "b", 0, &fresh), nullptr);
  // Now a (read) and c: c goes although a is older.
  ASSERT_EQ(cache.Find(0, "c", 0, &fresh)->file_index(), 3);
  ASSERT_NE(cache.Insert(0, "d", 4, Version(1), 0), nullptr);
  EXPECT_TRUE(closer.Closed(3));
  EXPECT_EQ(cache.Find(0, "a", 0, &fresh), a);
  // Both read: nothing can be cached, the caller keeps its descriptor.
  OpenFileCache::Entry* d = cache.Find(0, "d", 0, &fresh);
  cache.Ref(d);
  EXPECT_EQ(cache.Insert(0, "e", 5, Version(1), 0), nullptr);
  EXPECT_FALSE(closer.Closed(5));
  EXPECT_EQ(cache.size(), 2u);
  cache.Unref(a);
  cache.Unref(d);
  EXPECT_EQ(cache.stats().evictions, 2u);
}

TEST(OpenFileCacheTest, RemovedWhileReadClosesAtTheLastUnref) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4));
  bool fresh;
  OpenFileCache::Entry* e = cache.Insert(0, "f", 9, Version(5), 0);
  cache.Ref(e);
  cache.Ref(e);
  cache.Remove(e);
  EXPECT_FALSE(e->cached());
  EXPECT_EQ(cache.Find(0, "f", 0, &fresh), nullptr);  // the next request reopens
  cache.Remove(e);                                    // twice: harmless
  cache.Unref(e);
  EXPECT_TRUE(closer.closed.empty());
  EXPECT_EQ(e->file_index(), 9);                      // still readable
  cache.Unref(e);
  EXPECT_TRUE(closer.Closed(9));
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(cache.stats().open_entries, 0u);
}

TEST(OpenFileCacheTest, InsertReplacesTheSamePath) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4));
  bool fresh;
  OpenFileCache::Entry* old_entry = cache.Insert(0, "p", 1, Version(5), 0);
  cache.Ref(old_entry);
  OpenFileCache::Entry* new_entry = cache.Insert(0, "p", 2, Version(6), 0);
  ASSERT_NE(new_entry, old_entry);
  EXPECT_EQ(cache.Find(0, "p", 0, &fresh), new_entry);
  EXPECT_TRUE(closer.closed.empty());
  cache.Unref(old_entry);
  EXPECT_TRUE(closer.Closed(1));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(OpenFileCacheTest, ContentWithinItsBounds) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(8));
  OpenFileCache::Entry* big = cache.Insert(0, "big", 1, Version(601), 0);
  EXPECT_EQ(cache.BeginContent(big), nullptr);  // larger than max_content_file
  OpenFileCache::Entry* empty = cache.Insert(0, "empty", 2, Version(0), 0);
  EXPECT_EQ(cache.BeginContent(empty), nullptr);

  OpenFileCache::Entry* a = cache.Insert(0, "a", 3, Version(500), 0);
  OpenFileCache::Entry* b = cache.Insert(0, "b", 4, Version(400), 0);
  ASSERT_NE(cache.BeginContent(a), nullptr);
  EXPECT_EQ(cache.BeginContent(a), nullptr);  // already loading
  cache.EndContent(a, true);
  EXPECT_TRUE(a->content_ready());
  ASSERT_NE(cache.BeginContent(b), nullptr);
  cache.EndContent(b, false);                 // short read: dropped
  EXPECT_FALSE(b->content_ready());
  EXPECT_EQ(cache.stats().content_bytes, 500u);

  // 500 + 600 > 1000: a's content goes, unless a response sends from it.
  OpenFileCache::Entry* c = cache.Insert(0, "c", 5, Version(600), 0);
  cache.Ref(a);
  EXPECT_EQ(cache.BeginContent(c), nullptr);
  EXPECT_TRUE(a->content_ready());
  cache.Unref(a);
  ASSERT_NE(cache.BeginContent(c), nullptr);
  EXPECT_FALSE(a->content_ready());
  cache.EndContent(c, true);
  EXPECT_EQ(cache.stats().content_bytes, 600u);

  // A file removed while its content loads: the content is dropped at the end.
  cache.Ref(b);
  cache.Remove(c);
  OpenFileCache::Entry* d = cache.Insert(0, "d", 6, Version(100), 0);
  cache.Ref(d);
  ASSERT_NE(cache.BeginContent(d), nullptr);
  cache.Remove(d);
  cache.EndContent(d, true);
  EXPECT_FALSE(d->content_ready());
  cache.Unref(d);
  cache.Unref(b);
  EXPECT_EQ(cache.stats().content_bytes, 0u);
}

TEST(OpenFileCacheTest, DisabledCachesNothingAndEveryDescriptorClosesOnce) {
  RecordingCloser closer;
  {
    OpenFileCache off(&closer, Limits(0));
    EXPECT_FALSE(off.enabled());
    EXPECT_EQ(off.Insert(0, "a", 1, Version(1), 0), nullptr);
  }
  EXPECT_TRUE(closer.closed.empty());
  {
    OpenFileCache cache(&closer, Limits(3));
    bool fresh;
    for (int i = 0; i < 20; ++i) {
      ASSERT_NE(cache.Insert(0, std::string(1, static_cast<char>('a' + i)), 100 + i, Version(1), 0),
                nullptr);
    }
    OpenFileCache::Entry* held = cache.Find(0, "t", 0, &fresh);
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_EQ(cache.stats().open_entries, 3u);
  }
  ASSERT_EQ(closer.closed.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(closer.Closed(100 + i)) << i;
}

}  // namespace
}  // namespace uring_http::files

namespace uring_http::files {
namespace {

TEST(OpenFileCacheTest, GzipKeptBesideTheContentAndCounted) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4));
  OpenFileCache::Entry* e = cache.Insert(0, "a.js", 7, Version(500), 100);
  EXPECT_FALSE(cache.GzipContent(e, 1));  // nothing loaded yet
  char* room = cache.BeginContent(e);
  ASSERT_NE(room, nullptr);
  std::fill(room, room + 500, 'x');
  cache.EndContent(e, true);
  ASSERT_TRUE(cache.GzipContent(e, 1));
  EXPECT_TRUE(e->gzip_ready());
  EXPECT_LT(e->gzip().size(), 100u);
  EXPECT_EQ(cache.stats().content_bytes, 500u + e->gzip().size());
  // Dropping the content drops its gzip (the next one's room evicts both).
  OpenFileCache::Entry* b = cache.Insert(0, "b.js", 8, Version(520), 100);
  ASSERT_NE(cache.BeginContent(b), nullptr);
  EXPECT_FALSE(e->gzip_ready());
  EXPECT_EQ(cache.stats().content_bytes, 520u);
  // Random bytes do not shrink: tried once, then left alone.
  cache.EndContent(b, true);
  cache.Remove(b);
  b = cache.Insert(0, "c.bin", 9, Version(300), 100);
  ASSERT_NE(cache.BeginContent(b), nullptr);
  cache.EndContent(b, true);
  uint32_t x = 1;
  char* bytes = const_cast<char*>(b->content());
  for (int i = 0; i < 300; ++i) bytes[i] = static_cast<char>((x = x * 1103515245 + 12345) >> 16);
  EXPECT_FALSE(cache.GzipContent(b, 1));
  EXPECT_TRUE(b->gzip_useless());
  EXPECT_EQ(cache.stats().content_bytes, 300u);
}

TEST(OpenFileCacheTest, SiblingsKnownForTheValidIntervalAndForgottenWithTheEntry) {
  RecordingCloser closer;
  OpenFileCache cache(&closer, Limits(4, 10));
  OpenFileCache::Entry* e = cache.Insert(0, "a.js", 7, Version(10), 100);
  EXPECT_FALSE(cache.SiblingsFresh(e, 100));
  cache.SetSiblings(e, 5, 100);
  EXPECT_TRUE(cache.SiblingsFresh(e, 110));
  EXPECT_EQ(e->siblings(), 5);
  EXPECT_FALSE(cache.SiblingsFresh(e, 111));
  cache.Remove(e);
  OpenFileCache::Entry* again = cache.Insert(0, "a.js", 8, Version(11), 120);
  EXPECT_FALSE(cache.SiblingsFresh(again, 120));
}

}  // namespace
}  // namespace uring_http::files
