// libFuzzer target for the TLS layer with a real http1::Connection above it
// and the recording host of test/http1 below, against a real client
// session: whole sessions, cut anywhere, with the kernel's completions in
// any order the kernel could deliver them. The input is a script:
//
//   byte 0   bit 0-1  the handshake gate: inline, offload RSA, offload
//                     all, offload all adaptively (a worker step is run
//                     by the script: op 12)
//            bit 2    --proxy-protocol (a PROXY header in clear first)
//            bit 3    TLS 1.2 (else 1.3)
//   then ops, each a byte and its arguments (ops.md below):
//     0 req k    the client writes request k (GETs, POSTs, pipelined,
//                Connection: close, a static file, malformed)
//     1 raw k    bytes in clear join the client's stream: a fatal alert, a
//                close_notify alert, a record that does not decrypt, a cut
//                record header, or the next k input bytes
//     2 recv k   up to k+1 (k=255: all) bytes of the client's stream arrive
//     3 sent k   the send in flight completes with (k+1)*256 bytes at most
//     4 fail k   the send in flight fails (-ECONNRESET, -EPIPE, -ECANCELED)
//     5 cancel   a cancelled receive ends (-ECANCELED)
//     6 end k    the receive ends: FIN, reset or ENOBUFS
//     7 bufs     provided buffers are back
//     8 batch    the loop's batch end (owed completions, AfterBatch)
//     9 close    the close completes (the receive and send end first)
//    10 abort    the connection aborts (the drain's time is up)
//    11 tick k   time passes (k ticks, or to the deadline); the deadline fires
//    12 worker k the offloaded handshake step starts (k odd), or runs (or is
//                skipped, if the ring took it back) and comes back
//    13 file k   the file operation in flight completes (k odd: it fails)
//    14 drain    the server starts draining
//    15 notify   the client sends close_notify
//    16 shut     a shutdown completes
// After every op: the host was asked nothing impossible (FakeHost's
// violations). At the end everything is completed in a kernel-like order
// until the connection closes, and then the slot must be freeable with
// every buffer back: no order of events may strand a slot or abort.
//
// Fuzz:   test/fuzz/run_fuzz.sh 60 //test/tls:tls_layer_fuzz
// Replay: bazel run //test/tls:tls_layer_fuzz -- FILE_OR_DIR...
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/http1/connection.h"
#include "src/http1/stream_state.h"
#include "src/io/arena.h"
#include "src/router/router.h"
#include "src/tls/ticket_keys.h"
#include "src/tls/tls_context.h"
#include "src/tls/tls_layer.h"
#include "src/tls/tls_session.h"
#include "test/http1/connection_harness.h"
#include "test/tls/test_certs.h"
// FUZZ_CHECK, and the corpus-replaying main used without --config=fuzz.
#include "test/fuzz/replay_main.h"

namespace uring_http::tls {
namespace {

using http1::testing::FakeHost;
using http1::testing::FdCloser;

constexpr size_t kFileBytes = 200'000;

// Made once per process: the server's context, the client's, a file root.
struct World {
  World() {
    testing::ScratchDir dir;
    cert = testing::TestCertificate::Generate(testing::KeyType::kEcP256, {"localhost"});
    TlsSettings settings;
    settings.certificates = {cert.WriteTo(dir.path(), "ec")};
    auto c = TlsContext::Create(settings, std::make_shared<TicketKeys>(3600));
    FUZZ_CHECK(c.ok());
    server = *c;
    for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
      SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
      FUZZ_CHECK(ctx != nullptr);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
      SSL_CTX_set_max_proto_version(ctx, version);
      (version == TLS1_3_VERSION ? client13 : client12) = ctx;
    }
    char tmpl[] = "/tmp/tls_layer_fuzz_XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    std::string bytes(kFileBytes, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 23);
    std::ofstream(root + "/big.bin", std::ios::binary) << bytes;
    std::ofstream(root + "/small.txt", std::ios::binary) << "small file\n";
  }
  testing::TestCertificate cert;
  std::shared_ptr<const TlsContext> server;
  SSL_CTX* client13 = nullptr;
  SSL_CTX* client12 = nullptr;
  std::string root;
};

World& TheWorld() {
  static World* world = new World();
  return *world;
}

router::Router MakeRouter() {
  router::Router r;
  (void)r.Fast("GET", "/fast", [](const http::Request&, http::Response& resp) {
    resp.set_static_body("ok");
  });
  (void)r.Fast("POST", "/echo", [](const http::Request& req, http::Response& resp) {
    resp.set_body(req.body);
  });
  (void)r.Fast("GET", "/big", [](const http::Request&, http::Response& resp) {
    resp.body().assign(150'000, 'b');
  });
  FUZZ_CHECK(r.Static("/files/", TheWorld().root).ok());
  return r;
}

const char* const kRequests[] = {
    "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    "GET /big HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /big HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /files/small.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "GARBAGE\r\n\r\n",
    "GET /files/big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=1000-99999\r\n\r\n",
};

const std::string kRaw[] = {
    std::string("\x15\x03\x03\x00\x02\x02\x28", 7),           // fatal handshake_failure
    std::string("\x15\x03\x03\x00\x02\x01\x00", 7),           // close_notify, in clear
    std::string("\x17\x03\x03\x00\x20", 5) + std::string(32, 'Z'),  // does not decrypt
    std::string("\x17\x03", 2),                               // a record header cut short
};

class Rig {
 public:
  Rig(uint8_t header)
      : router_(MakeRouter()),
        file_arena_(*io::Arena::Create(4 * 16384 + 4096)),
        arena_(*io::Arena::Create(256 * 4096 + 8192)),
        tls_arena_(*io::Arena::Create(4 * TlsLayer::kMinBufferBytes)) {
    FUZZ_CHECK(file_buffers_.Init(file_arena_, 16384, 4).ok());
    file_cache_.emplace(&closer_, files::OpenFileCacheLimits{});
    FUZZ_CHECK(chunks_.Init(arena_, 4096, 256).ok());
    FUZZ_CHECK(tls_buffers_.Init(tls_arena_, TlsLayer::kMinBufferBytes, 4).ok());
    config_.proxy_protocol = (header & 4) != 0;
    config_.send_timeout_ms = 3000;
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
    env_.file_cache = &*file_cache_;
    env_.file_closer = &closer_;
    env_.file_buffers = &file_buffers_;
    env_.now_tick = 1000;
    const int gate_bits = header & 3;
    const HandshakeGate::Mode gate = gate_bits == 0   ? HandshakeGate::Mode::kInline
                                     : gate_bits == 1 ? HandshakeGate::Mode::kOffloadRsa
                                                      : HandshakeGate::Mode::kOffloadAll;
    TlsLayer::SubmitJob submit;
    if (gate_bits != 0) {
      submit = [this](uint32_t, worker::WorkerJob* job) {
        if (job_ != nullptr) return false;
        job_ = job;
        return true;
      };
    }
    layer_ = std::make_unique<TlsLayer>(&below_, 1, &tls_buffers_, config_, &env_, &conn_stats_,
                                        &stats_, /*handshake_timeout_ms=*/2000, gate,
                                        std::move(submit), gate_bits == 3);
    env_.transport = layer_.get();
    env_.host = &below_;
    SSL* client = SSL_new((header & 8) ? TheWorld().client12 : TheWorld().client13);
    FUZZ_CHECK(client != nullptr);
    SSL_set_connect_state(client);
    SSL_set_tlsext_host_name(client, "localhost");
    client_out_ = std::make_unique<char[]>(kClientOutput);
    client_.Start(client);
    client_.SetOutput(client_out_.get(), kClientOutput, 0);
    SSL* ssl = TheWorld().server->NewSsl();
    FUZZ_CHECK(ssl != nullptr);
    layer_->Attach(0, &conn_, ssl);
    conn_.Open(&env_, 0, /*proxy_header_below=*/true);
    if (config_.proxy_protocol) wire_ += "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n";
    ClientFeed("", 0);  // its ClientHello
    Check();
  }

  ~Rig() {
    // The file cache closes what it holds before the closer is checked.
    file_cache_.reset();
  }

  void Check() {
    if (!below_.violations.empty()) {
      std::fprintf(stderr, "violation: %s\n", below_.violations.front().c_str());
      FUZZ_CHECK(below_.violations.empty());
    }
    FUZZ_CHECK(closer_.errors.empty());
  }

  // ---- the client
  void ClientWrite(const std::string& plain) {
    if (!client_.handshake_done() || client_.failed()) {
      pending_plain_ += plain;  // written once the handshake is done
      return;
    }
    size_t off = 0;
    while (off < plain.size()) {
      const size_t n = client_.Encrypt(plain.data() + off, plain.size() - off);
      if (n == 0) break;  // output full: the rest is dropped (the test is about the server)
      off += n;
    }
    TakeClientOutput();
  }
  void ClientRaw(const std::string& bytes) { wire_ += bytes; }
  void ClientCloseNotify() {
    if (client_.CloseNotify()) TakeClientOutput();
  }
  void ClientFeed(const char* data, size_t len) {
    if (client_done_) return;
    size_t got = 0;
    std::vector<char> plain(16384);
    TlsSession::Status st = client_.Feed(data, len, plain.data(), plain.size(), &got);
    client_received_ += got;
    while (st == TlsSession::Status::kPlainFull) {
      st = client_.Feed(nullptr, 0, plain.data(), plain.size(), &got);
      client_received_ += got;
    }
    if (st == TlsSession::Status::kFailed || st == TlsSession::Status::kPeerClosed) {
      client_done_ = true;
    }
    TakeClientOutput();
    if (client_.handshake_done() && !client_.failed() && !pending_plain_.empty()) {
      std::string p;
      p.swap(pending_plain_);
      ClientWrite(p);
    }
  }
  void TakeClientOutput() {
    wire_.append(client_.output(), client_.output_len());
    client_.ClearOutput();
  }

  // ---- the kernel
  bool Recv(size_t max) {
    if (wire_.empty() || !below_.recv_armed) return false;
    const size_t n = std::min(max, wire_.size());
    std::string piece = wire_.substr(0, n);  // the provided buffer
    wire_.erase(0, n);
    layer_->OnRecv(0, piece.data(), piece.size(), /*more=*/true);
    return true;
  }
  bool RecvEnd(int res) {
    if (!below_.recv_armed) return false;
    below_.recv_armed = false;
    below_.cancel_pending = false;
    if (res == 0 || res == -ECONNRESET) peer_gone_ = true;
    if (res == -ENOBUFS) starved_ = true;
    layer_->OnRecvEnd(0, res);
    return true;
  }
  bool Cancelled() {
    if (!below_.cancel_pending || !below_.recv_armed) return false;
    return RecvEnd(-ECANCELED);
  }
  bool BuffersBack() {
    if (!starved_) return false;
    starved_ = false;
    layer_->OnBuffersAvailable(0);
    return true;
  }
  bool Sent(size_t max, std::optional<int> fail = std::nullopt) {
    if (!below_.send.has_value()) return false;
    FakeHost::SendCall s = std::move(*below_.send);
    below_.send.reset();
    below_.send_cancel_pending = false;
    if (!below_.Intact(s)) {
      std::fprintf(stderr, "a send's bytes changed while the kernel held them\n");
      FUZZ_CHECK(false);
    }
    // A send linked to its close is all or nothing (MSG_WAITALL).
    const size_t n = s.close_linked ? s.bytes.size() : std::min(max, s.bytes.size());
    if (fail.has_value()) {
      layer_->OnSend(0, *fail);
    } else {
      if (!peer_gone_) ClientFeed(s.bytes.data(), n);
      layer_->OnSend(0, static_cast<int>(std::max<size_t>(n, 1)));
    }
    if (s.close_linked) Closed();
    return true;
  }
  bool Batch() {
    bool moved = false;
    while (layer_->has_owed()) {
      FUZZ_CHECK(layer_->DeliverOwed() == 0);
      moved = true;
    }
    if (below_.batch_end_due) {
      below_.batch_end_due = false;
      layer_->OnBatchEnd(0);
      moved = true;
    }
    return moved;
  }
  // A plain close: what is armed is cancelled first, then the close.
  bool Close() {
    if (!below_.closed || closed_delivered_) return false;
    if (below_.send.has_value()) {
      if (below_.send->close_linked) return false;  // the send carries the close
      return Sent(0, -ECANCELED);
    }
    if (below_.recv_armed) return RecvEnd(-ECANCELED);
    if (below_.shutdown_pending) return Shutdown();
    Closed();
    return true;
  }
  void Closed() {
    FUZZ_CHECK(!closed_delivered_);
    closed_delivered_ = true;
    layer_->OnClosed(0);
  }
  bool Shutdown() {
    if (!below_.shutdown_pending) return false;
    below_.shutdown_pending = false;
    below_.shutdown_done = true;
    layer_->OnShutdownDone(0);
    return true;
  }
  bool Deadline(uint64_t ticks) {
    if (ticks == 0) {
      if (below_.deadline == 0) return false;
      env_.now_tick = std::max(env_.now_tick, below_.deadline);
    } else {
      env_.now_tick += ticks;
    }
    if (below_.deadline == 0 || env_.now_tick < below_.deadline) return true;
    below_.deadline = 0;  // the wheel's entry fired
    layer_->OnDeadline(0);
    return true;
  }
  // The worker's part: `start_only` takes the job off the queue and starts
  // it (the ring may then not take it back), else the job ends and its
  // MSG_RING arrives. A job the ring abandoned is skipped, then comes back.
  bool Worker(bool start_only) {
    if (job_ == nullptr) return false;
    if (!job_started_) {
      job_started_ = true;
      job_claimed_ = job_->Claim();
      if (start_only) return true;
    }
    worker::WorkerJob* job = job_;
    job_ = nullptr;
    job_started_ = false;
    if (job_claimed_) job->run(job);
    job->done.store(1, std::memory_order_release);
    layer_->OnJobDone(0);
    return true;
  }
  bool File(bool fail) {
    if (!below_.file_op.has_value()) return false;
    FakeHost::FileOp op = std::move(*below_.file_op);
    below_.file_op.reset();
    const int failure = op.kind == FakeHost::FileOp::kOpen ? -EACCES : -EIO;
    if (!http1::testing::CompleteFileAccess(op, conn_, closer_,
                                            fail ? std::optional<int>(failure) : std::nullopt,
                                            &below_.violations)) {
      // Over TLS a file is never spliced, and the wait for room is the
      // layer's (room in its output, not the socket's).
      std::fprintf(stderr, "a file operation TLS never asks the kernel for: %d\n", op.kind);
      FUZZ_CHECK(false);
    }
    return true;
  }

  // Everything completes, the kernel's way, until the slot is closed; then
  // it must be freeable with all memory back.
  void Finish() {
    if (std::getenv("TLS_LAYER_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "client: handshake %d, %zu plaintext bytes; server: %llu requests\n",
                   client_.handshake_done(), client_received_,
                   static_cast<unsigned long long>(conn_stats_.requests.Get()));
    }
    conn_.Abort();
    Check();
    for (int i = 0; i < 100000; ++i) {
      bool moved = Batch();
      moved |= File(false);
      moved |= Worker(false);
      moved |= Shutdown();
      moved |= Sent(SIZE_MAX);
      moved |= Cancelled();
      moved |= Close();
      if (!moved && !below_.closed) moved |= Deadline(0);
      Check();
      if (!moved) break;
    }
    const bool freeable = conn_.Freeable() && layer_->Freeable(0);
    if (!freeable) {
      std::fprintf(stderr,
                   "not freeable: conn %d layer %d closed %d delivered %d send %d recv %d "
                   "file %d job %d batch %d owed %d\n",
                   conn_.Freeable(), layer_->Freeable(0), below_.closed, closed_delivered_,
                   below_.send.has_value(), below_.recv_armed, below_.file_op.has_value(),
                   job_ != nullptr, below_.batch_end_due, layer_->has_owed());
      FUZZ_CHECK(freeable);
    }
    layer_->Release(0);
    conn_.Release();
    FUZZ_CHECK(tls_buffers_.available() == 4);
    FUZZ_CHECK(file_buffers_.available() == 4);
    FUZZ_CHECK(chunks_.available() == 256);
  }

  http1::Connection& conn() { return conn_; }
  exchange::ConnectionEnv& env() { return env_; }
  std::string& wire() { return wire_; }

 private:
  static constexpr size_t kClientOutput = 256 * 1024;

  router::Router router_;
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
  worker::WorkerJob* job_ = nullptr;
  bool job_started_ = false;
  bool job_claimed_ = false;
  TlsSession client_;
  std::unique_ptr<char[]> client_out_;
  std::string pending_plain_;
  std::string wire_;  // the client's bytes on their way to the server
  size_t client_received_ = 0;
  bool client_done_ = false;
  bool peer_gone_ = false;
  bool starved_ = false;
  bool closed_delivered_ = false;
};

void Run(const uint8_t* data, size_t size) {
  if (size == 0) return;
  Rig rig(data[0]);
  size_t i = 1;
  auto arg = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
  int ops = 0;
  while (i < size && ++ops < 400) {
    const uint8_t op = arg() % 17;
    if (std::getenv("TLS_LAYER_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "op %d (next %d)\n", op, i < size ? data[i] : -1);
    }
    switch (op) {
      case 0:
        rig.ClientWrite(kRequests[arg() % (sizeof(kRequests) / sizeof(kRequests[0]))]);
        break;
      case 1: {
        const uint8_t k = arg();
        if (k < 4) {
          rig.ClientRaw(kRaw[k]);
        } else {
          const size_t n = std::min<size_t>(k % 64, size - i);
          rig.ClientRaw(std::string(reinterpret_cast<const char*>(data + i), n));
          i += n;
        }
        break;
      }
      case 2: {
        const uint8_t k = arg();
        rig.Recv(k == 255 ? SIZE_MAX : size_t{k} + 1);
        break;
      }
      case 3:
        rig.Sent((size_t{arg()} + 1) * 256);
        break;
      case 4: {
        static constexpr int kErrors[] = {-ECONNRESET, -EPIPE, -ECANCELED};
        rig.Sent(0, kErrors[arg() % 3]);
        break;
      }
      case 5:
        rig.Cancelled();
        break;
      case 6: {
        static constexpr int kEnds[] = {0, -ECONNRESET, -ENOBUFS};
        rig.RecvEnd(kEnds[arg() % 3]);
        break;
      }
      case 7:
        rig.BuffersBack();
        break;
      case 8:
        rig.Batch();
        break;
      case 9:
        rig.Close();
        break;
      case 10:
        rig.conn().Abort();
        break;
      case 11:
        rig.Deadline(arg() % 64);
        break;
      case 12:
        rig.Worker(arg() % 2 == 1);
        break;
      case 13:
        rig.File(arg() % 8 == 1);
        break;
      case 14:
        if (!rig.env().draining) {
          rig.env().draining = true;
          rig.conn().OnDrain();
        }
        break;
      case 15:
        rig.ClientCloseNotify();
        break;
      case 16:
        rig.Shutdown();
        break;
    }
    rig.Check();
  }
  rig.Finish();
}

}  // namespace
}  // namespace uring_http::tls

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uring_http::tls::Run(data, size);
  return 0;
}
