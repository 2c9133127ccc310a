#include "src/files/encodings.h"

namespace uring_http::files {

std::string_view SiblingSuffix(Encoding e) {
  switch (e) {
    case Encoding::kGzip:
      return ".gz";
    case Encoding::kBrotli:
      return ".br";
    case Encoding::kZstd:
      return ".zst";
    case Encoding::kIdentity:
      break;
  }
  return "";
}

std::string_view EtagSuffix(Encoding e) {
  switch (e) {
    case Encoding::kGzip:
      return "-gz";
    case Encoding::kBrotli:
      return "-br";
    case Encoding::kZstd:
      return "-zst";
    case Encoding::kIdentity:
      break;
  }
  return "";
}

std::string_view EncodingToken(Encoding e) {
  switch (e) {
    case Encoding::kGzip:
      return "gzip";
    case Encoding::kBrotli:
      return "br";
    case Encoding::kZstd:
      return "zstd";
    case Encoding::kIdentity:
      break;
  }
  return "";
}

bool SiblingIsCurrent(const FileVersion& original, const FileVersion& sibling) {
  if (sibling.mtime_sec != original.mtime_sec) return sibling.mtime_sec > original.mtime_sec;
  return sibling.mtime_nsec >= original.mtime_nsec;
}

Encoding ChooseSibling(const http::AcceptEncoding& accept, uint8_t present) {
  const int identity = accept.IdentityWeight();
  Encoding best = Encoding::kIdentity;
  int best_weight = 0;
  // In order of preference on a tie: a later one wins only by weighing more.
  for (Encoding e : {Encoding::kBrotli, Encoding::kZstd, Encoding::kGzip}) {
    if ((present & EncodingBit(e)) == 0) continue;
    const int w = accept.CodingWeight(EncodingToken(e));
    if (w <= 0 || w < identity || w <= best_weight) continue;
    best = e;
    best_weight = w;
  }
  return best;
}

}  // namespace uring_http::files
