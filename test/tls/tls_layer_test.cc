// The TLS layer without a kernel: a real http1::Connection on top, the
// recording FakeHost of test/http1 below (it flags a second receive armed,
// a send linked to its close with a receive armed, a close whose idea of
// the socket disagrees with the host's...), and a client TlsSession at the
// other end of the "socket". Each test delivers the kernel's completions by
// hand, in the order it wants to try.
#include "src/tls/tls_layer.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/http1/connection.h"
#include "src/http1/stream_state.h"
#include "src/io/arena.h"
#include "src/router/router.h"
#include "src/tls/tls_context.h"
#include "test/http1/connection_harness.h"
#include "test/tls/session_pair.h"
#include "test/tls/test_certs.h"

namespace uring_http::tls {
namespace {

using http1::testing::FakeHost;
using http1::testing::FdCloser;
using http1::testing::ParseReplies;
using testing::ClientContext;
using testing::KeyType;
using testing::NewClientSsl;
using testing::Peer;
using testing::ScratchDir;
using testing::SslCtxPtr;
using testing::TestCertificate;

router::Router TestRouter() {
  router::Router r;
  (void)r.Fast("GET", "/fast", [](const http::Request&, http::Response& resp) {
    resp.set_static_body("ok");
  });
  (void)r.Fast("POST", "/echo", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.body);
  });
  (void)r.Fast("GET", "/big", [](const http::Request& req, http::Response& resp) {
    resp.body().assign(std::stoul(std::string(req.query)), 'b');
  });
  (void)r.Fast("GET", "/client", [](const http::Request& req, http::Response& resp) {
    char text[http::ClientAddress::kMaxText];
    resp.set_body(std::string(req.client_address.Format(text)) + ":" +
                  std::to_string(req.client_address.port()));
  });
  return r;
}

// What the server certificate is: made once for the whole file.
struct Certs {
  Certs() {
    ec = TestCertificate::Generate(KeyType::kEcP256, {"localhost"});
    TlsSettings settings;
    settings.certificates.push_back(ec.WriteTo(dir.path(), "ec"));
    keys = std::make_shared<TicketKeys>(3600);
    auto c = TlsContext::Create(settings, keys);
    EXPECT_TRUE(c.ok()) << c.status();
    context = *c;
  }
  ScratchDir dir;
  TestCertificate ec;
  std::shared_ptr<TicketKeys> keys;
  std::shared_ptr<const TlsContext> context;
};

Certs& TheCerts() {
  static Certs* certs = new Certs();
  return *certs;
}

class TlsLayerTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(HandshakeGate::Mode::kInline, false); }

  // The loop's part: the environment, the layer below the connection.
  void Build(HandshakeGate::Mode gate, bool with_workers, bool adaptive = false,
             uint32_t handshake_timeout_ms = 2000) {
    router_ = TestRouter();
    if (!static_root_.empty()) {
      ASSERT_TRUE(router_.Static("/files/", static_root_).ok());
      file_arena_ = *io::Arena::Create(file_buffer_count_ * file_buffer_size_ + 4096);
      ASSERT_TRUE(file_buffers_.Init(file_arena_, file_buffer_size_, file_buffer_count_).ok());
      file_cache_.emplace(&closer_, files::OpenFileCacheLimits{});
      env_.file_cache = &*file_cache_;
      env_.file_closer = &closer_;
      env_.file_buffers = &file_buffers_;
    }
    arena_ = *io::Arena::Create(256 * 4096 + 8192);
    ASSERT_TRUE(chunks_.Init(arena_, 4096, 256).ok());
    tls_arena_ = *io::Arena::Create(4 * TlsLayer::kMinBufferBytes);
    ASSERT_TRUE(tls_buffers_.Init(tls_arena_, TlsLayer::kMinBufferBytes, 4).ok());
    headers_ = std::make_unique<http::Header[]>(config_.limits.max_headers);
    streams_ = std::make_unique<http1::StreamStatePool>(config_.chunked, 4);
    env_.streams = streams_.get();
    env_.config = &config_;
    env_.router = &router_;
    env_.chunks = &chunks_;
    env_.stats = &conn_stats_;
    env_.headers = headers_.get();
    env_.headers_capacity = config_.limits.max_headers;
    env_.unmatched_route = static_cast<uint32_t>(router_.size());
    env_.now_tick = 1000;
    TlsLayer::SubmitJob submit;
    if (with_workers) {
      submit = [this](uint32_t, worker::WorkerJob* job) {
        if (refuse_jobs_) return false;
        jobs_.push_back(job);
        return true;
      };
    }
    // As the loop does (event_loop_tls.cc): --handshake-timeout=0 falls
    // back to the connection's own timeouts.
    layer_ = std::make_unique<TlsLayer>(
        &below_, 1, &tls_buffers_, config_, &env_, &conn_stats_, &stats_,
        TlsLayer::HandshakeTimeoutMs(handshake_timeout_ms, config_.header_timeout_ms,
                                     config_.idle_timeout_ms),
        gate, std::move(submit), adaptive);
    env_.transport = layer_.get();
    env_.host = &below_;
    client_ctx_ = ClientContext({TheCerts().ec.x509()});
    client_ = std::make_unique<Peer>(NewClientSsl(client_ctx_.get()));
  }

  void TearDown() override {
    EXPECT_TRUE(below_.violations.empty()) << below_.violations.front();
    if (conn_.Freeable() && layer_->attached(0) && layer_->Freeable(0)) {
      layer_->Release(0);
      conn_.Release();
    }
  }

  void Open() {
    SSL* ssl = TheCerts().context->NewSsl();
    ASSERT_NE(ssl, nullptr);
    layer_->Attach(0, &conn_, ssl);
    conn_.Open(&env_, 0, /*proxy_header_below=*/true);
    ASSERT_TRUE(below_.recv_armed) << "the handshake reads from the start";
    EXPECT_FALSE(below_.recv_once) << "the kernel's receive is always multishot";
  }

  // The client's pending output arrives as receive completions of `split`
  // bytes (0: one).
  void ClientSends(size_t split = 0) {
    const std::string bytes = client_->TakeOutput();
    size_t off = 0;
    while (off < bytes.size()) {
      ASSERT_TRUE(below_.recv_armed) << "bytes arrived with no receive armed";
      const size_t n = split == 0 ? bytes.size() - off : std::min(split, bytes.size() - off);
      layer_->OnRecv(0, bytes.data() + off, n, /*more=*/true);
      off += n;
    }
  }

  // The send in flight completes with up to `max` bytes, which the client
  // reads. False if none was in flight.
  bool CompleteSend(size_t max = SIZE_MAX) {
    if (!below_.send.has_value()) return false;
    FakeHost::SendCall s = std::move(*below_.send);
    below_.send.reset();
    const size_t n = std::min(max, s.bytes.size());
    if (n > 0 && !client_->done()) client_->Feed(std::string_view(s.bytes).substr(0, n));
    if (s.close_linked) {
      layer_->OnSend(0, static_cast<int>(s.bytes.size()));
      layer_->OnClosed(0);
    } else {
      layer_->OnSend(0, static_cast<int>(n));
    }
    return true;
  }

  // The cancel the layer asked for lands.
  bool CompleteCancel() {
    if (!below_.cancel_pending) return false;
    below_.cancel_pending = false;
    below_.recv_armed = false;
    layer_->OnRecvEnd(0, -ECANCELED);
    return true;
  }

  // The loop's end of a batch: what the connection is owed, then (if the
  // layer asked) its batch end.
  bool RunBatch() {
    bool moved = false;
    while (layer_->has_owed()) {
      EXPECT_EQ(layer_->DeliverOwed(), 0u);
      moved = true;
    }
    if (!below_.batch_end_due) return moved;
    below_.batch_end_due = false;
    layer_->OnBatchEnd(0);
    return true;
  }

  // A plain close the layer issued: what was armed ends, then the close.
  bool CompleteClose() {
    if (!below_.closed || close_delivered_ || below_.send.has_value()) return false;
    close_delivered_ = true;
    if (below_.recv_armed) {
      below_.recv_armed = false;
      below_.cancel_pending = false;
      layer_->OnRecvEnd(0, -ECANCELED);
    }
    layer_->OnClosed(0);
    return true;
  }

  // Everything moves until nothing does: client bytes in, sends out,
  // cancels, batch ends, the close.
  void Pump(size_t split = 0, size_t send_max = SIZE_MAX) {
    for (int i = 0; i < 10000; ++i) {
      bool moved = false;
      if (client_->session.output_len() > 0 && below_.recv_armed && !below_.cancel_pending) {
        ClientSends(split);
        moved = true;
      }
      moved |= CompleteSend(send_max);
      moved |= CompleteCancel();
      moved |= RunBatch();
      if (below_.closed && below_.send.has_value()) {
        // A send linked to its close: it runs when the receive is off.
        moved |= CompleteSend(send_max);
      }
      moved |= CompleteClose();
      if (!moved) return;
    }
    FAIL() << "never went quiet";
  }

  void Handshake(size_t split = 0) {
    client_->Feed("", 0);  // its ClientHello
    Pump(split);
    ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
  }

  void Request(const std::string& request) {
    size_t off = 0;
    while (off < request.size()) {
      off += client_->session.Encrypt(request.data() + off, request.size() - off);
    }
  }

  bool Finished() { return conn_.Freeable() && layer_->Freeable(0); }

  router::Router router_;
  // Static files (TlsLayerFilesTest): declared before the connection, which
  // gives its file buffers and cache references back when it goes.
  std::string static_root_;
  size_t file_buffer_count_ = 4;
  size_t file_buffer_size_ = 16 * 1024;
  FdCloser closer_;
  io::Arena file_arena_;
  io::ChunkPool file_buffers_;
  std::optional<files::OpenFileCache> file_cache_;
  exchange::ConnectionConfig config_;
  io::Arena arena_;
  io::ChunkPool chunks_;
  io::Arena tls_arena_;
  io::ChunkPool tls_buffers_;
  std::unique_ptr<http::Header[]> headers_;
  std::unique_ptr<http1::StreamStatePool> streams_;
  exchange::ConnectionStats conn_stats_;
  exchange::ConnectionEnv env_;
  FakeHost below_;
  TlsStats stats_;
  std::unique_ptr<TlsLayer> layer_;
  http1::Connection conn_;
  SslCtxPtr client_ctx_;
  std::unique_ptr<Peer> client_;
  std::vector<worker::WorkerJob*> jobs_;
  bool refuse_jobs_ = false;
  bool close_delivered_ = false;
};

TEST_F(TlsLayerTest, KeepAliveRequestsOverOneSession) {
  Open();
  Handshake();
  EXPECT_EQ(stats_.handshakes.Get(), 1u);
  EXPECT_EQ(stats_.tls13.Get(), 1u);
  for (int i = 0; i < 3; ++i) {
    Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    Pump();
  }
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 3u);
  for (const auto& r : replies) {
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok");
  }
  EXPECT_TRUE(below_.recv_armed) << "keep-alive: still reading";
  EXPECT_FALSE(below_.closed);
}

TEST_F(TlsLayerTest, EveryByteSplit) {
  Open();
  Handshake(/*split=*/1);
  Request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  Pump(/*split=*/1);
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "hello");
}

TEST_F(TlsLayerTest, LargeResponseOverShortSends) {
  Open();
  Handshake();
  // 300 KB does not fit one output chunk: the connection's sends come back
  // short, and every kernel send is short too.
  Request("GET /big?300000 HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump(0, /*send_max=*/7000);
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, std::string(300000, 'b'));
}

TEST_F(TlsLayerTest, ConnectionCloseEndsWithCloseNotify) {
  Open();
  Handshake();
  Request("GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  Pump();
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(client_->closed()) << "the client saw our close_notify";
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, PeerCloseNotifyEndsTheConnection) {
  Open();
  Handshake();
  ASSERT_TRUE(client_->session.CloseNotify());
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(client_->closed()) << "answered with our own close_notify";
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, PlainHttpIsAnswered400InPlainText) {
  Open();
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  layer_->OnRecv(0, request.data(), request.size(), true);
  // The receive is cancelled first: a send linked to a close must have
  // nothing else armed (FakeHost checks).
  EXPECT_FALSE(below_.send.has_value());
  ASSERT_TRUE(CompleteCancel());
  ASSERT_TRUE(below_.send.has_value());
  EXPECT_TRUE(below_.send->close_linked);
  EXPECT_EQ(below_.send->bytes.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << below_.send->bytes;
  EXPECT_NE(below_.send->bytes.find("speaks HTTPS"), std::string::npos);
  EXPECT_EQ(stats_.failed_plain_http.Get(), 1u);
  layer_->OnSend(0, static_cast<int>(below_.send->bytes.size()));
  below_.send.reset();
  layer_->OnClosed(0);
  RunBatch();
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, GarbageGetsAnAlertAndTheClose) {
  Open();
  const std::string junk = std::string("\x16\x03\x01\x00\x05", 5) + "abcde";
  layer_->OnRecv(0, junk.data(), junk.size(), true);
  Pump();
  EXPECT_EQ(stats_.failed_protocol.Get(), 1u);
  EXPECT_TRUE(below_.closed);
  EXPECT_GT(below_.sends, 0) << "OpenSSL's alert went out";
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, StalledHandshakeTimesOut) {
  Open();
  client_->Feed("", 0);
  std::string hello = client_->TakeOutput();
  layer_->OnRecv(0, hello.data(), 20, true);  // a part of it, then nothing
  ASSERT_NE(below_.deadline, 0u);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_EQ(stats_.failed_timeout.Get(), 1u);
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

// Issue 19 item 13: --handshake-timeout=0 left a handshaking connection
// with no deadline at all; it falls back to the header timeout (a client
// that sends no request is closed then anyway).
TEST_F(TlsLayerTest, NoHandshakeTimeoutFallsBackToTheHeaderTimeout) {
  Build(HandshakeGate::Mode::kInline, false, false, /*handshake_timeout_ms=*/0);
  Open();
  ASSERT_NE(below_.deadline, 0u) << "a handshaking connection with no deadline";
  EXPECT_LE(below_.deadline,
            env_.now_tick + config_.header_timeout_ms / config_.tick_ms + 2);
  client_->Feed("", 0);
  std::string hello = client_->TakeOutput();
  layer_->OnRecv(0, hello.data(), 20, true);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_EQ(stats_.failed_timeout.Get(), 1u);
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, ConnectionDeadlinesWaitForTheHandshake) {
  Open();
  const uint64_t handshake_deadline = below_.deadline;
  Handshake();
  // Once done, the connection's own deadline (idle, header) is armed.
  EXPECT_NE(below_.deadline, handshake_deadline);
}

TEST_F(TlsLayerTest, DrainClosesAHandshakeAfterTheGrace) {
  Open();
  client_->Feed("", 0);
  std::string hello = client_->TakeOutput();
  layer_->OnRecv(0, hello.data(), 10, true);
  env_.draining = true;
  conn_.OnDrain();
  ASSERT_NE(below_.deadline, 0u);
  EXPECT_LT(below_.deadline, env_.now_tick + 2000 / config_.tick_ms)
      << "the drain's grace, not the handshake timeout";
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_EQ(stats_.failed_timeout.Get(), 0u);
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, PeerLeavesMidHandshake) {
  Open();
  below_.recv_armed = false;
  layer_->OnRecvEnd(0, 0);  // FIN
  Pump();
  EXPECT_EQ(stats_.failed_peer_closed.Get(), 1u);
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, NoBuffersWaitsForThem) {
  Open();
  below_.recv_armed = false;
  layer_->OnRecvEnd(0, -ENOBUFS);
  Pump();
  EXPECT_FALSE(below_.recv_armed) << "no re-arm until buffers are back";
  layer_->OnBuffersAvailable(0);
  EXPECT_TRUE(below_.recv_armed);
  Handshake();
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
}

TEST_F(TlsLayerTest, ResetDuringAResponseAborts) {
  Open();
  Handshake();
  Request("GET /big?300000 HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  ASSERT_TRUE(below_.send.has_value());
  below_.send.reset();
  layer_->OnSend(0, -ECONNRESET);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

// Issue 19 item 16: the connection aborts (the drain's time is up, a
// deadline) while its send is in flight, and the kernel's send completes
// short before the cancel lands. Nothing more will carry the rest: the
// connection must still hear the end of its send, or its slot is never
// freed and the drain never ends.
TEST_F(TlsLayerTest, AbortRacingAShortSendEndsTheConnectionsSend) {
  Open();
  Handshake();
  Request("GET /big?300000 HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  ASSERT_TRUE(below_.send.has_value());
  const size_t in_flight = below_.send->bytes.size();
  conn_.Abort();
  EXPECT_TRUE(below_.closed);
  // The send was already leaving: it completes short, then the close.
  below_.send.reset();
  layer_->OnSend(0, static_cast<int>(in_flight / 2));
  EXPECT_FALSE(below_.send.has_value()) << "nothing sent after the close";
  layer_->OnRecvEnd(0, -ECANCELED);
  below_.recv_armed = false;
  layer_->OnClosed(0);
  RunBatch();
  EXPECT_TRUE(Finished()) << "the slot is freeable";
}

// The same with the send completing whole (not short) after the abort,
// and with the cancel (-ECANCELED) ending it.
TEST_F(TlsLayerTest, AbortWithTheSendCompletingWholeOrCancelled) {
  for (int res_kind = 0; res_kind < 2; ++res_kind) {
    SCOPED_TRACE(res_kind);
    Build(HandshakeGate::Mode::kInline, false);
    below_ = FakeHost();
    Open();
    Handshake();
    Request("GET /big?300000 HTTP/1.1\r\nHost: x\r\n\r\n");
    ClientSends();
    ASSERT_TRUE(below_.send.has_value());
    const int n = static_cast<int>(below_.send->bytes.size());
    conn_.Abort();
    below_.send.reset();
    layer_->OnSend(0, res_kind == 0 ? n : -ECANCELED);
    EXPECT_FALSE(below_.send.has_value());
    layer_->OnRecvEnd(0, -ECANCELED);
    below_.recv_armed = false;
    layer_->OnClosed(0);
    RunBatch();
    EXPECT_TRUE(Finished());
    if (Finished()) {
      layer_->Release(0);
      conn_.Release();
    }
  }
}

// Found by tls_layer_fuzz: a connection closing gracefully with input
// left unread lingers, and asks for its FIN (ShutdownWrite), which the
// layer holds until its records are out. When the kernel's send then
// failed, the shutdown was never issued and the connection waited for it
// for ever (its slot never freed).
TEST_F(TlsLayerTest, ALingeringCloseWhoseSendFailsStillShutsDown) {
  Open();
  Handshake();
  // A bad request and one after it: 400, then a lingering close.
  Request("GARBAGE\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  RunBatch();
  ASSERT_TRUE(below_.send.has_value());
  ASSERT_FALSE(below_.shutdown_pending) << "held until the records are out";
  below_.send.reset();
  layer_->OnSend(0, -ECONNRESET);
  RunBatch();
  ASSERT_TRUE(below_.shutdown_pending || below_.closed) << "the connection would wait for ever";
  if (below_.shutdown_pending) {
    below_.shutdown_pending = false;
    layer_->OnShutdownDone(0);
  }
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

// Issue 19 item 1: a request record and, in the same receive, a record
// that ends the session (the client's fatal alert, in clear as a client
// that aborts right after writing sends it, or a record that does not
// decrypt). The session fails after the request was decrypted: the
// connection must not be able to answer into the failed session (it
// aborted the process: check failed in TlsSession::Encrypt), and the
// connection ends.
TEST_F(TlsLayerTest, RequestThenPlaintextAlertInOneReceive) {
  Open();
  Handshake();
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string bytes = client_->TakeOutput();
  bytes += std::string("\x15\x03\x03\x00\x02\x02\x28", 7);  // fatal handshake_failure
  layer_->OnRecv(0, bytes.data(), bytes.size(), true);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(ParseReplies(client_->received).empty()) << "nothing can carry an answer";
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerTest, RequestThenUndecryptableRecordInOneReceive) {
  Open();
  Handshake();
  Request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  std::string bytes = client_->TakeOutput();
  bytes += std::string("\x17\x03\x03\x00\x20", 5) + std::string(32, '\x5a');
  layer_->OnRecv(0, bytes.data(), bytes.size(), true);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(ParseReplies(client_->received).empty());
  EXPECT_TRUE(Finished());
}

// The same with the records split across receives at every size: the
// layer never encrypts into a failed session, and the connection ends.
class TlsLayerFailureSplitTest : public TlsLayerTest,
                                 public ::testing::WithParamInterface<size_t> {};

TEST_P(TlsLayerFailureSplitTest, PipelinedRequestsThenAlert) {
  const size_t split = GetParam();
  Open();
  Handshake();
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string bytes = client_->TakeOutput();
  bytes += std::string("\x15\x03\x03\x00\x02\x02\x28", 7);
  size_t off = 0;
  while (off < bytes.size() && below_.recv_armed && !below_.closed) {
    const size_t n = std::min(split, bytes.size() - off);
    layer_->OnRecv(0, bytes.data() + off, n, true);
    off += n;
    // Sends complete between receives: an answer may go out before the
    // alert arrives, or be cut by it.
    CompleteSend();
    RunBatch();
  }
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

INSTANTIATE_TEST_SUITE_P(Splits, TlsLayerFailureSplitTest,
                         ::testing::Values(1, 2, 5, 7, 16, 40, 64, 100, 1000));

// A file's bytes (the pattern big.bin holds).
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  return s;
}

// Static files over TLS, each statx, openat2 and read carried out for real
// on a temporary directory when the test says so.
class TlsLayerFilesTest : public TlsLayerTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tls_layer_files_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    static_root_ = tmpl;
    std::ofstream(static_root_ + "/big.bin", std::ios::binary) << Pattern(kBig);
    Build(HandshakeGate::Mode::kInline, false);
  }
  void TearDown() override {
    TlsLayerTest::TearDown();
    for (const std::string& e : closer_.errors) ADD_FAILURE() << e;
    ASSERT_EQ(std::system(("rm -rf " + static_root_).c_str()), 0);
  }

  // The file operation in flight, done (the poll for room never reaches
  // the kernel over TLS: the layer answers it). False if none.
  bool CompleteFileOp() {
    if (!below_.file_op.has_value()) return false;
    FakeHost::FileOp op = std::move(*below_.file_op);
    below_.file_op.reset();
    if (!http1::testing::CompleteFileAccess(op, conn_, closer_, std::nullopt,
                                            &below_.violations)) {
      ADD_FAILURE() << "a file operation TLS never asks for: " << op.kind;
      return false;
    }
    return true;
  }

  // Everything but the kernel's send moves until nothing does: the peer
  // has stopped reading.
  void PumpStalled() {
    for (int i = 0; i < 10000; ++i) {
      bool moved = CompleteFileOp();
      moved |= RunBatch();
      if (!moved) return;
    }
    FAIL() << "never went quiet";
  }

  static constexpr size_t kBig = 1 << 20;
};

// Issue 19 item 4: a reader that stops reading must not keep the loop's
// file buffers. Over plain TCP the connection's don't-wait send comes back
// short and it takes its file bytes back; over TLS it heard of its send
// only when all of the records carrying it had left, so each stalled TLS
// download held its buffers, and enough of them left every other file
// body on the ring without one.
TEST_F(TlsLayerFilesTest, AStalledReaderHoldsNoFileBuffer) {
  Open();
  Handshake();
  Request("GET /files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  PumpStalled();
  ASSERT_TRUE(below_.send.has_value()) << "records wait in the kernel for the reader";
  EXPECT_FALSE(below_.file_op.has_value());
  EXPECT_EQ(file_buffers_.available(), file_buffer_count_) << "every file buffer is back";
  // The reader comes back: the whole file arrives, intact.
  for (int i = 0; i < 100000 && (below_.send.has_value() || below_.file_op.has_value() ||
                                 below_.batch_end_due || layer_->has_owed());
       ++i) {
    CompleteSend(9000);
    PumpStalled();
  }
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_TRUE(replies[0].body == Pattern(kBig)) << replies[0].body.size();
  EXPECT_EQ(file_buffers_.available(), file_buffer_count_);
}

// The connection hears of its send once its bytes are encrypted and the
// peer takes any records, not when every record has left: a slow reader
// that keeps taking bytes is progress for the send deadline.
TEST_F(TlsLayerTest, ASendCompletesAtTheKernelsFirstProgress) {
  Open();
  Handshake();
  Request("GET /big?300000 HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  ASSERT_TRUE(below_.send.has_value());
  const size_t pending = conn_.output_pending();
  ASSERT_GT(pending, 200000u);
  CompleteSend(1000);  // the peer takes a little
  EXPECT_LT(conn_.output_pending(), pending - 50000)
      << "the connection's encrypted bytes are done with";
}

// The layer's own send deadline: records the peer never takes are cut
// after --send-timeout, even when the connection has nothing in flight
// (its last response encrypted, it waits idle for the next request).
TEST_F(TlsLayerTest, RecordsThePeerNeverTakesAreCutAtTheSendTimeout) {
  Open();
  Handshake();
  Request("GET /big?60000 HTTP/1.1\r\nHost: x\r\n\r\n");
  ClientSends();
  ASSERT_TRUE(below_.send.has_value());
  CompleteSend(100);  // a little progress: the connection's response is encrypted and done
  ASSERT_TRUE(below_.send.has_value());
  EXPECT_EQ(conn_.output_pending(), 0u);
  ASSERT_NE(below_.deadline, 0u);
  EXPECT_LE(below_.deadline, env_.now_tick + config_.send_timeout_ms / config_.tick_ms + 2);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  EXPECT_TRUE(below_.send_cancel_pending) << "the stalled send is cancelled";
  below_.send.reset();
  below_.send_cancel_pending = false;
  layer_->OnSend(0, -ECANCELED);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

// Issue 19 item 7: behind a proxy (--proxy-protocol) the PROXY header
// comes in clear before the ClientHello, as HAProxy, cloud load balancers
// and curl --haproxy-protocol send it; it was read inside TLS, so every
// real proxy failed, and a direct client could name its own address inside
// TLS.
class TlsLayerProxyTest : public TlsLayerTest {
 protected:
  void SetUp() override {
    config_.proxy_protocol = true;
    Build(HandshakeGate::Mode::kInline, false);
  }
};

TEST_F(TlsLayerProxyTest, HeaderInClearBeforeTheClientHello) {
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}}) {
    SCOPED_TRACE(split);
    if (split != 0) {
      Build(HandshakeGate::Mode::kInline, false);
      below_ = FakeHost();
      close_delivered_ = false;
    }
    Open();
    const std::string header = "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n";
    client_->Feed("", 0);
    std::string bytes = header + client_->TakeOutput();
    size_t off = 0;
    while (off < bytes.size()) {
      const size_t n = split == 0 ? bytes.size() - off : std::min(split, bytes.size() - off);
      ASSERT_TRUE(below_.recv_armed);
      layer_->OnRecv(0, bytes.data() + off, n, true);
      off += n;
    }
    Pump(split);
    ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
    Request("GET /client HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    Pump(split);
    auto replies = ParseReplies(client_->received);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].body, "203.0.113.7:51234");
    ASSERT_TRUE(Finished());
    layer_->Release(0);
    conn_.Release();
  }
}

TEST_F(TlsLayerProxyTest, V2HeaderInClear) {
  Open();
  // v2 PROXY TCP4 198.51.100.9:4000 -> 192.0.2.1:443.
  std::string header("\r\n\r\n\0\r\nQUIT\n", 12);
  header += std::string("\x21\x11\x00\x0c", 4);
  header += std::string("\xc6\x33\x64\x09\xc0\x00\x02\x01\x0f\xa0\x01\xbb", 12);
  client_->Feed("", 0);
  std::string bytes = header + client_->TakeOutput();
  layer_->OnRecv(0, bytes.data(), bytes.size(), true);
  Pump();
  ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
  Request("GET /client HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  auto replies = ParseReplies(client_->received);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].body, "198.51.100.9:4000");
}

// A client that starts TLS at once (no header in clear) is closed
// unanswered, as on a plain --proxy-protocol listener; and a header sent
// inside TLS is not a header: it is a request line that is no request.
TEST_F(TlsLayerProxyTest, NoHeaderInClearIsClosedUnanswered) {
  Open();
  client_->Feed("", 0);
  ClientSends();
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_EQ(conn_stats_.proxy_header_errors.Get(), 1u);
  EXPECT_FALSE(client_->session.handshake_done());
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerProxyTest, StalledHeaderTimesOut) {
  Open();
  const std::string part = "PROXY TCP4 203.0.";
  layer_->OnRecv(0, part.data(), part.size(), true);
  ASSERT_NE(below_.deadline, 0u);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_TRUE(Finished());
}

class TlsLayerOffloadTest : public TlsLayerTest {
 protected:
  void SetUp() override { Build(HandshakeGate::Mode::kOffloadAll, true); }

  // A worker dequeues the job: it claims it, unless the ring abandoned it
  // first (then it will skip it). Returns whether it claimed it.
  bool StartJob() {
    EXPECT_EQ(jobs_.size(), 1u);
    if (jobs_.empty()) return false;
    started_ = jobs_.front();
    jobs_.clear();
    claimed_ = started_->Claim();
    return claimed_;
  }
  // ... runs it if it claimed it, publishes, and the MSG_RING arrives.
  void FinishJob() {
    ASSERT_NE(started_, nullptr);
    worker::WorkerJob* job = started_;
    started_ = nullptr;
    if (claimed_) job->run(job);
    job->done.store(1, std::memory_order_release);
    layer_->OnJobDone(0);
  }
  // Both, as WorkerPool does. Returns whether the step ran (not skipped).
  bool RunJob() {
    const bool ran = StartJob();
    FinishJob();
    return ran;
  }

  worker::WorkerJob* started_ = nullptr;
  bool claimed_ = false;
};

TEST_F(TlsLayerOffloadTest, HandshakeStepRunsOnTheWorker) {
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u) << "the signing step went to a worker";
  EXPECT_FALSE(below_.send.has_value()) << "nothing to send until it is back";
  EXPECT_FALSE(layer_->Freeable(0));
  RunJob();
  EXPECT_TRUE(below_.send.has_value()) << "the server's flight";
  Pump();
  ASSERT_TRUE(client_->session.handshake_done());
  EXPECT_EQ(stats_.offloaded.Get(), 1u);
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
}

TEST_F(TlsLayerOffloadTest, BytesWhileOffloadedWaitForTheWorker) {
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u);
  // A TLS 1.3 client in middlebox-compatibility mode may send its dummy
  // change_cipher_spec before our flight (RFC 8446 D.4).
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  layer_->OnRecv(0, ccs.data(), ccs.size(), true);
  RunJob();
  Pump();
  ASSERT_TRUE(client_->session.handshake_done());
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
}

TEST_F(TlsLayerOffloadTest, TimeoutWhileTheWorkerRunsTheStepClosesAfterIt) {
  Open();
  const uint64_t handshake_deadline = below_.deadline;
  client_->Feed("", 0);
  ClientSends();
  ASSERT_TRUE(StartJob()) << "a worker has the step";
  // The queue's bound passes: too late to take the step back.
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  EXPECT_FALSE(below_.send.has_value());
  EXPECT_EQ(below_.deadline, handshake_deadline);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_FALSE(below_.closed) << "the worker still holds the session";
  EXPECT_FALSE(layer_->Freeable(0));
  FinishJob();
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_EQ(stats_.failed_timeout.Get(), 1u);
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerOffloadTest, StepLeftInTheQueueRunsOnTheRingAfterTheBound) {
  // No worker reaches the step (they are all busy): after the queue-wait
  // bound, well before the handshake deadline, the ring takes it back and
  // runs it itself, so that queue time alone does not fail the handshake.
  Open();
  const uint64_t handshake_deadline = below_.deadline;
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u);
  ASSERT_LT(below_.deadline, handshake_deadline) << "the queue wait has a bound of its own";
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  EXPECT_TRUE(below_.send.has_value()) << "the flight, signed on the ring";
  EXPECT_EQ(stats_.failed_timeout.Get(), 0u);
  Pump();
  ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
  // The worker that finally dequeues it skips it; until then the job's
  // memory (the slot's) is out, and the slot is not freed.
  ASSERT_TRUE(client_->session.CloseNotify());
  Pump();
  EXPECT_TRUE(below_.closed);
  EXPECT_FALSE(Finished());
  EXPECT_FALSE(RunJob()) << "a step the ring took back ran on the worker too";
  EXPECT_TRUE(Finished());
}

TEST_F(TlsLayerOffloadTest, PeerGoneWhileQueuedClosesAtOnceAndTheWorkerSkips) {
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u);
  // The client resets before any worker got to its step.
  below_.recv_armed = false;
  layer_->OnRecvEnd(0, -ECONNRESET);
  Pump();
  EXPECT_TRUE(below_.closed) << "the socket waited for a worker to sign for a dead connection";
  EXPECT_FALSE(Finished()) << "the job is still in the queue";
  EXPECT_FALSE(RunJob()) << "the worker signed for a connection that is gone";
  EXPECT_TRUE(Finished());
  EXPECT_EQ(stats_.steps_reclaimed.Get(), 0u);
}

TEST_F(TlsLayerOffloadTest, SecondStepWhileTheFirstJobIsQueuedRunsInline) {
  // The client's only key share is for P-521: a HelloRetryRequest, and the
  // second ClientHello goes through the gate again. The first step, taken
  // back, is still in the queue: its job cannot carry the second.
  ASSERT_EQ(SSL_CTX_set1_groups_list(client_ctx_.get(), "P-521:X25519"), 1);
  client_ = std::make_unique<Peer>(NewClientSsl(client_ctx_.get()));
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  EXPECT_EQ(jobs_.size(), 1u) << "one job submitted twice";
  ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
  EXPECT_EQ(SSL_version(client_->session.ssl()), TLS1_3_VERSION);
  EXPECT_FALSE(RunJob());
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
}

TEST_F(TlsLayerOffloadTest, BytesStashedWhileQueuedAreFedAfterTheRingTakesTheStepBack) {
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u);
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  layer_->OnRecv(0, ccs.data(), ccs.size(), true);
  env_.now_tick = below_.deadline;
  layer_->OnDeadline(0);
  Pump();
  ASSERT_TRUE(client_->session.handshake_done()) << client_->session.error();
  EXPECT_EQ(stats_.steps_reclaimed.Get(), 1u);
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
  EXPECT_FALSE(RunJob());
}

TEST_F(TlsLayerOffloadTest, FullQueueRunsTheStepInline) {
  refuse_jobs_ = true;
  Open();
  Handshake();
  EXPECT_EQ(stats_.offloaded.Get(), 0u);
  Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  Pump();
  EXPECT_EQ(ParseReplies(client_->received).size(), 1u);
}

class TlsLayerAdaptiveTest : public TlsLayerOffloadTest {
 protected:
  void SetUp() override { Build(HandshakeGate::Mode::kOffloadAll, true, /*adaptive=*/true); }
};

TEST_F(TlsLayerAdaptiveTest, InlineUntilConnectionsAreReused) {
  // New connections are all the ring serves: the step runs here.
  Open();
  Handshake();
  EXPECT_TRUE(jobs_.empty());
  EXPECT_EQ(stats_.offloaded.Get(), 0u);
  // A second request on the connection: it is being reused, and a
  // signature on the ring would hold it up.
  for (int i = 0; i < 2; ++i) {
    Request("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    Pump();
  }
  ASSERT_TRUE(client_->session.CloseNotify());
  Pump();
  ASSERT_TRUE(Finished());
  layer_->Release(0);
  conn_.Release();
  below_ = FakeHost();
  close_delivered_ = false;
  client_ = std::make_unique<Peer>(NewClientSsl(client_ctx_.get()));
  Open();
  client_->Feed("", 0);
  ClientSends();
  ASSERT_EQ(jobs_.size(), 1u) << "the next handshake's step went to a worker";
  RunJob();
  Pump();
  EXPECT_TRUE(client_->session.handshake_done());
  // A second later with no reuse, handshakes run here again.
  ASSERT_TRUE(client_->session.CloseNotify());
  Pump();
  ASSERT_TRUE(Finished());
  layer_->Release(0);
  conn_.Release();
  below_ = FakeHost();
  close_delivered_ = false;
  env_.now_tick += 20;
  client_ = std::make_unique<Peer>(NewClientSsl(client_ctx_.get()));
  Open();
  Handshake();
  EXPECT_TRUE(jobs_.empty());
  EXPECT_EQ(stats_.offloaded.Get(), 1u);
}

}  // namespace
}  // namespace uring_http::tls
