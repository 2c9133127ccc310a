// application/x-www-form-urlencoded text, as query strings and form bodies
// carry it: name=value pairs separated by '&', each name and value
// percent-encoded with '+' for a space (the WHATWG URL standard's
// urlencoded parser, except that a malformed escape is refused instead of
// passed through).
//
// Views where a view suffices: iterating UrlEncodedParams gives each pair's
// raw (still encoded) name and value as views into the text, allocating
// nothing; looking a value up decodes it into a ParamValue, which views the
// text itself when the value holds no '%' or '+' and owns the decoded bytes
// otherwise. Nothing here runs unless a handler calls it.
//
// The rules, each tested in test/http/form_test.cc:
//   - Pairs are separated by '&' only (';' is an ordinary byte). Empty
//     pieces ("a=1&&b=2", a leading or trailing '&') are no pairs at all.
//   - A pair splits at its first '=': "a=b=c" is a = "b=c". "a=" has an
//     empty value; "flag" (no '=') has an empty value too, and
//     RawParam::has_equals tells the two apart; "=x" has an empty name.
//   - Names and values are percent-decoded exactly once ("%2541" is "%41",
//     not "A"); '+' is a space and "%2B" a '+'; every other byte (UTF-8
//     included) stands for itself, and "%00" is a NUL byte.
//   - A '%' not followed by two hex digits ("%G1", "%4" at the end, "%")
//     makes that name or value malformed. A malformed value is reported as
//     such (ParamValue::malformed()), never passed through; a pair whose
//     name is malformed matches no name.
//   - Names are compared after decoding, byte for byte (case-sensitive):
//     "a%62=1" and "a+b=1" are the names "ab" and "a b".
//   - Repeated names: Get() gives the first pair's value (malformed if that
//     one is, even when a later one is not); GetAll() every value, in order.
//
// Thread-safety: stateless functions and values; any thread.
#ifndef URING_HTTP_SRC_HTTP_FORM_H_
#define URING_HTTP_SRC_HTTP_FORM_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uring_http::http {

// One pair of form text, still encoded: views into the text.
struct RawParam {
  std::string_view name;
  std::string_view value;   // empty for "a=" and for "a"
  bool has_equals = false;  // "a=": true; "a": false
};

// A name or value decoded from form text: absent (no such name), malformed
// (a bad escape), or present with its decoded bytes. It views the text it
// was decoded from when no decoding was needed (so it must not outlive that
// text) and owns the decoded bytes otherwise. Reads like an optional:
//   if (!v) ...; use(*v);   v == "json"   v.malformed()
class ParamValue {
 public:
  ParamValue() = default;  // absent
  static ParamValue Malformed();
  // `raw`, one encoded name or value, decoded.
  static ParamValue Decode(std::string_view raw);

  bool present() const { return state_ == State::kPresent; }
  bool absent() const { return state_ == State::kAbsent; }
  bool malformed() const { return state_ == State::kMalformed; }
  explicit operator bool() const { return present(); }

  // The decoded bytes; empty unless present().
  std::string_view value() const { return owned_ ? std::string_view(decoded_) : view_; }
  std::string_view operator*() const { return value(); }
  // Present, with exactly these bytes.
  bool operator==(std::string_view text) const { return present() && value() == text; }

  // True when value() views the encoded text (nothing was copied).
  bool is_view() const { return !owned_; }

 private:
  enum class State : uint8_t { kAbsent, kMalformed, kPresent };
  State state_ = State::kAbsent;
  bool owned_ = false;
  std::string_view view_;
  std::string decoded_;  // only when owned_
};

// Form text: a query string (Request::query, the part after '?') or a form
// body. A view: the text must outlive it, and ParamValues that view it.
class UrlEncodedParams {
 public:
  // Iterates the pairs in order, skipping empty pieces.
  class iterator {
   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // references are into the iterator
    using value_type = RawParam;
    using difference_type = std::ptrdiff_t;
    using pointer = const RawParam*;
    using reference = const RawParam&;

    iterator() = default;
    const RawParam& operator*() const { return current_; }
    const RawParam* operator->() const { return &current_; }
    iterator& operator++();
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return pos_ == other.pos_; }

   private:
    friend class UrlEncodedParams;
    iterator(const char* pos, const char* end) : pos_(pos), end_(end) { Load(); }
    void Load();  // skips '&'s at pos_, then reads the pair there

    const char* pos_ = nullptr;   // start of current_ (end_: past the last)
    const char* end_ = nullptr;
    const char* next_ = nullptr;  // the '&' after current_, or end_
    RawParam current_;
  };

  UrlEncodedParams() = default;
  explicit UrlEncodedParams(std::string_view text) : text_(text) {}

  iterator begin() const { return iterator(text_.data(), text_.data() + text_.size()); }
  iterator end() const {
    return iterator(text_.data() + text_.size(), text_.data() + text_.size());
  }
  std::string_view text() const { return text_; }

  // The decoded value of the first pair whose decoded name is `name`.
  ParamValue Get(std::string_view name) const;
  // The decoded values of every pair named `name`, in order (malformed ones
  // included, as malformed).
  std::vector<ParamValue> GetAll(std::string_view name) const;

 private:
  std::string_view text_;
};

// Percent-decodes one encoded name or value ('+' is a space). Returns `raw`
// itself when it holds no '%' or '+' (nothing is written), else the decoded
// bytes, written over `*storage` (its capacity is kept, so a storage reused
// across calls stops allocating); nullopt when `raw` is malformed (`*storage`
// then holds some prefix). The decoded bytes are never longer than `raw`.
// `raw` must not lie in `*storage`.
std::optional<std::string_view> DecodeFormComponent(std::string_view raw, std::string* storage);

// Whether `raw` decodes to exactly `decoded`, without decoding it into
// memory. False when `raw` is malformed.
bool FormComponentEquals(std::string_view raw, std::string_view decoded);

// Whether a Content-Type value names application/x-www-form-urlencoded:
// the media type compared case-insensitively, parameters ("; charset=utf-8")
// allowed, whitespace around it tolerated.
bool IsFormUrlEncoded(std::string_view content_type);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_FORM_H_
