// The request id middleware through the chain (no server): echo, generate,
// refuse insane ids, and set exactly one header even on early answers.
#include "src/middleware/request_id.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::middleware {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

std::string IdFor(std::string_view head) {
  router::Pipeline pipeline;
  pipeline.Use(RequestId());
  ParsedRequest parsed{head};
  http::Response response;
  router::RunChain(pipeline, {}, parsed.request, response,
                   [](const http::Request&, http::Response& r) { r.body() += 'x'; });
  int n = 0;
  const std::string id = HeaderOf(response, "X-Request-Id", &n);
  EXPECT_EQ(n, 1);
  return id;
}

bool Generated(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(RequestIdTest, SaneIncomingIdIsEchoed) {
  EXPECT_EQ(IdFor("GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc-123_Z\r\n\r\n"), "abc-123_Z");
  const std::string longest(kMaxRequestIdLength, 'q');
  EXPECT_EQ(IdFor("GET / HTTP/1.1\r\nHost: h\r\nx-request-id: " + longest + "\r\n\r\n"), longest);
}

TEST(RequestIdTest, AbsentOrInsaneIdIsReplacedByAGeneratedOne) {
  EXPECT_TRUE(Generated(IdFor("GET / HTTP/1.1\r\nHost: h\r\n\r\n")));
  const std::string too_long(kMaxRequestIdLength + 1, 'q');
  EXPECT_TRUE(
      Generated(IdFor("GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: " + too_long + "\r\n\r\n")));
  EXPECT_TRUE(Generated(IdFor("GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: a b\r\n\r\n")));
  EXPECT_TRUE(Generated(IdFor("GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: caf\xc3\xa9\r\n\r\n")));
}

TEST(RequestIdTest, Validity) {
  EXPECT_TRUE(IsValidRequestId("!~"));
  EXPECT_FALSE(IsValidRequestId(""));
  EXPECT_FALSE(IsValidRequestId("a\tb"));
  EXPECT_FALSE(IsValidRequestId("a\x7f"));
}

TEST(RequestIdTest, GeneratedIdsDoNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    char id[32];
    GenerateRequestId(id);
    ASSERT_TRUE(seen.emplace(id, sizeof(id)).second) << i;
  }
}

TEST(RequestIdTest, SetOnEarlyAnswersAndErrors) {
  router::Pipeline pipeline;
  pipeline.Use(RequestId());
  router::Middleware deny;
  deny.before = [](const http::Request&, http::Response& r) {
    r.set_status(403);
    return router::Flow::kAnswered;
  };
  pipeline.Use(deny);
  ParsedRequest parsed{"GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: early\r\n\r\n"};
  http::Response response;
  router::RunChain(pipeline, {}, parsed.request, response,
                   [](const http::Request&, http::Response&) { FAIL() << "not reached"; });
  EXPECT_EQ(response.status(), 403);
  EXPECT_EQ(HeaderOf(response, "X-Request-Id"), "early");

  http::Response failed;
  router::RunChain(router::Pipeline(), {RequestId()}, parsed.request, failed,
                   [](const http::Request&, http::Response&) { throw 1; });
  EXPECT_EQ(failed.status(), 500);
  EXPECT_EQ(HeaderOf(failed, "X-Request-Id"), "early");
}

}  // namespace
}  // namespace uring_http::middleware
