// The middleware chain driven directly (no server): order, early answers,
// which afters run, throws, and the error pages.
#include "src/router/middleware.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/router/parsed_request.h"

namespace uring_http::router {
namespace {

using testing::HeaderOf;
using testing::ParsedRequest;

// A middleware that records "before:name"/"after:name" into `trace`, and
// whose before answers (status 401) when `answers`, or throws when `throws`.
Middleware Traced(std::vector<std::string>* trace, std::string name, bool answers = false,
                  bool throws = false) {
  Middleware m;
  m.before = [=](const http::Request&, http::Response& response) {
    trace->push_back("before:" + name);
    if (throws) throw std::runtime_error("before");
    if (answers) {
      response.set_status(401);
      response.set_body("no");
      return Flow::kAnswered;
    }
    return Flow::kNext;
  };
  m.after = [=](const http::Request&, http::Response& response) {
    trace->push_back("after:" + name);
    EXPECT_TRUE(response.AddHeader("X-After", name));
  };
  return m;
}

class ChainTest : public ::testing::Test {
 protected:
  // Runs the chain of `pipeline_` and `route` around a handler that records
  // itself (and throws if handler_throws_).
  http::Response Run(const std::vector<Middleware>& route) {
    http::Response response;
    RunChain(pipeline_, route, get_.request, response,
             [&](const http::Request&, http::Response& r) {
               trace_.push_back("handler");
               if (handler_throws_) throw std::runtime_error("handler");
               r.set_body("ok");
             });
    return response;
  }

  Pipeline pipeline_;
  std::vector<std::string> trace_;
  bool handler_throws_ = false;
  ParsedRequest get_{"GET /x HTTP/1.1\r\nHost: h\r\n\r\n"};
};

TEST_F(ChainTest, GlobalsInUseOrderThenRouteOnesAftersReversed) {
  pipeline_.Use(Traced(&trace_, "g1"));
  pipeline_.Use(Traced(&trace_, "g2"));
  const http::Response r = Run({Traced(&trace_, "r1"), Traced(&trace_, "r2")});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "before:g2", "before:r1", "before:r2",
                                               "handler", "after:r2", "after:r1", "after:g2",
                                               "after:g1"}));
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body_view(), "ok");
  int n = 0;
  EXPECT_EQ(HeaderOf(r, "X-After", &n), "r2");
  EXPECT_EQ(n, 4);
}

TEST_F(ChainTest, EarlyAnswerSkipsHandlerAndLaterBeforesButRunsAftersOfThoseThatRan) {
  pipeline_.Use(Traced(&trace_, "g1"));
  pipeline_.Use(Traced(&trace_, "auth", /*answers=*/true));
  const http::Response r = Run({Traced(&trace_, "r1")});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "before:auth", "after:auth",
                                               "after:g1"}));
  EXPECT_EQ(r.status(), 401);
  EXPECT_EQ(r.body_view(), "no");
}

TEST_F(ChainTest, MiddlewareWithoutBeforeStillGetsItsAfter) {
  Middleware after_only;
  after_only.after = [&](const http::Request&, http::Response& r) {
    trace_.push_back("after:only");
    r.set_status(202);
  };
  pipeline_.Use(std::move(after_only));
  const http::Response r = Run({Traced(&trace_, "r1", /*answers=*/true)});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:r1", "after:r1", "after:only"}));
  EXPECT_EQ(r.status(), 202);
}

TEST_F(ChainTest, NoMiddlewareIsTheHandlerAlone) {
  const http::Response r = Run({});
  EXPECT_EQ(trace_, (std::vector<std::string>{"handler"}));
  EXPECT_EQ(r.body_view(), "ok");
}

TEST_F(ChainTest, ThrowingHandlerIs500AndAftersRunOnIt) {
  pipeline_.Use(Traced(&trace_, "g1"));
  handler_throws_ = true;
  const http::Response r = Run({});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "handler", "after:g1"}));
  EXPECT_EQ(r.status(), 500);
  EXPECT_EQ(HeaderOf(r, "X-After"), "g1");
}

TEST_F(ChainTest, ThrowingBeforeIs500AndOnlyEarlierAftersRun) {
  pipeline_.Use(Traced(&trace_, "g1"));
  pipeline_.Use(Traced(&trace_, "bad", false, /*throws=*/true));
  const http::Response r = Run({Traced(&trace_, "r1")});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "before:bad", "after:g1"}));
  EXPECT_EQ(r.status(), 500);
}

TEST_F(ChainTest, ThrowingAfterIs500AndOuterAftersStillRun) {
  pipeline_.Use(Traced(&trace_, "outer"));
  Middleware bad;
  bad.after = [](const http::Request&, http::Response&) { throw std::runtime_error("after"); };
  const http::Response r = Run({std::move(bad)});
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:outer", "handler", "after:outer"}));
  EXPECT_EQ(r.status(), 500);
  EXPECT_EQ(HeaderOf(r, "X-After"), "outer");
}

TEST_F(ChainTest, ServerErrorPageAnswersThrowsAndBare500s) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(500,
                                   [](const http::Request& req, http::Response& r) {
                                     r.set_content_type("application/json");
                                     r.set_body(std::string("{\"error\":\"") +
                                                std::string(req.path) + "\"}");
                                   })
                  .ok());
  handler_throws_ = true;
  http::Response r = Run({});
  EXPECT_EQ(r.status(), 500);
  EXPECT_EQ(r.body_view(), "{\"error\":\"/x\"}");
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "application/json");

  // A handler that fails by returning a bare 500 gets the page too; one
  // that says why keeps its own body.
  handler_throws_ = false;
  http::Response bare;
  RunChain(pipeline_, {}, get_.request, bare,
           [](const http::Request&, http::Response& out) { out.set_status(500); });
  EXPECT_EQ(bare.body_view(), "{\"error\":\"/x\"}");
  http::Response own;
  RunChain(pipeline_, {}, get_.request, own, [](const http::Request&, http::Response& out) {
    out.set_status(500);
    out.set_body("db down");
  });
  EXPECT_EQ(own.body_view(), "db down");
}

TEST_F(ChainTest, ThrowingOrSucceedingErrorPageCannotHideTheFailure) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(500, [](const http::Request&, http::Response& r) {
                    r.set_body("partial");
                    throw std::runtime_error("page");
                  })
                  .ok());
  handler_throws_ = true;
  http::Response r = Run({});
  EXPECT_EQ(r.status(), 500);
  EXPECT_EQ(r.body_view(), "");  // the bare 500, not the half-made page

  Pipeline lying;
  ASSERT_TRUE(lying
                  .SetErrorHandler(500, [](const http::Request&, http::Response& r) {
                    r.set_status(200);
                  })
                  .ok());
  http::Response l;
  lying.Fail(get_.request, l);
  EXPECT_EQ(l.status(), 500);
}

TEST_F(ChainTest, EveryErrorStatusCanHaveAPage) {
  auto page = [](const http::Request&, http::Response&) {};
  for (int status : {400, 404, 405, 408, 413, 414, 431, 500, 501, 503, 505, 599}) {
    EXPECT_TRUE(pipeline_.SetErrorHandler(status, page).ok()) << status;
  }
  for (int status : {0, 200, 304, 399, 600}) {
    EXPECT_FALSE(pipeline_.SetErrorHandler(status, page).ok()) << status;
  }
  EXPECT_FALSE(pipeline_.SetErrorHandler(404, nullptr).ok());
  EXPECT_FALSE(pipeline_.SetDefaultErrorHandler(nullptr).ok());
}

// The JSON API of issue 23: one page for every error, and its own for 413.
TEST_F(ChainTest, DefaultPageAnswersEveryStatusWithoutItsOwn) {
  ASSERT_TRUE(pipeline_
                  .SetDefaultErrorHandler([](const http::Request&, http::Response& r) {
                    r.set_content_type("application/json");
                    r.set_body("{\"status\":" + std::to_string(r.status()) + "}");
                  })
                  .ok());
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(413, [](const http::Request&, http::Response& r) {
                    r.set_body("{\"error\":\"too large\"}");
                  })
                  .ok());
  EXPECT_TRUE(pipeline_.HandlesNotFound());
  for (int status : {400, 404, 408, 431, 500, 503}) {
    http::Response r;
    pipeline_.ErrorPage(status, get_.request, r);
    EXPECT_EQ(r.status(), status);
    EXPECT_EQ(r.body_view(), "{\"status\":" + std::to_string(status) + "}");
    EXPECT_EQ(HeaderOf(r, "Content-Type"), "application/json");
  }
  http::Response too_large;
  pipeline_.ErrorPage(413, get_.request, too_large);
  EXPECT_EQ(too_large.body_view(), "{\"error\":\"too large\"}");
  // A handler throwing: the default page answers the 500.
  handler_throws_ = true;
  EXPECT_EQ(Run({}).body_view(), "{\"status\":500}");
}

TEST_F(ChainTest, WithoutPagesTheServersTextAnswers) {
  http::Response r;
  pipeline_.ErrorPage(431, get_.request, r);
  EXPECT_EQ(r.status(), 431);
  EXPECT_EQ(r.body_view(), "431 Request Header Fields Too Large\n");
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "text/plain");
}

TEST_F(ChainTest, PagesMayChangeTheErrorButNotIntoASuccess) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(404, [](const http::Request&, http::Response& r) {
                    r.set_status(410);
                  })
                  .ok());
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(403, [](const http::Request&, http::Response& r) {
                    r.set_status(200);
                    r.set_body("fine");
                  })
                  .ok());
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(400, [](const http::Request&, http::Response& r) {
                    r.set_body("half");
                    throw std::runtime_error("page");
                  })
                  .ok());
  http::Response gone, forbidden, bad;
  pipeline_.ErrorPage(404, get_.request, gone);
  pipeline_.ErrorPage(403, get_.request, forbidden);
  pipeline_.ErrorPage(400, get_.request, bad);
  EXPECT_EQ(gone.status(), 410);
  EXPECT_EQ(forbidden.status(), 403);
  EXPECT_EQ(bad.status(), 400);
  EXPECT_EQ(bad.body_view(), "");  // not the half-made page
}

// A handler's (or an answering before's) bare error gets its page; one that
// says why keeps its body.
TEST_F(ChainTest, BareErrorsFromHandlersAndBeforesGetTheirPage) {
  ASSERT_TRUE(pipeline_
                  .SetDefaultErrorHandler([](const http::Request&, http::Response& r) {
                    r.set_body("page " + std::to_string(r.status()));
                  })
                  .ok());
  http::Response bare;
  RunChain(pipeline_, {}, get_.request, bare, [](const http::Request&, http::Response& out) {
    out.set_status(404);
    EXPECT_TRUE(out.AddHeader("X-Kept", "yes"));
  });
  EXPECT_EQ(bare.body_view(), "page 404");
  EXPECT_EQ(HeaderOf(bare, "X-Kept"), "yes");
  http::Response own;
  RunChain(pipeline_, {}, get_.request, own, [](const http::Request&, http::Response& out) {
    out.set_status(404);
    out.set_body("no such user");
  });
  EXPECT_EQ(own.body_view(), "no such user");
  Middleware auth;
  auth.before = [](const http::Request&, http::Response& r) {
    r.set_status(401);
    return Flow::kAnswered;
  };
  pipeline_.Use(auth);
  EXPECT_EQ(Run({}).body_view(), "page 401");
  EXPECT_EQ(trace_, std::vector<std::string>{});  // the handler did not run
}

// The server's own answers: the page, then every global after (no before:
// the answer is given).
TEST_F(ChainTest, ServerAnswersRunThePageAndEveryGlobalAfter) {
  pipeline_.Use(Traced(&trace_, "g1"));
  pipeline_.Use(Traced(&trace_, "g2"));
  http::Response r;
  pipeline_.AnswerServer(413, get_.request, r);
  EXPECT_EQ(r.status(), 413);
  EXPECT_EQ(r.body_view(), "413 Content Too Large\n");
  EXPECT_EQ(trace_, (std::vector<std::string>{"after:g2", "after:g1"}));
  // A minimal request (no head was parsed) is fine for pages and afters.
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(400, [](const http::Request& req, http::Response& out) {
                    out.set_body("bad [" + std::string(req.method) + "][" +
                                 std::string(req.path) + "]");
                  })
                  .ok());
  http::Request minimal;
  http::Response bad;
  pipeline_.AnswerServer(400, minimal, bad);
  EXPECT_EQ(bad.body_view(), "bad [][]");
  EXPECT_EQ(HeaderOf(bad, "X-After"), "g2");
}

TEST_F(ChainTest, RedirectsRunTheGlobalChain) {
  pipeline_.Use(Traced(&trace_, "g1"));
  http::Response r;
  pipeline_.AnswerRedirect(308, "/a/b?x=1", get_.request, r);
  EXPECT_EQ(r.status(), 308);
  EXPECT_EQ(HeaderOf(r, "Location"), "/a/b?x=1");
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "after:g1"}));
}

TEST_F(ChainTest, UnmatchedAnswersDefaultTextAllowAndGlobals) {
  EXPECT_FALSE(pipeline_.HandlesNotFound());
  pipeline_.Use(Traced(&trace_, "g1"));
  EXPECT_TRUE(pipeline_.HandlesNotFound());
  http::Response r;
  pipeline_.AnswerUnmatched(405, "GET, HEAD", get_.request, r);
  EXPECT_EQ(r.status(), 405);
  EXPECT_EQ(r.body_view(), "405 Method Not Allowed\n");
  EXPECT_EQ(HeaderOf(r, "Allow"), "GET, HEAD");
  EXPECT_EQ(HeaderOf(r, "X-After"), "g1");
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "after:g1"}));
}

TEST_F(ChainTest, UnmatchedPagesKeepAllowAndTheirStatus) {
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(405, [](const http::Request&, http::Response& r) {
                    r.set_body("<h1>nope</h1>");
                  })
                  .ok());
  ASSERT_TRUE(pipeline_
                  .SetErrorHandler(404, [](const http::Request& req, http::Response& r) {
                    r.set_body(std::string("no ") + std::string(req.path));
                  })
                  .ok());
  http::Response r405;
  pipeline_.AnswerUnmatched(405, "POST", get_.request, r405);
  EXPECT_EQ(r405.status(), 405);
  EXPECT_EQ(r405.body_view(), "<h1>nope</h1>");
  EXPECT_EQ(HeaderOf(r405, "Allow"), "POST");
  http::Response r404;
  pipeline_.AnswerUnmatched(404, "", get_.request, r404);
  EXPECT_EQ(r404.status(), 404);
  EXPECT_EQ(r404.body_view(), "no /x");
  EXPECT_EQ(HeaderOf(r404, "Allow"), "(none)");
}

TEST_F(ChainTest, BeforesAndAftersApartForStreamedBodies) {
  pipeline_.Use(Traced(&trace_, "g1"));
  const std::vector<Middleware> route = {Traced(&trace_, "r1")};
  http::Response response;
  bool answered = true;
  const size_t ran = RunBefores(pipeline_, route, get_.request, response, &answered);
  EXPECT_FALSE(answered);
  EXPECT_EQ(ran, 2u);
  RunAfters(pipeline_, route, ran, get_.request, response);
  EXPECT_EQ(trace_, (std::vector<std::string>{"before:g1", "before:r1", "after:r1", "after:g1"}));
}

}  // namespace
}  // namespace uring_http::router
