// Session resumption through TicketKeys (src/tls/ticket_keys.h): tickets
// the server issues resume later handshakes (TLS 1.2 and 1.3), survive one
// rotation (and are renewed), not two, and survive a reload (a second
// TlsContext sharing the keys). Client and server are TlsSessions pumping
// each other in memory (test/tls/session_pair.h).
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "src/tls/ticket_keys.h"
#include "src/tls/tls_context.h"
#include "src/tls/tls_session.h"
#include "test/tls/session_pair.h"
#include "test/tls/test_certs.h"

namespace uring_http::tls {
namespace {

using testing::ClientContext;
using testing::ClientOptions;
using testing::Handshake;
using testing::KeyType;
using testing::NewClientSsl;
using testing::Peer;
using testing::ScratchDir;
using testing::SendPlain;
using testing::SslCtxPtr;
using testing::SslSessionPtr;
using testing::TestCertificate;

std::string Ticket(const SSL_SESSION* s) {
  const unsigned char* tick = nullptr;
  size_t len = 0;
  SSL_SESSION_get0_ticket(s, &tick, &len);
  return std::string(reinterpret_cast<const char*>(tick), len);
}

class TicketKeysTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    ec_ = new TestCertificate(TestCertificate::Generate(KeyType::kEcP256, {"localhost"}));
    rsa_ = new TestCertificate(TestCertificate::Generate(KeyType::kRsa2048, {"other.test"}));
    ec_files_ = ec_->WriteTo(dir_->path(), "ec");
    rsa_files_ = rsa_->WriteTo(dir_->path(), "rsa");
  }
  static void TearDownTestSuite() {
    delete ec_;
    delete rsa_;
    delete dir_;
  }

  void SetUp() override {
    keys_ = std::make_shared<TicketKeys>(3600);
    context_ = MakeContext(keys_);
    ASSERT_NE(context_, nullptr);
    client_ctx_ = ClientContext({ec_->x509(), rsa_->x509()}, GetParam());
    ASSERT_NE(client_ctx_, nullptr);
  }

  static std::shared_ptr<const TlsContext> MakeContext(std::shared_ptr<TicketKeys> keys) {
    TlsSettings settings;
    settings.certificates = {ec_files_, rsa_files_};
    auto c = TlsContext::Create(settings, std::move(keys));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }

  bool tls13() const { return GetParam() != TLS1_2_VERSION; }

  struct Result {
    bool ok = false;
    bool client_reused = false;
    bool server_reused = false;
    int version = 0;
    SslSessionPtr session;  // the client's, to resume from next
  };

  // One connection: a handshake (resuming `resume` if given), a request
  // and a response (in TLS 1.3 the ticket comes after the handshake; it is
  // the client's once it has read something), and the client's session.
  Result Connect(const TlsContext& context, SSL_SESSION* resume, const char* sni = "localhost",
                 size_t split = 0) {
    Result r;
    ClientOptions options;
    options.sni = sni;
    options.session = resume;
    Peer client(NewClientSsl(client_ctx_.get(), options));
    Peer server(context.NewSsl());
    if (!Handshake(client, server, split)) {
      ADD_FAILURE() << "handshake: " << client.session.error() << " / "
                    << server.session.error();
      return r;
    }
    SendPlain(client, server, "GET / HTTP/1.1\r\n\r\n", split);
    SendPlain(server, client, "HTTP/1.1 204 No Content\r\n\r\n", split);
    EXPECT_EQ(client.received, "HTTP/1.1 204 No Content\r\n\r\n");
    // The client ends politely: OpenSSL marks the session of an SSL freed
    // without its close_notify not resumable (ssl_clear_bad_session).
    EXPECT_TRUE(client.session.CloseNotify());
    EXPECT_EQ(server.Feed(client.TakeOutput(), split), TlsSession::Status::kPeerClosed);
    r.ok = !client.failed() && !server.failed();
    r.client_reused = SSL_session_reused(client.session.ssl()) == 1;
    r.server_reused = SSL_session_reused(server.session.ssl()) == 1;
    EXPECT_EQ(r.client_reused, r.server_reused);
    r.version = SSL_version(server.session.ssl());
    r.session.reset(SSL_get1_session(client.session.ssl()));
    return r;
  }

  static ScratchDir* dir_;
  static TestCertificate* ec_;
  static TestCertificate* rsa_;
  static CertificateFiles ec_files_;
  static CertificateFiles rsa_files_;
  std::shared_ptr<TicketKeys> keys_;
  std::shared_ptr<const TlsContext> context_;
  SslCtxPtr client_ctx_;
};

ScratchDir* TicketKeysTest::dir_ = nullptr;
TestCertificate* TicketKeysTest::ec_ = nullptr;
TestCertificate* TicketKeysTest::rsa_ = nullptr;
CertificateFiles TicketKeysTest::ec_files_;
CertificateFiles TicketKeysTest::rsa_files_;

INSTANTIATE_TEST_SUITE_P(Versions, TicketKeysTest, ::testing::Values(0, TLS1_2_VERSION),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == TLS1_2_VERSION ? "Tls12" : "Tls13");
                         });

TEST_P(TicketKeysTest, TicketResumes) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.version, tls13() ? TLS1_3_VERSION : TLS1_2_VERSION);
  EXPECT_FALSE(first.server_reused);
  ASSERT_NE(first.session, nullptr);
  ASSERT_TRUE(SSL_SESSION_has_ticket(first.session.get()));
  EXPECT_TRUE(SSL_SESSION_is_resumable(first.session.get()));

  for (size_t split : {0, 1}) {
    SCOPED_TRACE(split);
    Result again = Connect(*context_, first.session.get(), "localhost", split);
    ASSERT_TRUE(again.ok);
    EXPECT_TRUE(again.client_reused);
    EXPECT_TRUE(again.server_reused);
  }
}

TEST_P(TicketKeysTest, TicketResumesOnTheSniCertificate) {
  Result first = Connect(*context_, nullptr, "other.test");
  ASSERT_TRUE(first.ok);
  Result again = Connect(*context_, first.session.get(), "other.test");
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.server_reused);
}

TEST_P(TicketKeysTest, TicketOpensWithoutRenewalBeforeARotation) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  Result again = Connect(*context_, first.session.get());
  ASSERT_TRUE(again.server_reused);
  if (!tls13()) {
    // TLS 1.2 keeps the ticket when its key is current (no new ticket).
    EXPECT_EQ(Ticket(again.session.get()), Ticket(first.session.get()));
  }
}

TEST_P(TicketKeysTest, OneRotationStillResumesAndRenews) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  const uint64_t rotations = keys_->rotations();
  keys_->Rotate();
  EXPECT_EQ(keys_->rotations(), rotations + 1);

  Result again = Connect(*context_, first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.client_reused);
  EXPECT_TRUE(again.server_reused);
  // A new ticket was issued (under the new key).
  ASSERT_NE(again.session, nullptr);
  ASSERT_TRUE(SSL_SESSION_has_ticket(again.session.get()));
  EXPECT_NE(Ticket(again.session.get()), Ticket(first.session.get()));
  // The key name (a ticket's first 16 bytes) is the new key's.
  EXPECT_NE(Ticket(again.session.get()).substr(0, 16), Ticket(first.session.get()).substr(0, 16));

  // One more rotation: the first ticket is two keys old now, but the
  // renewed one is only one old.
  keys_->Rotate();
  Result old = Connect(*context_, first.session.get());
  ASSERT_TRUE(old.ok);
  EXPECT_FALSE(old.server_reused);
  Result renewed = Connect(*context_, again.session.get());
  ASSERT_TRUE(renewed.ok);
  EXPECT_TRUE(renewed.server_reused);
}

TEST_P(TicketKeysTest, TwoRotationsFallBackToAFullHandshake) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  keys_->Rotate();
  keys_->Rotate();
  for (size_t split : {0, 1}) {
    SCOPED_TRACE(split);
    Result again = Connect(*context_, first.session.get(), "localhost", split);
    ASSERT_TRUE(again.ok);  // still a handshake, a full one
    EXPECT_FALSE(again.client_reused);
    EXPECT_FALSE(again.server_reused);
    // With a fresh ticket that resumes.
    ASSERT_NE(again.session, nullptr);
    Result third = Connect(*context_, again.session.get());
    ASSERT_TRUE(third.ok);
    EXPECT_TRUE(third.server_reused);
  }
}

TEST_P(TicketKeysTest, ReloadedContextSharingTheKeysResumes) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  // A reload: a new TlsContext with the same keys. The old one goes.
  std::shared_ptr<const TlsContext> reloaded = MakeContext(keys_);
  ASSERT_NE(reloaded, nullptr);
  context_.reset();
  Result again = Connect(*reloaded, first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.server_reused);
  // And after a rotation too.
  keys_->Rotate();
  Result rotated = Connect(*reloaded, first.session.get());
  ASSERT_TRUE(rotated.ok);
  EXPECT_TRUE(rotated.server_reused);
}

TEST_P(TicketKeysTest, OtherKeysDoNotResume) {
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  std::shared_ptr<const TlsContext> other = MakeContext(std::make_shared<TicketKeys>(3600));
  ASSERT_NE(other, nullptr);
  Result again = Connect(*other, first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.server_reused);
}

TEST_P(TicketKeysTest, KeysRotateLazilyAfterThePeriod) {
  // A 1 s period: the first ticket operation after it makes a new key, and
  // the ticket made before is still accepted, and renewed.
  keys_ = std::make_shared<TicketKeys>(1);
  context_ = MakeContext(keys_);
  ASSERT_NE(context_, nullptr);
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  const uint64_t rotations = keys_->rotations();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(keys_->rotations(), rotations);  // lazy: nothing happened yet
  Result again = Connect(*context_, first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.server_reused);
  EXPECT_EQ(keys_->rotations(), rotations + 1);
  EXPECT_NE(Ticket(again.session.get()).substr(0, 16), Ticket(first.session.get()).substr(0, 16));
}

TEST_P(TicketKeysTest, ResumptionIsNotSuspendedByTheGate) {
  // A resumption signs nothing: the offload gate lets it through inline.
  Result first = Connect(*context_, nullptr, "other.test");
  ASSERT_TRUE(first.ok);
  ClientOptions options;
  options.sni = "other.test";
  options.session = first.session.get();
  Peer client(NewClientSsl(client_ctx_.get(), options));
  HandshakeGate gate;
  gate.mode = HandshakeGate::Mode::kOffloadAll;
  Peer server(context_->NewSsl());
  TlsContext::SetGate(server.session.ssl(), &gate);
  server.gate = &gate;
  ASSERT_TRUE(Handshake(client, server));
  EXPECT_TRUE(SSL_session_reused(server.session.ssl()));
  EXPECT_EQ(server.suspensions, 0);
}

// A full handshake and a resumption through the offload gate (kOffloadAll)
// of a server SSL: how often the handshake was suspended for a worker, and
// whether it resumed.
struct Gated {
  bool ok = false;
  bool reused = false;
  int suspensions = 0;
};

Gated GatedHandshake(const TlsContext& context, SSL_CTX* client_ctx, SSL_SESSION* resume,
                     const char* sni) {
  Gated g;
  ClientOptions options;
  options.sni = sni;
  options.session = resume;
  Peer client(NewClientSsl(client_ctx, options));
  HandshakeGate gate;
  gate.mode = HandshakeGate::Mode::kOffloadAll;
  Peer server(context.NewSsl());
  TlsContext::SetGate(server.session.ssl(), &gate);
  server.gate = &gate;
  g.ok = Handshake(client, server);
  g.reused = SSL_session_reused(server.session.ssl()) == 1;
  g.suspensions = server.suspensions;
  return g;
}

TEST_P(TicketKeysTest, TicketThatDoesNotOpenIsAFullHandshakeOnAWorker) {
  // A ClientHello that carries a ticket (TLS 1.2) or a PSK (TLS 1.3) the
  // server cannot open (sealed with other keys, or made up) is a full
  // handshake, signature and all: the gate must send it to a worker like
  // any other, not take the ticket's presence for a resumption.
  std::shared_ptr<const TlsContext> other = MakeContext(std::make_shared<TicketKeys>(3600));
  ASSERT_NE(other, nullptr);
  Result foreign = Connect(*other, nullptr);
  ASSERT_TRUE(foreign.ok);
  ASSERT_TRUE(SSL_SESSION_has_ticket(foreign.session.get()));
  Gated g = GatedHandshake(*context_, client_ctx_.get(), foreign.session.get(), "localhost");
  ASSERT_TRUE(g.ok);
  EXPECT_FALSE(g.reused);
  EXPECT_EQ(g.suspensions, 1) << "a full handshake behind a bogus ticket ran on the ring";
  // A ticket of ours still resumes on the ring (nothing to sign).
  Result ours = Connect(*context_, nullptr);
  ASSERT_TRUE(ours.ok);
  g = GatedHandshake(*context_, client_ctx_.get(), ours.session.get(), "localhost");
  ASSERT_TRUE(g.ok);
  EXPECT_TRUE(g.reused);
  EXPECT_EQ(g.suspensions, 0);
  // And a handshake with no ticket at all goes to the worker.
  g = GatedHandshake(*context_, client_ctx_.get(), nullptr, "localhost");
  ASSERT_TRUE(g.ok);
  EXPECT_FALSE(g.reused);
  EXPECT_EQ(g.suspensions, 1);
}

TEST_P(TicketKeysTest, TicketDoesNotResumeUnderAnotherCertificate) {
  // Each certificate has its own session id context: a session made
  // under one SNI name's certificate is a full handshake (with the other
  // certificate, which the client verifies) under another's, and the new
  // session resumes there.
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"other.test", "localhost"},
                                 {"localhost", "other.test"}}) {
    SCOPED_TRACE(std::string(from) + " -> " + to);
    Result first = Connect(*context_, nullptr, from);
    ASSERT_TRUE(first.ok);
    Result again = Connect(*context_, first.session.get(), to);
    ASSERT_TRUE(again.ok);
    EXPECT_FALSE(again.server_reused) << "a session resumed under another certificate";
    Result third = Connect(*context_, again.session.get(), to);
    ASSERT_TRUE(third.ok);
    EXPECT_TRUE(third.server_reused);
    // Through the gate, the full handshake goes to a worker.
    Gated g = GatedHandshake(*context_, client_ctx_.get(), first.session.get(), to);
    ASSERT_TRUE(g.ok);
    EXPECT_FALSE(g.reused);
    EXPECT_EQ(g.suspensions, 1);
  }
}

// The tickets a client received, in order (its new-session callback).
std::vector<SslSessionPtr>& ReceivedTickets() {
  static auto* tickets = new std::vector<SslSessionPtr>();
  return *tickets;
}

int OnNewTicket(SSL* /*ssl*/, SSL_SESSION* session) {
  ReceivedTickets().emplace_back(session);
  return 1;  // the reference is ours
}

TEST_P(TicketKeysTest, ClientUsingEachTicketOnceAlwaysResumes) {
  // BoringSSL (Chrome) uses a TLS 1.3 ticket once (RFC 8446 C.4): a
  // resumption must bring a fresh ticket, or every other connection is a
  // full handshake. Five connections in a row, each resuming with the
  // ticket the one before received, and nothing else.
  if (!tls13()) GTEST_SKIP() << "TLS 1.2 clients use a ticket again";
  SSL_CTX_set_session_cache_mode(client_ctx_.get(),
                                 SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(client_ctx_.get(), &OnNewTicket);
  ReceivedTickets().clear();
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  ASSERT_EQ(ReceivedTickets().size(), 1u) << "one ticket after a full handshake";
  for (int i = 2; i <= 6; ++i) {
    SCOPED_TRACE("connection " + std::to_string(i));
    SslSessionPtr ticket = std::move(ReceivedTickets().back());
    ReceivedTickets().clear();
    Result next = Connect(*context_, ticket.get());
    ASSERT_TRUE(next.ok);
    EXPECT_TRUE(next.server_reused);
    ASSERT_EQ(ReceivedTickets().size(), 1u) << "no fresh ticket after a resumption";
    EXPECT_NE(Ticket(ReceivedTickets().back().get()), Ticket(ticket.get()));
  }
  ReceivedTickets().clear();
}

TEST_P(TicketKeysTest, ConcurrentHandshakesAndRotations) {
  // Several threads resume and make tickets on one TlsContext while
  // another rotates the keys: every handshake succeeds (the mutex, under
  // TSan), resumed or not.
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  std::atomic<bool> stop{false};
  std::atomic<int> handshakes{0};
  std::atomic<int> failures{0};
  std::thread rotator([&] {
    while (!stop.load()) {
      keys_->Rotate();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      SslSessionPtr session(SSL_SESSION_dup(first.session.get()));
      for (int i = 0; i < 15; ++i) {
        ClientOptions options;
        options.session = session.get();
        Peer client(NewClientSsl(client_ctx_.get(), options));
        Peer server(context_->NewSsl());
        if (!Handshake(client, server)) {
          failures.fetch_add(1);
          continue;
        }
        SendPlain(server, client, "x");
        client.session.CloseNotify();
        handshakes.fetch_add(1);
        session.reset(SSL_get1_session(client.session.ssl()));
      }
    });
  }
  for (auto& t : threads) t.join();
  stop.store(true);
  rotator.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(handshakes.load(), 60);
}

// Rotation is lazy: after an idle spell of two periods or more, the first
// ticket operation must not leave the key of two periods ago as
// "previous" (it failed before MaybeRotateLocked dropped it).
TEST_P(TicketKeysTest, TicketOlderThanTwoPeriodsDoesNotResumeAfterIdleSpell) {
  keys_ = std::make_shared<TicketKeys>(1);
  context_ = MakeContext(keys_);
  ASSERT_NE(context_, nullptr);
  Result first = Connect(*context_, nullptr);
  ASSERT_TRUE(first.ok);
  // Two periods and more without a ticket operation.
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  Result again = Connect(*context_, first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.server_reused) << "a ticket over two periods old resumed";
}

}  // namespace
}  // namespace uring_http::tls
