// A client and a server TlsSession talking to each other in memory: what one
// writes into its output buffer is fed to the other, whole or in pieces of
// a given size, until neither has anything more to say. No sockets, no
// ring: the same TlsSession calls the TlsLayer makes.
//
// The client is an SSL from a client context (ClientContext) in connect
// state; the server's comes from a tls::TlsContext.
#ifndef URING_HTTP_TEST_TLS_SESSION_PAIR_H_
#define URING_HTTP_TEST_TLS_SESSION_PAIR_H_

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/tls/tls_context.h"
#include "src/tls/tls_session.h"

namespace uring_http::tls::testing {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;
struct SslSessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SslSessionPtr = std::unique_ptr<SSL_SESSION, SslSessionFree>;

// A client context that trusts `trusted` and verifies the server (chain
// and host name); max_version 0: TLS 1.3.
inline SslCtxPtr ClientContext(const std::vector<X509*>& trusted, int max_version = 0) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) return ctx;
  for (X509* cert : trusted) X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), cert);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  return ctx;
}

struct ClientOptions {
  std::string sni = "localhost";  // empty: no server_name extension
  std::string verify_host;        // empty: the SNI name (if any)
  std::string alpn;               // wire format (length-prefixed); empty: none
  SSL_SESSION* session = nullptr; // to resume (not taken)
};

// A client SSL on `ctx` in connect state.
inline SSL* NewClientSsl(SSL_CTX* ctx, const ClientOptions& options = {}) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) return nullptr;
  SSL_set_connect_state(ssl);
  if (!options.sni.empty()) SSL_set_tlsext_host_name(ssl, options.sni.c_str());
  const std::string& host = options.verify_host.empty() ? options.sni : options.verify_host;
  if (!host.empty()) SSL_set1_host(ssl, host.c_str());
  if (!options.alpn.empty()) {
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(options.alpn.data()),
                        static_cast<unsigned>(options.alpn.size()));
  }
  if (options.session != nullptr) SSL_set_session(ssl, options.session);
  return ssl;
}

// One side: a TlsSession with its output buffer, and what came out of it.
class Peer {
 public:
  // 96 KiB: the TlsLayer's output chunk (TlsLayer::kMinBufferBytes).
  static constexpr size_t kDefaultOutput = 96 * 1024;

  explicit Peer(SSL* ssl, size_t output_bytes = kDefaultOutput) : out_(output_bytes) {
    session.Start(ssl);
    session.SetOutput(out_.data(), out_.size(), 0);
  }

  TlsSession session;
  std::string received;  // plaintext, in order
  TlsSession::Status last = TlsSession::Status::kNeedMore;
  int plain_full = 0;     // how many Feeds returned kPlainFull
  int suspensions = 0;    // how many returned kSuspended
  // The HandshakeGate of the SSL (TlsContext::SetGate), if any: a Feed
  // that leaves kSuspended with input left goes on at once, as the
  // TlsLayer does; with none left, Resume() plays the worker.
  HandshakeGate* gate = nullptr;
  size_t plain_cap = 16 * 1024;  // plaintext taken per Feed

  bool failed() const { return last == TlsSession::Status::kFailed; }
  bool closed() const { return last == TlsSession::Status::kPeerClosed; }
  bool done() const { return failed() || closed(); }
  size_t output_room() const { return out_.size() - session.output_len(); }
  size_t output_capacity() const { return out_.size(); }

  // What the session wrote, taken (the output starts again at 0).
  std::string TakeOutput() {
    std::string bytes(session.output(), session.output_len());
    session.ClearOutput();
    return bytes;
  }

  // Feeds `bytes` in pieces of `split` bytes (0: at once), calling Feed
  // again without input while it says kPlainFull. Stops at kFailed or
  // kPeerClosed (the rest is not fed).
  TlsSession::Status Feed(std::string_view bytes, size_t split = 0) {
    std::vector<char> plain(plain_cap);
    size_t off = 0;
    do {
      const size_t n = split == 0 ? bytes.size() - off : std::min(split, bytes.size() - off);
      // An empty input is a non-null pointer: the client's first Feed
      // (which writes its ClientHello) has nothing to read.
      const char* in = bytes.data() + off;
      if (in == nullptr) in = "";
      size_t got = 0;
      TlsSession::Status st = session.Feed(in, n, plain.data(), plain.size(), &got);
      received.append(plain.data(), got);
      while (st == TlsSession::Status::kPlainFull) {
        ++plain_full;
        st = session.Feed(nullptr, 0, plain.data(), plain.size(), &got);
        received.append(plain.data(), got);
      }
      if (st == TlsSession::Status::kSuspended) {
        ++suspensions;
        EXPECT_NE(gate, nullptr) << "suspended without a gate";
        if (gate == nullptr) return last = TlsSession::Status::kFailed;
        if (session.input_left() > 0) {
          // The rest of this input is only valid during the call: the
          // step runs here.
          gate->on_worker = true;
          st = session.Feed(nullptr, 0, plain.data(), plain.size(), &got);
          gate->on_worker = false;
          received.append(plain.data(), got);
          while (st == TlsSession::Status::kPlainFull) {
            ++plain_full;
            st = session.Feed(nullptr, 0, plain.data(), plain.size(), &got);
            received.append(plain.data(), got);
          }
        } else {
          // Nothing left to read: the rest of the bytes wait for Resume().
          unfed_.assign(bytes.substr(off + n));
          return last = st;
        }
      }
      last = st;
      off += n;
      if (done()) break;
      if (st == TlsSession::Status::kNeedMore) {
        EXPECT_EQ(session.input_left(), 0u);
      }
    } while (off < bytes.size());
    return last;
  }

  bool suspended() const { return last == TlsSession::Status::kSuspended; }

  // After kSuspended: the handshake step as a worker runs it (through the
  // gate), then the bytes that came after the ClientHello.
  TlsSession::Status Resume(size_t split = 0) {
    EXPECT_TRUE(suspended());
    gate->on_worker = true;
    last = session.Handshake();
    gate->on_worker = false;
    if (!unfed_.empty() && !done()) {
      const std::string rest = std::move(unfed_);
      unfed_.clear();
      Feed(rest, split);
    }
    return last;
  }

 private:
  std::vector<char> out_;
  std::string unfed_;  // input after a suspension, fed by Resume()
};

// Moves each side's output to the other (client first) until both are
// quiet; `split` as in Peer::Feed. Returns the number of flights moved.
inline int Pump(Peer& client, Peer& server, size_t split = 0) {
  int flights = 0;
  for (int round = 0; round < 64; ++round) {
    bool moved = false;
    if (server.suspended()) {
      server.Resume(split);
      moved = true;
    }
    std::string c = client.TakeOutput();
    if (!c.empty() && !server.done()) {
      server.Feed(c, split);
      ++flights;
      moved = true;
    }
    std::string s = server.TakeOutput();
    if (!s.empty() && !client.done()) {
      client.Feed(s, split);
      ++flights;
      moved = true;
    }
    if (!moved) return flights;
  }
  ADD_FAILURE() << "the sessions never went quiet";
  return flights;
}

// The client's first flight, then everything until both are quiet.
// True when both handshakes completed and neither side failed.
inline bool Handshake(Peer& client, Peer& server, size_t split = 0) {
  client.Feed("", 0);
  Pump(client, server, split);
  return client.session.handshake_done() && server.session.handshake_done() &&
         !client.failed() && !server.failed();
}

// Sends `data` from one side to the other through Encrypt() in as many
// pieces as the output allows, moving the output over whenever Encrypt
// stops, and checks on every call that Encrypt leaves kFeedHeadroom free.
inline void SendPlain(Peer& from, Peer& to, std::string_view data, size_t split = 0) {
  size_t off = 0;
  int stalls = 0;
  while (off < data.size()) {
    const size_t room = from.output_room();
    const size_t taken = from.session.Encrypt(data.data() + off, data.size() - off);
    ASSERT_FALSE(from.session.failed()) << from.session.error();
    // It takes no more than the room beyond the headroom, and leaves the
    // headroom free.
    EXPECT_LE(taken, room > TlsSession::kFeedHeadroom ? room - TlsSession::kFeedHeadroom : 0);
    EXPECT_GE(from.output_room(), std::min(room, TlsSession::kFeedHeadroom));
    off += taken;
    if (taken == 0) {
      ASSERT_GT(from.session.output_len(), 0u) << "Encrypt took nothing from an empty output";
      ASSERT_LT(++stalls, 2);
    } else {
      stalls = 0;
    }
    if (off < data.size()) {
      std::string bytes = from.TakeOutput();
      to.Feed(bytes, split);
      ASSERT_FALSE(to.failed()) << to.session.error();
    }
  }
  std::string bytes = from.TakeOutput();
  if (!bytes.empty()) to.Feed(bytes, split);
}

}  // namespace uring_http::tls::testing

#endif  // URING_HTTP_TEST_TLS_SESSION_PAIR_H_
