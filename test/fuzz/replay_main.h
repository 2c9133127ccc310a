// What every fuzz target of the project shares: FUZZ_CHECK, which aborts
// (libFuzzer keeps the input as a reproducer), and a weak main() that
// replays files given as arguments (and the files in directories given),
// so that without --config=fuzz each target is a corpus replayer that runs
// in every `bazel test`, sanitizer configs included. Weak, because
// -fsanitize=fuzzer links libFuzzer's main as a whole archive: with it,
// libFuzzer's main wins (and runs files given by name just the same).
//
// Include it in exactly one file of a fuzz target, after defining
// LLVMFuzzerTestOneInput's prototype (it is declared here too).
#ifndef URING_HTTP_TEST_FUZZ_REPLAY_MAIN_H_
#define URING_HTTP_TEST_FUZZ_REPLAY_MAIN_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace uring_http::fuzz {

inline bool Replay(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  const std::string bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  // An exact-size heap copy: a read past the input is an ASan report.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  return true;
}

}  // namespace uring_http::fuzz

__attribute__((weak)) int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.push_back(arg);
    }
    for (const auto& f : files) {
      if (!uring_http::fuzz::Replay(f)) {
        std::fprintf(stderr, "cannot read %s\n", f.c_str());
        return 1;
      }
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  // Nothing replayed means a broken corpus path, not a pass.
  return replayed > 0 ? 0 : 1;
}

#endif  // URING_HTTP_TEST_FUZZ_REPLAY_MAIN_H_
