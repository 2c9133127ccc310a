#include "src/files/open_file_cache.h"

#include <cstring>

#include "src/base/check.h"
#include "src/http/gzip_encoder.h"

namespace uring_http::files {

OpenFileCache::OpenFileCache(FileCloser* closer, const OpenFileCacheLimits& limits)
    : closer_(closer), limits_(limits) {
  table_.reserve(limits_.max_entries);
  scratch_key_.reserve(4 + 4096 + 16);
}

OpenFileCache::~OpenFileCache() {
  for (auto& e : entries_) {
    if (e->file_index_ >= 0) closer_->CloseFile(e->file_index_);
  }
}

const std::string& OpenFileCache::Key(uint32_t mount, std::string_view path) {
  scratch_key_.assign(reinterpret_cast<const char*>(&mount), sizeof(mount));
  scratch_key_.append(path);
  return scratch_key_;
}

OpenFileCache::Entry* OpenFileCache::Find(uint32_t mount, std::string_view path,
                                          uint64_t now_tick, bool* fresh) {
  auto it = table_.find(Key(mount, path));
  if (it == table_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  Entry* e = it->second;
  Unlink(e);
  PushFront(e);
  *fresh = now_tick - e->validated_tick_ <= limits_.valid_ticks;
  ++(*fresh ? stats_.hits : stats_.revalidations);
  return e;
}

bool OpenFileCache::SameFile(const FileVersion& a, const FileVersion& b) {
  // The change time moves with every write and with chmod, chown and link
  // changes, which leave size and mtime alone: a file made unreadable must
  // be opened again (and refused), not served from the descriptor we hold.
  return a.inode == b.inode && a.size == b.size && a.mtime_sec == b.mtime_sec &&
         a.mtime_nsec == b.mtime_nsec && a.ctime_sec == b.ctime_sec &&
         a.ctime_nsec == b.ctime_nsec;
}

bool OpenFileCache::Revalidate(Entry* e, const FileVersion& now, uint64_t now_tick) {
  if (!SameFile(e->version_, now)) {
    Remove(e);
    return false;
  }
  Revalidated(e, now_tick);
  return true;
}

void OpenFileCache::Remove(Entry* e) {
  if (!e->in_table_) return;
  ++stats_.invalidations;
  Detach(e);
}

OpenFileCache::Entry* OpenFileCache::Insert(uint32_t mount, std::string_view path, int file_index,
                                            const FileVersion& version, uint64_t now_tick) {
  if (!enabled()) return nullptr;
  const std::string& key = Key(mount, path);
  // Another request for the same path opened it first: it is replaced.
  if (auto it = table_.find(key); it != table_.end()) Detach(it->second);
  // Room: the least recently used entries that nobody reads go.
  Entry* victim = lru_tail_;
  while (table_.size() >= limits_.max_entries && victim != nullptr) {
    Entry* prev = victim->prev_;
    if (victim->refs_ == 0) {
      ++stats_.evictions;
      Detach(victim);
    }
    victim = prev;
  }
  if (table_.size() >= limits_.max_entries) return nullptr;
  Entry* e = NewEntry();
  e->key_.assign(Key(mount, path));
  e->file_index_ = file_index;
  e->version_ = version;
  e->validated_tick_ = now_tick;
  e->in_table_ = true;
  table_.emplace(std::string_view(e->key_), e);
  PushFront(e);
  ++stats_.open_entries;
  return e;
}

void OpenFileCache::Unref(Entry* e) {
  URING_CHECK(e->refs_ > 0);
  if (--e->refs_ == 0 && !e->in_table_) Recycle(e);
}

char* OpenFileCache::BeginContent(Entry* e) {
  const uint64_t size = e->version_.size;
  if (!e->in_table_ || e->content_state_ != Entry::Content::kNone || size == 0 ||
      size > limits_.max_content_file || size > limits_.max_content_bytes) {
    return nullptr;
  }
  // Over the bound: the contents of the least recently used entries go
  // (their descriptors stay), unless a response is sending from them.
  for (Entry* v = lru_tail_; v != nullptr && stats_.content_bytes + size > limits_.max_content_bytes;
       v = v->prev_) {
    if (v != e && v->refs_ == 0 && v->content_state_ == Entry::Content::kReady) DropContent(v);
  }
  if (stats_.content_bytes + size > limits_.max_content_bytes) return nullptr;
  if (e->content_cap_ < size) {
    e->content_ = std::make_unique<char[]>(size);
    e->content_cap_ = size;
  }
  e->content_state_ = Entry::Content::kLoading;
  stats_.content_bytes += size;
  return e->content_.get();
}

void OpenFileCache::EndContent(Entry* e, bool ok) {
  URING_CHECK(e->content_state_ == Entry::Content::kLoading);
  if (ok && e->in_table_) {
    e->content_state_ = Entry::Content::kReady;
  } else {
    DropContent(e);
  }
}

bool OpenFileCache::GzipContent(Entry* e, int level) {
  if (e->gzip_state_ == Entry::Gzip::kReady) return true;
  if (e->gzip_state_ == Entry::Gzip::kUseless || !e->content_ready()) return false;
  const uint64_t size = e->version_.size;
  // The gzip is no larger than the content it is kept for: room for that.
  if (stats_.content_bytes + size > limits_.max_content_bytes) return false;
  if (!http::GzipBuffer(std::string_view(e->content_.get(), size), level, &e->gzip_) ||
      e->gzip_.size() >= size) {
    e->gzip_.clear();
    e->gzip_state_ = Entry::Gzip::kUseless;
    return false;
  }
  e->gzip_state_ = Entry::Gzip::kReady;
  stats_.content_bytes += e->gzip_.size();
  return true;
}

void OpenFileCache::DropContent(Entry* e) {
  if (e->gzip_state_ == Entry::Gzip::kReady) stats_.content_bytes -= e->gzip_.size();
  e->gzip_state_ = Entry::Gzip::kNone;
  e->gzip_.clear();
  if (e->content_state_ == Entry::Content::kNone) return;
  stats_.content_bytes -= e->version_.size;
  e->content_state_ = Entry::Content::kNone;
}

void OpenFileCache::Detach(Entry* e) {
  URING_CHECK(e->in_table_);
  table_.erase(std::string_view(e->key_));
  Unlink(e);
  e->in_table_ = false;
  if (e->refs_ == 0) Recycle(e);
}

void OpenFileCache::Recycle(Entry* e) {
  // A content still loading belongs to the read in flight, which holds a
  // reference: it cannot be here.
  URING_CHECK(e->refs_ == 0 && !e->in_table_ && e->content_state_ != Entry::Content::kLoading);
  DropContent(e);
  closer_->CloseFile(e->file_index_);
  e->file_index_ = -1;
  --stats_.open_entries;
  // A large content buffer is not kept for a file that may never come back.
  if (e->content_cap_ > 4096) {
    e->content_.reset();
    e->content_cap_ = 0;
  }
  if (e->gzip_.capacity() > 4096) std::string().swap(e->gzip_);
  e->siblings_known_ = false;
  e->siblings_ = 0;
  free_.push_back(e);
}

OpenFileCache::Entry* OpenFileCache::NewEntry() {
  if (!free_.empty()) {
    Entry* e = free_.back();
    free_.pop_back();
    return e;
  }
  entries_.push_back(std::make_unique<Entry>());
  return entries_.back().get();
}

void OpenFileCache::Unlink(Entry* e) {
  if (e->prev_ != nullptr) e->prev_->next_ = e->next_;
  if (e->next_ != nullptr) e->next_->prev_ = e->prev_;
  if (lru_head_ == e) lru_head_ = e->next_;
  if (lru_tail_ == e) lru_tail_ = e->prev_;
  e->prev_ = e->next_ = nullptr;
}

void OpenFileCache::PushFront(Entry* e) {
  e->prev_ = nullptr;
  e->next_ = lru_head_;
  if (lru_head_ != nullptr) lru_head_->prev_ = e;
  lru_head_ = e;
  if (lru_tail_ == nullptr) lru_tail_ = e;
}

}  // namespace uring_http::files
