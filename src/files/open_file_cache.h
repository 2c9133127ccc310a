// OpenFileCache: one ring's open files, so that a hot file costs no open and
// no stat per request (nginx's open_file_cache, per ring instead of per
// process: no lock).
//
// An entry holds a file's descriptor (a direct descriptor of the ring: it
// does not count against RLIMIT_NOFILE), what statx said of it, and when
// that was last checked. A user revalidates an entry whose check is older
// than the valid interval (a statx of the path; Revalidate() or Remove()),
// so a changed or deleted file, or one whose mode or owner changed, is
// noticed within that interval, as with nginx's open_file_cache_valid. A
// small file may also keep its bytes (Content*): it is then answered from
// memory, with no read at all, and its gzip can be kept beside it
// (Gzip*: the on-the-fly compression of a static file, done once per
// version). An entry also remembers which precompressed siblings its file
// had when last looked for (Siblings*), so that a file without any costs no
// extra statx per request: that knowledge expires with the valid interval.
//
// Bounds: at most `max_entries` entries (the least recently used one that
// no response is reading goes first) and `max_content_bytes` of contents.
// An entry that a response still reads (Ref/Unref) is never destroyed: a
// removed or evicted one leaves the table at once (the next request opens
// the file afresh) and closes its descriptor when its last reader is done.
//
// No I/O happens here: closing a descriptor is the FileCloser's job (the
// loop queues an IORING_OP_CLOSE), which keeps the cache testable without a
// kernel. No allocation on a hit; entries and key storage are reused.
//
// Thread-safety: one ring thread.
#ifndef URING_HTTP_SRC_FILES_OPEN_FILE_CACHE_H_
#define URING_HTTP_SRC_FILES_OPEN_FILE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/files/validators.h"

namespace uring_http::files {

class FileCloser {
 public:
  virtual void CloseFile(int file_index) = 0;

 protected:
  ~FileCloser() = default;
};

struct OpenFileCacheLimits {
  size_t max_entries = 1000;              // 0: nothing is cached
  uint64_t valid_ticks = 10;              // revalidate entries older than this
  size_t max_content_bytes = 32u << 20;   // file contents kept in memory, in all
  size_t max_content_file = 64u << 10;    // the largest file kept in memory
};

class OpenFileCache {
 public:
  class Entry {
   public:
    int file_index() const { return file_index_; }
    const FileVersion& version() const { return version_; }
    // The file's bytes, once loaded (content_ready()).
    bool content_ready() const { return content_state_ == Content::kReady; }
    const char* content() const { return content_.get(); }
    uint32_t refs() const { return refs_; }
    bool cached() const { return in_table_; }
    // The gzip of the content (GzipContent), while the entry is held.
    bool gzip_ready() const { return gzip_state_ == Gzip::kReady; }
    bool gzip_useless() const { return gzip_state_ == Gzip::kUseless; }
    std::string_view gzip() const { return gzip_; }
    // The precompressed siblings found (files/encodings.h bits).
    uint8_t siblings() const { return siblings_; }

   private:
    friend class OpenFileCache;
    enum class Content : uint8_t { kNone, kLoading, kReady };
    // kUseless: compressed once and no smaller (not tried again).
    enum class Gzip : uint8_t { kNone, kReady, kUseless };
    std::string key_;  // mount index (4 bytes) + relative path
    int file_index_ = -1;
    FileVersion version_;
    uint64_t validated_tick_ = 0;
    uint32_t refs_ = 0;
    bool in_table_ = false;
    Content content_state_ = Content::kNone;
    std::unique_ptr<char[]> content_;
    size_t content_cap_ = 0;
    Gzip gzip_state_ = Gzip::kNone;
    std::string gzip_;
    bool siblings_known_ = false;
    uint8_t siblings_ = 0;
    uint64_t siblings_tick_ = 0;
    // The LRU list of entries in the table (most recent at the head).
    Entry* prev_ = nullptr;
    Entry* next_ = nullptr;
  };

  struct Stats {
    uint64_t hits = 0;           // found and fresh
    uint64_t revalidations = 0;  // found, but older than the valid interval
    uint64_t misses = 0;
    uint64_t evictions = 0;      // LRU entries dropped for room
    uint64_t invalidations = 0;  // entries whose file changed or vanished
    uint64_t content_bytes = 0;  // file contents held now
    uint64_t open_entries = 0;   // descriptors held now (in the table or read)
  };

  OpenFileCache(FileCloser* closer, const OpenFileCacheLimits& limits);
  OpenFileCache(const OpenFileCache&) = delete;
  OpenFileCache& operator=(const OpenFileCache&) = delete;
  // Closes every descriptor still held (the ring must still be there).
  ~OpenFileCache();

  bool enabled() const { return limits_.max_entries > 0; }
  const OpenFileCacheLimits& limits() const { return limits_; }

  // The entry for `path` under mount `mount`, made most recently used;
  // null if there is none. *fresh: checked within the valid interval.
  Entry* Find(uint32_t mount, std::string_view path, uint64_t now_tick, bool* fresh);
  // A statx of the entry's path says `now`: if that is the file cached
  // (SameFile), the entry is fresh again and true; otherwise it is removed
  // (as Remove) and false: the path is opened afresh.
  bool Revalidate(Entry* e, const FileVersion& now, uint64_t now_tick);
  // Whether `b` (a statx now) is still the file `a` was cached as: same
  // inode, size, modification and status change times (chmod and chown
  // change only the last).
  static bool SameFile(const FileVersion& a, const FileVersion& b);
  // The entry's file is unchanged (its check is fresh again).
  void Revalidated(Entry* e, uint64_t now_tick) { e->validated_tick_ = now_tick; }
  // The entry's file changed or vanished: out of the table now; closed when
  // its last reader is done.
  void Remove(Entry* e);

  // Takes a newly opened file into the table (replacing an entry for the
  // same path). Null when nothing can be cached (disabled, or every entry is
  // being read): the caller keeps the descriptor and closes it itself.
  Entry* Insert(uint32_t mount, std::string_view path, int file_index,
                const FileVersion& version, uint64_t now_tick);

  // Readers: an entry outlives every Ref() until its Unref().
  void Ref(Entry* e) { ++e->refs_; }
  void Unref(Entry* e);

  // Room for the file's whole content, for the caller to read into, or null
  // (too large, over the memory bound even after dropping the contents of
  // entries nobody reads, already loading or loaded, or no longer cached).
  char* BeginContent(Entry* e);
  // The read into BeginContent()'s room ended: `ok` with every byte of the
  // version's size, else the room is dropped.
  void EndContent(Entry* e, bool ok);

  // Compresses a ready content (content_ready()) with gzip at `level` and
  // keeps the result beside it, counted with the contents; true when it is
  // there (gzip_ready()), false when the bound has no room for it or it
  // came out no smaller (then gzip_useless()). Allocates: once per version.
  bool GzipContent(Entry* e, int level);

  // Whether the entry's sibling knowledge is within the valid interval.
  bool SiblingsFresh(const Entry* e, uint64_t now_tick) const {
    return e->siblings_known_ && now_tick - e->siblings_tick_ <= limits_.valid_ticks;
  }
  void SetSiblings(Entry* e, uint8_t present, uint64_t now_tick) {
    e->siblings_known_ = true;
    e->siblings_ = present;
    e->siblings_tick_ = now_tick;
  }

  const Stats& stats() const { return stats_; }
  size_t size() const { return table_.size(); }

 private:
  const std::string& Key(uint32_t mount, std::string_view path);
  void Unlink(Entry* e);
  void PushFront(Entry* e);
  // Out of the table (and the LRU list), closed if nobody reads it.
  void Detach(Entry* e);
  void Recycle(Entry* e);
  void DropContent(Entry* e);
  Entry* NewEntry();

  FileCloser* const closer_;
  const OpenFileCacheLimits limits_;
  absl::flat_hash_map<std::string_view, Entry*> table_;  // keys view Entry::key_
  Entry* lru_head_ = nullptr;
  Entry* lru_tail_ = nullptr;
  std::vector<std::unique_ptr<Entry>> entries_;  // every entry ever made
  std::vector<Entry*> free_;                     // ... of which these are unused
  std::string scratch_key_;
  Stats stats_;
};

}  // namespace uring_http::files

#endif  // URING_HTTP_SRC_FILES_OPEN_FILE_CACHE_H_
