// Captures what this process writes to stderr (fd 2) while it lives: the
// server's error lines (src/base/error_log.h) as an operator would see them.
// The file is read, not a pipe: nothing can block the writer.
//
// The error log writes at most kErrorLinesPerSecond lines per second for
// the whole process, so a test that counts lines starts in a fresh second
// (WaitForFreshSecond) and logs fewer than that.
#ifndef URING_HTTP_TEST_SERVING_STDERR_CAPTURE_H_
#define URING_HTTP_TEST_SERVING_STDERR_CAPTURE_H_

#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::testing {

class StderrCapture {
 public:
  StderrCapture() {
    std::string path = ::testing::TempDir() + "/stderr.XXXXXX";
    fd_ = mkstemp(path.data());
    unlink(path.c_str());
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    dup2(fd_, STDERR_FILENO);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    // What was captured goes to the real stderr too, for a failing test's log.
    const std::string text = Text();
    if (!text.empty()) {
      (void)!write(STDERR_FILENO, text.data(), text.size());
    }
    close(fd_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string Text() const {
    std::string out;
    char buf[8192];
    ssize_t n;
    off_t at = 0;
    while ((n = pread(fd_, buf, sizeof(buf), at)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
    return out;
  }
  // The captured lines that contain every one of `parts`.
  std::vector<std::string> Lines(std::initializer_list<std::string_view> parts) const {
    std::vector<std::string> out;
    const std::string text = Text();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string_view line(text.data() + pos, end - pos);
      bool all = true;
      for (std::string_view p : parts) all = all && line.find(p) != std::string_view::npos;
      if (all) out.emplace_back(line);
      pos = end + 1;
    }
    return out;
  }
  // Waits (generously) until `count` lines contain every one of `parts`.
  std::vector<std::string> WaitForLines(size_t count,
                                        std::initializer_list<std::string_view> parts,
                                        std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<std::string> lines = Lines(parts);
    while (lines.size() < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lines = Lines(parts);
    }
    return lines;
  }

 private:
  int fd_ = -1;
  int saved_ = -1;
};

// Returns at the start of a second of CLOCK_MONOTONIC_COARSE (the error
// log's clock), so that the lines a test logs next are not refused for
// earlier tests' lines in the same second.
inline void WaitForFreshSecond() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const time_t start = ts.tv_sec;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  } while (ts.tv_sec == start);
}

}  // namespace uring_http::testing

#endif  // URING_HTTP_TEST_SERVING_STDERR_CAPTURE_H_
