// Redirects, Cache-Control, Content-Disposition and Set-Cookie: what each
// writes, and that unsafe input changes nothing.
#include "src/http/response_helpers.h"

#include <string>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

std::string Lines(const Response& r) {
  std::string lines;
  for (const auto [name, value] : r.headers()) {
    lines.append(name).append(": ").append(value).append("\r\n");
  }
  return lines;
}

TEST(RedirectTest, StatusLocationAndBody) {
  for (int status : {301, 302, 303, 307, 308}) {
    Response r;
    ASSERT_TRUE(Redirect(r, "/login?next=%2F", status));
    EXPECT_EQ(r.status(), status);
    EXPECT_NE(Lines(r).find("Location: /login?next=%2F\r\n"), std::string::npos);
    EXPECT_NE(r.body_view().find("/login?next=%2F"), std::string::npos);
  }
  Response absolute;
  ASSERT_TRUE(Redirect(absolute, "https://example.com/a b\"<\xc3\xa9>", 308));
  EXPECT_NE(Lines(absolute).find("Location: https://example.com/a%20b%22%3C%C3%A9%3E\r\n"),
            std::string::npos)
      << Lines(absolute);
  // A second redirect replaces the first Location.
  ASSERT_TRUE(Redirect(absolute, "/other", 302));
  EXPECT_EQ(Lines(absolute).find("example.com"), std::string::npos);
}

TEST(RedirectTest, InjectionAndBadStatusRefused) {
  for (std::string_view bad : {std::string_view("/a\r\nSet-Cookie: x=1"), std::string_view("/a\n"),
                               std::string_view("/a\rb"), std::string_view("/a\0b", 4),
                               std::string_view("/\x7f"), std::string_view("")}) {
    Response r;
    EXPECT_FALSE(Redirect(r, bad, 302)) << bad;
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(Lines(r), "");
  }
  Response r;
  EXPECT_FALSE(Redirect(r, "/ok", 200));
  EXPECT_FALSE(Redirect(r, "/ok", 304));
  EXPECT_EQ(Lines(r), "");
}

TEST(RedirectTest, TrailingSlashTwin) {
  EXPECT_EQ(ToggleTrailingSlash("/docs", ""), "/docs/");
  EXPECT_EQ(ToggleTrailingSlash("/docs/", "a=1"), "/docs?a=1");
  EXPECT_EQ(ToggleTrailingSlash("//evil.example/", ""), "/evil.example");
  EXPECT_EQ(ToggleTrailingSlash("///evil.example", ""), "/evil.example/");
}

TEST(CacheControlTest, DirectivesInOrder) {
  CacheControl c;
  EXPECT_EQ(c.ToString(), "");
  c.is_public = true;
  c.max_age = 31536000;
  c.immutable = true;
  EXPECT_EQ(c.ToString(), "public, max-age=31536000, immutable");
  CacheControl n;
  n.no_store = true;
  n.no_cache = true;
  n.max_age = -5;
  EXPECT_EQ(n.ToString(), "no-cache, no-store, max-age=0");
  Response r;
  ASSERT_TRUE(SetCacheControl(r, c));
  ASSERT_TRUE(SetCacheControl(r, n));
  EXPECT_EQ(Lines(r), "Cache-Control: no-cache, no-store, max-age=0\r\n");
}

TEST(ContentDispositionTest, AsciiQuotedAndUtf8Extended) {
  EXPECT_EQ(ContentDispositionValue("report.pdf"), "attachment; filename=\"report.pdf\"");
  EXPECT_EQ(ContentDispositionValue("a \"b\" \\c.txt"),
            "attachment; filename=\"a \\\"b\\\" _c.txt\"");
  EXPECT_EQ(ContentDispositionValue("r\xc3\xa9sum\xc3\xa9 1.pdf"),
            "attachment; filename=\"r_sum_ 1.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.pdf");
  EXPECT_EQ(ContentDispositionValue("../../etc/passwd"), "attachment; filename=\".._.._etc_passwd\"");
  EXPECT_EQ(ContentDispositionValue("a\r\nb.txt", Disposition::kInline),
            "inline; filename=\"ab.txt\"");
  EXPECT_EQ(ContentDispositionValue(""), "attachment");
  Response r;
  ASSERT_TRUE(SetContentDisposition(r, "x.csv"));
  EXPECT_EQ(Lines(r), "Content-Disposition: attachment; filename=\"x.csv\"\r\n");
}

TEST(SetCookieTest, Attributes) {
  SetCookieOptions o;
  o.path = "/";
  o.domain = "example.com";
  o.max_age = 3600;
  o.expires = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
  o.secure = true;
  o.http_only = true;
  o.same_site = SameSite::kStrict;
  absl::StatusOr<std::string> v = SetCookieValue("sid", "abc123", o);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v,
            "sid=abc123; Path=/; Domain=example.com; Expires=Sun, 06 Nov 1994 08:49:37 GMT; "
            "Max-Age=3600; Secure; HttpOnly; SameSite=Strict");
  EXPECT_EQ(*SetCookieValue("a", "\"quoted\""), "a=\"quoted\"");
  EXPECT_EQ(*SetCookieValue("a", ""), "a=");
  SetCookieOptions lax;
  lax.same_site = SameSite::kLax;
  lax.max_age = -1;
  EXPECT_EQ(*SetCookieValue("a", "b", lax), "a=b; Max-Age=0; SameSite=Lax");
  SetCookieOptions none;
  none.same_site = SameSite::kNone;
  none.secure = true;
  EXPECT_EQ(*SetCookieValue("a", "b", none), "a=b; Secure; SameSite=None");
  Response r;
  ASSERT_TRUE(SetCookie(r, "a", "1").ok());
  ASSERT_TRUE(SetCookie(r, "b", "2").ok());
  EXPECT_EQ(Lines(r), "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n");
}

TEST(SetCookieTest, InvalidRefused) {
  SetCookieOptions none;
  none.same_site = SameSite::kNone;
  SetCookieOptions bad_path;
  bad_path.path = "/; Domain=evil";
  SetCookieOptions bad_domain;
  bad_domain.domain = "a.com\r\nX: y";
  const struct {
    std::string_view name, value;
    const SetCookieOptions* options;
  } cases[] = {
      {"", "v", nullptr},          {"a b", "v", nullptr},     {"a=b", "v", nullptr},
      {"a;", "v", nullptr},        {"a", "v;x=y", nullptr},   {"a", "v w", nullptr},
      {"a", "v\r\nX: y", nullptr}, {"a", "v,w", nullptr},     {"a", "\"v", nullptr},
      {"a", "\xc3\xa9", nullptr},  {"a", "b\\c", nullptr},    {"a", "b", &none},
      {"a", "b", &bad_path},       {"a", "b", &bad_domain},
  };
  for (const auto& c : cases) {
    Response r;
    const absl::Status s = SetCookie(r, c.name, c.value, c.options ? *c.options : SetCookieOptions());
    EXPECT_FALSE(s.ok()) << c.name << "=" << c.value;
    EXPECT_EQ(Lines(r), "");
  }
}

}  // namespace
}  // namespace uring_http::http
