// The exchange's handler step driven directly (no server, no thread): the
// same function answers FAST requests on the ring and SLOW ones on a
// worker, so the rules are tested once, with and without a stream whose
// head has gone.
#include "src/exchange/run_handler.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::exchange {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

// A stream whose head goes out at the handler's first Write (as a
// worker's pipe does).
class FakeStream final : public StreamedHead {
 public:
  bool started() const override { return started_; }
  void Break() override { ++breaks; }
  void Start() { started_ = true; }
  int breaks = 0;

 private:
  bool started_ = false;
};

class RunHandlerTest : public ::testing::Test {
 protected:
  router::Route RouteWith(router::Handler handler) {
    router::Route route;
    route.method = "GET";
    route.path = "/x";
    route.handler = std::move(handler);
    return route;
  }

  router::Pipeline pipeline_;
  ParsedRequest get_{"GET /x HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n"};
};

TEST_F(RunHandlerTest, TheHandlerAnswers) {
  const router::Route route = RouteWith([](const http::Request&, http::Response& r) {
    r.set_status(201);
    r.set_body("made");
  });
  http::Response response;
  RunHandler(pipeline_, route, get_.request, response);
  EXPECT_EQ(response.status(), 201);
  EXPECT_EQ(response.body_view(), "made");
}

TEST_F(RunHandlerTest, AThrowBecomesThe500PageWithOrWithoutMiddleware) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(500, [](const http::Request&, http::Response& r) {
                    r.set_body("our 500 page");
                  })
                  .ok());
  router::Route route = RouteWith([](const http::Request&, http::Response& r) {
    r.set_body("half");
    throw std::runtime_error("boom");
  });
  for (bool with_middleware : {false, true}) {
    SCOPED_TRACE(with_middleware);
    if (with_middleware) {
      router::Middleware m;
      m.after = [](const http::Request&, http::Response& r) { (void)r.AddHeader("X-After", "1"); };
      route.options.middleware.push_back(m);
    }
    http::Response response;
    RunHandler(pipeline_, route, get_.request, response);
    EXPECT_EQ(response.status(), 500);
    EXPECT_EQ(response.body_view(), "our 500 page");
    EXPECT_EQ(HeaderOf(response, "X-After"), with_middleware ? "1" : "(none)");
  }
}

TEST_F(RunHandlerTest, ABare404GetsItsPage) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(404, [](const http::Request&, http::Response& r) {
                    r.set_body("no such thing");
                  })
                  .ok());
  const router::Route route =
      RouteWith([](const http::Request&, http::Response& r) { r.set_status(404); });
  http::Response response;
  RunHandler(pipeline_, route, get_.request, response);
  EXPECT_EQ(response.status(), 404);
  EXPECT_EQ(response.body_view(), "no such thing");
}

TEST_F(RunHandlerTest, ABeforeThatAnswersSkipsTheHandler) {
  bool ran = false;
  router::Route route = RouteWith([&](const http::Request&, http::Response&) { ran = true; });
  router::Middleware m;
  m.before = [](const http::Request&, http::Response& r) {
    r.set_status(401);
    r.set_body("who are you");
    return router::Flow::kAnswered;
  };
  route.options.middleware.push_back(m);
  http::Response response;
  RunHandler(pipeline_, route, get_.request, response);
  EXPECT_FALSE(ran);
  EXPECT_EQ(response.status(), 401);
}

TEST_F(RunHandlerTest, AThrowBeforeTheStreamStartsIsStillA500) {
  FakeStream stream;
  const router::Route route = RouteWith([](const http::Request&, http::Response&) {
    throw std::runtime_error("early");
  });
  http::Response response;
  RunHandler(pipeline_, route, get_.request, response, &stream);
  EXPECT_EQ(response.status(), 500);
  EXPECT_EQ(stream.breaks, 0);
}

TEST_F(RunHandlerTest, AThrowAfterTheHeadWentCutsTheStreamAndKeepsTheAnswer) {
  FakeStream stream;
  const router::Route route = RouteWith([&](const http::Request&, http::Response& r) {
    r.set_status(200);
    stream.Start();  // the handler's first Write sent the head
    throw std::runtime_error("late");
  });
  router::Route with_after = route;
  int afters = 0;
  router::Middleware m;
  m.after = [&](const http::Request&, http::Response&) { ++afters; };
  with_after.options.middleware.push_back(m);
  http::Response response;
  RunHandler(pipeline_, with_after, get_.request, response, &stream);
  EXPECT_EQ(stream.breaks, 1);
  EXPECT_EQ(response.status(), 200) << "a sent head cannot become a 500";
  EXPECT_EQ(afters, 1) << "the afters still run";
}

TEST(GzipTest, AcceptedOnlyWhenOnAndPreferred) {
  ParsedRequest gzip("GET / HTTP/1.1\r\nHost: h\r\nAccept-Encoding: br, gzip;q=0.5\r\n\r\n");
  ParsedRequest refused("GET / HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip;q=0\r\n\r\n");
  ParsedRequest none("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  http::CompressionOptions on;
  on.enabled = true;
  const http::CompressionOptions off;
  EXPECT_TRUE(GzipAccepted(on, gzip.request));
  EXPECT_FALSE(GzipAccepted(off, gzip.request));
  EXPECT_FALSE(GzipAccepted(on, refused.request));
  EXPECT_FALSE(GzipAccepted(on, none.request));
}

TEST(GzipTest, ABufferedBodyIsCompressedWhereItIsBuilt) {
  http::CompressionOptions on;
  on.enabled = true;
  on.min_bytes = 16;
  http::Response response;
  ASSERT_TRUE(response.AddHeader("Content-Type", "text/plain"));
  response.set_body(std::string(4096, 'a'));
  FinishBuffered(on, /*gzip_accepted=*/true, /*head_only=*/false, response);
  EXPECT_EQ(HeaderOf(response, "Content-Encoding"), "gzip");
  EXPECT_LT(response.body_view().size(), 4096u);

  http::Response plain;
  ASSERT_TRUE(plain.AddHeader("Content-Type", "text/plain"));
  plain.set_body(std::string(4096, 'a'));
  FinishBuffered(http::CompressionOptions{}, true, false, plain);
  EXPECT_EQ(HeaderOf(plain, "Content-Encoding"), "(none)") << "compression is off";
  EXPECT_EQ(plain.body_view().size(), 4096u);
}

}  // namespace
}  // namespace uring_http::exchange
