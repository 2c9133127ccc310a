// The handler-facing multipart helpers without a server: a buffered form's
// parts and lookups (Go's FormValue/FormFile rules), bodies viewing the
// request's bytes, errors with their status and where; a stream fed in
// pieces into a receiver that stops it; the saver's files and its cleanup.
#include "src/http/multipart_form.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/http/multipart_files.h"

namespace uring_http::http {
namespace {

constexpr std::string_view kType = "multipart/form-data; boundary=XyZ";
const std::string kBody =
    "--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"a.txt\"\r\n"
    "Content-Type: text/plain\r\n\r\nfile one\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"b.txt\"\r\n\r\nfile two\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"\"\r\n\r\n\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nagain\r\n"
    "--XyZ--\r\n";

TEST(MultipartFormTest, PartsAndLookups) {
  const MultipartForm form = ParseMultipartForm(kType, kBody);
  ASSERT_TRUE(form.ok()) << form.error().message;
  ASSERT_EQ(form.parts().size(), 5u);
  EXPECT_EQ(form.Value("title"), "hello");
  EXPECT_EQ(form.Values("title"), (std::vector<std::string_view>{"hello", "again"}));
  // filename="" is a value, as in Go.
  EXPECT_EQ(form.Value("doc"), "");
  EXPECT_FALSE(form.Value("absent").has_value());
  const FormPart* doc = form.File("doc");
  ASSERT_NE(doc, nullptr);
  EXPECT_EQ(doc->filename, "a.txt");
  EXPECT_EQ(doc->content_type, "text/plain");
  EXPECT_EQ(doc->body, "file one");
  EXPECT_EQ(doc->FindHeader("content-type"), "text/plain");
  // Views into the body, not copies.
  EXPECT_GE(doc->body.data(), kBody.data());
  EXPECT_LE(doc->body.data() + doc->body.size(), kBody.data() + kBody.size());
  ASSERT_EQ(form.Files("doc").size(), 2u);
  EXPECT_EQ(form.Files("doc")[1]->body, "file two");
  EXPECT_EQ(form.File("title"), nullptr);
}

TEST(MultipartFormTest, ErrorsSayStatusAndWhere) {
  MultipartForm form = ParseMultipartForm("application/json", kBody);
  EXPECT_EQ(form.error().status, 415);
  EXPECT_EQ(form.error().message, "multipart: Content-Type is not multipart/form-data");
  form = ParseMultipartForm("multipart/form-data", kBody);
  EXPECT_EQ(form.error().status, 400);
  form = ParseMultipartForm(kType, kBody.substr(0, 100));
  EXPECT_EQ(form.error().status, 400);
  EXPECT_EQ(form.error().message,
            "multipart: multipart body ended before its closing boundary (part 2, at "
            "byte 100)");
  EXPECT_TRUE(form.parts().empty());
  MultipartLimits limits;
  limits.max_part_bytes = 7;
  form = ParseMultipartForm(kType, kBody, limits);
  EXPECT_EQ(form.error().status, 413);
  EXPECT_EQ(form.error().message,
            "multipart: multipart part over max_part_bytes (part 2 \"doc\", at byte 166)");

  Response response;
  form.error().Reply(response);
  EXPECT_EQ(response.status(), 413);
  EXPECT_EQ(response.body_view(), form.error().message + "\n");
  EXPECT_EQ(response.FindHeader("content-type"), "text/plain; charset=utf-8");
}

struct Recorder : MultipartReceiver {
  std::string log;
  size_t stop_after_bytes = SIZE_MAX;
  void OnPart(const MultipartPart& p) override { log += "[" + std::string(p.name) + "]"; }
  void OnPartData(std::string_view piece) override {
    log += piece;
    if (log.size() > stop_after_bytes) Fail(422, "enough");
  }
  void OnPartEnd() override { log += "[end]"; }
};

TEST(MultipartStreamTest, PiecesOfAnySizeReachTheReceiver) {
  for (size_t step : {1, 3, 7, 64, 4096}) {
    Recorder r;
    MultipartStream stream(kType, &r);
    for (size_t at = 0; at < kBody.size(); at += step) {
      ASSERT_TRUE(stream.Feed(std::string_view(kBody).substr(at, step)));
    }
    ASSERT_TRUE(stream.Finish());
    EXPECT_EQ(r.log,
              "[title]hello[end][doc]file one[end][doc]file two[end][doc][end][title]again[end]");
  }
}

TEST(MultipartStreamTest, AReceiverStopsTheStream) {
  Recorder r;
  r.stop_after_bytes = 20;
  MultipartStream stream(kType, &r);
  EXPECT_FALSE(stream.Feed(kBody));
  EXPECT_EQ(stream.error().status, 422);
  EXPECT_EQ(stream.error().message, "enough");
  EXPECT_FALSE(stream.Feed("more"));
  EXPECT_FALSE(stream.Finish());

  Recorder never;
  MultipartStream wrong("text/plain", &never);
  EXPECT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().status, 415);
  EXPECT_FALSE(wrong.Feed(kBody));
  EXPECT_TRUE(never.log.empty());
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (const dirent* e = d != nullptr ? readdir(d) : nullptr) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  if (d != nullptr) closedir(d);
  return names;
}

TEST(MultipartSaverTest, SavesFilesAndCleansUpAfterAFailure) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  UploadOptions options;
  options.directory = std::string(tmp != nullptr ? tmp : "/tmp") + "/saver_test";
  mkdir(options.directory.c_str(), 0700);
  {
    MultipartSaver saver(options);
    MultipartStream stream(kType, &saver);
    ASSERT_TRUE(stream.Feed(kBody) && stream.Finish());
    SavedUpload upload = saver.Take(stream.error());
    ASSERT_TRUE(upload.ok()) << upload.error.message;
    ASSERT_EQ(upload.files.size(), 2u);
    EXPECT_EQ(upload.Value("title"), "hello");
    EXPECT_EQ(upload.File("doc")->filename, "a.txt");
    EXPECT_EQ(upload.File("doc")->size, 8u);
    EXPECT_EQ(upload.files[1].path.rfind(options.directory + "/upload-", 0), 0u);
    EXPECT_EQ(ListDir(options.directory).size(), 2u);
    upload.RemoveFiles();
    EXPECT_TRUE(ListDir(options.directory).empty());
  }
  {
    // The body fails after a file was written: no file stays.
    MultipartSaver saver(options);
    MultipartStream stream(kType, &saver);
    ASSERT_TRUE(stream.Feed(kBody.substr(0, 250)));
    EXPECT_EQ(ListDir(options.directory).size(), 2u);
    EXPECT_FALSE(stream.Finish());
    const SavedUpload upload = saver.Take(stream.error());
    EXPECT_EQ(upload.error.status, 400);
    EXPECT_TRUE(upload.files.empty());
    EXPECT_TRUE(ListDir(options.directory).empty());
  }
  {
    // Values past max_value_bytes: 413, and the file written before goes.
    options.max_value_bytes = 8;
    MultipartSaver saver(options);
    MultipartStream stream(kType, &saver);
    EXPECT_FALSE(stream.Feed(kBody));
    EXPECT_EQ(stream.error().status, 413);
    EXPECT_EQ(stream.error().message, "multipart: form values over 8 bytes (field \"title\")");
    EXPECT_TRUE(ListDir(options.directory).empty());
  }
  {
    // A saver dropped before Take (a connection gone) deletes its files.
    options.max_value_bytes = 1024;
    auto saver = std::make_unique<MultipartSaver>(options);
    MultipartStream stream(kType, saver.get());
    ASSERT_TRUE(stream.Feed(kBody));
    EXPECT_EQ(ListDir(options.directory).size(), 2u);
    saver.reset();
    EXPECT_TRUE(ListDir(options.directory).empty());
  }
  options.directory += "/absent";
  MultipartSaver saver(options);
  EXPECT_TRUE(saver.failed());
  EXPECT_EQ(saver.receiver_error().status, 500);
}

}  // namespace
}  // namespace uring_http::http
