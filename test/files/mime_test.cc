// Tests for ContentTypeFor(): every table entry in lower, upper and mixed
// case, behind directories, and the edge cases of finding the extension
// (double extensions, dots in directory names, dotfiles, a trailing dot,
// over-long and unknown extensions).
#include "src/files/mime.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::files {
namespace {

constexpr std::string_view kOctet = "application/octet-stream";

struct Known {
  std::string_view extension;
  std::string_view type;
};

// Written out independently of the table in mime.cc, so that a changed entry
// shows up here.
const std::vector<Known>& KnownTypes() {
  static const auto* known = new std::vector<Known>{
      {"html", "text/html; charset=utf-8"},
      {"htm", "text/html; charset=utf-8"},
      {"xhtml", "application/xhtml+xml"},
      {"css", "text/css; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"json", "application/json"},
      {"map", "application/json"},
      {"jsonld", "application/ld+json"},
      {"webmanifest", "application/manifest+json"},
      {"txt", "text/plain; charset=utf-8"},
      {"xml", "application/xml"},
      {"csv", "text/csv; charset=utf-8"},
      {"md", "text/markdown; charset=utf-8"},
      {"ics", "text/calendar; charset=utf-8"},
      {"rss", "application/rss+xml"},
      {"atom", "application/atom+xml"},
      {"yaml", "application/yaml"},
      {"yml", "application/yaml"},
      {"toml", "application/toml"},
      {"svg", "image/svg+xml"},
      {"png", "image/png"},
      {"apng", "image/apng"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"avif", "image/avif"},
      {"ico", "image/x-icon"},
      {"bmp", "image/bmp"},
      {"tif", "image/tiff"},
      {"tiff", "image/tiff"},
      {"woff", "font/woff"},
      {"woff2", "font/woff2"},
      {"ttf", "font/ttf"},
      {"otf", "font/otf"},
      {"eot", "application/vnd.ms-fontobject"},
      {"mp4", "video/mp4"},
      {"m4v", "video/mp4"},
      {"mov", "video/quicktime"},
      {"webm", "video/webm"},
      {"ogg", "audio/ogg"},
      {"oga", "audio/ogg"},
      {"opus", "audio/ogg"},
      {"ogv", "video/ogg"},
      {"mp3", "audio/mpeg"},
      {"aac", "audio/aac"},
      {"wav", "audio/wav"},
      {"flac", "audio/flac"},
      {"m4a", "audio/mp4"},
      {"pdf", "application/pdf"},
      {"epub", "application/epub+zip"},
      {"zip", "application/zip"},
      {"gz", "application/gzip"},
      {"tar", "application/x-tar"},
      {"bz2", "application/x-bzip2"},
      {"xz", "application/x-xz"},
      {"7z", "application/x-7z-compressed"},
      {"wasm", "application/wasm"},
  };
  return *known;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// Upper-cases every other letter: "HtMl".
std::string Mixed(std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i < out.size(); i += 2) {
    if (out[i] >= 'a' && out[i] <= 'z') out[i] = static_cast<char>(out[i] - 'a' + 'A');
  }
  return out;
}

TEST(MimeTest, EveryKnownExtension) {
  for (const Known& k : KnownTypes()) {
    SCOPED_TRACE(std::string(k.extension));
    const std::string ext(k.extension);
    EXPECT_EQ(ContentTypeFor("file." + ext), k.type);
    EXPECT_EQ(ContentTypeFor("/dir/sub/file." + ext), k.type);
    EXPECT_EQ(ContentTypeFor("a.b.c." + ext), k.type);
  }
}

TEST(MimeTest, EveryKnownExtensionIgnoresCase) {
  for (const Known& k : KnownTypes()) {
    SCOPED_TRACE(std::string(k.extension));
    EXPECT_EQ(ContentTypeFor("FILE." + Upper(k.extension)), k.type);
    EXPECT_EQ(ContentTypeFor("File." + Mixed(k.extension)), k.type);
  }
}

TEST(MimeTest, TextTypesDeclareUtf8) {
  for (const Known& k : KnownTypes()) {
    if (k.type.starts_with("text/")) {
      EXPECT_TRUE(k.type.ends_with("; charset=utf-8")) << k.extension;
    }
  }
}

TEST(MimeTest, ExtensionWithoutNameBeforeIt) {
  // Only a leading dot is a dotfile; "x.html" is HTML, "index.HTML" too.
  EXPECT_EQ(ContentTypeFor("index.HTML"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("x.html"), "text/html; charset=utf-8");
}

TEST(MimeTest, LastExtensionWins) {
  EXPECT_EQ(ContentTypeFor("a.tar.gz"), "application/gzip");
  EXPECT_EQ(ContentTypeFor("backup.tar.bz2"), "application/x-bzip2");
  EXPECT_EQ(ContentTypeFor("site.min.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("app.js.map"), "application/json");
  EXPECT_EQ(ContentTypeFor("page.html.unknownext"), kOctet);
  EXPECT_EQ(ContentTypeFor("page.gz.html"), "text/html; charset=utf-8");
}

TEST(MimeTest, OnlyTheFinalSegmentCounts) {
  EXPECT_EQ(ContentTypeFor("dir.d/file"), kOctet);
  EXPECT_EQ(ContentTypeFor("site.html/readme"), kOctet);
  EXPECT_EQ(ContentTypeFor("a.png/b.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("/x.js/"), kOctet);  // a directory path: empty name
  EXPECT_EQ(ContentTypeFor("x.js/.."), kOctet);
}

TEST(MimeTest, NoExtension) {
  EXPECT_EQ(ContentTypeFor(""), kOctet);
  EXPECT_EQ(ContentTypeFor("/"), kOctet);
  EXPECT_EQ(ContentTypeFor("README"), kOctet);
  EXPECT_EQ(ContentTypeFor("Makefile"), kOctet);
  EXPECT_EQ(ContentTypeFor("docs/LICENSE"), kOctet);
}

TEST(MimeTest, Dotfiles) {
  EXPECT_EQ(ContentTypeFor(".bashrc"), kOctet);
  EXPECT_EQ(ContentTypeFor("home/.bashrc"), kOctet);
  EXPECT_EQ(ContentTypeFor(".html"), kOctet);  // a name, not an extension
  EXPECT_EQ(ContentTypeFor("dir/.css"), kOctet);
  EXPECT_EQ(ContentTypeFor(".config.json"), "application/json");
  EXPECT_EQ(ContentTypeFor(".well-known/security.txt"), "text/plain; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("."), kOctet);
  EXPECT_EQ(ContentTypeFor(".."), kOctet);
}

TEST(MimeTest, TrailingDot) {
  EXPECT_EQ(ContentTypeFor("file."), kOctet);
  EXPECT_EQ(ContentTypeFor("file.html."), kOctet);
  EXPECT_EQ(ContentTypeFor("dir/file.."), kOctet);
}

TEST(MimeTest, UnknownExtensions) {
  EXPECT_EQ(ContentTypeFor("a.exe"), kOctet);
  EXPECT_EQ(ContentTypeFor("a.h"), kOctet);
  EXPECT_EQ(ContentTypeFor("a.j"), kOctet);            // a prefix of "js"
  EXPECT_EQ(ContentTypeFor("a.jsx"), kOctet);          // "js" is a prefix of it
  EXPECT_EQ(ContentTypeFor("a.htmlx"), kOctet);
  EXPECT_EQ(ContentTypeFor("a.0"), kOctet);            // before "7z"
  EXPECT_EQ(ContentTypeFor("a.zzz"), kOctet);          // after "zip"
  EXPECT_EQ(ContentTypeFor("a.webmanifests"), kOctet);  // longer than any entry
  EXPECT_EQ(ContentTypeFor("a." + std::string(1000, 'x')), kOctet);
  EXPECT_EQ(ContentTypeFor("a.ht ml"), kOctet);
  EXPECT_EQ(ContentTypeFor("a.caf\xc3\xa9"), kOctet);
  EXPECT_EQ(ContentTypeFor(std::string_view("a.js\0", 5)), kOctet);
}

TEST(MimeTest, ReturnsStaticStorage) {
  std::string path = "index.html";
  const std::string_view type = ContentTypeFor(path);
  path.assign("something else entirely, long enough to reallocate the buffer");
  EXPECT_EQ(type, "text/html; charset=utf-8");
}

}  // namespace
}  // namespace uring_http::files
