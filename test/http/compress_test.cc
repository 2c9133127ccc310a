#include "src/http/compress.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/http1/response_writer.h"
#include "test/http/gzip_testing.h"

namespace uring_http::http {
namespace {

// The header fields as HTTP/1 lines, for comparing with text.
std::string HeaderLines(const Response& r) {
  std::string lines;
  for (const auto [name, value] : r.headers()) {
    lines.append(name).append(": ").append(value).append("\r\n");
  }
  return lines;
}

bool Prefers(std::vector<std::string_view> lines) {
  AcceptEncoding ae;
  for (std::string_view line : lines) ae.AddFieldValue(line);
  return ae.PrefersGzip();
}

struct Case {
  std::vector<std::string_view> lines;  // Accept-Encoding lines; none: no header
  bool gzip;
};

TEST(AcceptEncodingTest, Table) {
  const Case cases[] = {
      {{}, false},                                   // no header: identity
      {{""}, false},                                 // empty: identity only
      {{"gzip"}, true},
      {{"GZIP"}, true},                              // case-insensitive
      {{"x-gzip"}, true},                            // the alias
      {{"gzip, deflate, br"}, true},
      {{"br, deflate"}, false},                      // gzip not offered
      {{"gzip;q=0"}, false},                         // refused
      {{"gzip; Q=0.000"}, false},
      {{"gzip;q=0.001"}, true},                      // identity unnamed: not preferred
      {{"gzip;q=0.5, identity;q=0.6"}, false},
      {{"gzip ; q=0.5"}, true},                      // whitespace around ;
      {{"*"}, true},                                 // * covers gzip
      {{"*;q=0"}, false},                            // nothing acceptable: identity anyway
      {{"*, gzip;q=0"}, false},                      // gzip listed: * does not cover it
      {{"gzip;q=0, *"}, false},
      {{"gzip;q=0.5, identity"}, false},             // identity preferred
      {{"gzip;q=0.5, identity;q=0.5"}, true},        // tie: gzip
      {{"gzip;q=0.4, *;q=0.5"}, false},              // * counts for identity
      {{"gzip, identity;q=0"}, true},
      {{"identity;q=0"}, false},                     // nothing acceptable: identity anyway
      {{"gzip;q=0, identity;q=0"}, false},
      {{"gzip;q=1.0"}, true},
      {{"gzip;q=1.001"}, false},                     // malformed weight: element ignored
      {{"gzip;q=2"}, false},
      {{"gzip;q=0.5000"}, false},                    // four decimals
      {{"gzip;q="}, false},
      {{"gzip;q=.5"}, false},
      {{"gzip;q=-1"}, false},
      {{"gzip;level"}, false},                       // parameter without a value
      {{"gzip;"}, true},                             // empty parameters (RFC 9110 5.6.6)
      {{"gzip; ;q=0"}, false},
      {{"gzip;foo=bar"}, true},                      // other parameters ignored
      {{"gz ip"}, false},                            // not a token
      {{"\"gzip\""}, false},
      {{",,gzip,,"}, true},                          // empty elements skipped
      {{"gzip;q=0", "gzip"}, false},                 // first mention counts
      {{"gzip;q=x", "gzip"}, true},                  // ignored first, then valid
      {{"deflate", "gzip"}, true},                   // several lines form one list
      {{"identity", "gzip;q=0.5"}, false},
      {{"br", ""}, false},
  };
  for (const Case& c : cases) {
    std::string name;
    for (std::string_view l : c.lines) name += "[" + std::string(l) + "]";
    EXPECT_EQ(Prefers(c.lines), c.gzip) << name;
  }
}

TEST(AcceptEncodingTest, Weights) {
  AcceptEncoding ae;
  ae.AddFieldValue("gzip;q=0.25, identity;q=0.5, *;q=0.125, gzip;q=1");
  EXPECT_EQ(ae.gzip_weight(), 250);
  EXPECT_EQ(ae.identity_weight(), 500);
  EXPECT_EQ(ae.star_weight(), 125);
}

TEST(AcceptEncodingTest, BrotliAndZstdWeightsForSiblings) {
  AcceptEncoding ae;
  ae.AddFieldValue("br;q=0.5, zstd");
  ae.AddFieldValue("*;q=0.25");
  EXPECT_EQ(ae.br_weight(), 500);
  EXPECT_EQ(ae.zstd_weight(), 1000);
  EXPECT_EQ(ae.CodingWeight("br"), 500);
  EXPECT_EQ(ae.CodingWeight("gzip"), 250);  // through "*"
  EXPECT_EQ(ae.IdentityWeight(), 250);
  AcceptEncoding none;
  EXPECT_EQ(none.CodingWeight("gzip"), 0);
  EXPECT_EQ(none.IdentityWeight(), -1);
}

TEST(QValueTest, Grammar) {
  EXPECT_EQ(ParseQValue("0"), 0);
  EXPECT_EQ(ParseQValue("1"), 1000);
  EXPECT_EQ(ParseQValue("0."), 0);
  EXPECT_EQ(ParseQValue("1."), 1000);
  EXPECT_EQ(ParseQValue("0.5"), 500);
  EXPECT_EQ(ParseQValue("0.05"), 50);
  EXPECT_EQ(ParseQValue("0.123"), 123);
  EXPECT_EQ(ParseQValue("1.000"), 1000);
  for (std::string_view bad : {"", "2", "1.5", "0.1234", "0,5", "00", "+1", " 1", "1e0"}) {
    EXPECT_EQ(ParseQValue(bad), std::nullopt) << bad;
  }
}

TEST(CompressibleTypeTest, Table) {
  for (std::string_view yes :
       {"text/html", "text/plain; charset=utf-8", "TEXT/CSS", "text/event-stream",
        "application/json", "Application/JSON;charset=utf-8", "application/problem+json",
        "application/x-ndjson", "application/javascript", "application/xml",
        "application/atom+xml", "image/svg+xml", "application/wasm", "font/ttf"}) {
    EXPECT_TRUE(IsCompressibleType(yes)) << yes;
  }
  for (std::string_view no :
       {"", "text/", "image/png", "image/jpeg", "application/octet-stream", "application/zip",
        "application/gzip", "video/mp4", "font/woff2", "application/jsonx", "json",
        "image/svg"}) {
    EXPECT_FALSE(IsCompressibleType(no)) << no;
  }
}

// A table of fields, from name/value pairs.
HeaderTable Fields(std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  HeaderTable table;
  for (const auto& [name, value] : fields) table.Add(name, value);
  return table;
}

CompressionOptions On() {
  CompressionOptions o;
  o.enabled = true;
  o.min_bytes = 1024;
  return o;
}

TEST(DecideGzipTest, Rules) {
  const HeaderTable html = Fields({{"Content-Type", "text/html"}});
  EXPECT_EQ(DecideGzip(On(), true, 200, html, 2000), GzipDecision::kGzip);
  EXPECT_EQ(DecideGzip(On(), true, 200, html, std::nullopt), GzipDecision::kGzip);  // streamed
  EXPECT_EQ(DecideGzip(On(), true, 404, html, 2000), GzipDecision::kGzip);
  EXPECT_EQ(DecideGzip(On(), true, 200, html, 1024), GzipDecision::kGzip);
  EXPECT_EQ(DecideGzip(On(), true, 200, html, 1023), GzipDecision::kIdentity);  // small
  EXPECT_EQ(DecideGzip(On(), false, 200, html, 2000), GzipDecision::kIdentity);
  EXPECT_EQ(DecideGzip(On(), true, 206, html, 2000), GzipDecision::kIdentity);
  EXPECT_EQ(DecideGzip(On(), true, 204, html, 0), GzipDecision::kIdentity);
  EXPECT_EQ(DecideGzip(On(), true, 304, html, 0), GzipDecision::kIdentity);
  EXPECT_EQ(DecideGzip(On(), true, 200, Fields({{"Content-Type", "image/png"}}), 2000),
            GzipDecision::kLeave);
  EXPECT_EQ(DecideGzip(On(), true, 200, Fields({}), 2000), GzipDecision::kLeave);  // no type
  EXPECT_EQ(DecideGzip(On(), true, 200,
                       Fields({{"Content-Type", "text/html"}, {"Content-Encoding", "br"}}), 2000),
            GzipDecision::kLeave);
  // The type's value as a handler may write it, spaces around it.
  EXPECT_EQ(DecideGzip(On(), true, 200, Fields({{"content-TYPE", " text/html "}}), 2000),
            GzipDecision::kGzip);
  CompressionOptions off = On();
  off.enabled = false;
  EXPECT_EQ(DecideGzip(off, true, 200, html, 2000), GzipDecision::kLeave);
}

std::string Html(size_t size) {
  std::string s;
  while (s.size() < size) s += "<tr><td>" + std::to_string(s.size()) + "</td><td>cell</td></tr>\n";
  return s;
}

TEST(CompressBufferedResponseTest, CompressesAndLabels) {
  Response r;
  r.set_content_type("text/html");
  const std::string body = Html(5000);
  r.set_body(body);
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, r), GzipDecision::kGzip);
  EXPECT_EQ(r.FindHeader("content-encoding"), "gzip");
  EXPECT_EQ(r.FindHeader("vary"), "Accept-Encoding");
  EXPECT_LT(r.body_view().size(), body.size());
  EXPECT_EQ(testing::Gunzip(r.body_view()), body);
  EXPECT_FALSE(r.length_unstated());
}

TEST(CompressBufferedResponseTest, StrongETagWeakenedWeakKept) {
  Response a;
  a.set_content_type("text/html");
  EXPECT_TRUE(a.AddHeader("X-Before", "1"));
  EXPECT_TRUE(a.AddHeader("etag", "\"v1\""));
  EXPECT_TRUE(a.AddHeader("X-After", "2"));
  a.set_body(Html(3000));
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, a), GzipDecision::kGzip);
  EXPECT_EQ(a.FindHeader("etag"), "W/\"v1\"");
  EXPECT_EQ(a.FindHeader("x-before"), "1");
  EXPECT_EQ(a.FindHeader("x-after"), "2");
  EXPECT_EQ(HeaderLines(a).find("etag:"), std::string_view::npos);  // the old line went

  Response b;
  b.set_content_type("text/html");
  EXPECT_TRUE(b.AddHeader("ETag", "W/\"v2\""));
  b.set_body(Html(3000));
  CompressBufferedResponse(On(), true, false, b);
  EXPECT_EQ(b.FindHeader("etag"), "W/\"v2\"");

  // Not compressed: the strong ETag stays.
  Response c;
  c.set_content_type("text/html");
  EXPECT_TRUE(c.AddHeader("ETag", "\"v3\""));
  c.set_body(Html(3000));
  CompressBufferedResponse(On(), false, false, c);
  EXPECT_EQ(c.FindHeader("etag"), "\"v3\"");
}

TEST(CompressBufferedResponseTest, StaticBodyToo) {
  static const std::string body = Html(3000);
  Response r;
  r.set_content_type("application/json");
  r.set_static_body(body);
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, r), GzipDecision::kGzip);
  EXPECT_EQ(testing::Gunzip(r.body_view()), body);
}

TEST(CompressBufferedResponseTest, VaryWithoutCompression) {
  Response r;
  r.set_content_type("text/plain");
  r.set_body("short");
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, r), GzipDecision::kIdentity);
  EXPECT_EQ(r.body_view(), "short");
  EXPECT_EQ(r.FindHeader("content-encoding"), std::nullopt);
  EXPECT_EQ(r.FindHeader("vary"), "Accept-Encoding");
}

TEST(CompressBufferedResponseTest, ExistingVaryKeptOrExtended) {
  Response a;
  a.set_content_type("text/plain");
  EXPECT_TRUE(a.AddHeader("Vary", "origin, ACCEPT-ENCODING"));
  a.set_body(Html(2000));
  CompressBufferedResponse(On(), true, false, a);
  EXPECT_EQ(HeaderLines(a).find("Vary: Accept-Encoding"), std::string_view::npos);

  Response b;
  b.set_content_type("text/plain");
  EXPECT_TRUE(b.AddHeader("Vary", "Origin"));
  b.set_body(Html(2000));
  CompressBufferedResponse(On(), true, false, b);
  EXPECT_NE(HeaderLines(b).find("Vary: Origin\r\n"), std::string_view::npos);
  EXPECT_NE(HeaderLines(b).find("Vary: Accept-Encoding\r\n"), std::string_view::npos);
}

TEST(CompressBufferedResponseTest, HeadDeclaresWithoutLengthAndKeepsBody) {
  Response r;
  r.set_content_type("text/html");
  const std::string body = Html(5000);
  r.set_body(body);
  EXPECT_EQ(CompressBufferedResponse(On(), true, true, r), GzipDecision::kGzip);
  EXPECT_EQ(r.body_view(), body);  // not compressed: nothing is sent
  EXPECT_TRUE(r.length_unstated());
  http1::SerializeOptions options;
  options.head_only = true;
  std::string out(4096, '\0');
  out.resize(http1::SerializeResponse(r, options, out.data(), out.size()));
  EXPECT_NE(out.find("Content-Encoding: gzip\r\n"), std::string::npos);
  EXPECT_EQ(out.find("Content-Length"), std::string::npos);
  EXPECT_TRUE(out.ends_with("\r\n\r\n"));
}

TEST(CompressBufferedResponseTest, IncompressibleBodySentAsIs) {
  std::string noise(4000, '\0');
  uint32_t x = 1;
  for (char& c : noise) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  Response r;
  r.set_content_type("text/plain");  // mislabelled
  r.set_body(noise);
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, r), GzipDecision::kIdentity);
  EXPECT_EQ(r.body_view(), noise);
  EXPECT_EQ(r.FindHeader("content-encoding"), std::nullopt);
}

TEST(CompressBufferedResponseTest, HeadersAtTheLimitLeaveResponseAlone) {
  Response r;
  r.set_max_header_bytes(2048);
  r.set_content_type("text/plain");
  while (r.header_room() >= 52) {
    ASSERT_TRUE(r.AddHeader("X-Filler", "0123456789012345678901234567890123456789"));
  }
  ASSERT_FALSE(r.header_refused());
  const std::string body = Html(4000);
  r.set_body(body);
  EXPECT_EQ(CompressBufferedResponse(On(), true, false, r), GzipDecision::kLeave);
  EXPECT_EQ(r.body_view(), body);
}

TEST(CompressBufferedResponseTest, OffTouchesNothing) {
  Response r;
  r.set_content_type("text/html");
  r.set_body(Html(5000));
  const std::string before(HeaderLines(r));
  EXPECT_EQ(CompressBufferedResponse(CompressionOptions(), true, false, r), GzipDecision::kLeave);
  EXPECT_EQ(HeaderLines(r), before);
}

}  // namespace
}  // namespace uring_http::http
