// libFuzzer target for http2::Session: arbitrary bytes as a client's side
// of a connection, after the valid preface in half of the cases (so that
// the fuzzer gets past it), cut into chunks the input chooses, with Send
// drained after each chunk at a cap the input chooses and the clock moved
// on by the input. The events answer as a connection would, chosen by the
// stream and the input: responses with bodies, HEAD-like ones, 100s,
// trailers, resets, Consume, more data on OnStreamWritable, now and then a
// Shutdown or Terminate. Checked: no crash, leak or sanitizer report
// (nothing a peer sends may reach a URING_CHECK); events only for streams
// in the right state (no event after OnStreamClosed, OnStreamClosed once
// and only after OnRequest/OnRequestRefused); open_streams() agrees; a
// failed session stays failed; every view of a head is readable.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] //test/http2:session_fuzz
// Replay: bazel run //test/http2:session_fuzz -- FILE_OR_DIR...
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "src/http2/session.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::http2 {
namespace {

// Reads choices from the front of the input, zeros once it runs out.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

enum class State : uint8_t { kOpen, kClosed };

class FuzzEvents : public SessionEvents {
 public:
  FuzzEvents(Session** session, uint8_t mood) : session_(session), mood_(mood) {}

  void OnRequest(int32_t id, const RequestHead& head) override {
    Announce(id);
    size_t sum = 0;  // reads every view: ASan catches a dangling one
    for (std::string_view v : {head.method, head.scheme, head.authority, head.path}) sum += Touch(v);
    for (size_t i = 0; i < head.num_headers; ++i) sum += Touch(head.headers[i].name) + Touch(head.headers[i].value);
    FUZZ_CHECK(head.head_bytes >= head.method.size() + head.path.size());
    React(id, static_cast<uint8_t>(sum + mood_), head.expect_continue);
  }
  void OnRequestRefused(int32_t id, int status) override {
    Announce(id);
    FUZZ_CHECK(status == 431);
    S().SubmitResponse(id, status, {}, (mood_ & 1) != 0);
    if (mood_ & 1) S().EndData(id);
  }
  void OnRequestData(int32_t id, std::string_view data) override {
    Live(id);
    Touch(data);
    if ((mood_ & 6) != 6) S().Consume(id, data.size());  // sometimes a handler that never reads
  }
  void OnRequestTrailers(int32_t id, const http::Header* fields, size_t n) override {
    Live(id);
    for (size_t i = 0; i < n; ++i) Touch(fields[i].name), Touch(fields[i].value);
  }
  void OnRequestEnd(int32_t id) override {
    Live(id);
    if (!responded_[id]) React(id, static_cast<uint8_t>(id * 7 + mood_), false);
  }
  void OnStreamClosed(int32_t id, uint32_t) override {
    Live(id);
    streams_[id] = State::kClosed;
    --open_;
  }
  void OnStreamWritable(int32_t id) override {
    Live(id);
    if (++writes_[id] < 8) {
      S().WriteData(id, std::string(5000, 'w'));
    } else if (!ended_[id]) {
      ended_[id] = true;
      S().EndData(id);
    }
  }

  size_t open() const { return open_; }
  // Stream 1 of an h2c upgrade: no OnRequest (HTTP/1 had the request); it
  // is answered at once.
  void Upgraded() {
    Announce(1);
    React(1, static_cast<uint8_t>(mood_ | 4), false);
  }

 private:
  Session& S() { return **session_; }
  static size_t Touch(std::string_view v) {
    size_t sum = 0;
    for (char c : v) sum += static_cast<unsigned char>(c);
    return sum;
  }
  void Announce(int32_t id) {
    FUZZ_CHECK(streams_.count(id) == 0);  // one head per stream, never after its close
    streams_[id] = State::kOpen;
    ++open_;
  }
  void Live(int32_t id) {
    auto it = streams_.find(id);
    FUZZ_CHECK(it != streams_.end() && it->second == State::kOpen);
  }
  void React(int32_t id, uint8_t how, bool expect_continue) {
    if (expect_continue && (how & 1)) S().SubmitContinue(id);
    switch (how % 8) {
      case 0:
        break;  // answer later (at OnRequestEnd), or never
      case 1:
        S().ResetStream(id, NGHTTP2_CANCEL);
        break;
      case 2: {
        http::HeaderTable fields;
        fields.Add("Content-Length", "0");
        fields.Add("Connection", "close");
        responded_[id] = S().SubmitResponse(id, 204, fields, false);
        FUZZ_CHECK(S().WriteData(id, "x") == 0);
        break;
      }
      case 3:
        if (how & 0x80) S().Shutdown();
        [[fallthrough]];
      default: {
        http::HeaderTable fields;
        fields.Add("Content-Type", "text/plain");
        if (!S().SubmitResponse(id, 200, fields, true)) break;
        responded_[id] = true;
        S().WriteData(id, std::string(static_cast<size_t>(how) * 300, 'b'));
        if (how % 8 == 4) {
          http::HeaderTable trailers;
          trailers.Add("grpc-status", "0");
          ended_[id] = S().EndData(id, &trailers);
        } else if (how % 8 == 5) {
          ended_[id] = S().EndData(id);
        }  // else: more on OnStreamWritable, or never
        break;
      }
    }
    if (how == 0xff) S().Terminate(NGHTTP2_ENHANCE_YOUR_CALM);
  }

  Session** session_;
  uint8_t mood_;
  std::map<int32_t, State> streams_;
  std::map<int32_t, bool> responded_, ended_;
  std::map<int32_t, int> writes_;
  size_t open_ = 0;
};

constexpr size_t kMaxInput = 4096;

}  // namespace
}  // namespace uring_http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uring_http::http2;
  if (size > kMaxInput) return 0;
  Choices choose(data, size);
  const uint8_t mode = choose.Byte();
  const uint8_t mood = choose.Byte();
  const uint8_t limits = choose.Byte();
  const size_t header_bytes = 3;
  const uint8_t* rest = data + std::min(size, header_bytes);
  const size_t rest_size = size - std::min(size, header_bytes);

  SessionSettings settings;
  if (limits & 1) settings.max_header_list_size = 256 + (limits & 0xf0) * 4;
  if (limits & 2) settings.initial_window_size = 1024;
  if (limits & 4) settings.max_concurrent_streams = 2;
  if (limits & 8) {
    settings.flood.max_ping = settings.flood.max_settings = settings.flood.max_priority = 4;
    settings.flood.max_rst_stream = settings.flood.max_window_update = settings.flood.max_empty_data = 4;
  }
  int64_t now = 0;
  Session* session = nullptr;
  FuzzEvents events(&session, mood);
  Session server(&events, settings, [&now] { return now; });
  session = &server;
  if (mode & 0x40) {
    const std::string h2settings = "AAMAAABkAARAAAAA";  // a typical HTTP2-Settings value
    if (server.Upgrade(h2settings, (mode & 0x80) != 0)) events.Upgraded();
  }

  std::string input;
  if (mode & 1) {
    input.assign(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    input.append("\0\0\0\x04\0\0\0\0\0", 9);  // an empty SETTINGS frame
  }
  input.append(reinterpret_cast<const char*>(rest), rest_size);

  // Chunk sizes and Send caps from the mode: whole, small, one byte...
  static constexpr size_t kChunks[] = {1 << 20, 1, 7, 64, 1000};
  static constexpr size_t kCaps[] = {16384, 1, 10, 100, 65536};
  const size_t chunk = kChunks[(mode >> 1) % 5];
  const size_t cap = kCaps[(mode >> 4) % 4];
  std::string out(cap, '\0');
  bool failed = false;
  for (size_t at = 0; at < input.size(); at += chunk) {
    const size_t n = std::min(chunk, input.size() - at);
    const bool ok = server.Receive(input.data() + at, n);
    if (failed) FUZZ_CHECK(!ok);  // a failed session stays failed
    if (!ok) {
      failed = true;
      FUZZ_CHECK(!server.failure().empty());
      FUZZ_CHECK(!server.WantsRead());
      FUZZ_CHECK(server.open_streams() == 0);
    }
    for (int turns = 0; turns < 10000; ++turns) {
      const size_t sent = server.Send(out.data(), cap);
      FUZZ_CHECK(sent <= cap);
      if (sent == 0) break;
    }
    FUZZ_CHECK(server.open_streams() == events.open());
    now += static_cast<int64_t>(input[at]) & 0x3ff;
  }
  return 0;
}
