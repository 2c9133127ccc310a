// The Cookie request header as a server sees it (RFC 6265 4.2.1 and 5.4):
// "name=value; name2=value2", as views into the header value; nothing is
// copied or allocated.
//
//   for (const CookiePair& c : CookieRange(request.FindHeader("cookie"))) ...
//   std::optional<std::string_view> sid = FindCookie(line, "sid");
//
// (Request::Cookie(name) looks through every Cookie line; see parser.h.)
//
// The rules, each tested in test/http/cookies_test.cc:
//   - Pairs are separated by ';'. Whitespace (SP, HTAB) around a pair, and
//     around the '=' in it, is dropped; empty pieces ("a=1;;b=2", a
//     trailing ';') are no pairs.
//   - A pair splits at its first '=': "a=b=c" is a = "b=c" (base64 values).
//     "a=" is a with an empty value.
//   - Values are returned as sent: not percent-decoded (cookies have no
//     standard encoding: decode with DecodeFormComponent() if yours are
//     encoded). A value in DQUOTEs ("a=\"x y\"") is returned without them.
//   - Malformed pairs are skipped, and the pairs around them kept: no '='
//     ("flag"), an empty name ("=x"), a name that is not an RFC 9110 token
//     ("a b=1", "a\"=1"), or a DQUOTE anywhere but around the whole value
//     ("a=\"x", "a=x\"y"). Other bytes in a value (spaces inside it,
//     commas, backslashes, UTF-8) are kept: clients send what servers set.
//   - Names are compared byte for byte (case-sensitive); with a name
//     repeated, FindCookie gives the first (RFC 6265 5.4 puts the cookie
//     with the longer path first).
//
// Thread-safety: views; any thread.
#ifndef URING_HTTP_SRC_HTTP_COOKIES_H_
#define URING_HTTP_SRC_HTTP_COOKIES_H_

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace uring_http::http {

struct CookiePair {
  std::string_view name;
  std::string_view value;  // without surrounding DQUOTEs; may be empty
};

// The well-formed pairs of one Cookie header value, in order.
class CookieRange {
 public:
  class iterator {
   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // references are into the iterator
    using value_type = CookiePair;
    using difference_type = std::ptrdiff_t;
    using pointer = const CookiePair*;
    using reference = const CookiePair&;

    iterator() = default;
    const CookiePair& operator*() const { return current_; }
    const CookiePair* operator->() const { return &current_; }
    iterator& operator++() {
      Load();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return pos_ == other.pos_; }

   private:
    friend class CookieRange;
    iterator(const char* pos, const char* end) : next_(pos), end_(end) { Load(); }
    void Load();  // reads the next well-formed pair from next_ on

    const char* pos_ = nullptr;   // start of current_'s piece; null at the end
    const char* next_ = nullptr;  // where the next piece starts
    const char* end_ = nullptr;
    CookiePair current_;
  };

  CookieRange() = default;
  explicit CookieRange(std::string_view header_value) : value_(header_value) {}

  iterator begin() const { return iterator(value_.data(), value_.data() + value_.size()); }
  iterator end() const { return iterator(); }

 private:
  std::string_view value_;
};

// The value of the first well-formed cookie named `name` in one Cookie
// header value; nullopt when there is none (an empty value is "").
std::optional<std::string_view> FindCookie(std::string_view header_value, std::string_view name);

}  // namespace uring_http::http

#endif  // URING_HTTP_SRC_HTTP_COOKIES_H_
