// The JSON helpers on requests and responses made by hand: a good body,
// JSON content types, a wrong or missing one (415), malformed JSON with
// its position (400), nesting at and past the bound, conversion to a
// struct, and replies (status, Content-Type, the body, bad UTF-8).
#include "src/json/json.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::json {
namespace {

// A request with this Content-Type (none if empty) and body.
struct FakeRequest {
  FakeRequest(std::string_view type, std::string_view body) {
    if (!type.empty()) headers.push_back({"Content-Type", type});
    request.headers = headers.data();
    request.num_headers = headers.size();
    request.body = body;
  }
  std::vector<http::Header> headers;
  http::Request request;
};

TEST(JsonParseTest, GoodBodies) {
  for (const char* type : {"application/json", "Application/JSON; charset=utf-8",
                           "application/problem+json", " application/json "}) {
    FakeRequest req(type, R"({"a": [1, 2.5, "x"], "b": {"c": null}})");
    const Result<> in = Parse(req.request);
    ASSERT_TRUE(in.ok()) << type << ": " << in.error();
    EXPECT_EQ(in.status(), 200);
    EXPECT_EQ((*in)["a"][1].get<double>(), 2.5);
    EXPECT_TRUE(in->at("b").at("c").is_null());
  }
  FakeRequest scalar("application/json", " 42 ");
  EXPECT_EQ(*Parse(scalar.request), 42);
}

TEST(JsonParseTest, WrongContentTypeIs415) {
  FakeRequest form("application/x-www-form-urlencoded", R"({"a": 1})");
  Result<> in = Parse(form.request);
  EXPECT_EQ(in.status(), 415);
  EXPECT_EQ(in.error(),
            "Content-Type must be application/json (got application/x-www-form-urlencoded)");
  for (const char* type : {"text/plain", "application/jsonx", "json", "+json", "application/+json"}) {
    FakeRequest req(type, "{}");
    EXPECT_EQ(Parse(req.request).status(), 415) << type;
  }
}

// A browser's cross-site POST without a Content-Type needs no preflight:
// refused unless the route asks for it.
TEST(JsonParseTest, MissingContentTypeIs415UnlessAllowed) {
  FakeRequest none("", R"({"a": 1})");
  Result<> in = Parse(none.request);
  EXPECT_EQ(in.status(), 415);
  EXPECT_EQ(in.error(), "Content-Type must be application/json (none was sent)");
  ParseOptions lenient;
  lenient.allow_missing_content_type = true;
  in = Parse(none.request, lenient);
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_EQ((*in)["a"], 1);
  FakeRequest wrong("text/plain", "{}");
  EXPECT_EQ(Parse(wrong.request, lenient).status(), 415);
}

TEST(JsonParseTest, MalformedIs400WithWhere) {
  FakeRequest req("application/json", "{\"a\": 1,\n \"b\": }");
  const Result<> in = Parse(req.request);
  EXPECT_EQ(in.status(), 400);
  EXPECT_EQ(in.error(),
            "malformed JSON: parse error at line 2, column 7: syntax error while parsing value - "
            "unexpected '}'; expected '[', '{', or a literal (byte 16)");
  EXPECT_EQ(in.error_offset(), 16u);
  for (const char* bad : {"", "{", "[1, 2", "{} {}", "{\"a\": 1} x", "// c\n{}", "'x'", "[1,]",
                          "nul", "\"\\x\""}) {
    FakeRequest r("application/json", bad);
    const Result<> got = Parse(r.request);
    EXPECT_EQ(got.status(), 400) << bad;
    EXPECT_EQ(got.error().rfind("malformed JSON: ", 0), 0u) << got.error();
  }
}

// The value built from the parser's events is the one Json::parse builds.
TEST(JsonParseTest, SameValueAsNlohmannsParse) {
  for (const char* text :
       {"null", "true", "false", "0", "-7", "18446744073709551615", "-9223372036854775808", "1.5e3",
        "\"\\u00e9\\n\"", "[]", "{}", "[[], {}, [[1]], {\"a\": []}]",
        R"({"a": {"b": [1, {"c": [true, null]}, "x"], "d": {}}, "e": [[[2]]], "f": 1.25})",
        R"([{"a": 1}, {"a": 2}, [3, [4, {"b": [5]}]], 6])"}) {
    const Result<> mine = ParseText(text);
    ASSERT_TRUE(mine.ok()) << text << ": " << mine.error();
    EXPECT_EQ(*mine, Json::parse(text)) << text;
    EXPECT_EQ(mine->dump(), Json::parse(text).dump()) << text;
  }
  // A name twice: the last value stands, as in Json::parse and Go.
  EXPECT_EQ(ParseText(R"({"a": 1, "b": 2, "a": [3]})")->dump(), R"({"a":[3],"b":2})");
  // A number past a double is refused, not turned into infinity.
  const Result<> huge = ParseText("[1e999]");
  EXPECT_EQ(huge.status(), 400);
  EXPECT_NE(huge.error().find("number overflow"), std::string::npos) << huge.error();
}

TEST(JsonParseTest, NestingIsBounded) {
  const std::string deep_ok = std::string(512, '[') + std::string(512, ']');
  EXPECT_TRUE(ParseText(deep_ok).ok());
  const std::string too_deep = std::string(513, '[') + std::string(513, ']');
  EXPECT_EQ(ParseText(too_deep).error(), "malformed JSON: nested deeper than 512 levels");
  // A megabyte of '[' neither overflows the stack nor takes long.
  EXPECT_EQ(ParseText(std::string(1 << 20, '[')).status(), 400);
  const std::string objects = R"({"a":{"a":{"a":1}}})";
  ParseOptions two;
  two.max_depth = 2;
  EXPECT_EQ(ParseText(objects, two).status(), 400);
  two.max_depth = 3;
  EXPECT_TRUE(ParseText(objects, two).ok());
}

struct Point {
  int x = 0;
  int y = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Point, x, y)

TEST(JsonParseTest, ParseAsAStruct) {
  FakeRequest good("application/json", R"({"x": 3, "y": -4})");
  const Result<Point> p = ParseAs<Point>(good.request);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->x, 3);
  EXPECT_EQ(p->y, -4);
  FakeRequest wrong("application/json", R"({"x": "3", "y": 1})");
  const Result<Point> bad = ParseAs<Point>(wrong.request);
  EXPECT_EQ(bad.status(), 400);
  EXPECT_EQ(bad.error(),
            "request body: [json.exception.type_error.302] type must be number, but is string");
  FakeRequest missing("application/json", R"({"x": 1})");
  EXPECT_EQ(ParseAs<Point>(missing.request).status(), 400);
  FakeRequest text("text/plain", R"({"x": 1, "y": 2})");
  EXPECT_EQ(ParseAs<Point>(text.request).status(), 415);
}

TEST(JsonReplyTest, StatusTypeAndBody) {
  http::Response resp;
  Reply(resp, {{"sum", 6}, {"names", {"a", "é"}}}, 201);
  EXPECT_EQ(resp.status(), 201);
  EXPECT_EQ(resp.FindHeader("content-type"), "application/json");
  EXPECT_EQ(resp.body_view(), "{\"names\":[\"a\",\"é\"],\"sum\":6}\n");

  http::Response bad_utf8;
  Reply(bad_utf8, Json(std::string("a\xff") + "b"));
  EXPECT_EQ(bad_utf8.body_view(), "\"a\xef\xbf\xbd" "b\"\n");

  http::Response error;
  FakeRequest req("text/plain", "{}");
  Parse(req.request).ReplyError(error);
  EXPECT_EQ(error.status(), 415);
  EXPECT_EQ(error.body_view(),
            "{\"error\":\"Content-Type must be application/json (got text/plain)\"}\n");

  http::Response custom;
  ReplyError(custom, 404, "no such \"item\"");
  EXPECT_EQ(custom.status(), 404);
  EXPECT_EQ(custom.body_view(), "{\"error\":\"no such \\\"item\\\"\"}\n");
}

}  // namespace
}  // namespace uring_http::json
