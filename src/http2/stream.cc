#include "src/http2/stream.h"

#include <utility>
#include <vector>

namespace uring_http::http2::internal {
namespace {

// Per thread, as codec_memory.h's blocks are: the sessions of a ring thread
// share one set, so a warm thread's streams come from here (no allocation)
// and a connection between requests holds no Stream (about 1.6 KB, most of
// it the inline header table of its response trailers).
struct Spares {
  std::vector<std::unique_ptr<Stream>> streams;
  Spares();
  ~Spares();
};

// Readable through the thread's exit, as codec_memory.cc's: a session
// destroyed after this thread's Spares frees its streams instead.
enum : uint8_t { kNotYet = 0, kAlive = 1, kGone = 2 };
thread_local uint8_t t_state = kNotYet;
thread_local Spares t_spares;

Spares::Spares() {
  streams.reserve(kSpareStreams);  // GiveBackStream never grows it
  t_state = kAlive;
}
Spares::~Spares() { t_state = kGone; }

}  // namespace

std::unique_ptr<Stream> TakeStream() {
  if (t_state != kGone) {
    std::vector<std::unique_ptr<Stream>>& v = t_spares.streams;
    if (!v.empty()) {
      std::unique_ptr<Stream> s = std::move(v.back());
      v.pop_back();
      return s;
    }
  }
  return std::make_unique<Stream>();
}

void GiveBackStream(std::unique_ptr<Stream> s) {
  if (t_state == kGone) return;  // freed here
  std::vector<std::unique_ptr<Stream>>& v = t_spares.streams;
  if (v.size() >= kSpareStreams) return;
  s->Trim();
  v.push_back(std::move(s));
}

size_t SpareStreams() { return t_state == kGone ? 0 : t_spares.streams.size(); }

}  // namespace uring_http::http2::internal
