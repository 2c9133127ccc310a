#include "src/router/middleware.h"

#include <exception>
#include <string>
#include <string_view>

namespace uring_http::router {
namespace {

// The n-th middleware of the chain: globals first.
const Middleware& At(const Pipeline& pipeline, const std::vector<Middleware>& route, size_t i) {
  const std::vector<Middleware>& global = pipeline.global();
  return i < global.size() ? global[i] : route[i - global.size()];
}

// The server's own error text, as http1::SerializeError writes it.
void DefaultPage(int status, http::Response& response) {
  response.set_status(status);
  std::string& body = response.body();
  body.assign(std::to_string(status));
  body.push_back(' ');
  body.append(http::ReasonPhrase(status));
  body.push_back('\n');
  response.set_content_type("text/plain");
}

// The exceptions one chain caught, logged once its response is final. A
// chain rarely catches more than one; past kMax they are logged at once.
struct Caught {
  static constexpr size_t kMax = 4;
  struct Entry {
    FailureStage stage = FailureStage::kHandler;
    std::exception_ptr error;
  };
  Entry entries[kMax];
  size_t count = 0;
};

// Inside a catch block: records the exception being handled in `caught`,
// or logs it now when there is no room (or no `caught`).
void Note(Caught* caught, FailureStage stage, RouteName name, const http::Request& request,
          const http::Response& response) {
  std::exception_ptr error = std::current_exception();
  if (caught != nullptr && caught->count < Caught::kMax) {
    caught->entries[caught->count++] = {stage, std::move(error)};
    return;
  }
  LogException(ContextOf(name, request, &response), stage, error);
}

size_t Befores(const Pipeline& pipeline, const std::vector<Middleware>& route,
               const http::Request& request, http::Response& response, bool* answered,
               RouteName name, Caught* caught) {
  *answered = false;
  const size_t total = pipeline.global().size() + route.size();
  for (size_t i = 0; i < total; ++i) {
    const Middleware& m = At(pipeline, route, i);
    if (!m.before) continue;
    try {
      if (m.before(request, response) == Flow::kAnswered) {
        *answered = true;
        return i + 1;
      }
    } catch (...) {
      Note(caught, FailureStage::kBefore, name, request, response);
      pipeline.Fail(request, response);
      *answered = true;
      return i;
    }
  }
  return total;
}

void Afters(const Pipeline& pipeline, const std::vector<Middleware>& route, size_t ran,
            const http::Request& request, http::Response& response, RouteName name,
            Caught* caught) {
  for (size_t i = ran; i-- > 0;) {
    const Middleware& m = At(pipeline, route, i);
    if (!m.after) continue;
    try {
      m.after(request, response);
    } catch (...) {
      Note(caught, FailureStage::kAfter, name, request, response);
      // The outer afters still run: they see the 500.
      pipeline.Fail(request, response);
    }
  }
}

}  // namespace

absl::Status Pipeline::SetErrorHandler(int status, ErrorHandler handler) {
  if (!handler) return absl::InvalidArgumentError("error handler is empty");
  if (status < 400 || status > 599) {
    return absl::InvalidArgumentError(
        "error handlers are for statuses 400 to 599, not " + std::to_string(status));
  }
  for (auto& [code, page] : pages_) {
    if (code == status) {
      page = std::move(handler);
      return absl::OkStatus();
    }
  }
  pages_.emplace_back(status, std::move(handler));
  return absl::OkStatus();
}

absl::Status Pipeline::SetDefaultErrorHandler(ErrorHandler handler) {
  if (!handler) return absl::InvalidArgumentError("default error handler is empty");
  default_page_ = std::move(handler);
  return absl::OkStatus();
}

const ErrorHandler* Pipeline::PageFor(int status) const {
  if (status < 400) return nullptr;
  for (const auto& [code, page] : pages_) {
    if (code == status) return &page;
  }
  return default_page_ != nullptr ? &default_page_ : nullptr;
}

void Pipeline::ApplyPage(const http::Request& request, http::Response& response) const {
  const int status = response.status();
  const ErrorHandler* page = PageFor(status);
  if (page == nullptr) return;
  try {
    (*page)(request, response);
    // The page may not turn the failure into a success.
    if (response.status() < 400) response.set_status(status);
  } catch (...) {
    LogException(ContextOf({}, request, &response), FailureStage::kErrorPage,
                 std::current_exception());
    response.Clear();
    response.set_status(status);
  }
}

void Pipeline::ErrorPage(int status, const http::Request& request,
                         http::Response& response) const {
  response.set_status(status);
  if (PageFor(status) == nullptr) {
    if (http::StatusHasBody(status)) DefaultPage(status, response);
    return;
  }
  ApplyPage(request, response);
}

void Pipeline::Fail(const http::Request& request, http::Response& response) const {
  // Clear(), not a new Response: the server's header limit stays.
  response.Clear();
  response.set_status(500);
  ApplyPage(request, response);
}

void Pipeline::AnswerUnmatched(int status, std::string_view allow, const http::Request& request,
                               http::Response& response) const {
  static const std::vector<Middleware> kNone;
  RunChain(*this, kNone, request, response,
           [&](const http::Request& r, http::Response& out) {
             out.set_status(status);
             // Before the page runs, so that it cannot be left out. (A
             // refusal, were the limit tiny, fails the answer: a 500.)
             if (!allow.empty() && !out.AddHeader("Allow", allow)) return;
             // 204: an OPTIONS answered from the route table has no page
             // (and no body).
             if (status == 204) return;
             ErrorPage(status, r, out);
           });
}

void Pipeline::AnswerRedirect(int status, std::string_view location,
                              const http::Request& request, http::Response& response) const {
  static const std::vector<Middleware> kNone;
  RunChain(*this, kNone, request, response, [&](const http::Request&, http::Response& out) {
    out.set_status(status);
    // A Location past the header limit fails the answer: a 500.
    if (!out.AddHeader("Location", location)) return;
    DefaultPage(status, out);
  });
}

void Pipeline::AnswerServer(int status, const http::Request& request,
                            http::Response& response) const {
  static const std::vector<Middleware> kNone;
  ErrorPage(status, request, response);
  RunAfters(*this, kNone, global_.size(), request, response);
}

size_t RunBefores(const Pipeline& pipeline, const std::vector<Middleware>& route,
                  const http::Request& request, http::Response& response, bool* answered,
                  RouteName name) {
  return Befores(pipeline, route, request, response, answered, name, nullptr);
}

void RunAfters(const Pipeline& pipeline, const std::vector<Middleware>& route, size_t ran,
               const http::Request& request, http::Response& response, RouteName name) {
  Afters(pipeline, route, ran, request, response, name, nullptr);
}

void RunChain(const Pipeline& pipeline, const std::vector<Middleware>& route,
              const http::Request& request, http::Response& response, HandlerRef handler,
              const bool* head_sent, RouteName name) {
  Caught caught;
  bool answered = false;
  const size_t ran = Befores(pipeline, route, request, response, &answered, name, &caught);
  if (answered && caught.count == 0) {
    // A before's bare 401 gets the 401 page, as a handler's would.
    pipeline.MaybeFailPage(request, response);
  } else if (!answered) {
    try {
      handler(request, response);
      if (head_sent == nullptr || !*head_sent) pipeline.MaybeFailPage(request, response);
    } catch (...) {
      // (A caller whose head is sent catches its handler's throws itself.)
      Note(&caught, FailureStage::kHandler, name, request, response);
      pipeline.Fail(request, response);
    }
  }
  Afters(pipeline, route, ran, request, response, name, &caught);
  for (size_t i = 0; i < caught.count; ++i) {
    LogException(ContextOf(name, request, &response), caught.entries[i].stage,
                 caught.entries[i].error);
  }
}

}  // namespace uring_http::router
