// multipart/form-data on a FAST route (Router::FastStream): the body is
// parsed on the ring thread as it arrives, each part handed to the sink
// piece by piece (http::MultipartReceiver), without buffering the body.
// A body that is not a valid form, passes the limits, or that the sink
// Fail()s, is answered as soon as that is known (400, 413, 415, or the
// sink's status, with the error's message): the rest of the body is not
// read and the connection closes after the answer (BodySink::answer_now).
//
//   struct Count : router::MultipartSink {
//     using MultipartSink::MultipartSink;
//     size_t files = 0;
//     void OnPart(const http::MultipartPart& p) override { files += !p.filename.empty(); }
//     void OnPartData(std::string_view) override {}
//     void OnForm(const http::Request&, http::Response& r) override {
//       r.set_body(std::to_string(files));
//     }
//   };
//   router.FastStream("POST", "/upload", [](const http::Request& req) {
//     return std::make_unique<Count>(req);
//   });
//
// SaveMultipartSink() is the ready-made one that writes file parts to a
// directory (http::MultipartSaver) and hands the saved form to a callback.
// Everything here runs on the ring thread and must not block (see
// multipart_files.h on writes to disk).
//
// Thread-safety: a sink belongs to its connection's ring thread.
#ifndef URING_HTTP_SRC_ROUTER_MULTIPART_SINK_H_
#define URING_HTTP_SRC_ROUTER_MULTIPART_SINK_H_

#include <functional>
#include <string_view>

#include "src/http/multipart.h"
#include "src/http/multipart_files.h"
#include "src/http/multipart_form.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/router/router.h"

namespace uring_http::router {

class MultipartSink : public BodySink, public http::MultipartReceiver {
 public:
  // `request` is the one the factory is given (its Content-Type is read here).
  explicit MultipartSink(const http::Request& request, const http::MultipartLimits& limits = {});

  // The whole form has come and every part was delivered: answer.
  virtual void OnForm(const http::Request& request, http::Response& response) = 0;
  // The form was refused: answers error.Reply(response) unless overridden.
  virtual void OnFormError(const http::MultipartError& error, const http::Request& request,
                           http::Response& response);

  // BodySink, final: they drive the parser.
  void OnData(std::string_view piece) final;
  void OnEnd(const http::Request& request, http::Response& response) final;
  bool answer_now() const final { return !stream_.ok() || failed(); }

 private:
  http::MultipartStream stream_;
};

// Called with the saved form (upload.ok() always: a failure was answered).
using SavedUploadHandler =
    std::function<void(const http::Request&, http::SavedUpload&, http::Response&)>;

// A FastStream factory that saves file parts under options.directory
// (SaveMultipart's rules) and then calls `on_saved` to answer.
BodySinkFactory SaveMultipartSink(http::UploadOptions options, SavedUploadHandler on_saved);

}  // namespace uring_http::router

#endif  // URING_HTTP_SRC_ROUTER_MULTIPART_SINK_H_
