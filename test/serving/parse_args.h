// Test helpers for TryParseOptions: argv as main() gets it, and a parse
// that expects an error naming something. For options_test and
// program_flags_test only.
#ifndef URING_HTTP_TEST_SERVING_PARSE_ARGS_H_
#define URING_HTTP_TEST_SERVING_PARSE_ARGS_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/serving/options.h"

namespace uring_http::serving::options_testing {

// argv as getopt wants it: mutable, null-terminated, owned by the test.
class Args {
 public:
  Args(std::initializer_list<std::string> args) {
    storage_.push_back(Chars("uring-http"));
    for (const std::string& a : args) storage_.push_back(Chars(a));
    for (std::vector<char>& s : storage_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(argv_.size()) - 1; }
  char** argv() { return argv_.data(); }

 private:
  static std::vector<char> Chars(const std::string& s) {
    std::vector<char> v(s.begin(), s.end());
    v.push_back('\0');
    return v;
  }
  std::vector<std::vector<char>> storage_;
  std::vector<char*> argv_;
};

inline absl::StatusOr<Options> Parse(std::initializer_list<std::string> args,
                                     const Flags* app_flags = nullptr) {
  Args a(args);
  return TryParseOptions(a.argc(), a.argv(), app_flags);
}

// Parses `args`, expecting an error whose message contains `mention`.
inline void ExpectError(std::initializer_list<std::string> args, const std::string& mention,
                        const Flags* app_flags = nullptr) {
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  absl::StatusOr<Options> options = Parse(args, app_flags);
  ASSERT_FALSE(options.ok()) << joined;
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << joined;
  const std::string message(options.status().message());
  EXPECT_NE(message.find(mention), std::string::npos)
      << "[" << joined << "] gave: " << message << " (expected it to mention " << mention << ")";
}

}  // namespace uring_http::serving::options_testing

#endif  // URING_HTTP_TEST_SERVING_PARSE_ARGS_H_
