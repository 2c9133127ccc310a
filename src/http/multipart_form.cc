// multipart/form-data for handlers (see multipart_form.h).
#include "src/http/multipart_form.h"

#include <memory>
#include <utility>

namespace uring_http::http {
namespace {

// "multipart: <why> (part 2 "photo", at byte 81920)".
std::string DescribeParserError(const MultipartParser& parser, bool in_part) {
  std::string message = "multipart: ";
  message += parser.error_message();
  message += " (";
  if (in_part || parser.parts() > 0) {
    message += "part " + std::to_string(parser.parts());
    if (in_part && !parser.part().name.empty()) {
      message += " \"" + std::string(parser.part().name) + "\"";
    }
    message += ", ";
  }
  message += "at byte " + std::to_string(parser.error_offset()) + ")";
  return message;
}

MultipartError ContentTypeError(std::string_view content_type, MultipartContentType* parsed) {
  *parsed = ParseMultipartContentType(content_type);
  if (parsed->ok()) return {};
  return {parsed->error_status, std::string("multipart: ") + parsed->error};
}

}  // namespace

void MultipartError::Reply(Response& response) const {
  response.set_status(status);
  response.set_content_type("text/plain; charset=utf-8");
  response.set_body(message);
  response.body() += '\n';
}

std::string_view FormPart::FindHeader(std::string_view name) const {
  MultipartPart part;
  part.header_lines = header_lines;
  return part.FindHeader(name);
}

std::optional<std::string_view> MultipartForm::Value(std::string_view name) const {
  for (const FormPart& p : parts_) {
    if (p.name == name && !p.is_file()) return p.body;
  }
  return std::nullopt;
}

std::vector<std::string_view> MultipartForm::Values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const FormPart& p : parts_) {
    if (p.name == name && !p.is_file()) out.push_back(p.body);
  }
  return out;
}

const FormPart* MultipartForm::File(std::string_view name) const {
  for (const FormPart& p : parts_) {
    if (p.name == name && p.is_file()) return &p;
  }
  return nullptr;
}

std::vector<const FormPart*> MultipartForm::Files(std::string_view name) const {
  std::vector<const FormPart*> out;
  for (const FormPart& p : parts_) {
    if (p.name == name && p.is_file()) out.push_back(&p);
  }
  return out;
}

MultipartForm ParseMultipartForm(const Request& request, const MultipartLimits& limits) {
  return ParseMultipartForm(request.FindHeader("content-type"), request.body, limits);
}

MultipartForm ParseMultipartForm(std::string_view content_type, std::string_view body,
                                 const MultipartLimits& limits) {
  MultipartForm form;
  MultipartContentType type;
  form.error_ = ContentTypeError(content_type, &type);
  if (!form.ok()) return form;
  MultipartParser parser(type.boundary, limits);
  size_t pos = 0;  // bytes of `body` consumed
  bool in_part = false;
  while (true) {
    const MultipartParser::Result r = parser.Parse(body.substr(pos));
    if (r.event == MultipartParser::Event::kError) break;
    if (r.event == MultipartParser::Event::kPartBegin) {
      const MultipartPart& p = parser.part();
      FormPart part;
      part.name = p.name;
      part.filename = p.filename;
      part.has_filename = p.has_filename;
      part.content_type = p.content_type;
      part.header_lines = p.header_lines;
      part.body = body.substr(pos + r.consumed, 0);
      form.parts_.push_back(std::move(part));
      in_part = true;
    } else if (r.event == MultipartParser::Event::kData) {
      // The body is whole, so a part's pieces lie end to end in it.
      std::string_view& part_body = form.parts_.back().body;
      if (r.data.data() != part_body.data() + part_body.size()) {
        form.error_ = {500, "multipart: internal error (a piece out of place)"};
        form.parts_.clear();
        return form;
      }
      part_body = std::string_view(part_body.data(), part_body.size() + r.data.size());
    } else if (r.event == MultipartParser::Event::kPartEnd) {
      in_part = false;
    }
    pos += r.consumed;
    if (r.event == MultipartParser::Event::kNeedMore || r.event == MultipartParser::Event::kDone) {
      break;
    }
  }
  if (!parser.Finish()) {
    form.error_ = {parser.error_status(), DescribeParserError(parser, in_part)};
    form.parts_.clear();
  }
  return form;
}

void MultipartReceiver::Fail(int status, std::string message) {
  if (!error_.ok()) return;
  error_.status = status == 0 ? 500 : status;
  error_.message = std::move(message);
}

MultipartStream::MultipartStream(std::string_view content_type, MultipartReceiver* receiver,
                                 const MultipartLimits& limits)
    : receiver_(receiver), parser_("-", limits) {
  MultipartContentType type;
  error_ = ContentTypeError(content_type, &type);
  if (ok()) parser_.Reset(type.boundary);
}

bool MultipartStream::FailFromParser() {
  error_ = {parser_.error_status(), DescribeParserError(parser_, in_part_)};
  return false;
}

bool MultipartStream::FailFromReceiver() {
  error_ = receiver_->receiver_error();
  return false;
}

bool MultipartStream::Feed(std::string_view piece) {
  if (!ok()) return false;
  while (true) {
    const MultipartParser::Result r = parser_.Parse(piece);
    switch (r.event) {
      case MultipartParser::Event::kPartBegin:
        in_part_ = true;
        receiver_->OnPart(parser_.part());
        break;
      case MultipartParser::Event::kData:
        receiver_->OnPartData(r.data);
        break;
      case MultipartParser::Event::kPartEnd:
        in_part_ = false;
        receiver_->OnPartEnd();
        break;
      case MultipartParser::Event::kError:
        return FailFromParser();
      case MultipartParser::Event::kNeedMore:
      case MultipartParser::Event::kDone:
        return true;
    }
    if (receiver_->failed()) return FailFromReceiver();
    piece.remove_prefix(r.consumed);
  }
}

bool MultipartStream::Finish() {
  if (!ok()) return false;
  if (!parser_.Finish()) return FailFromParser();
  return true;
}

MultipartError ReadMultipart(const Request& request, MultipartReceiver& receiver,
                             const MultipartLimits& limits) {
  MultipartStream stream(request.FindHeader("content-type"), &receiver, limits);
  if (!stream.ok()) return stream.error();
  constexpr size_t kBufferBytes = 64 * 1024;
  const std::unique_ptr<char[]> buffer = std::make_unique_for_overwrite<char[]>(kBufferBytes);
  while (true) {
    const long n = request.ReadBody(buffer.get(), kBufferBytes);
    if (n < 0) {
      const BodyError why = request.body_error();
      const int status = why == BodyError::kTooLarge ? 413 : why == BodyError::kTimedOut ? 408 : 400;
      return {status, std::string("multipart: the request body failed: ") + BodyErrorName(why)};
    }
    if (n == 0) break;
    if (!stream.Feed(std::string_view(buffer.get(), static_cast<size_t>(n)))) return stream.error();
  }
  if (!stream.Finish()) return stream.error();
  return {};
}

}  // namespace uring_http::http
