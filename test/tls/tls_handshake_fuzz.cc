// libFuzzer target for the server side of a TlsSession (src/tls/
// tls_session.h): arbitrary bytes from a "client", fed in arbitrary pieces
// to a fresh server SSL from a TlsContext (an EC certificate for localhost,
// the default, and an RSA one for other.test) made once with certificates
// generated at start-up. Whatever arrives: no crash, no leak, no write past
// the output, and the session's statuses keep their promises (kNeedMore
// consumed everything, kFailed says why, plaintext stays within its buffer,
// a completed handshake can encrypt and close).
//
// Input: byte 0 is a header:
//   bits 0-2  m: the next m bytes are piece sizes, used in turn (0: the
//             rest at once); m == 0 feeds the rest in one piece
//   bits 3-4  the handshake gate (TlsContext::SetGate): 0 none, 1 inline,
//             2 offload RSA, 3 offload all (a suspended step goes on as
//             the TlsLayer and its worker would run it)
//   bit  5    a 1-byte plaintext buffer (kPlainFull on every byte)
// then the piece sizes, then the bytes fed.
//
// Fuzz:   test/fuzz/run_fuzz.sh [seconds] //test/tls:tls_handshake_fuzz
// Replay: bazel run //test/tls:tls_handshake_fuzz -- FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "src/tls/ticket_keys.h"
#include "src/tls/tls_context.h"
#include "src/tls/tls_session.h"
#include "test/tls/test_certs.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::tls {
namespace {

// The TlsLayer's output chunk.
constexpr size_t kOutputBytes = 96 * 1024;

const TlsContext& Context() {
  static const std::shared_ptr<const TlsContext> context = [] {
    // The files are needed only while Create loads them.
    testing::ScratchDir dir;
    TlsSettings settings;
    settings.certificates = {
        testing::TestCertificate::Generate(testing::KeyType::kEcP256, {"localhost"})
            .WriteTo(dir.path(), "ec"),
        testing::TestCertificate::Generate(testing::KeyType::kRsa2048, {"other.test"})
            .WriteTo(dir.path(), "rsa"),
    };
    auto c = TlsContext::Create(settings, std::make_shared<TicketKeys>(3600));
    if (!c.ok()) {
      std::fprintf(stderr, "TlsContext::Create: %s\n", std::string(c.status().message()).c_str());
      std::abort();
    }
    return *c;
  }();
  return *context;
}

class Harness {
 public:
  Harness(HandshakeGate* gate, size_t plain_cap)
      : gate_(gate), out_(new char[kOutputBytes]), plain_(new char[plain_cap]),
        plain_cap_(plain_cap) {
    SSL* ssl = Context().NewSsl();
    FUZZ_CHECK(ssl != nullptr);
    if (gate_ != nullptr) TlsContext::SetGate(ssl, gate_);
    session_.Start(ssl);
    session_.SetOutput(out_.get(), kOutputBytes, 0);
  }

  // Feeds one piece; false once the session is over (failed or closed).
  bool Feed(const char* data, size_t len) {
    size_t got = 0;
    TlsSession::Status st = session_.Feed(data, len, plain_.get(), plain_cap_, &got);
    for (;;) {
      FUZZ_CHECK(got <= plain_cap_);
      FUZZ_CHECK(session_.output_len() <= kOutputBytes);
      if (got > 0) FUZZ_CHECK(session_.handshake_done());
      plain_total_ += got;
      AfterHandshake();
      switch (st) {
        case TlsSession::Status::kPlainFull:
          FUZZ_CHECK(got == plain_cap_);
          st = session_.Feed(nullptr, 0, plain_.get(), plain_cap_, &got);
          continue;
        case TlsSession::Status::kSuspended:
          FUZZ_CHECK(gate_ != nullptr && gate_->mode != HandshakeGate::Mode::kInline);
          FUZZ_CHECK(!session_.handshake_done() && !session_.failed());
          // Once per ClientHello (a HelloRetryRequest brings a second).
          FUZZ_CHECK(++suspensions_ <= 2);
          gate_->on_worker = true;
          if (session_.input_left() == 0) {
            // The worker's step, then the result as the ring sees it.
            st = session_.Handshake();
            gate_->on_worker = false;
            FUZZ_CHECK(st != TlsSession::Status::kSuspended &&
                       st != TlsSession::Status::kPlainFull &&
                       st != TlsSession::Status::kPeerClosed);
            got = 0;
            continue;
          }
          // Input left (valid only now): the step runs at once.
          st = session_.Feed(nullptr, 0, plain_.get(), plain_cap_, &got);
          gate_->on_worker = false;
          continue;
        case TlsSession::Status::kNeedMore:
          FUZZ_CHECK(session_.input_left() == 0);
          FUZZ_CHECK(!session_.failed());
          Sent();
          return true;
        case TlsSession::Status::kPeerClosed:
          FUZZ_CHECK(session_.handshake_done());
          Sent();
          return false;
        case TlsSession::Status::kFailed:
          FUZZ_CHECK(session_.failed());
          FUZZ_CHECK(session_.error() != nullptr && session_.error()[0] != '\0');
          FUZZ_CHECK(!session_.CloseNotify());
          // Failed stays failed.
          FUZZ_CHECK(session_.Feed("x", 1, plain_.get(), plain_cap_, &got) ==
                     TlsSession::Status::kFailed);
          FUZZ_CHECK(got == 0);
          Sent();
          return false;
      }
    }
  }

 private:
  // The layer's answer to a completed handshake: a small response, and
  // once in a while the close.
  void AfterHandshake() {
    if (!session_.TakeHandshakeCompleted()) return;
    FUZZ_CHECK(session_.handshake_done());
    // Completed, then a bad record in the same Feed: nothing to answer.
    if (session_.failed()) return;
    static constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    const size_t n = session_.Encrypt(kResponse, sizeof(kResponse) - 1);
    FUZZ_CHECK(n == sizeof(kResponse) - 1);
    FUZZ_CHECK(kOutputBytes - session_.output_len() >= TlsSession::kFeedHeadroom);
    FUZZ_CHECK(session_.CloseNotify());
  }

  // The ring sent the output.
  void Sent() { session_.ClearOutput(); }

  HandshakeGate* const gate_;
  std::unique_ptr<char[]> out_;
  std::unique_ptr<char[]> plain_;
  const size_t plain_cap_;
  TlsSession session_;
  size_t plain_total_ = 0;
  int suspensions_ = 0;
};

void Run(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t header = data[0];
  ++data;
  --size;
  size_t m = header & 7;
  if (m > size) m = size;
  const uint8_t* splits = data;
  data += m;
  size -= m;

  HandshakeGate gate;
  HandshakeGate* g = nullptr;
  switch ((header >> 3) & 3) {
    case 0:
      break;
    case 1:
      gate.mode = HandshakeGate::Mode::kInline;
      g = &gate;
      break;
    case 2:
      gate.mode = HandshakeGate::Mode::kOffloadRsa;
      g = &gate;
      break;
    case 3:
      gate.mode = HandshakeGate::Mode::kOffloadAll;
      g = &gate;
      break;
  }
  Harness h(g, (header & 0x20) ? 1 : 16 * 1024);

  // Each piece in its own exact-size heap copy: a read past a piece is an
  // ASan report, as a read past the ring's receive buffer would be.
  size_t off = 0;
  size_t turn = 0;
  do {
    size_t n = size - off;
    if (m > 0) {
      const size_t want = splits[turn++ % m];
      if (want != 0 && want < n) n = want;
    }
    std::unique_ptr<char[]> piece(new char[n]);
    if (n > 0) std::memcpy(piece.get(), data + off, n);
    off += n;
    if (!h.Feed(piece.get(), n)) break;
  } while (off < size);
}

}  // namespace
}  // namespace uring_http::tls

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::tls::Run(data, size);
  return 0;
}
