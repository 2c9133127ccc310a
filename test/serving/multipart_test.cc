// multipart/form-data uploads over real sockets, through the public header
// only: curl -F against a buffered FAST route (ParseMultipartForm), a SLOW
// route saving files as they arrive (SaveMultipart) and a FAST streamed
// route saving them on the ring (SaveMultipartSink); a 64 MiB file streamed
// to disk with resident memory checked; and the refusals: a file past its
// limit, too many parts, a malformed body, a wrong Content-Type, a body
// past the route's limit (413, 400, 415), each leaving no file behind, and
// a refused form answered before the rest of its body is sent.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/serving/http_client.h"
#include "uring_http/uring_http.h"

namespace uring_http {
namespace {

using testing::TestClient;

// Under the sanitizers (10-30 times slower per byte) the files are a
// quarter of the size: the same paths run, in CI's time; the flat-memory
// bound is checked on the optimised build, where the file is 64 MiB, twice
// the bound.
#if defined(URING_HTTP_SANITIZED)
constexpr uint64_t kBigFileBytes = 16ull << 20;
constexpr uint64_t kMaxFileBytes = 20ull << 20;
constexpr bool kCheckRss = false;  // the sanitizers' own memory moves it
#else
constexpr uint64_t kBigFileBytes = 64ull << 20;
constexpr uint64_t kMaxFileBytes = 80ull << 20;
constexpr bool kCheckRss = true;
#endif

long RssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

// One line per part: "value NAME=BODY" or "file NAME FILENAME TYPE SIZE".
std::string Describe(const http::MultipartForm& form) {
  std::string out;
  for (const http::FormPart& p : form.parts()) {
    if (p.is_file()) {
      out += "file " + p.name + " " + p.filename + " " + p.content_type + " " +
             std::to_string(p.body.size()) + "\n";
    } else {
      out += "value " + p.name + "=" + std::string(p.body) + "\n";
    }
  }
  return out;
}

std::string Describe(const http::SavedUpload& upload) {
  std::string out;
  for (const http::FormValue& v : upload.values) out += "value " + v.name + "=" + v.value + "\n";
  for (const http::SavedFile& f : upload.files) {
    out += "file " + f.name + " " + f.filename + " " + f.content_type + " " +
           std::to_string(f.size) + " " + f.path + "\n";
  }
  return out;
}

class MultipartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/multipart_test";
    dir_ = root_ + "/uploads";
    mkdir(root_.c_str(), 0700);
    mkdir(dir_.c_str(), 0700);
    for (const std::string& name : ListDir(dir_)) unlink((dir_ + "/" + name).c_str());

    http::UploadOptions upload;
    upload.directory = dir_;
    upload.max_file_bytes = kMaxFileBytes;
    upload.max_files = 4;
    upload.limits.max_parts = 6;

    router::Router router;
    http::MultipartLimits limits;
    limits.max_parts = 6;
    ASSERT_TRUE(router
                    .Fast("POST", "/form",
                          [limits](const http::Request& req, http::Response& resp) {
                            const http::MultipartForm form = http::ParseMultipartForm(req, limits);
                            if (!form.ok()) return form.error().Reply(resp);
                            resp.set_body(Describe(form));
                          })
                    .ok());
    router::RouteOptions small;
    small.max_body_bytes = 1024;
    ASSERT_TRUE(router
                    .Fast(
                        "POST", "/small",
                        [](const http::Request& req, http::Response& resp) {
                          resp.set_body(Describe(http::ParseMultipartForm(req)));
                        },
                        small)
                    .ok());
    router::RouteOptions streamed;
    streamed.body = router::BodyMode::kStreamed;
    streamed.max_body_bytes = router::kUnlimitedBody;
    ASSERT_TRUE(router
                    .Slow(
                        "POST", "/save",
                        [upload](const http::Request& req, http::Response& resp) {
                          http::SavedUpload saved = http::SaveMultipart(req, upload);
                          if (!saved.ok()) return saved.error.Reply(resp);
                          resp.set_body(Describe(saved));
                        },
                        streamed)
                    .ok());
    ASSERT_TRUE(router
                    .FastStream("POST", "/fast-save",
                                router::SaveMultipartSink(
                                    upload,
                                    [](const http::Request&, http::SavedUpload& saved,
                                       http::Response& resp) { resp.set_body(Describe(saved)); }))
                    .ok());

    serving::ServerConfig config;
    config.address = "127.0.0.1";
    config.port = 0;
    config.accept_threads = 1;
    config.workers = 2;
    server_ = std::make_unique<serving::Server>(config, std::move(router));
    const absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
  }

  // curl with `args`: the body, then a line with the status.
  std::string Curl(const std::string& path, const std::string& args) {
    const std::string cmd = "curl -sS --max-time 60 -w '\\n%{http_code}' " + args +
                            " http://127.0.0.1:" + std::to_string(server_->port()) + path;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "popen failed";
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
    return out;
  }

  std::string File(const std::string& name, std::string_view bytes) {
    const std::string path = root_ + "/" + name;
    WriteFile(path, bytes);
    return path;
  }

  std::string root_, dir_;
  std::unique_ptr<serving::Server> server_;
};

TEST_F(MultipartTest, CurlFormToABufferedRoute) {
  const std::string a = File("a.txt", "first file\r\n--not a boundary\r\n");
  const std::string b = File("b.png", std::string("\x89PNG\r\n\x1a\n\0\0\r", 12));
  const std::string got = Curl("/form", "-F title=hello -F 'doc=@" + a + "' -F 'doc=@" + b +
                                            ";type=image/png' -F 'note=<" + a + "'");
  EXPECT_EQ(got,
            "value title=hello\n"
            "file doc a.txt text/plain 30\n"
            "file doc b.png image/png 12\n"
            "value note=first file\r\n--not a boundary\r\n\n"
            "\n200");
}

// A SLOW route and a FAST streamed one, each: several files, one of them
// 64 MiB, saved under names of our own with their bytes intact, and the
// server's resident memory flat while they stream.
TEST_F(MultipartTest, CurlFilesStreamedToDiskWithFlatMemory) {
  std::string big(kBigFileBytes, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) >> 8);
  // What looks like a delimiter, straddling 64 KiB reads.
  big.replace(65536 - 5, 10, "\r\n--xyz\r\n-");
  const std::string big_path = File("big.bin", big);
  const std::string small_path = File("small.txt", "small");
  for (const char* path : {"/save", "/fast-save"}) {
    SCOPED_TRACE(path);
    std::atomic<bool> done{false};
    const long rss_before = RssKb();
    std::atomic<long> rss_peak{rss_before};
    std::thread sampler([&] {
      while (!done.load()) {
        rss_peak = std::max(rss_peak.load(), RssKb());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    const std::string got = Curl(path, "-F who=me -F 'big=@" + big_path + "' -F 'small=@" +
                                           small_path + ";filename=../../etc/passwd'");
    done = true;
    sampler.join();
    if (kCheckRss) EXPECT_LT(rss_peak - rss_before, 32 * 1024) << "resident memory grew by "
                                                << (rss_peak - rss_before) << " KiB";
    ASSERT_EQ(got.substr(got.size() - 3), "200") << got;
    EXPECT_EQ(got.substr(0, 13), "value who=me\n") << got;
    // "file big big.bin application/octet-stream 67108864 DIR/upload-..."
    const std::vector<std::string> names = ListDir(dir_);
    ASSERT_EQ(names.size(), 2u) << got;
    for (const std::string& name : names) {
      EXPECT_EQ(name.size(), 23u) << name;
      EXPECT_EQ(name.substr(0, 7), "upload-") << name;
      const std::string path = dir_ + "/" + name;
      EXPECT_NE(got.find(path), std::string::npos) << got;
      struct stat st {};
      ASSERT_EQ(stat(path.c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0600u);
      const std::string bytes = ReadFile(path);
      if (bytes.size() == big.size()) {
        EXPECT_TRUE(bytes == big) << "the big file's bytes differ";
        EXPECT_NE(got.find("file big big.bin application/octet-stream " +
                           std::to_string(kBigFileBytes) + " " + path),
                  std::string::npos)
            << got;
      } else {
        EXPECT_EQ(bytes, "small");
        EXPECT_NE(got.find("file small ../../etc/passwd text/plain 5 " + path), std::string::npos)
            << got;
      }
      unlink(path.c_str());
    }
  }
}

// Refusals: each answered with its status and a message saying why, and no
// file left in the upload directory.
TEST_F(MultipartTest, RefusedFormsLeaveNoFile) {
  const std::string small_path = File("s.txt", "abc");
  for (const char* path : {"/save", "/fast-save"}) {
    SCOPED_TRACE(path);
    // Too many files (max_files 4), then too many parts (max_parts 6).
    std::string five;
    for (int i = 0; i < 5; ++i) five += " -F 'f=@" + small_path + "'";
    std::string got = Curl(path, five);
    EXPECT_NE(got.find("multipart: more than 4 files\n\n413"), std::string::npos) << got;
    std::string seven;
    for (int i = 0; i < 7; ++i) seven += " -F v=1";
    got = Curl(path, seven);
    EXPECT_NE(got.find("more multipart parts than max_parts (part 6"), std::string::npos) << got;
    EXPECT_EQ(got.substr(got.size() - 3), "413");
    // Not multipart at all.
    got = Curl(path, "-d a=b");
    EXPECT_EQ(got, "multipart: Content-Type is not multipart/form-data\n\n415");
    EXPECT_TRUE(ListDir(dir_).empty());
  }

  // A body cut before its close delimiter, after a whole file: 400.
  for (const char* path : {"/form", "/save", "/fast-save"}) {
    SCOPED_TRACE(path);
    const std::string body =
        "--XyZ\r\nContent-Disposition: form-data; name=f; filename=a.txt\r\n\r\nabc\r\n"
        "--XyZ\r\nContent-Disposition: form-data; name=g; filename=b.txt\r\n\r\ndef";
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(std::string("POST ") + path +
                            " HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; "
                            "boundary=XyZ\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body));
    const auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("multipart body ended before its closing boundary"), std::string::npos)
        << r->body;
    EXPECT_TRUE(ListDir(dir_).empty());
  }

  // The route's own limit (1 KiB) comes first: the server's 413.
  const std::string big_path = File("k.txt", std::string(4096, 'k'));
  const std::string got = Curl("/small", "-F 'f=@" + big_path + "'");
  EXPECT_EQ(got.substr(got.size() - 3), "413") << got;
}

// A file past max_file_bytes is refused when its bytes pass the limit, not
// once the whole body has come: the client has sent 100 MiB of header and
// a little over the limit of data, and reads the 413 while it sends no more.
TEST_F(MultipartTest, OversizedFileIsRefusedBeforeTheBodyEnds) {
  for (const char* path : {"/save", "/fast-save"}) {
    SCOPED_TRACE(path);
    TestClient client(server_->port(), 30000);
    const std::string head =
        std::string("POST ") + path +
        " HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
        "Content-Length: 104857600\r\n\r\n"
        "--XyZ\r\nContent-Disposition: form-data; name=f; filename=big.bin\r\n\r\n";
    ASSERT_TRUE(client.Send(head));
    const std::string block(1 << 20, 'z');
    for (uint64_t sent = 0; sent <= kMaxFileBytes; sent += block.size()) {
      ASSERT_TRUE(client.Send(block));
    }
    const auto r = client.ReadResponse();
    ASSERT_TRUE(r.has_value()) << "no answer while the body is unfinished";
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(r->Closes());
    EXPECT_NE(r->body.find("file \"f\" over " + std::to_string(kMaxFileBytes) + " bytes"),
              std::string::npos)
        << r->body;
    // The partial file is gone.
    for (int i = 0; i < 1000 && !ListDir(dir_).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(ListDir(dir_).empty());
  }
}

}  // namespace
}  // namespace uring_http
