// zlib against libdeflate for gzip response bodies: CPU per body and the
// compressed size, on three bodies like the ones the server answers (a 2 KiB
// JSON document, a 64 KiB HTML page, a 1 MiB text), at levels 1 and 6.
// The numbers chose the library (README, Compression).
//
// Run: ./bazelw run -c opt //perf:compression_benchmark
// Each row reports bytes/s of input and `ratio` (compressed / original).
//
// The bodies are generated, not shipped: words drawn from a fixed vocabulary
// with a skewed (Zipf-like) distribution by a fixed-seed generator, so they
// compress like prose and markup do (neither random nor a repeated string).
#include <libdeflate.h>
#include <zlib.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

std::vector<std::string> Vocabulary() {
  std::vector<std::string> words;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(2, 11);
  std::uniform_int_distribution<int> letter(0, 25);
  for (int i = 0; i < 3000; ++i) {
    std::string w;
    for (int n = len(rng); n > 0; --n) w.push_back(static_cast<char>('a' + letter(rng)));
    words.push_back(std::move(w));
  }
  return words;
}

class Words {
 public:
  Words() : words_(Vocabulary()), rng_(11) {}
  const std::string& Next() {
    // Zipf-like: small indices far more often than large ones.
    std::uniform_real_distribution<double> u(0, 1);
    const double x = u(rng_);
    return words_[static_cast<size_t>(x * x * x * static_cast<double>(words_.size() - 1))];
  }
  uint32_t Number() { return rng_() % 100000; }

 private:
  std::vector<std::string> words_;
  std::mt19937 rng_;
};

std::string Json(size_t size) {
  Words w;
  std::string s = "{\"items\":[";
  while (s.size() < size - 64) {
    s += "{\"id\":" + std::to_string(w.Number()) + ",\"name\":\"" + w.Next() + " " + w.Next() +
         "\",\"tags\":[\"" + w.Next() + "\",\"" + w.Next() + "\"],\"score\":" +
         std::to_string(w.Number() % 1000) + "." + std::to_string(w.Number() % 100) + "},";
  }
  s.back() = ']';
  s += "}";
  return s;
}

std::string Html(size_t size) {
  Words w;
  std::string s =
      "<!doctype html><html><head><title>Report</title><link rel=\"stylesheet\" "
      "href=\"/style.css\"></head><body><table class=\"report\">\n";
  while (s.size() < size - 32) {
    s += "<tr class=\"row\"><td class=\"id\">" + std::to_string(w.Number()) +
         "</td><td class=\"name\"><a href=\"/item/" + w.Next() + "\">" + w.Next() + " " +
         w.Next() + "</a></td><td>" + w.Next() + " " + w.Next() + " " + w.Next() + "</td></tr>\n";
  }
  s += "</table></body></html>\n";
  return s;
}

std::string Text(size_t size) {
  Words w;
  std::string s;
  int in_sentence = 0;
  while (s.size() < size) {
    s += w.Next();
    if (++in_sentence == 14) {
      s += ".\n";
      in_sentence = 0;
    } else {
      s += ' ';
    }
  }
  s.resize(size);
  return s;
}

const std::string& Body(int which) {
  static const std::string bodies[] = {Json(2 * 1024), Html(64 * 1024), Text(1 << 20)};
  return bodies[which];
}
const char* BodyName(int which) {
  static const char* names[] = {"json_2KiB", "html_64KiB", "text_1MiB"};
  return names[which];
}

// zlib with one z_stream reused through deflateReset, as the server would
// (deflateInit allocates about 256 KiB).
void BM_Zlib(benchmark::State& state) {
  const std::string& in = Body(static_cast<int>(state.range(0)));
  const int level = static_cast<int>(state.range(1));
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  size_t compressed = 0;
  for (auto _ : state) {
    deflateReset(&z);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) state.SkipWithError("deflate");
    compressed = z.total_out;
    benchmark::DoNotOptimize(out.data());
  }
  deflateEnd(&z);
  state.SetLabel(BodyName(static_cast<int>(state.range(0))));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["ratio"] = static_cast<double>(compressed) / static_cast<double>(in.size());
}

// Streamed the way a SLOW handler's Writes are: 4 KiB pieces, each followed
// by Z_SYNC_FLUSH (what keeps server-sent events prompt).
void BM_ZlibSyncFlush4K(benchmark::State& state) {
  const std::string& in = Body(static_cast<int>(state.range(0)));
  const int level = static_cast<int>(state.range(1));
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) * 2 + 4096, '\0');
  size_t compressed = 0;
  for (auto _ : state) {
    deflateReset(&z);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    for (size_t at = 0; at < in.size(); at += 4096) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + at));
      z.avail_in = static_cast<uInt>(std::min<size_t>(4096, in.size() - at));
      deflate(&z, Z_SYNC_FLUSH);
    }
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) state.SkipWithError("deflate");
    compressed = z.total_out;
    benchmark::DoNotOptimize(out.data());
  }
  deflateEnd(&z);
  state.SetLabel(BodyName(static_cast<int>(state.range(0))));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["ratio"] = static_cast<double>(compressed) / static_cast<double>(in.size());
}

void BM_Libdeflate(benchmark::State& state) {
  const std::string& in = Body(static_cast<int>(state.range(0)));
  const int level = static_cast<int>(state.range(1));
  std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> c(
      libdeflate_alloc_compressor(level), &libdeflate_free_compressor);
  std::string out(libdeflate_gzip_compress_bound(c.get(), in.size()), '\0');
  size_t compressed = 0;
  for (auto _ : state) {
    compressed = libdeflate_gzip_compress(c.get(), in.data(), in.size(), out.data(), out.size());
    if (compressed == 0) state.SkipWithError("libdeflate");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(BodyName(static_cast<int>(state.range(0))));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["ratio"] = static_cast<double>(compressed) / static_cast<double>(in.size());
}

void Args(benchmark::internal::Benchmark* b) {
  for (int body = 0; body < 3; ++body) {
    for (int level : {1, 6}) b->Args({body, level});
  }
}

BENCHMARK(BM_Zlib)->Apply(Args);
BENCHMARK(BM_ZlibSyncFlush4K)->Apply(Args);
BENCHMARK(BM_Libdeflate)->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
