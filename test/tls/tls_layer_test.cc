// The TLS layer without a kernel: a real http1::Connection on top, the
// recording FakeHost of test/http1 below (it flags a second receive armed,
// a send linked to its close with a receive armed, a close whose idea of
// the socket disagrees with the host's...), and a client TlsSession at the
// other end of the "socket". Each test delivers the kernel's completions by
// hand, in the order it wants to try.
#include "src/tls/tls_layer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
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
  void Build(HandshakeGate::Mode gate, bool with_workers, bool adaptive = false) {
    router_ = TestRouter();
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
    layer_ = std::make_unique<TlsLayer>(&below_, 1, &tls_buffers_, &env_, &stats_,
                                        /*handshake_timeout_ms=*/2000, gate, std::move(submit),
                                        adaptive);
    env_.host = layer_.get();
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
    conn_.Open(&env_, 0);
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

  bool RunBatch() {
    if (!below_.batch_end_due) return false;
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
  http1::ConnectionConfig config_;
  io::Arena arena_;
  io::ChunkPool chunks_;
  io::Arena tls_arena_;
  io::ChunkPool tls_buffers_;
  std::unique_ptr<http::Header[]> headers_;
  std::unique_ptr<http1::StreamStatePool> streams_;
  http1::ConnectionStats conn_stats_;
  http1::ConnectionEnv env_;
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
