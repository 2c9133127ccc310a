// libFuzzer target for the HTTP/1 connection state machine: the input picks
// a stream of requests (every framing, pipelined, some malformed, plus raw
// bytes), how the stream is split into receives, and the order of every
// completion (sends short or whole, zero-copy notifications early or late,
// cancels landing late, buffer starvation, tasks finishing, deadlines, the
// peer's FIN or a reset). After each event and at the end it checks what
// must hold whatever happened:
//   - the host was never asked for something impossible (two receives or two
//     sends at once, a send after the close, a close before its shutdown, a
//     close that misstates what is armed);
//   - no buffer was released while "the kernel" could still read it (the
//     harness compares each send's bytes at submission and completion);
//   - requests are answered in order, each at most once, and all of them if
//     nothing went wrong (the answers carry the request's id);
//   - once closed and every completion is in, the slot is freeable and
//     every chunk is back in the pool.
//
// A --proxy-protocol listener (first byte's bit 3): the stream starts with a
// PROXY header (bits 4-5 pick v1 TCP4, v1 UNKNOWN or v2), and every rule
// above holds the same.
//
// Static files (when the first byte has bit 2 set: "files mode"; inputs
// without it decode exactly as before): a Router::Static mount "/files/" over
// a directory made once per process (small, medium, empty and large files of
// known bytes, directories with and without index.html, links inside and out
// of the root). The input picks the file pools (buffers, open-file cache,
// cached contents, splicing and pipes), GETs and HEADs of those paths with
// Range and conditional fields, traversal attempts, and the order and result
// of every file operation: statx/openat2/read/splice carried out for real or
// failed, short reads and splices, a socket with no room (splices get
// -EAGAIN and poll; a send of file bytes fails with -EAGAIN). It checks, in
// addition:
//   - the descriptor bookkeeping is right (no close of a descriptor that is
//     not open) and, at the end, every descriptor the cache does not hold is
//     closed, every file buffer is back and every pipe given back;
//   - each file answer comes in its request's turn, with the status the
//     request calls for (unless a statx or openat2 was failed on purpose),
//     and a complete 200 or 206 carries exactly the file's bytes of that
//     range; a path outside the root is never served.
//
// Fuzz:   test/fuzz/run_fuzz.sh 60 //test/http1:connection_fuzz
// Replay: bazel run //test/http1:connection_fuzz -- FILE_OR_DIR...
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "src/files/validators.h"
#include "test/http1/connection_harness.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http1 {
namespace {

using FileOp = testing::FakeHost::FileOp;

// ---- the static files, made once per process

// A file's known bytes.
std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed + i / 4096) % 26);
  return s;
}

struct FileData {
  std::string bytes;
  std::string etag;           // as the server makes it from the statx
  std::string last_modified;  // IMF-fixdate of its mtime
};

enum FileId { kSmall, kMedium, kEmpty, kIndex, kLarge, kFileCount };

class FileTree {
 public:
  FileTree() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                       "/connection_fuzz_XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr);
    base_ = tmpl;
    root_ = base_ + "/root";
    const std::string outside = base_ + "/outside";
    FUZZ_CHECK(mkdir(root_.c_str(), 0755) == 0);
    FUZZ_CHECK(mkdir(outside.c_str(), 0755) == 0);
    FUZZ_CHECK(mkdir((root_ + "/dir").c_str(), 0755) == 0);
    FUZZ_CHECK(mkdir((root_ + "/bare").c_str(), 0755) == 0);
    files_[kSmall].bytes = Pattern(3000, 1);      // < one 4 KiB buffer
    files_[kMedium].bytes = Pattern(20480, 2);    // five buffers
    files_[kEmpty].bytes = "";
    files_[kIndex].bytes = Pattern(700, 3);
    files_[kLarge].bytes = Pattern(200 * 1024, 4);  // spliced, several pipes' worth
    const char* names[kFileCount] = {"small.txt", "medium.bin", "empty.txt", "dir/index.html",
                                     "large.bin"};
    for (int i = 0; i < kFileCount; ++i) {
      const std::string path = root_ + "/" + names[i];
      Write(path, files_[i].bytes);
      struct statx stx;
      FUZZ_CHECK(::statx(AT_FDCWD, path.c_str(), 0,
                         STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_INO,
                         &stx) == 0);
      files::FileVersion v;
      v.size = stx.stx_size;
      v.mtime_sec = stx.stx_mtime.tv_sec;
      v.mtime_nsec = stx.stx_mtime.tv_nsec;
      v.inode = stx.stx_ino;
      files_[i].etag = files::StrongEtag(v);
      char date[files::kHttpDateSize];
      files::FormatHttpDate(v.mtime_sec, date);
      files_[i].last_modified.assign(date, sizeof date);
    }
    // Outside the root: what a link leading out must never serve.
    Write(outside + "/index.html", "outside index\n");
    Write(outside + "/passwd", "outside secret\n");
    FUZZ_CHECK(symlink("small.txt", (root_ + "/link.txt").c_str()) == 0);
    FUZZ_CHECK(symlink(outside.c_str(), (root_ + "/out").c_str()) == 0);
    FUZZ_CHECK(symlink((outside + "/passwd").c_str(), (root_ + "/escape.txt").c_str()) == 0);
    FUZZ_CHECK(symlink("/etc", (root_ + "/etc").c_str()) == 0);
  }
  ~FileTree() {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }

  const std::string& root() const { return root_; }
  const FileData& file(int id) const { return files_[id]; }

 private:
  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    FUZZ_CHECK(out.good());
  }

  std::string base_;
  std::string root_;
  FileData files_[kFileCount];
};

const FileTree& Tree() {
  static const FileTree* tree = [] {
    // Destroyed at exit (the directory goes with it).
    static FileTree t;
    return &t;
  }();
  return *tree;
}

// The request targets under the mount, and what each one is.
struct FilePath {
  const char* target;
  int file;              // a FileId served, or -1
  int status;            // the answer when `file` is -1 (GET or HEAD)
  const char* location;  // a 301's (or an unclean path's 308)
  // Not a clean path (src/router/clean_path.h): redirected before any
  // route or mount sees it, 301 (GET, HEAD) or 308 (POST).
  bool unclean = false;
};
constexpr FilePath kFilePaths[] = {
    {"/files/small.txt", kSmall, 0, nullptr},
    {"/files/medium.bin", kMedium, 0, nullptr},
    {"/files/empty.txt", kEmpty, 0, nullptr},
    {"/files/dir/", kIndex, 0, nullptr},
    {"/files/dir", -1, 301, "/files/dir/"},  // a directory without its slash
    {"/files/bare/", -1, 404, nullptr},      // no index.html, no listing
    {"/files/link.txt", kSmall, 0, nullptr}, // a link inside the root
    {"/files/out", -1, 404, nullptr},        // a link to a directory outside
    {"/files/large.bin", kLarge, 0, nullptr},
    {"/files/../small.txt", -1, 301, "/small.txt", true},  // traversal: cleaned first
    {"/files/%2e%2e/%2e%2e/etc/passwd", -1, 301, "/etc/passwd", true},
    {"/files/out/passwd", -1, 404, nullptr},
    {"/files/dir/index.html", kIndex, 0, nullptr},
    {"/files/nope.txt", -1, 404, nullptr},
    {"/files/dir/../small.txt", -1, 301, "/files/small.txt", true},
    {"/files/a%2fb", -1, 400, nullptr},
    {"/files/bare", -1, 301, "/files/bare/"},
    {"/files/etc/passwd", -1, 404, nullptr},     // through a link to /etc
    {"/files/escape.txt", -1, 404, nullptr},     // a file link outside
    {"/files/out/", -1, 404, nullptr},
    {"/files/small.txt/", -1, 404, nullptr},     // a file is no directory
    {"/files/medium.bin", kMedium, 0, nullptr},  // (the bodies, once more)
    {"/files/large.bin", kLarge, 0, nullptr},
    {"/files/small.txt", kSmall, 0, nullptr},
};
constexpr uint32_t kFilePathCount = sizeof kFilePaths / sizeof kFilePaths[0];

// Range fields a file request may carry.
enum RangeKind {
  kNoRange,
  kRangeFirstLast,  // bytes=a-b
  kRangeSuffix,     // bytes=-n
  kRangeOpen,       // bytes=a-
  kRangeBeyond,     // bytes=1000000- (unsatisfiable)
  kRangeMultiple,   // bytes=0-1,5-6
  kRangeInvalid,    // bytes=5-2 (ignored)
  kRangeFirstByte,  // bytes=0-0
};
// Conditional fields.
enum CondKind {
  kNoCond,
  kIfNoneMatchTag,    // the file's ETag: 304
  kIfNoneMatchStar,   // 304
  kIfNoneMatchOther,  // no match: the full answer
  kIfModifiedSinceMtime,  // 304
  kIfModifiedSinceOld,    // modified since: the full answer
  kIfMatchOther,          // 412
  kIfNoneMatchOtherAndImsMtime,  // If-None-Match wins: the full answer
};

// Handlers answer with the request's id (its query), so that order and
// duplicates can be checked. File answers carry none: they are recognized
// by their turn (and checked against what their request asked for).
router::Router FuzzRouter() {
  router::Router r;
  (void)r.Fast("GET", "/f", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query));
  });
  (void)r.Fast("POST", "/f", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query) + ":" + std::to_string(req.body.size()));
  });
  (void)r.Slow("GET", "/s", [](const http::Request& req, http::Response& resp) {
    resp.set_body(std::string(req.query));
  });
  (void)r.Slow("POST", "/s", [](const http::Request& req, http::Response& resp) {
    resp.set_static_body(req.body);  // a view the server must copy
    (void)resp.AddHeader("X-Id", req.query);
  });
  // Streamed from the worker; small enough never to block on its pipe.
  (void)r.Slow("GET", "/w", [](const http::Request& req, http::Response& resp) {
    (void)resp.AddHeader("X-Id", req.query);
    for (int i = 0; i < 3; ++i) resp.Write(std::string(1000 + i, 'w'));
  });
  (void)r.Fast("GET", "/p", [](const http::Request& req, http::Response& resp) {
    (void)resp.AddHeader("X-Id", req.query);
    auto left = std::make_shared<int>(4);
    resp.Stream([left](http::BodyOutput& out) {
      out.Write(std::string(900, 'p'));
      return --*left == 0;
    });
  });
  struct Sink : router::BodySink {
    std::string id;
    size_t bytes = 0;
    void OnData(std::string_view piece) override { bytes += piece.size(); }
    void OnEnd(const http::Request&, http::Response& resp) override {
      resp.set_body(id + ":" + std::to_string(bytes));
    }
  };
  (void)r.FastStream("PUT", "/k", [](const http::Request& req) {
    auto sink = std::make_unique<Sink>();
    sink->id = std::string(req.query);
    return sink;
  });
  FUZZ_CHECK(r.Static("/files/", Tree().root()).ok());
  return r;
}

// Reads fuzz bytes; 0 once they run out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : Byte() % n; }
  // For n above 256: two bytes.
  uint32_t Below16(uint32_t n) {
    if (n == 0) return 0;
    const uint32_t hi = Byte();
    return ((hi << 8) | Byte()) % n;
  }
  bool done() const { return pos_ >= size_; }
  std::string_view Rest() {
    std::string_view r(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return r;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string ChunkedBody(size_t n, uint32_t pieces) {
  std::string out;
  size_t left = n;
  for (uint32_t i = 0; i < pieces && left > 0; ++i) {
    const size_t k = i + 1 == pieces ? left : (left + 1) / 2;
    char line[32];
    std::snprintf(line, sizeof line, "%zx\r\n", k);
    out += line + std::string(k, 'c') + "\r\n";
    left -= k;
  }
  if (left > 0) {
    char line[32];
    std::snprintf(line, sizeof line, "%zx\r\n", left);
    out += line + std::string(left, 'c') + "\r\n";
  }
  return out + "0\r\n\r\n";
}

// One well-formed request of the stream, as sent.
struct Sent {
  bool file = false;  // to the mount (else: a route answering with its id)
  bool head = false;
  bool post = false;  // a POST to the mount: 405
  uint32_t path = 0;  // kFilePaths
  RangeKind range = kNoRange;
  uint64_t a = 0;  // the range's numbers
  uint64_t b = 0;
  CondKind cond = kNoCond;
};

struct Stream {
  std::string bytes;
  int requests = 0;          // well-formed requests, ids 0..requests-1
  bool malformed = false;    // something after them breaks the stream
  bool raw = false;          // ... raw fuzz bytes, which may hold anything
  std::vector<Sent> sent;    // the well-formed requests
};

// A GET, HEAD or POST of a path under the mount, with Range and
// conditional fields.
std::string FileRequest(Input& in, const std::string& close, Sent* q) {
  q->file = true;
  q->path = in.Byte() % kFilePathCount;
  const FilePath& p = kFilePaths[q->path];
  const uint8_t opts = in.Byte();
  const uint32_t method = opts & 7;  // 0-4 GET, 5-6 HEAD, 7 POST
  q->head = method == 5 || method == 6;
  q->post = method == 7;
  if (q->post) {
    return std::string("POST ") + p.target + " HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n" +
           close + "\r\n";
  }
  q->range = static_cast<RangeKind>((opts >> 3) & 7);
  const uint32_t cond = in.Byte() % 12;
  q->cond = cond < 8 ? static_cast<CondKind>(cond) : kNoCond;
  const FileData& f = Tree().file(p.file >= 0 ? p.file : kSmall);
  std::string fields;
  switch (q->range) {
    case kNoRange: break;
    case kRangeFirstLast:
      q->a = in.Below16(210'000);
      q->b = q->a + in.Byte() * 97u;
      fields += "Range: bytes=" + std::to_string(q->a) + "-" + std::to_string(q->b) + "\r\n";
      break;
    case kRangeSuffix:
      q->b = in.Byte() * 830u;
      fields += "Range: bytes=-" + std::to_string(q->b) + "\r\n";
      break;
    case kRangeOpen:
      q->a = in.Below16(210'000);
      fields += "Range: bytes=" + std::to_string(q->a) + "-\r\n";
      break;
    case kRangeBeyond: fields += "Range: bytes=1000000-\r\n"; break;
    case kRangeMultiple: fields += "Range: bytes=0-1,5-6\r\n"; break;
    case kRangeInvalid: fields += "Range: bytes=5-2\r\n"; break;
    case kRangeFirstByte: fields += "Range: bytes=0-0\r\n"; break;
  }
  switch (q->cond) {
    case kNoCond: break;
    case kIfNoneMatchTag: fields += "If-None-Match: " + f.etag + "\r\n"; break;
    case kIfNoneMatchStar: fields += "If-None-Match: *\r\n"; break;
    case kIfNoneMatchOther: fields += "If-None-Match: \"other\"\r\n"; break;
    case kIfModifiedSinceMtime: fields += "If-Modified-Since: " + f.last_modified + "\r\n"; break;
    case kIfModifiedSinceOld:
      fields += "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
      break;
    case kIfMatchOther: fields += "If-Match: \"other\"\r\n"; break;
    case kIfNoneMatchOtherAndImsMtime:
      fields += "If-None-Match: \"other\"\r\nIf-Modified-Since: " + f.last_modified + "\r\n";
      break;
  }
  return std::string(q->head ? "HEAD " : "GET ") + p.target + " HTTP/1.1\r\nHost: h\r\n" + fields +
         close + "\r\n";
}

Stream MakeStream(Input& in, bool files) {
  Stream s;
  const uint32_t count = 1 + in.Below(8);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string id = std::to_string(s.requests);
    const uint8_t kind = in.Byte();
    const size_t body = (in.Byte() % 8) * 700;
    const std::string close = (kind & 0x80) && i + 1 == count ? "Connection: close\r\n" : "";
    std::string r;
    Sent sent;
    switch (kind % (files ? 12 : 9)) {
      case 0: r = "GET /f?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 1:
        r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body) +
            "\r\n" + close + "\r\n" + std::string(body, 'b');
        break;
      case 2:
        r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n" + close +
            "\r\n" + ChunkedBody(body, 1 + in.Below(4));
        break;
      case 3: r = "GET /s?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 4:
        r = "POST /s?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n" + close +
            "\r\n" + ChunkedBody(body, 1 + in.Below(3));
        break;
      case 5: r = "GET /w?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 6: r = "GET /p?" + id + " HTTP/1.1\r\nHost: h\r\n" + close + "\r\n"; break;
      case 7:
        r = "PUT /k?" + id + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body) +
            "\r\n" + close + "\r\n" + std::string(body, 'k');
        break;
      case 8:
        // Malformed: a bad chunk, a bad head, or raw fuzz bytes.
        s.malformed = true;
        if (kind & 0x40) {
          r = "POST /f?" + id + " HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\n";
        } else {
          r = std::string(in.Rest());
          s.raw = true;
        }
        break;
      default:  // 9-11, files mode only
        r = FileRequest(in, close, &sent);
        break;
    }
    s.bytes += r;
    if (s.malformed) break;
    ++s.requests;
    s.sent.push_back(sent);
    if (!close.empty()) break;
  }
  return s;
}

// What a file request must be answered with when no statx or openat2 was
// failed on purpose: the status, and for a 200 or 206 the body's bytes
// [first, first + length) of the file.
struct Expected {
  int status = 0;
  uint64_t first = 0;
  uint64_t length = 0;
};

Expected Expect(const Sent& q) {
  const FilePath& p = kFilePaths[q.path];
  if (p.unclean) return {q.post ? 308 : 301};
  if (q.post) return {405};
  if (p.file < 0) return {p.status};
  const uint64_t size = Tree().file(p.file).bytes.size();
  switch (q.cond) {
    case kIfMatchOther: return {412};
    case kIfNoneMatchTag:
    case kIfNoneMatchStar:
    case kIfModifiedSinceMtime: return {304};
    default: break;
  }
  if (q.head) return {200, 0, size};  // Range applies to GET only
  switch (q.range) {
    case kNoRange:
    case kRangeInvalid: return {200, 0, size};
    case kRangeFirstLast:
      if (q.a >= size) return {416};
      return {206, q.a, std::min<uint64_t>(q.b, size - 1) - q.a + 1};
    case kRangeSuffix:
      if (q.b == 0 || size == 0) return {416};
      return {206, size - std::min<uint64_t>(q.b, size), std::min<uint64_t>(q.b, size)};
    case kRangeOpen:
      if (q.a >= size) return {416};
      return {206, q.a, size - q.a};
    case kRangeBeyond: return {416};
    case kRangeMultiple: return size > 0 ? Expected{200, 0, size} : Expected{416};
    case kRangeFirstByte: return size > 0 ? Expected{206, 0, 1} : Expected{416};
  }
  return {};
}

void CheckFileReply(const Sent& q, const testing::Reply& r, bool forced_meta) {
  const FilePath& p = kFilePaths[q.path];
  const Expected e = Expect(q);
  const bool failed_on_purpose =
      forced_meta && (r.status == 403 || r.status == 404 || r.status == 500 || r.status == 503);
  if (r.status != e.status && !failed_on_purpose) {
    std::fprintf(stderr, "%s %s: status %d, expected %d (range %d, cond %d)\n",
                 q.post ? "POST" : q.head ? "HEAD" : "GET", p.target, r.status, e.status,
                 q.range, q.cond);
  }
  FUZZ_CHECK(r.status == e.status || failed_on_purpose);
  if (r.status == 301 || r.status == 308) {
    FUZZ_CHECK(p.location != nullptr && r.Header("location") == p.location);
  }
  if (r.status == 405) FUZZ_CHECK(r.Header("allow") == "GET, HEAD");
  if (r.status == 416) {
    FUZZ_CHECK(p.file >= 0 && q.range != kNoRange);
    FUZZ_CHECK(r.Header("content-range") ==
               "bytes */" + std::to_string(Tree().file(p.file).bytes.size()));
  }
  if (r.status != 200 && r.status != 206 && r.status != 304) return;
  // Only a file beneath the root is ever served.
  FUZZ_CHECK(p.file >= 0 && !q.post);
  const FileData& f = Tree().file(p.file);
  const uint64_t size = f.bytes.size();
  FUZZ_CHECK(r.Header("etag") == f.etag);
  FUZZ_CHECK(r.Header("last-modified") == f.last_modified);
  if (r.status == 304) {
    FUZZ_CHECK(r.Header("content-length").empty());
    return;
  }
  FUZZ_CHECK(r.Header("accept-ranges") == "bytes");
  if (q.head) {
    FUZZ_CHECK(r.status == 200 && r.body.empty());
    FUZZ_CHECK(r.Header("content-length") == std::to_string(size));
    return;
  }
  uint64_t first = 0;
  uint64_t length = size;
  if (r.status == 206) {
    unsigned long long a = 0, b = 0, total = 0;
    FUZZ_CHECK(std::sscanf(r.Header("content-range").c_str(), "bytes %llu-%llu/%llu", &a, &b,
                           &total) == 3);
    FUZZ_CHECK(total == size && a <= b && b < size);
    first = a;
    length = b - a + 1;
  } else {
    FUZZ_CHECK(r.Header("content-range").empty());
  }
  FUZZ_CHECK(first == e.first && length == e.length);
  FUZZ_CHECK(r.Header("content-length") == std::to_string(length));
  // A complete answer (the parser keeps only those): the file's bytes.
  FUZZ_CHECK(r.body.size() == length);
  FUZZ_CHECK(std::memcmp(r.body.data(), f.bytes.data() + first, length) == 0);
}

// The file pools and the splice threshold, as the input chose them.
struct FileSetup {
  size_t buffers = 4;
  files::OpenFileCacheLimits limits;
  uint64_t splice_min_bytes = 0;
  int max_pipes = 0;
  int pipe_bytes = 64 * 1024;
};

FileSetup ChooseFileSetup(Input& in, bool files_mode) {
  FileSetup s;
  s.limits.max_entries = 4;
  s.limits.valid_ticks = 4;
  s.limits.max_content_bytes = 32 * 1024;
  s.limits.max_content_file = 64 * 1024;
  if (!files_mode) return s;
  const uint8_t a = in.Byte();
  const uint8_t b = in.Byte();
  s.buffers = 1 + (a & 3);                      // 1-4 buffers of 4 KiB
  s.limits.max_entries = (a >> 2) % 5;          // 0 (no cache) to 4
  s.limits.valid_ticks = 1 + ((a >> 5) & 7);    // revalidated after 1-8 ticks
  static constexpr size_t kContent[] = {0, 4096, 32 * 1024, 64 * 1024};
  s.limits.max_content_bytes = kContent[b & 3];
  static constexpr uint64_t kSplice[] = {0, 8192, 0, 64 * 1024};
  s.splice_min_bytes = kSplice[(b >> 2) & 3];
  s.max_pipes = (b >> 4) % 3;
  static constexpr int kPipe[] = {4096, 16384, 65536, 65536};
  s.pipe_bytes = kPipe[(b >> 6) & 3];
  return s;
}

void Check(const testing::Harness& h) {
  for (const std::string& v : h.host.violations) std::fprintf(stderr, "violation: %s\n", v.c_str());
  FUZZ_CHECK(h.host.violations.empty());
  for (const std::string& e : h.closer().errors) std::fprintf(stderr, "closer: %s\n", e.c_str());
  FUZZ_CHECK(h.closer().errors.empty());
}

// Fails the file operation in flight, or lets it come back short, the way
// the kernel could: a statx or openat2 with an errno; a read short, empty
// (the file shrank) or failed; a splice into the pipe short or empty (its
// length is cut before it is carried out, so that the pipe holds what the
// result says); a splice to the socket that finds it full, a reset, or
// room for a part.
void FailFileOp(testing::Harness& h, Input& in, bool* forced_meta) {
  if (!h.host.file_op.has_value()) return;
  FileOp& op = *h.host.file_op;
  static constexpr int kErrors[] = {-ENOENT, -EACCES, -EIO, -ENFILE};
  const uint32_t c = in.Below(3);
  switch (op.kind) {
    case FileOp::kStat:
    case FileOp::kOpen:
      *forced_meta = true;
      h.CompleteFileOp(kErrors[in.Below(4)]);
      break;
    case FileOp::kRead:
      if (c == 0 && op.len > 1) {
        h.CompleteFileOp(static_cast<int>(1 + in.Below16(op.len - 1)));
      } else {
        h.CompleteFileOp(c == 1 ? 0 : -EIO);
      }
      break;
    case FileOp::kFill:
      if (c == 0 && op.len > 1) {
        op.len = 1 + in.Below16(op.len - 1);
        h.CompleteFileOp();
      } else {
        op.len = 0;  // nothing moves
        h.CompleteFileOp(c == 1 ? std::nullopt : std::optional<int>(-EIO));
      }
      break;
    case FileOp::kDrain:
      if (c == 0) {
        h.CompleteFileOp(-EAGAIN);
      } else if (c == 1) {
        h.CompleteFileOp(-ECONNRESET);
      } else {
        const size_t room = h.host.socket_room;
        h.host.socket_room = 1 + in.Below16(op.len);
        h.CompleteFileOp();
        h.host.socket_room = room;
      }
      break;
    case FileOp::kPoll:
      h.CompleteFileOp(c == 0 ? -ECONNRESET : POLLOUT | POLLERR);
      break;
  }
}

void RunOne(const uint8_t* data, size_t size) {
  Input in(data, size);
  exchange::ConnectionConfig config;
  config.limits.max_body_bytes = 4000;
  const uint8_t flags = in.Byte();
  config.send_zc_min_bytes = (flags & 1) ? 1024 : 0;
  config.bulk_receives = (flags & 2) != 0;  // large bodies move to the other buffer group
  const bool files_mode = (flags & 4) != 0;
  // A --proxy-protocol listener: the stream starts with a PROXY header,
  // which must change nothing of what follows.
  config.proxy_protocol = (flags & 8) != 0;
  config.bulk_body_bytes = 1500;
  config.request_pipe_bytes = 4096;
  config.header_timeout_ms = 1000;
  config.body_timeout_ms = 2000;
  config.send_timeout_ms = 3000;
  config.idle_timeout_ms = 5000;
  const FileSetup fs = ChooseFileSetup(in, files_mode);
  config.splice_min_bytes = fs.splice_min_bytes;
  testing::Harness h(FuzzRouter(), config, 96);
  h.EnableFiles(fs.limits, fs.buffers, 4096);
  h.host.max_pipes = fs.max_pipes;
  h.host.pipe_bytes = fs.pipe_bytes;
  Stream stream = MakeStream(in, files_mode);
  if (config.proxy_protocol) {
    static const std::string kHeaders[] = {
        "PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n",
        "PROXY UNKNOWN\r\n",
        std::string("\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c\xcb\x00\x71\x07\xc0\x00\x02\x01"
                    "\xc7\x38\x01\xbb",
                    28),
    };
    stream.bytes.insert(0, kHeaders[((flags >> 4) & 3) % 3]);
  }
  h.Open();
  size_t fed = 0;
  bool eof_sent = false;
  bool forced_meta = false;  // a statx or openat2 was failed on purpose
  auto check = [&] {
    Check(h);
    FUZZ_CHECK(h.file_buffers_available() <= fs.buffers);
    FUZZ_CHECK(h.host.pipes_out <= fs.max_pipes);
  };
  // Events chosen by the input; when it runs out, everything is delivered
  // and completed in a plain order so that the end state can be judged.
  for (int step = 0; step < 400 && !in.done(); ++step) {
    switch (in.Below(files_mode ? 19 : 12)) {
      case 0:
      case 1:
      case 2:
        if (fed < stream.bytes.size() && h.host.recv_armed && !eof_sent) {
          const size_t n = std::min<size_t>(stream.bytes.size() - fed, 1 + in.Below(3000));
          fed += h.Recv(std::string_view(stream.bytes).substr(fed, n), 1 + in.Below(2048));
        }
        break;
      case 3:
      case 4:
        h.CompleteSend(in.Below(4) == 0 ? 1 + in.Below(500) : SIZE_MAX);
        break;
      case 5:
        h.Notify();
        break;
      case 6:
        if (!h.host.tasks.empty()) h.RunTask();
        break;
      case 7:
        h.LandCancel();
        break;
      case 8:
        if (h.host.recv_armed && !h.host.cancel_pending) {
          h.RecvEnd(-ENOBUFS);
          h.conn.OnBuffersAvailable();
        }
        break;
      case 9:
        h.Tick(in.Below(30));
        break;
      case 10:
        h.ShutdownDone();
        if (h.host.closed) h.CloseDone();
        break;
      case 11:
        if (in.Below(4) == 0 && h.host.recv_armed && !eof_sent) {
          eof_sent = true;
          h.RecvEnd(in.Below(2) == 0 ? 0 : -ECONNRESET);
        }
        break;
      // Files mode only.
      case 12:
      case 13:
        h.CompleteFileOp();  // carried out for real
        break;
      case 14:
        FailFileOp(h, in, &forced_meta);
        break;
      case 15: {
        // How much the peer's socket takes per splice (0: -EAGAIN, a poll).
        const uint32_t c = in.Below(4);
        h.host.socket_room = c == 0 ? 0 : c == 1 ? 1 + in.Below16(8192) : c == 2 ? 16384 : SIZE_MAX;
        break;
      }
      case 16:
        // A send of file bytes (MSG_DONTWAIT) into a full socket.
        if (h.host.send.has_value() && h.host.send->dont_wait) h.FailSend(-EAGAIN);
        break;
      case 17: {
        // A burst: file operations and sends as they come.
        const uint32_t n = 1 + in.Below(16);
        for (uint32_t i = 0; i < n; ++i) {
          h.CompleteFileOp();
          h.CompleteSend();
          h.Notify();
        }
        break;
      }
      case 18:
        h.Tick(1 + in.Below(2));  // the retry of a read that found no buffer
        break;
    }
    check();
  }
  // The plain end: the rest of the stream, then every completion (the peer
  // reads again: the socket has room).
  h.host.socket_room = SIZE_MAX;
  auto busy = [&] {
    return h.host.file_op.has_value() || h.host.send.has_value() || h.host.zc_held.has_value() ||
           !h.host.tasks.empty() || h.host.cancel_pending || h.host.shutdown_pending;
  };
  for (int round = 0; round < 200 || (round < 20000 && busy()); ++round) {
    if (fed < stream.bytes.size() && h.host.recv_armed && !eof_sent) {
      fed += h.Recv(std::string_view(stream.bytes).substr(fed));
    }
    h.LandCancel();
    h.RunTask();
    h.CompleteFileOp();
    h.Flush();
    h.ShutdownDone();
    check();
  }
  // Answers in order, each at most once, all of them when nothing went
  // wrong. A route's answer carries its request's id; a file answer must
  // be what its request asked for. Nothing is answered after an error.
  std::vector<bool> heads;
  for (const Sent& q : stream.sent) heads.push_back(q.head);
  const auto replies = h.Replies(heads);
  size_t next = 0;
  bool error = false;
  for (const testing::Reply& r : replies) {
    if (r.status == 100) continue;
    if (error) {
      FUZZ_CHECK(r.status >= 400);  // nothing is answered after an error
      continue;
    }
    if (next >= stream.sent.size()) {
      if (stream.raw) break;  // raw fuzz bytes may hold requests of any kind
      FUZZ_CHECK(r.status >= 400);
      error = true;
      continue;
    }
    const Sent& q = stream.sent[next];
    if (!q.file) {
      if (r.status != 200) {
        error = true;
        continue;
      }
      std::string id = r.Header("x-id");
      if (id.empty()) id = r.body.substr(0, r.body.find(':'));
      FUZZ_CHECK(!id.empty() && id.size() < 4);
      FUZZ_CHECK(std::atoi(id.c_str()) == static_cast<int>(next));
    } else {
      if (r.status == 408) {  // its head came too slowly
        error = true;
        continue;
      }
      CheckFileReply(q, r, forced_meta);
    }
    ++next;
  }
  FUZZ_CHECK(next <= static_cast<size_t>(stream.requests));
  // The header is valid however it was split: only a deadline can fail it.
  FUZZ_CHECK(h.stats.proxy_header_errors.Get() <= h.stats.timeouts.Get());
  if (!stream.malformed && !eof_sent && fed == stream.bytes.size() && !h.host.closed &&
      !h.host.shutdown_pending && !h.host.shutdown_done) {
    FUZZ_CHECK(next == static_cast<size_t>(stream.requests));
  }
  // Close it (the peer leaves) and let every completion in: the slot must
  // come free with all of its memory back.
  if (!h.host.closed) {
    if (h.host.recv_armed) h.RecvEnd(-ECONNRESET);
    h.conn.Abort();
    h.ShutdownDone();
  }
  FUZZ_CHECK(h.host.closed);
  h.CloseDone();
  // A file operation still in flight completes: a splice to the socket or
  // the poll for its room is cancelled by the close, the others are done.
  for (int i = 0; i < 16 && h.host.file_op.has_value(); ++i) {
    const bool socket_op =
        h.host.file_op->kind == FileOp::kDrain || h.host.file_op->kind == FileOp::kPoll;
    h.CompleteFileOp(socket_op ? std::optional<int>(-ECANCELED) : std::nullopt);
  }
  FUZZ_CHECK(!h.host.file_op.has_value());
  h.Flush();
  while (!h.host.tasks.empty()) h.RunTask();
  Check(h);
  FUZZ_CHECK(h.conn.Freeable());
  h.conn.Release();
  Check(h);
  FUZZ_CHECK(h.chunks_available() == 96);
  FUZZ_CHECK(h.file_buffers_available() == fs.buffers);
  FUZZ_CHECK(h.host.pipes_out == 0);
  // Every descriptor opened is closed, but those the cache holds.
  FUZZ_CHECK(h.closer().open.size() == h.file_cache()->stats().open_entries);
  FUZZ_CHECK(h.closer().open.size() <= fs.limits.max_entries);
}

// Descriptors open in this process (-1 if it cannot tell).
int CountFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

}  // namespace
}  // namespace uring_http::http1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::http1::Tree();  // made once, before the count
  const int before = uring_http::http1::CountFds();
  uring_http::http1::RunOne(data, size);
  // The cache's descriptors go with the harness, pipes are given back: no
  // descriptor outlives an input.
  const int after = uring_http::http1::CountFds();
  FUZZ_CHECK(before < 0 || after == before);
  return 0;
}
