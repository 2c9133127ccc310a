// libFuzzer target for ChunkedDecoder: decodes the input whole, split at
// positions derived from the input and one byte at a time, and checks that
// every way of feeding it gives the same status, body, consumed count and
// error status; that data views lie inside the consumed part of the piece
// they came from; and that all of it agrees with a plain, non-incremental
// reference decoder below, written as recursive descent over the grammar.
// Each is done under the default limits, small ones, and limits chosen by
// the fuzzer from the first bytes.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] chunked_fuzz
// Replay: bazel run //test/http:chunked_fuzz -- FILE_OR_DIR...  (without
//         --config=fuzz the main at the bottom replays instead of fuzzing)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/http/chunked_decoder.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http {
namespace {


using Status = ChunkedDecoder::Status;

// Longer inputs add nothing the decoder has not seen and slow every run down.
constexpr size_t kMaxInput = 4096;

// What feeding a whole input ends in, however it was split.
struct Outcome {
  Status status = Status::kNeedMore;  // kNeedMore, kDone or kError
  std::string body;
  size_t consumed = 0;  // kError: where the offending byte is
  int error_status = 0;

  bool operator==(const Outcome&) const = default;
};

// ---------------------------------------------------------------------------
// The reference: the whole input at once, each rule of the grammar a
// function. Each returns true when its part was there and valid, and false
// when the input ran out (out_ says kNeedMore) or broke the grammar (out_
// says kError, at pos_). Limits are judged after the grammar, byte by byte.

bool IsTchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') ||
         (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsHex(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

bool IsBwsChar(unsigned char c) { return c == ' ' || c == '\t'; }

bool IsQdtext(unsigned char c) {
  return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
         (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

bool IsQuotedPairChar(unsigned char c) {
  return c == '\t' || c == ' ' || (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

bool IsFieldValueChar(unsigned char c) {
  return c == '\t' || c == ' ' || (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

class Reference {
 public:
  Reference(std::string_view in, const ChunkedLimits& limits)
      : in_(in), limits_(limits) {}

  Outcome Run() {
    if (ChunkedBody()) {
      out_.status = Status::kDone;
      out_.consumed = pos_;
    }
    return out_;
  }

 private:
  bool AtEnd() const { return pos_ == in_.size(); }
  unsigned char Peek() const { return static_cast<unsigned char>(in_[pos_]); }

  bool NeedMore() {
    out_.status = Status::kNeedMore;
    out_.consumed = in_.size();
    return false;
  }
  bool Error(int status) {
    out_.status = Status::kError;
    out_.error_status = status;
    out_.consumed = pos_;
    return false;
  }
  bool Expect(char c) {
    if (AtEnd()) return NeedMore();
    if (in_[pos_] != c) return Error(400);
    ++pos_;
    return true;
  }
  bool Crlf() { return Expect('\r') && Expect('\n'); }

  // chunked-body = *chunk last-chunk trailer-section CRLF
  bool ChunkedBody() {
    for (;;) {
      uint64_t size = 0;
      if (!ChunkSize(&size) || !ChunkExt() || !Crlf()) return false;
      if (size == 0) break;
      if (in_.size() - pos_ < size) {
        out_.body.append(in_.substr(pos_));
        return NeedMore();
      }
      out_.body.append(in_.substr(pos_, size));
      pos_ += size;
      if (!Crlf()) return false;
    }
    return TrailerSection() && Crlf();
  }

  bool ChunkSize(uint64_t* size) {
    size_t digits = 0;
    uint64_t n = 0;
    while (!AtEnd() && IsHex(Peek())) {
      if (++digits > limits_.max_size_digits) return Error(400);
      if ((n >> 60) != 0) return Error(400);  // one more digit overflows
      const unsigned char c = Peek();
      const uint64_t v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      n = n * 16 + v;
      ++pos_;
    }
    if (AtEnd()) return NeedMore();
    if (digits == 0) return Error(400);
    *size = n;
    return true;
  }

  // Takes one chunk-ext byte, already known to fit the grammar.
  bool TakeExt() {
    if (++ext_bytes_ > limits_.max_extension_bytes) return Error(400);
    ++pos_;
    return true;
  }

  bool Bws(bool* any) {
    *any = false;
    while (!AtEnd() && IsBwsChar(Peek())) {
      if (!TakeExt()) return false;
      *any = true;
    }
    return true;
  }

  bool Token() {
    if (AtEnd()) return NeedMore();
    if (!IsTchar(Peek())) return Error(400);
    while (!AtEnd() && IsTchar(Peek())) {
      if (!TakeExt()) return false;
    }
    return true;
  }

  bool QuotedString() {
    if (!TakeExt()) return false;  // the opening DQUOTE
    for (;;) {
      if (AtEnd()) return NeedMore();
      const unsigned char c = Peek();
      if (c == '"') return TakeExt();
      if (c == '\\') {
        if (!TakeExt()) return false;
        if (AtEnd()) return NeedMore();
        if (!IsQuotedPairChar(Peek())) return Error(400);
        if (!TakeExt()) return false;
      } else if (IsQdtext(c)) {
        if (!TakeExt()) return false;
      } else {
        return Error(400);
      }
    }
  }

  // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ), up to the CR.
  bool ChunkExt() {
    ext_bytes_ = 0;
    bool ws = false;
    if (!Bws(&ws)) return false;
    for (;;) {
      if (AtEnd()) return NeedMore();
      if (Peek() == '\r' && !ws) return true;  // BWS must lead to a ';'
      if (Peek() != ';') return Error(400);
      if (!TakeExt() || !Bws(&ws) || !Token() || !Bws(&ws)) return false;
      if (AtEnd()) return NeedMore();
      if (Peek() != '=') continue;
      if (!TakeExt() || !Bws(&ws)) return false;
      if (AtEnd()) return NeedMore();
      if (Peek() == '"') {
        if (!QuotedString()) return false;
      } else if (!Token()) {
        return false;
      }
      if (!Bws(&ws)) return false;
    }
  }

  bool TakeTrailer() {
    if (++trailer_bytes_ > limits_.max_trailer_bytes) return Error(431);
    ++pos_;
    return true;
  }

  // trailer-section = *( field-name ":" OWS field-value OWS CRLF ); stops
  // at the CR of the final CRLF.
  bool TrailerSection() {
    size_t count = 0;
    for (;;) {
      if (AtEnd()) return NeedMore();
      if (Peek() == '\r') return true;
      if (!IsTchar(Peek())) return Error(400);
      if (++count > limits_.max_trailers) return Error(431);
      while (!AtEnd() && IsTchar(Peek())) {
        if (!TakeTrailer()) return false;
      }
      if (AtEnd()) return NeedMore();
      if (Peek() != ':') return Error(400);
      if (!TakeTrailer()) return false;
      while (!AtEnd() && IsFieldValueChar(Peek())) {
        if (!TakeTrailer()) return false;
      }
      if (AtEnd()) return NeedMore();
      if (Peek() != '\r') return Error(400);
      if (!TakeTrailer()) return false;
      if (AtEnd()) return NeedMore();
      if (Peek() != '\n') return Error(400);
      if (!TakeTrailer()) return false;
    }
  }

  std::string_view in_;
  ChunkedLimits limits_;
  size_t pos_ = 0;
  size_t ext_bytes_ = 0;
  size_t trailer_bytes_ = 0;
  Outcome out_;
};

// ---------------------------------------------------------------------------
// The decoder under test, fed in pieces cut at the ascending offsets `cuts`.
// Each piece is a private heap copy of exactly its bytes, so that
// AddressSanitizer reports any read past it.
Outcome Feed(std::string_view input, const ChunkedLimits& limits,
             const std::vector<size_t>& cuts) {
  ChunkedDecoder d(limits);
  Outcome out;
  size_t start = 0;
  for (size_t p = 0; p <= cuts.size(); ++p) {
    const size_t end = p < cuts.size() ? cuts[p] : input.size();
    FUZZ_CHECK(start <= end && end <= input.size());
    const size_t size = end - start;
    std::unique_ptr<char[]> copy(new char[size]);
    if (size > 0) std::memcpy(copy.get(), input.data() + start, size);
    std::string_view in(copy.get(), size);
    while (!in.empty()) {
      const ChunkedDecoder::Result r = d.Decode(in);
      FUZZ_CHECK(r.consumed <= in.size());
      if (r.status == Status::kData) {
        FUZZ_CHECK(!r.data.empty());
        FUZZ_CHECK(r.data.data() >= in.data());
        FUZZ_CHECK(r.data.data() + r.data.size() <= in.data() + r.consumed);
        out.body.append(r.data);
      } else {
        FUZZ_CHECK(r.data.empty());
      }
      if (r.status == Status::kNeedMore) FUZZ_CHECK(r.consumed == in.size());
      if (r.status == Status::kError) {
        FUZZ_CHECK(r.error_status == 400 || r.error_status == 431);
      } else {
        FUZZ_CHECK(r.error_status == 0);
      }
      FUZZ_CHECK(d.body_bytes() == out.body.size());
      FUZZ_CHECK(d.trailer_count() <= limits.max_trailers);
      if (r.status == Status::kDone || r.status == Status::kError) {
        FUZZ_CHECK(d.done() == (r.status == Status::kDone));
        FUZZ_CHECK(d.failed() == (r.status == Status::kError));
        const ChunkedDecoder::Result again = d.Decode(in.substr(r.consumed));
        FUZZ_CHECK(again.status == r.status && again.consumed == 0 &&
                   again.error_status == r.error_status);
        out.status = r.status;
        out.consumed = start + static_cast<size_t>(in.data() - copy.get()) +
                       r.consumed;
        out.error_status = r.error_status;
        return out;
      }
      in.remove_prefix(r.consumed);
    }
    start = end;
  }
  FUZZ_CHECK(!d.done() && !d.failed());
  out.consumed = input.size();
  return out;
}

void CheckOne(std::string_view input, const ChunkedLimits& limits) {
  const Outcome expected = Reference(input, limits).Run();
  const size_t n = input.size();
  FUZZ_CHECK(expected.consumed <= n);

  FUZZ_CHECK(Feed(input, limits, {}) == expected);

  // Cut positions from the input itself, so that the fuzzer can steer them.
  const unsigned seed = n > 0 ? static_cast<unsigned char>(input[0]) : 0;
  FUZZ_CHECK(Feed(input, limits, {seed % (n + 1)}) == expected);
  FUZZ_CHECK(Feed(input, limits, {n / 2, n / 2 + seed % (n - n / 2 + 1)}) ==
             expected);

  std::vector<size_t> cuts;
  const size_t step = seed % 13 + 1;
  for (size_t k = step; k < n; k += step) cuts.push_back(k);
  FUZZ_CHECK(Feed(input, limits, cuts) == expected);

  // Irregular cuts, from an FNV-1a hash of the input.
  uint64_t h = 1469598103934665603ull;
  for (char c : input) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  cuts.clear();
  for (size_t k = 0; k < n;) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    k += 1 + (h >> 33) % 24;
    if (k < n) cuts.push_back(k);
  }
  FUZZ_CHECK(Feed(input, limits, cuts) == expected);

  cuts.clear();
  for (size_t k = 1; k < n; ++k) cuts.push_back(k);
  FUZZ_CHECK(Feed(input, limits, cuts) == expected);

  // A prefix needs more (with a prefix of the body) before the deciding
  // byte, and agrees with the whole from there on.
  const size_t decided = expected.status == Status::kError ? expected.consumed + 1
                         : expected.status == Status::kDone ? expected.consumed
                                                            : n + 1;
  for (size_t k : {seed % (n + 1), decided - 1, decided}) {
    if (k > n) continue;
    const Outcome prefix = Feed(input.substr(0, k), limits, {});
    if (k < decided) {
      FUZZ_CHECK(prefix.status == Status::kNeedMore && prefix.consumed == k);
      FUZZ_CHECK(expected.body.compare(0, prefix.body.size(), prefix.body) ==
                 0);
    } else {
      FUZZ_CHECK(prefix == expected);
    }
  }
}

}  // namespace
}  // namespace uring_http::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using uring_http::http::CheckOne;
  using uring_http::http::ChunkedLimits;
  using uring_http::http::kMaxInput;
  if (size > kMaxInput) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  CheckOne(input, ChunkedLimits{});

  ChunkedLimits small;
  small.max_size_digits = 3;
  small.max_extension_bytes = 8;
  small.max_trailer_bytes = 16;
  small.max_trailers = 2;
  CheckOne(input, small);

  // Limits chosen by the fuzzer from the first four bytes, so that it can
  // steer inputs onto every limit's boundary, the digit limit past 16 (where
  // only the overflow check stops a size) included.
  if (size >= 4) {
    ChunkedLimits chosen;
    chosen.max_size_digits = data[0] % 24;
    chosen.max_extension_bytes = data[1];
    chosen.max_trailer_bytes = data[2];
    chosen.max_trailers = data[3] % 8;
    CheckOne(input.substr(4), chosen);
  }
  return 0;
}

