// multipart/form-data on a FAST route (see multipart_sink.h).
#include "src/router/multipart_sink.h"

#include <memory>
#include <utility>

namespace uring_http::router {
namespace {

class SavingSink : public MultipartSink {
 public:
  SavingSink(const http::Request& request, const http::UploadOptions& options,
             const SavedUploadHandler& on_saved)
      : MultipartSink(request, options.limits), saver_(options), on_saved_(on_saved) {
    // An upload directory that cannot be opened refuses the first bytes.
    if (saver_.failed()) Fail(saver_.receiver_error().status, saver_.receiver_error().message);
  }
  void OnPart(const http::MultipartPart& part) override { Forward([&] { saver_.OnPart(part); }); }
  void OnPartData(std::string_view piece) override {
    Forward([&] { saver_.OnPartData(piece); });
  }
  void OnPartEnd() override { Forward([&] { saver_.OnPartEnd(); }); }
  void OnForm(const http::Request& request, http::Response& response) override {
    http::SavedUpload upload = saver_.Take({});
    if (!upload.ok()) return upload.error.Reply(response);
    on_saved_(request, upload, response);
  }
  // The saver's destructor deletes what it wrote unless OnForm took it.

 private:
  template <typename F>
  void Forward(F call) {
    if (failed()) return;
    call();
    if (saver_.failed()) Fail(saver_.receiver_error().status, saver_.receiver_error().message);
  }

  http::MultipartSaver saver_;
  const SavedUploadHandler& on_saved_;  // the route's, which outlives its requests
};

}  // namespace

MultipartSink::MultipartSink(const http::Request& request, const http::MultipartLimits& limits)
    : stream_(request.FindHeader("content-type"), this, limits) {}

void MultipartSink::OnFormError(const http::MultipartError& error, const http::Request&,
                                http::Response& response) {
  error.Reply(response);
}

void MultipartSink::OnData(std::string_view piece) { stream_.Feed(piece); }

void MultipartSink::OnEnd(const http::Request& request, http::Response& response) {
  // answer_now() brings us here before the body's end, failed.
  http::MultipartError error = stream_.ok() ? receiver_error() : stream_.error();
  if (error.ok() && !stream_.Finish()) error = stream_.error();
  if (!error.ok()) return OnFormError(error, request, response);
  OnForm(request, response);
}

BodySinkFactory SaveMultipartSink(http::UploadOptions options, SavedUploadHandler on_saved) {
  auto shared = std::make_shared<const std::pair<http::UploadOptions, SavedUploadHandler>>(
      std::move(options), std::move(on_saved));
  return [shared](const http::Request& request) -> std::unique_ptr<BodySink> {
    return std::make_unique<SavingSink>(request, shared->first, shared->second);
  };
}

}  // namespace uring_http::router
