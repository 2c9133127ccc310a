// JSON request and response bodies (see json.h).
#include "src/json/json.h"

#include <string>
#include <utility>
#include <vector>

namespace uring_http::json {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

// Builds the value from nlohmann's SAX events, as Json::parse does, but
// through the public json_sax interface (nlohmann's own DOM builder is in
// its detail namespace and changed shape in 3.12), without exceptions,
// keeping the parse error's text and position and bounding the nesting.
// The parser itself is iterative: only the depth of the value needs a bound.
class Builder final : public nlohmann::json_sax<Json> {
 public:
  Builder(Json& root, size_t max_depth) : root_(root), max_depth_(max_depth) {}

  bool null() override { return Put(Json(nullptr)); }
  bool boolean(bool value) override { return Put(Json(value)); }
  bool number_integer(number_integer_t value) override { return Put(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Put(Json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return Put(Json(value)); }
  bool string(string_t& value) override { return Put(Json(std::move(value))); }
  // Only the binary formats (CBOR, ...) have these; kept for completeness.
  bool binary(binary_t& value) override { return Put(Json::binary(std::move(value))); }
  bool start_object(std::size_t) override { return Open(Json::value_t::object); }
  bool start_array(std::size_t) override { return Open(Json::value_t::array); }
  // A name given twice: the last value stands (as Json::parse and Go do).
  bool key(string_t& name) override {
    member_ = &(*open_.back())[std::move(name)];
    return true;
  }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t position, const std::string&, const Json::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: ..."
    std::string what = ex.what();
    const size_t bracket = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos) {
      what.erase(0, bracket + 2);
    }
    error_ = "malformed JSON: " + what + " (byte " + std::to_string(position) + ")";
    offset_ = position;
    return false;
  }

  const std::string& error() const { return error_; }
  uint64_t offset() const { return offset_; }

 private:
  // The new value goes where the parser is: the root, the end of the open
  // array, or the member whose key came last. Pointers into an array stay
  // valid: nothing is added to it while its last element is open.
  Json* Place(Json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *member_ = std::move(value);
    return member_;
  }
  bool Put(Json&& value) {
    Place(std::move(value));
    return true;
  }
  bool Open(Json::value_t type) {
    if (open_.size() >= max_depth_) {
      error_ = "malformed JSON: nested deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    open_.push_back(Place(Json(type)));
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  Json& root_;
  const size_t max_depth_;
  std::vector<Json*> open_;  // the arrays and objects not closed yet
  Json* member_ = nullptr;
  std::string error_;
  uint64_t offset_ = 0;
};

}  // namespace

bool IsJsonContentType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  std::string lower(type);
  for (char& c : lower) c = Lower(c);
  if (lower == "application/json") return true;
  const size_t slash = lower.find('/');
  return slash != std::string::npos && slash > 0 && lower.size() > slash + 6 &&
         lower.ends_with("+json");
}

Result<Json> ParseText(std::string_view text, const ParseOptions& options) {
  Json root;
  Builder builder(root, options.max_depth);
  // strict: one JSON text and nothing after it; no comments (RFC 8259).
  const bool ok = Json::sax_parse(text, &builder, Json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    std::string error = builder.error();
    if (error.empty()) error = "malformed JSON";
    return Result<Json>(400, std::move(error), builder.offset());
  }
  return Result<Json>(std::move(root));
}

Result<Json> Parse(const http::Request& request, const ParseOptions& options) {
  const std::string_view type = request.FindHeader("content-type");
  const bool missing = type.empty();
  if (missing ? !options.allow_missing_content_type : !IsJsonContentType(type)) {
    return Result<Json>(415, "Content-Type must be application/json" +
                                 (missing ? std::string(" (none was sent)")
                                          : " (got " + std::string(type) + ")"));
  }
  return ParseText(request.body, options);
}

void Reply(http::Response& response, const Json& value, int status) {
  response.set_status(status);
  response.set_content_type("application/json");
  std::string& body = response.body();
  body = value.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
  body += '\n';
}

void ReplyError(http::Response& response, int status, std::string_view message) {
  Reply(response, Json{{"error", message}}, status);
}

}  // namespace uring_http::json
