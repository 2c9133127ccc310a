// multipart/form-data for handlers, over the parser of multipart.h, in the
// two shapes Go's net/http and Drogon offer:
//   - a buffered route's whole body parsed into parts (Go's
//     ParseMultipartForm and FormValue/FormFile, Drogon's MultiPartParser):
//     ParseMultipartForm(request) gives a MultipartForm whose part bodies
//     are views into Request::body;
//   - a streamed body delivered part by part, piece by piece, to a
//     MultipartReceiver (Drogon's streaming parser, Go's MultipartReader
//     turned into callbacks): ReadMultipart(request, receiver) on a worker
//     (a SLOW handler; it reads with Request::ReadBody), or
//     router::MultipartSink on the ring thread (router/multipart_sink.h).
// SaveMultipart (multipart_files.h) streams file parts to disk.
//
// Every failure is a MultipartError: the status to answer (415 for a body
// that is not multipart/form-data, 400 for a malformed one, 413 past a
// limit of MultipartLimits, or what a receiver chose) and a message that
// says where; error.Reply(response) answers it.
//
// Thread-safety: a MultipartForm, MultipartStream or receiver belongs to
// the thread of the handler that made it.
#ifndef URING_HTTP_SRC_HTTP_MULTIPART_FORM_H_
#define URING_HTTP_SRC_HTTP_MULTIPART_FORM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/multipart.h"
#include "src/http/request.h"
#include "src/http/response.h"

namespace uring_http::http {

// Why a multipart body was refused; ok() when it was not.
struct MultipartError {
  int status = 0;       // 400, 413, 415, ... (0: no error)
  std::string message;  // "multipart: ... (part 2 \"photo\", at byte 81920)"
  bool ok() const { return status == 0; }
  // Answers it: the status, text/plain, the message and a newline.
  void Reply(Response& response) const;
};

// One part of a buffered form. Its body views Request::body.
struct FormPart {
  std::string name;          // Content-Disposition's name ("" if none)
  std::string filename;      // as the client sent it: never a path to open
  bool has_filename = false;
  std::string content_type;  // as sent; "" if absent (text/plain then)
  std::string header_lines;  // "Name: value\r\n" each
  std::string_view body;
  // A file, as Go tells them apart: a non-empty filename. (A browser's
  // empty file input sends filename="": a value, empty.)
  bool is_file() const { return !filename.empty(); }
  std::string_view FindHeader(std::string_view name) const;
};

class MultipartForm {
 public:
  bool ok() const { return error_.ok(); }
  const MultipartError& error() const { return error_; }
  // Every part, in order (nameless ones too).
  const std::vector<FormPart>& parts() const { return parts_; }
  // The body of the first part named `name` that is not a file (Go's
  // FormValue); nullopt if none.
  std::optional<std::string_view> Value(std::string_view name) const;
  std::vector<std::string_view> Values(std::string_view name) const;
  // The first file part named `name` (Go's FormFile); null if none.
  const FormPart* File(std::string_view name) const;
  std::vector<const FormPart*> Files(std::string_view name) const;

 private:
  friend MultipartForm ParseMultipartForm(std::string_view, std::string_view,
                                          const MultipartLimits&);
  MultipartError error_;
  std::vector<FormPart> parts_;
};

// A buffered body parsed whole. `request.body` must outlive the form (it
// does for the handler's call). A streamed route's body is not there: use
// ReadMultipart or SaveMultipart.
MultipartForm ParseMultipartForm(const Request& request, const MultipartLimits& limits = {});
MultipartForm ParseMultipartForm(std::string_view content_type, std::string_view body,
                                 const MultipartLimits& limits = {});

// What a streamed multipart body is delivered to, in order: OnPart, then
// OnPartData for each piece of its body, then OnPartEnd, for each part.
// Pieces are views valid during the call only. A receiver that will not
// go on calls Fail(): the body is refused with that status and message.
class MultipartReceiver {
 public:
  virtual ~MultipartReceiver() = default;
  // A part's head (views valid until its OnPartEnd).
  virtual void OnPart(const MultipartPart& part) = 0;
  // The next piece of its body (never empty).
  virtual void OnPartData(std::string_view piece) = 0;
  virtual void OnPartEnd() {}
  // Stops the body here: e.g. 413 for a file you will not take, 500 when
  // the disk is full. The first call's error stands.
  void Fail(int status, std::string message);
  bool failed() const { return !error_.ok(); }
  const MultipartError& receiver_error() const { return error_; }

 private:
  MultipartError error_;
};

// The parser fed piece by piece, events turned into receiver calls.
class MultipartStream {
 public:
  // `content_type` is the request's Content-Type: a body that is not
  // multipart/form-data with a boundary fails at once (415 or 400).
  MultipartStream(std::string_view content_type, MultipartReceiver* receiver,
                  const MultipartLimits& limits = {});
  // The next bytes of the body; false once failed (error() says why).
  bool Feed(std::string_view piece);
  // The body ended; false if it failed or the form was incomplete.
  bool Finish();
  bool ok() const { return error_.ok(); }
  const MultipartError& error() const { return error_; }
  uint64_t total_bytes() const { return parser_.total_bytes(); }

 private:
  bool FailFromParser();
  bool FailFromReceiver();

  MultipartReceiver* receiver_;
  MultipartParser parser_;
  MultipartError error_;
  bool in_part_ = false;
};

// Reads the request's body with ReadBody() (a SLOW handler's streamed body,
// blocking on its worker; or a buffered one) through a MultipartStream into
// `receiver`. On an error the handler answers with error.Reply(response)
// and returns; a body that failed in transit (ReadBody's -1) is answered by
// the server whatever the handler does. Bytes after the error are not read
// (the connection closes after the answer).
MultipartError ReadMultipart(const Request& request, MultipartReceiver& receiver,
                             const MultipartLimits& limits = {});

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_MULTIPART_FORM_H_
