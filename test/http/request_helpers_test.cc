// Tests for Request's helper methods (src/http/parser.h) on parsed requests:
// QueryParam/QueryParams over Request::query, FormParam/FormParams over a
// form body (and only when Content-Type says so), Cookie across several
// Cookie lines, HeaderValues and HeaderElements across repeated lines; and
// that none of them allocates when no value needs decoding (operator new is
// counted). The rules themselves are tested in form_test, cookies_test and
// header_values_test.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/http/parser.h"
#include "test/testing/alloc_counter.h"

using uring_http::testing::g_allocations;
using uring_http::testing::g_counting;

namespace uring_http::http {
namespace {

// A parsed request head over a private copy of `head`, with `body` as its
// buffered body (as the server sets it).
class Parsed {
 public:
  explicit Parsed(std::string_view head, std::string_view body = {})
      : bytes_(std::string(head) + std::string(body)), headers_(32) {
    const ParseResult result =
        ParseRequestHead(bytes_, ParseLimits{}, &request, headers_.data(), headers_.size());
    EXPECT_EQ(result.status, ParseStatus::kComplete) << head;
    request.body = std::string_view(bytes_).substr(head.size());
  }
  Parsed(const Parsed&) = delete;
  Parsed& operator=(const Parsed&) = delete;

  Request request;

 private:
  std::string bytes_;
  std::vector<Header> headers_;
};

std::vector<std::string> Strings(const std::vector<ParamValue>& values) {
  std::vector<std::string> out;
  for (const ParamValue& v : values) {
    out.push_back(v.present() ? std::string(v.value()) : v.malformed() ? "<malformed>" : "<absent>");
  }
  return out;
}

template <typename Range>
std::vector<std::string> Strings(const Range& range) {
  std::vector<std::string> out;
  for (std::string_view v : range) out.emplace_back(v);
  return out;
}

TEST(RequestQueryTest, ParamsOfTheQueryString) {
  Parsed p(
      "GET /calc?value=0.5&format=json&q=a+b%2Bc&tag=x&tag=&tag=y&bad=%zz&flag HTTP/1.1\r\n"
      "Host: h\r\n\r\n");
  const Request& r = p.request;
  EXPECT_EQ(r.QueryParam("value"), "0.5");
  EXPECT_EQ(r.QueryParam("format"), "json");
  EXPECT_EQ(r.QueryParam("q"), "a b+c");
  EXPECT_EQ(r.QueryParam("tag"), "x");
  EXPECT_EQ(Strings(r.QueryParams().GetAll("tag")), (std::vector<std::string>{"x", "", "y"}));
  EXPECT_TRUE(r.QueryParam("bad").malformed());
  EXPECT_TRUE(r.QueryParam("flag").present());
  EXPECT_TRUE(r.QueryParam("missing").absent());
  EXPECT_EQ(r.QueryParams().text(), r.query);
  size_t pairs = 0;
  for (const RawParam& param : r.QueryParams()) {
    (void)param;
    ++pairs;
  }
  EXPECT_EQ(pairs, 8u);
}

TEST(RequestQueryTest, NoQueryOrAnEmptyOne) {
  Parsed none("GET /calc HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(none.request.QueryParam("value").absent());
  EXPECT_EQ(none.request.QueryParams().begin(), none.request.QueryParams().end());
  Parsed empty("GET /calc? HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(empty.request.QueryParam("value").absent());
}

TEST(RequestQueryTest, AbsoluteFormTarget) {
  Parsed p("GET http://example.com/calc?value=%2D0.25 HTTP/1.1\r\nHost: example.com\r\n\r\n");
  EXPECT_EQ(p.request.QueryParam("value"), "-0.25");
}

TEST(RequestFormTest, ParamsOfAFormBody) {
  Parsed p(
      "POST /signup?source=ad HTTP/1.1\r\nHost: h\r\n"
      "Content-Type: application/x-www-form-urlencoded; charset=UTF-8\r\n"
      "Content-Length: 47\r\n\r\n",
      "name=J%C3%BCrgen+M&tags=a&tags=b&note=1%2B1%3D2");
  const Request& r = p.request;
  EXPECT_EQ(r.FormParam("name"), "J\xC3\xBCrgen M");
  EXPECT_EQ(Strings(r.FormParams().GetAll("tags")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.FormParam("note"), "1+1=2");
  EXPECT_TRUE(r.FormParam("source").absent()) << "the query is not the form";
  EXPECT_EQ(r.QueryParam("source"), "ad");
  EXPECT_TRUE(r.QueryParam("name").absent()) << "the form is not the query";
}

TEST(RequestFormTest, OnlyWhenContentTypeSaysSo) {
  const std::string_view body = "a=1";
  struct Case {
    std::string_view content_type_line;
    bool form;
  };
  const Case cases[] = {
      {"Content-Type: application/x-www-form-urlencoded\r\n", true},
      {"content-type: APPLICATION/X-WWW-FORM-URLENCODED\r\n", true},
      {"Content-Type: application/x-www-form-urlencoded;charset=utf-8\r\n", true},
      {"", false},
      {"Content-Type: text/plain\r\n", false},
      {"Content-Type: multipart/form-data; boundary=x\r\n", false},
      {"Content-Type: application/json\r\n", false},
  };
  for (const Case& c : cases) {
    const std::string head = "POST /f HTTP/1.1\r\nHost: h\r\n" + std::string(c.content_type_line) +
                             "Content-Length: 3\r\n\r\n";
    Parsed p(head, body);
    EXPECT_EQ(p.request.FormParam("a").present(), c.form) << c.content_type_line;
    EXPECT_EQ(p.request.FormParams().begin() == p.request.FormParams().end(), !c.form);
  }
}

TEST(RequestFormTest, AStreamedBodyHasNoParams) {
  // A route that streams its body leaves Request::body empty.
  Parsed p(
      "POST /f HTTP/1.1\r\nHost: h\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\n");
  EXPECT_TRUE(p.request.FormParam("a").absent());
}

TEST(RequestCookieTest, AcrossEveryCookieLine) {
  Parsed p(
      "GET / HTTP/1.1\r\nHost: h\r\n"
      "Cookie: a=1; sid=\"xyz\"; empty=\r\n"
      "X-Other: sid=nope\r\n"
      "cookie: theme=dark; bad; sid=2; a b=3\r\n\r\n");
  const Request& r = p.request;
  EXPECT_EQ(r.Cookie("sid"), "xyz") << "the first line's, DQUOTEs removed";
  EXPECT_EQ(r.Cookie("a"), "1");
  EXPECT_EQ(r.Cookie("theme"), "dark") << "from the second Cookie line";
  EXPECT_EQ(r.Cookie("empty"), "") << "present and empty";
  EXPECT_FALSE(r.Cookie("bad").has_value()) << "malformed";
  EXPECT_FALSE(r.Cookie("a b").has_value());
  EXPECT_FALSE(r.Cookie("missing").has_value());
  EXPECT_FALSE(r.Cookie("SID").has_value()) << "names are case-sensitive";

  Parsed none("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_FALSE(none.request.Cookie("sid").has_value());
}

TEST(RequestHeaderValuesTest, RepeatedLinesAndListElements) {
  Parsed p(
      "GET / HTTP/1.1\r\nHost: h\r\n"
      "Accept-Encoding: gzip, deflate\r\n"
      "Accept: text/html\r\n"
      "accept-encoding: br;q=0.9 , , zstd\r\n"
      "Cache-Control: no-cache=\"Set-Cookie, X\", max-age=0\r\n\r\n");
  const Request& r = p.request;
  EXPECT_EQ(Strings(r.HeaderValues("ACCEPT-ENCODING")),
            (std::vector<std::string>{"gzip, deflate", "br;q=0.9 , , zstd"}));
  EXPECT_EQ(Strings(r.HeaderElements("accept-encoding")),
            (std::vector<std::string>{"gzip", "deflate", "br;q=0.9", "zstd"}));
  EXPECT_EQ(Strings(r.HeaderElements("cache-control")),
            (std::vector<std::string>{"no-cache=\"Set-Cookie, X\"", "max-age=0"}));
  EXPECT_EQ(Strings(r.HeaderValues("accept")), (std::vector<std::string>{"text/html"}));
  EXPECT_TRUE(r.HeaderValues("te").empty());
  EXPECT_TRUE(r.HeaderElements("te").empty());
}

TEST(RequestHelpersTest, NothingIsAllocatedWhenNoValueNeedsDecoding) {
  Parsed p(
      "POST /x?value=0.5&format=json&tag=a&tag=b HTTP/1.1\r\nHost: h\r\n"
      "Cookie: a=1; sid=\"xyz\"\r\nCookie: theme=dark\r\n"
      "Accept-Encoding: gzip, br\r\nAccept-Encoding: zstd\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\n",
      "user=jo&x=1");
  const Request& r = p.request;
  size_t seen = 0;
  g_allocations = 0;
  g_counting = true;
  seen += r.QueryParam("value").value().size();
  seen += r.QueryParam("missing").absent() ? 1 : 0;
  for (const RawParam& param : r.QueryParams()) seen += param.name.size() + param.value.size();
  seen += r.FormParam("user").value().size();
  seen += r.Cookie("sid")->size() + r.Cookie("theme")->size();
  for (std::string_view v : r.HeaderValues("accept-encoding")) seen += v.size();
  for (std::string_view e : r.HeaderElements("accept-encoding")) seen += e.size();
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_GT(seen, 0u);

  // The counter counts: a long value that must be decoded is copied.
  Parsed decoded("GET /x?v=a+value+long+enough+to+leave+the+small+string+buffer HTTP/1.1\r\n"
                 "Host: h\r\n\r\n");
  g_allocations = 0;
  g_counting = true;
  const ParamValue v = decoded.request.QueryParam("v");
  g_counting = false;
  EXPECT_EQ(v, "a value long enough to leave the small string buffer");
  EXPECT_GT(g_allocations.load(), 0u);
}

}  // namespace
}  // namespace uring_http::http
