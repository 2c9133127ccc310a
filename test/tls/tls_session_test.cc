// TlsSession (src/tls/tls_session.h) and TlsContext (src/tls/tls_context.h)
// in memory: a server session on an SSL from a TlsContext built with
// certificates made at run time, against a client session on a client
// context that trusts them. Every exchange runs with the flights fed whole
// and fed one byte at a time.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
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
using testing::Pump;
using testing::ScratchDir;
using testing::SendPlain;
using testing::SslCtxPtr;
using testing::TestCertificate;
using Status = TlsSession::Status;

constexpr char kAlpnHttp11[] = "\x08http/1.1";
constexpr char kAlpnH2[] = "\x02h2";
constexpr char kAlpnH2Http11[] = "\x02h2\x08http/1.1";

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// Made once: an EC certificate for localhost (the default) and an RSA one
// for other.test, their files, and contexts over them.
class TlsSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    ec_ = new TestCertificate(TestCertificate::Generate(KeyType::kEcP256, {"localhost"}));
    rsa_ = new TestCertificate(
        TestCertificate::Generate(KeyType::kRsa2048, {"other.test", "www.other.test"}));
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
    TlsSettings settings;
    settings.certificates = {ec_files_};
    auto one = TlsContext::Create(settings, keys_);
    ASSERT_TRUE(one.ok()) << one.status();
    single_ = *one;
    settings.certificates = {ec_files_, rsa_files_};
    auto two = TlsContext::Create(settings, keys_);
    ASSERT_TRUE(two.ok()) << two.status();
    dual_ = *two;
  }

  // A client context trusting both certificates.
  static SslCtxPtr Client(int max_version = 0) {
    return ClientContext({ec_->x509(), rsa_->x509()}, max_version);
  }

  static ScratchDir* dir_;
  static TestCertificate* ec_;
  static TestCertificate* rsa_;
  static CertificateFiles ec_files_;
  static CertificateFiles rsa_files_;
  std::shared_ptr<TicketKeys> keys_;
  std::shared_ptr<const TlsContext> single_;
  std::shared_ptr<const TlsContext> dual_;
};

ScratchDir* TlsSessionTest::dir_ = nullptr;
TestCertificate* TlsSessionTest::ec_ = nullptr;
TestCertificate* TlsSessionTest::rsa_ = nullptr;
CertificateFiles TlsSessionTest::ec_files_;
CertificateFiles TlsSessionTest::rsa_files_;

// ---------------------------------------------------------------- handshakes

struct VersionSplit {
  int max_version;  // of the client
  size_t split;     // 0: flights fed whole
};

std::string Name(const ::testing::TestParamInfo<VersionSplit>& info) {
  return std::string(info.param.max_version == TLS1_2_VERSION ? "Tls12" : "Tls13") +
         (info.param.split == 0 ? "Whole" : "Split" + std::to_string(info.param.split));
}

class TlsSessionVersionTest : public TlsSessionTest,
                              public ::testing::WithParamInterface<VersionSplit> {
 protected:
  int expected_version() const {
    return GetParam().max_version == TLS1_2_VERSION ? TLS1_2_VERSION : TLS1_3_VERSION;
  }
};

INSTANTIATE_TEST_SUITE_P(All, TlsSessionVersionTest,
                         ::testing::Values(VersionSplit{0, 0}, VersionSplit{0, 1},
                                           VersionSplit{TLS1_2_VERSION, 0},
                                           VersionSplit{TLS1_2_VERSION, 1},
                                           VersionSplit{0, 7}, VersionSplit{TLS1_2_VERSION, 13}),
                         Name);

TEST_P(TlsSessionVersionTest, HandshakeCompletes) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  EXPECT_FALSE(server.session.handshake_done());
  ASSERT_TRUE(Handshake(client, server, GetParam().split))
      << "client: " << client.session.error() << ", server: " << server.session.error();
  EXPECT_EQ(SSL_version(server.session.ssl()), expected_version());
  EXPECT_EQ(SSL_version(client.session.ssl()), expected_version());
  EXPECT_EQ(SSL_get_verify_result(client.session.ssl()), X509_V_OK);
  EXPECT_FALSE(SSL_session_reused(server.session.ssl()));
  // Completed once, and said so once.
  EXPECT_TRUE(server.session.TakeHandshakeCompleted());
  EXPECT_FALSE(server.session.TakeHandshakeCompleted());
  EXPECT_TRUE(client.session.TakeHandshakeCompleted());
  // No plaintext appeared from the handshake.
  EXPECT_EQ(client.received, "");
  EXPECT_EQ(server.received, "");
  EXPECT_FALSE(server.session.failed());
  EXPECT_STREQ(server.session.error(), "");
  // An AEAD suite (the only kind the server allows).
  const char* cipher = SSL_get_cipher_name(server.session.ssl());
  ASSERT_NE(cipher, nullptr);
  EXPECT_TRUE(std::strstr(cipher, "GCM") != nullptr || std::strstr(cipher, "CHACHA") != nullptr)
      << cipher;
}

TEST_P(TlsSessionVersionTest, PlaintextBothWays) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server, GetParam().split));
  const std::string request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  SendPlain(client, server, request, GetParam().split);
  EXPECT_EQ(server.received, request);
  EXPECT_EQ(server.last, Status::kNeedMore);
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
  SendPlain(server, client, response, GetParam().split);
  EXPECT_EQ(client.received, response);
  // And again, both ways: the sessions stay usable.
  SendPlain(client, server, request, GetParam().split);
  SendPlain(server, client, response, GetParam().split);
  EXPECT_EQ(server.received, request + request);
  EXPECT_EQ(client.received, response + response);
}

TEST_P(TlsSessionVersionTest, OneMebibyteInPiecesWithPlainFull) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server, GetParam().split == 1 ? 1 : 0));
  // Small plaintext buffers: a Feed fills them and says kPlainFull.
  client.plain_cap = 4096;
  server.plain_cap = 3000;
  const std::string big = Pattern(1 << 20, 1);
  SendPlain(server, client, big);
  ASSERT_EQ(client.received.size(), big.size());
  EXPECT_TRUE(client.received == big);
  EXPECT_GT(client.plain_full, 0);
  EXPECT_EQ(client.last, Status::kNeedMore);
  const std::string up = Pattern(1 << 20, 2);
  SendPlain(client, server, up);
  ASSERT_EQ(server.received.size(), up.size());
  EXPECT_TRUE(server.received == up);
  EXPECT_GT(server.plain_full, 0);
}

TEST_P(TlsSessionVersionTest, CloseNotifyBothWays) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server, GetParam().split));
  SendPlain(client, server, "last words");
  EXPECT_TRUE(client.session.CloseNotify());
  EXPECT_TRUE(client.session.close_notify_sent());
  EXPECT_FALSE(client.session.CloseNotify());  // once
  std::string alert = client.TakeOutput();
  ASSERT_FALSE(alert.empty());
  EXPECT_EQ(server.Feed(alert, GetParam().split), Status::kPeerClosed);
  EXPECT_EQ(server.received, "last words");
  EXPECT_FALSE(server.session.failed());
  // The server answers with its own.
  EXPECT_TRUE(server.session.CloseNotify());
  EXPECT_EQ(client.Feed(server.TakeOutput(), GetParam().split), Status::kPeerClosed);
}

TEST_P(TlsSessionVersionTest, ServerCloseNotifyWithDataInOneFlight) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server, GetParam().split));
  const std::string response = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(server.session.Encrypt(response.data(), response.size()), response.size());
  EXPECT_TRUE(server.session.CloseNotify());
  EXPECT_EQ(client.Feed(server.TakeOutput(), GetParam().split), Status::kPeerClosed);
  EXPECT_EQ(client.received, response);
}

TEST_P(TlsSessionVersionTest, BadRecordAfterHandshakeFailsWithAlert) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server));
  const std::string msg = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_EQ(client.session.Encrypt(msg.data(), msg.size()), msg.size());
  std::string record = client.TakeOutput();
  ASSERT_GT(record.size(), 20u);
  record[record.size() - 3] ^= 0x01;  // in the tag
  EXPECT_EQ(server.Feed(record, GetParam().split), Status::kFailed);
  EXPECT_TRUE(server.session.failed());
  EXPECT_STRNE(server.session.error(), "");
  EXPECT_EQ(server.received, "");
  // A fatal alert went into the output, and the client reads it as one.
  const std::string alert = server.TakeOutput();
  ASSERT_FALSE(alert.empty());
  EXPECT_EQ(client.Feed(alert), Status::kFailed);
  EXPECT_NE(std::string(client.session.error()).find("alert"), std::string::npos)
      << client.session.error();
  // Failed stays failed, without looking at more input.
  size_t got = 0;
  char plain[64];
  EXPECT_EQ(server.session.Feed("x", 1, plain, sizeof(plain), &got), Status::kFailed);
  EXPECT_EQ(got, 0u);
}

TEST_P(TlsSessionVersionTest, TruncatedRecordFollowedByMoreBytesFails) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server));
  const std::string a = "first request, whose record is cut short";
  const std::string b = "second request, whose record is whole";
  ASSERT_EQ(client.session.Encrypt(a.data(), a.size()), a.size());
  std::string first = client.TakeOutput();
  ASSERT_EQ(client.session.Encrypt(b.data(), b.size()), b.size());
  std::string second = client.TakeOutput();
  // Alone, a truncated record is only a record not complete yet.
  std::string cut = first.substr(0, first.size() - 10);
  {
    Peer other_client(NewClientSsl(cctx.get()));
    Peer other(single_->NewSsl());
    ASSERT_TRUE(Handshake(other_client, other));
    EXPECT_EQ(other.Feed(cut.substr(0, 3), GetParam().split), Status::kNeedMore);
  }
  EXPECT_EQ(server.Feed(cut, GetParam().split), Status::kNeedMore);
  EXPECT_EQ(server.received, "");
  // The next record's bytes complete it: it does not authenticate.
  EXPECT_EQ(server.Feed(second, GetParam().split), Status::kFailed);
  EXPECT_STRNE(server.session.error(), "");
  EXPECT_EQ(server.received, "");
  EXPECT_FALSE(server.TakeOutput().empty());  // the alert
}

TEST_P(TlsSessionVersionTest, OversizedRecordFails) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server));
  // An application-data record claiming 60000 bytes (over 2^14 + 256).
  std::string record = "\x17\x03\x03\xea\x60";
  record += std::string(100, 'x');
  EXPECT_EQ(server.Feed(record, GetParam().split), Status::kFailed);
  EXPECT_STRNE(server.session.error(), "");
  EXPECT_FALSE(server.TakeOutput().empty());
}

TEST_P(TlsSessionVersionTest, BigOutputBufferKeepsHeadroom) {
  // Encrypt's promise holds for any output size, not just the layer's
  // 96 KiB chunk: here 1 MiB plus a bit, 64 records' worth at once.
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()), 2 << 20);
  Peer server(single_->NewSsl(), (1 << 20) + 4096);
  ASSERT_TRUE(Handshake(client, server));
  const std::string big = Pattern(3 << 20, 3);
  SendPlain(server, client, big);
  EXPECT_TRUE(client.received == big);
}

TEST_P(TlsSessionVersionTest, KeyUpdateOrRecordsInterleaved) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server, GetParam().split));
  if (expected_version() == TLS1_3_VERSION) {
    // The client asks the server to update its keys too: the server's
    // KeyUpdate goes into its output from inside Feed.
    ASSERT_EQ(SSL_key_update(client.session.ssl(), SSL_KEY_UPDATE_REQUESTED), 1);
  }
  SendPlain(client, server, "ping", GetParam().split);
  ASSERT_FALSE(server.failed()) << server.session.error();
  EXPECT_EQ(server.received, "ping");
  SendPlain(server, client, "pong", GetParam().split);
  ASSERT_FALSE(client.failed()) << client.session.error();
  EXPECT_EQ(client.received, "pong");
  Pump(client, server, GetParam().split);
  SendPlain(client, server, "ping2", GetParam().split);
  SendPlain(server, client, "pong2", GetParam().split);
  EXPECT_EQ(server.received, "pingping2");
  EXPECT_EQ(client.received, "pongpong2");
}

// ---------------------------------------------------------------- ALPN

struct AlpnCase {
  const char* offered;  // wire format; "" offers none
  size_t offered_len;
  const char* selected;  // "" none
};

TEST_F(TlsSessionTest, AlpnSelectsHttp11OrNothing) {
  const AlpnCase cases[] = {
      {kAlpnHttp11, sizeof(kAlpnHttp11) - 1, "http/1.1"},
      {kAlpnH2Http11, sizeof(kAlpnH2Http11) - 1, "http/1.1"},
      {kAlpnH2, sizeof(kAlpnH2) - 1, ""},
      {"", 0, ""},
  };
  for (int version : {0, TLS1_2_VERSION}) {
    for (const AlpnCase& c : cases) {
      SCOPED_TRACE(std::string("version ") + (version ? "1.2" : "1.3") + ", offered " +
                   std::string(c.offered, c.offered_len));
      SslCtxPtr cctx = Client(version);
      ClientOptions options;
      options.alpn.assign(c.offered, c.offered_len);
      Peer client(NewClientSsl(cctx.get(), options));
      Peer server(single_->NewSsl());
      ASSERT_TRUE(Handshake(client, server))
          << client.session.error() << " / " << server.session.error();
      for (SSL* ssl : {client.session.ssl(), server.session.ssl()}) {
        const unsigned char* proto = nullptr;
        unsigned len = 0;
        SSL_get0_alpn_selected(ssl, &proto, &len);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(proto), len), c.selected);
      }
    }
  }
}

// ---------------------------------------------------------------- SNI

struct SniCase {
  const char* sni;          // "" sends none
  bool expect_rsa;
};

TEST_F(TlsSessionTest, SniPicksTheCertificateNamingTheHost) {
  const SniCase cases[] = {
      {"localhost", false},
      {"other.test", true},
      {"www.other.test", true},
      {"OTHER.TEST", true},   // host names compare without case
      {"unknown.test", false},  // no certificate names it: the default
      {"", false},              // no SNI: the default
  };
  for (int version : {0, TLS1_2_VERSION}) {
    for (const SniCase& c : cases) {
      SCOPED_TRACE(std::string("version ") + (version ? "1.2" : "1.3") + ", SNI '" + c.sni + "'");
      SslCtxPtr cctx = Client(version);
      ClientOptions options;
      options.sni = c.sni;
      // The client checks the name the chosen certificate should have.
      options.verify_host = c.expect_rsa ? "other.test" : "localhost";
      Peer client(NewClientSsl(cctx.get(), options));
      Peer server(dual_->NewSsl());
      ASSERT_TRUE(Handshake(client, server))
          << client.session.error() << " / " << server.session.error();
      EXPECT_EQ(SSL_get_verify_result(client.session.ssl()), X509_V_OK);
      X509* peer = SSL_get0_peer_certificate(client.session.ssl());
      ASSERT_NE(peer, nullptr);
      EXPECT_EQ(X509_cmp(peer, c.expect_rsa ? rsa_->x509() : ec_->x509()), 0);
      EXPECT_EQ(TlsContext::UsesRsa(server.session.ssl()), c.expect_rsa);
      EXPECT_EQ(EVP_PKEY_get_base_id(X509_get0_pubkey(peer)),
                c.expect_rsa ? EVP_PKEY_RSA : EVP_PKEY_EC);
      // The data path works whichever certificate answered.
      SendPlain(client, server, "hello");
      EXPECT_EQ(server.received, "hello");
    }
  }
}

TEST_F(TlsSessionTest, UsesRsaMatchesTheDefaultCertificate) {
  // An RSA certificate alone: every handshake signs with RSA.
  TlsSettings settings;
  settings.certificates = {rsa_files_};
  auto rsa_only = TlsContext::Create(settings, keys_);
  ASSERT_TRUE(rsa_only.ok()) << rsa_only.status();
  for (const char* sni : {"other.test", "localhost", ""}) {
    SCOPED_TRACE(sni);
    SslCtxPtr cctx = Client();
    ClientOptions options;
    options.sni = sni;
    options.verify_host = "other.test";
    Peer client(NewClientSsl(cctx.get(), options));
    Peer server((*rsa_only)->NewSsl());
    EXPECT_TRUE(TlsContext::UsesRsa(server.session.ssl()));
    ASSERT_TRUE(Handshake(client, server));
    EXPECT_TRUE(TlsContext::UsesRsa(server.session.ssl()));
  }
  // Before the ClientHello, an SSL is on the default context.
  Peer ec_server(single_->NewSsl());
  EXPECT_FALSE(TlsContext::UsesRsa(ec_server.session.ssl()));
  Peer dual_server(dual_->NewSsl());
  EXPECT_FALSE(TlsContext::UsesRsa(dual_server.session.ssl()));
}

TEST_F(TlsSessionTest, CertificateInfoAndDescribe) {
  ASSERT_EQ(dual_->certificates().size(), 2u);
  EXPECT_EQ(dual_->certificates()[0].names, "localhost");
  EXPECT_EQ(dual_->certificates()[0].key_type, "ECDSA P-256");
  EXPECT_FALSE(dual_->certificates()[0].rsa);
  EXPECT_EQ(dual_->certificates()[1].names, "other.test,www.other.test");
  EXPECT_EQ(dual_->certificates()[1].key_type, "RSA 2048");
  EXPECT_TRUE(dual_->certificates()[1].rsa);
  const std::string d = dual_->Describe();
  EXPECT_NE(d.find("OpenSSL 3"), std::string::npos) << d;
  EXPECT_NE(d.find("localhost (ECDSA "), std::string::npos) << d;
  EXPECT_NE(d.find("other.test,www.other.test (RSA 2048)"), std::string::npos) << d;
}

// ---------------------------------------------------------------- what the server refuses

std::string MasterKey(SSL* ssl) {
  unsigned char key[SSL_MAX_MASTER_KEY_LENGTH];
  const size_t n = SSL_SESSION_get_master_key(SSL_get_session(ssl), key, sizeof(key));
  return std::string(reinterpret_cast<char*>(key), n);
}

TEST_F(TlsSessionTest, Tls12RenegotiationIsRefused) {
  for (size_t split : {0, 1}) {
    SCOPED_TRACE(split);
    SslCtxPtr cctx = Client(TLS1_2_VERSION);
    Peer client(NewClientSsl(cctx.get()));
    Peer server(single_->NewSsl());
    ASSERT_TRUE(Handshake(client, server, split));
    ASSERT_EQ(SSL_version(server.session.ssl()), TLS1_2_VERSION);
    const std::string master = MasterKey(server.session.ssl());
    ASSERT_FALSE(master.empty());

    // The client asks; its ClientHello goes out from its next read.
    ASSERT_EQ(SSL_renegotiate(client.session.ssl()), 1);
    client.Feed("", 0);
    const std::string hello = client.TakeOutput();
    ASSERT_FALSE(hello.empty()) << "no renegotiation ClientHello";
    server.Feed(hello, split);
    // The server's answer is at most an alert (one short record), never a
    // ServerHello flight with its certificate.
    const std::string answer = server.TakeOutput();
    EXPECT_LT(answer.size(), 64u);
    EXPECT_FALSE(SSL_in_init(server.session.ssl()) && !server.failed());
    if (!answer.empty()) client.Feed(answer, split);
    Pump(client, server, split);

    // Whatever the server did (a no_renegotiation alert, a failure), no
    // second handshake ran: the session's keys are the first handshake's
    // and the client's renegotiation did not complete.
    EXPECT_EQ(MasterKey(server.session.ssl()), master);
    EXPECT_TRUE(client.failed() || SSL_renegotiate_pending(client.session.ssl()))
        << "the client's renegotiation completed";
    EXPECT_FALSE(SSL_in_init(server.session.ssl()) && !server.failed());
    if (!client.failed() && !server.failed()) {
      // The refusal was a warning: the connection goes on.
      SendPlain(server, client, "still here");
      EXPECT_EQ(client.received, "still here");
    }
  }
}

TEST_F(TlsSessionTest, NoSharedCipherFailsWithAlert) {
  // TLS 1.2 with a CBC suite only: the server allows AEAD suites only.
  SslCtxPtr cctx = Client(TLS1_2_VERSION);
  ASSERT_EQ(SSL_CTX_set_cipher_list(cctx.get(), "ECDHE-ECDSA-AES128-SHA256"), 1);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  EXPECT_FALSE(Handshake(client, server));
  EXPECT_TRUE(server.failed());
  EXPECT_NE(std::string(server.session.error()).find("no shared cipher"), std::string::npos)
      << server.session.error();
  // The alert reached the client.
  EXPECT_TRUE(client.failed());
  EXPECT_NE(std::string(client.session.error()).find("alert"), std::string::npos)
      << client.session.error();
  EXPECT_FALSE(server.session.handshake_done());
  EXPECT_FALSE(server.session.CloseNotify());  // a failed session sends none
}

TEST_F(TlsSessionTest, OldVersionIsRefused) {
  SslCtxPtr cctx = Client(TLS1_1_VERSION);
  SSL_CTX_set_min_proto_version(cctx.get(), TLS1_VERSION);
  SSL_CTX_set_security_level(cctx.get(), 0);
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  EXPECT_FALSE(Handshake(client, server));
  EXPECT_TRUE(server.failed());
  EXPECT_STRNE(server.session.error(), "");
}

TEST_F(TlsSessionTest, ClientThatDistrustsTheServerEndsTheServer) {
  SslCtxPtr cctx = ClientContext({});  // trusts nothing
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  EXPECT_FALSE(Handshake(client, server));
  EXPECT_TRUE(client.failed());
  EXPECT_TRUE(server.failed());
  EXPECT_NE(std::string(server.session.error()).find("unknown ca"), std::string::npos)
      << server.session.error();
}

TEST_F(TlsSessionTest, GarbageBeforeHandshakeFails) {
  const std::vector<std::string> inputs = {
      // Not TLS at all.
      "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09", 10),
      Pattern(300, 9),
      // A handshake record holding no ClientHello.
      std::string("\x16\x03\x01\x00\x05hello", 10),
      // A ClientHello header whose body is garbage.
      std::string("\x16\x03\x01\x00\x30\x01\x00\x00\x2c", 9) + Pattern(0x2c, 4),
      // An alert before anything.
      std::string("\x15\x03\x01\x00\x02\x02\x28", 7),
      // Application data before the handshake.
      std::string("\x17\x03\x03\x00\x10", 5) + Pattern(16, 5),
      // SSLv2-style hello.
      std::string("\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10", 11) + Pattern(0x25, 6),
  };
  int alerts = 0;
  for (size_t split : {0, 1, 3}) {
    for (const std::string& in : inputs) {
      SCOPED_TRACE(::testing::PrintToString(in) + " split " + std::to_string(split));
      Peer server(single_->NewSsl());
      const Status st = server.Feed(in, split);
      EXPECT_EQ(st, Status::kFailed);
      EXPECT_TRUE(server.session.failed());
      EXPECT_STRNE(server.session.error(), "");
      EXPECT_FALSE(server.session.handshake_done());
      EXPECT_FALSE(server.session.TakeHandshakeCompleted());
      EXPECT_EQ(server.received, "");
      const std::string out = server.TakeOutput();
      if (!out.empty()) {
        ++alerts;
        // An alert record: content type 21, two bytes of alert.
        EXPECT_EQ(out[0], '\x15');
        EXPECT_EQ(out.size(), 7u);
      }
    }
  }
  // Most of them get an alert (plain HTTP gets none: it is not TLS).
  EXPECT_GT(alerts, static_cast<int>(inputs.size()));
}

TEST_F(TlsSessionTest, FlightThatDoesNotFitFailsCleanly) {
  // 600 bytes of output cannot take the server's flight (its certificate
  // alone is bigger): the session fails instead of writing past the end.
  SslCtxPtr cctx = Client();
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl(), 600);
  EXPECT_FALSE(Handshake(client, server));
  EXPECT_TRUE(server.failed());
  EXPECT_STRNE(server.session.error(), "");
  EXPECT_LE(server.session.output_len(), 600u);
}

TEST_F(TlsSessionTest, EncryptStopsWhenOnlyHeadroomIsLeft) {
  SslCtxPtr cctx = Client();
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server));
  const std::string big = Pattern(200 * 1024, 7);
  size_t taken = server.session.Encrypt(big.data(), big.size());
  EXPECT_GT(taken, 0u);
  EXPECT_LT(taken, big.size());
  EXPECT_GE(server.output_room(), TlsSession::kFeedHeadroom);
  // Full but for the headroom: nothing more until the output is sent.
  EXPECT_EQ(server.session.Encrypt(big.data() + taken, big.size() - taken), 0u);
  EXPECT_FALSE(server.session.failed());
  // A Feed still has its room: the client's records and requests go in.
  ASSERT_EQ(SSL_key_update(client.session.ssl(), SSL_KEY_UPDATE_REQUESTED), 1);
  SendPlain(client, server, "more?");
  EXPECT_EQ(server.received, "more?");
  EXPECT_FALSE(server.failed()) << server.session.error();
  // Sent: the rest goes.
  client.Feed(server.TakeOutput());
  SendPlain(server, client, std::string_view(big).substr(taken));
  EXPECT_TRUE(client.received == big);
}

TEST_F(TlsSessionTest, CloseNotifyBeforeHandshakeIsRefused) {
  Peer server(single_->NewSsl());
  EXPECT_FALSE(server.session.CloseNotify());
  EXPECT_EQ(server.session.output_len(), 0u);
  TlsSession empty;
  EXPECT_FALSE(empty.CloseNotify());
}

TEST_F(TlsSessionTest, ResetMakesTheSessionNew) {
  SslCtxPtr cctx = Client();
  Peer client(NewClientSsl(cctx.get()));
  Peer server(single_->NewSsl());
  ASSERT_TRUE(Handshake(client, server));
  server.session.Reset();
  EXPECT_FALSE(server.session.started());
  EXPECT_FALSE(server.session.handshake_done());
  EXPECT_FALSE(server.session.failed());
  // Started again on a new SSL, it handshakes with a new client.
  server.session.Start(single_->NewSsl());
  server.last = Status::kNeedMore;
  Peer client2(NewClientSsl(cctx.get()));
  EXPECT_TRUE(Handshake(client2, server));
}

// ---------------------------------------------------------------- the handshake gate

TEST_P(TlsSessionVersionTest, GateOffloadAllSuspendsAtTheClientHello) {
  SslCtxPtr cctx = Client(GetParam().max_version);
  Peer client(NewClientSsl(cctx.get()));
  HandshakeGate gate;
  gate.mode = HandshakeGate::Mode::kOffloadAll;
  Peer server(single_->NewSsl());
  TlsContext::SetGate(server.session.ssl(), &gate);
  server.gate = &gate;
  client.Feed("", 0);
  EXPECT_EQ(server.Feed(client.TakeOutput(), GetParam().split), Status::kSuspended);
  EXPECT_EQ(server.session.output_len(), 0u);  // nothing signed or sent yet
  EXPECT_EQ(server.session.input_left(), 0u);
  EXPECT_FALSE(server.session.failed());
  // Suspended again while the gate still says so.
  EXPECT_EQ(server.session.Handshake(), Status::kSuspended);
  EXPECT_EQ(server.session.output_len(), 0u);
  // The worker's turn: the flight comes out.
  EXPECT_EQ(server.Resume(), Status::kNeedMore);
  EXPECT_GT(server.session.output_len(), 0u);
  Pump(client, server, GetParam().split);
  ASSERT_TRUE(client.session.handshake_done() && server.session.handshake_done())
      << client.session.error() << " / " << server.session.error();
  EXPECT_EQ(server.suspensions, 1);
  EXPECT_TRUE(server.session.TakeHandshakeCompleted());
  SendPlain(client, server, "after the worker");
  EXPECT_EQ(server.received, "after the worker");
  // Handshake() after the handshake is a no-op.
  EXPECT_EQ(server.session.Handshake(), Status::kNeedMore);
}

TEST_F(TlsSessionTest, GateOffloadRsaSuspendsOnlyRsaHandshakes) {
  struct Case {
    const char* sni;
    bool rsa;
  };
  for (const Case& c : {Case{"localhost", false}, Case{"other.test", true},
                        Case{"unknown.test", false}, Case{"", false}}) {
    SCOPED_TRACE(c.sni);
    SslCtxPtr cctx = Client();
    ClientOptions options;
    options.sni = c.sni;
    options.verify_host = c.rsa ? "other.test" : "localhost";
    Peer client(NewClientSsl(cctx.get(), options));
    HandshakeGate gate;
    gate.mode = HandshakeGate::Mode::kOffloadRsa;
    Peer server(dual_->NewSsl());
    TlsContext::SetGate(server.session.ssl(), &gate);
    server.gate = &gate;
    ASSERT_TRUE(Handshake(client, server))
        << client.session.error() << " / " << server.session.error();
    EXPECT_EQ(server.suspensions, c.rsa ? 1 : 0);
    EXPECT_EQ(TlsContext::UsesRsa(server.session.ssl()), c.rsa);
  }
  // An RSA default: a name nobody has, and no name, sign with RSA too.
  TlsSettings settings;
  settings.certificates = {rsa_files_, ec_files_};
  auto rsa_first = TlsContext::Create(settings, keys_);
  ASSERT_TRUE(rsa_first.ok()) << rsa_first.status();
  for (const char* sni : {"unknown.test", ""}) {
    SCOPED_TRACE(sni);
    SslCtxPtr cctx = Client();
    ClientOptions options;
    options.sni = sni;
    options.verify_host = "other.test";
    Peer client(NewClientSsl(cctx.get(), options));
    HandshakeGate gate;
    gate.mode = HandshakeGate::Mode::kOffloadRsa;
    Peer server((*rsa_first)->NewSsl());
    TlsContext::SetGate(server.session.ssl(), &gate);
    server.gate = &gate;
    ASSERT_TRUE(Handshake(client, server));
    EXPECT_EQ(server.suspensions, 1);
  }
}

TEST_F(TlsSessionTest, HelloRetryRequest) {
  // The client's only key share is for P-521, which the server does not
  // take: it asks again (HelloRetryRequest) for a group of its own list,
  // and the second ClientHello goes through the gate again.
  for (size_t split : {0, 1}) {
    for (bool gated : {false, true}) {
      SCOPED_TRACE(std::to_string(split) + (gated ? " gated" : ""));
      SslCtxPtr cctx = Client();
      ASSERT_EQ(SSL_CTX_set1_groups_list(cctx.get(), "P-521:X25519"), 1);
      Peer client(NewClientSsl(cctx.get()));
      HandshakeGate gate;
      gate.mode = HandshakeGate::Mode::kOffloadAll;
      Peer server(single_->NewSsl());
      if (gated) {
        TlsContext::SetGate(server.session.ssl(), &gate);
        server.gate = &gate;
      }
      ASSERT_TRUE(Handshake(client, server, split))
          << client.session.error() << " / " << server.session.error();
      EXPECT_EQ(SSL_version(server.session.ssl()), TLS1_3_VERSION);
      EXPECT_EQ(SSL_get_negotiated_group(server.session.ssl()), NID_X25519);
      EXPECT_EQ(server.suspensions, gated ? 2 : 0);
      SendPlain(client, server, "after HRR", split);
      EXPECT_EQ(server.received, "after HRR");
    }
  }
}

TEST_F(TlsSessionTest, GateWithInputAfterTheClientHelloGoesOnInline) {
  // The ClientHello and more bytes in one Feed (here: the start of a
  // record): the rest of the input is only valid during the call, so the
  // step runs at once (input_left() > 0 at kSuspended).
  SslCtxPtr cctx = Client();
  Peer client(NewClientSsl(cctx.get()));
  HandshakeGate gate;
  gate.mode = HandshakeGate::Mode::kOffloadAll;
  Peer server(single_->NewSsl());
  TlsContext::SetGate(server.session.ssl(), &gate);
  client.Feed("", 0);
  std::string hello = client.TakeOutput();
  hello += std::string("\x14\x03\x03\x00\x01", 5);  // a change_cipher_spec's header
  std::vector<char> plain(1024);
  size_t got = 0;
  EXPECT_EQ(server.session.Feed(hello.data(), hello.size(), plain.data(), plain.size(), &got),
            Status::kSuspended);
  EXPECT_EQ(server.session.input_left(), 5u);
  gate.on_worker = true;
  EXPECT_EQ(server.session.Feed(nullptr, 0, plain.data(), plain.size(), &got),
            Status::kNeedMore);
  EXPECT_EQ(server.session.input_left(), 0u);
  EXPECT_GT(server.session.output_len(), 0u);
  EXPECT_FALSE(server.session.failed());
}

// ---------------------------------------------------------------- TlsContext::Create

class CreateErrorTest : public TlsSessionTest {
 protected:
  absl::Status CreateWith(const std::string& cert, const std::string& key) {
    TlsSettings settings;
    settings.certificates = {{cert, key}};
    auto c = TlsContext::Create(settings, keys_);
    return c.status();
  }
};

TEST_F(CreateErrorTest, MissingFiles) {
  const std::string missing = dir_->path() + "/no-such.pem";
  absl::Status s = CreateWith(missing, ec_files_.key_path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(missing), std::string::npos) << s;
  EXPECT_NE(s.message().find("certificate"), std::string::npos) << s;

  s = CreateWith(ec_files_.cert_path, missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(missing), std::string::npos) << s;
  EXPECT_NE(s.message().find("key"), std::string::npos) << s;
}

TEST_F(CreateErrorTest, KeyThatDoesNotMatchTheCertificate) {
  // Another EC key (same type), and an RSA key for the EC certificate.
  TestCertificate other = TestCertificate::Generate(KeyType::kEcP256, {"localhost"});
  const CertificateFiles other_files = other.WriteTo(dir_->path(), "other-ec");
  for (const std::string& key : {other_files.key_path, rsa_files_.key_path}) {
    SCOPED_TRACE(key);
    absl::Status s = CreateWith(ec_files_.cert_path, key);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(key), std::string::npos) << s;
    EXPECT_TRUE(s.message().find("mismatch") != std::string::npos ||
                s.message().find("does not match") != std::string::npos)
        << s;
  }
  // The second pair is checked as well as the first.
  TlsSettings settings;
  settings.certificates = {ec_files_, {rsa_files_.cert_path, ec_files_.key_path}};
  auto c = TlsContext::Create(settings, keys_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  EXPECT_NE(c.status().message().find(ec_files_.key_path), std::string::npos) << c.status();
}

TEST_F(CreateErrorTest, GarbagePem) {
  const std::string garbage_cert = dir_->WriteFile("garbage.crt", "not a certificate\n");
  const std::string garbage_key = dir_->WriteFile("garbage.key", "not a key\n");
  const std::string broken_cert = dir_->WriteFile(
      "broken.crt", "-----BEGIN CERTIFICATE-----\nAAAA!!!!\n-----END CERTIFICATE-----\n");
  const std::string cert_as_key = dir_->WriteFile("cert-as.key", ec_->cert_pem());
  const std::string key_as_cert = dir_->WriteFile("key-as.crt", ec_->key_pem());
  const std::string empty = dir_->WriteFile("empty.pem", "");
  struct Case {
    std::string cert, key, named;
  };
  const Case cases[] = {
      {garbage_cert, ec_files_.key_path, garbage_cert},
      {broken_cert, ec_files_.key_path, broken_cert},
      {key_as_cert, ec_files_.key_path, key_as_cert},
      {empty, ec_files_.key_path, empty},
      {ec_files_.cert_path, garbage_key, garbage_key},
      {ec_files_.cert_path, cert_as_key, cert_as_key},
      {ec_files_.cert_path, empty, empty},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cert + " + " + c.key);
    absl::Status s = CreateWith(c.cert, c.key);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(c.named), std::string::npos) << s;
  }
  // The error queue is left empty for whoever comes next.
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// A passphrase-protected key for the EC certificate.
std::string EncryptedKeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  char pass[] = "secret";
  EXPECT_EQ(PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_256_cbc(), pass, 6, nullptr, nullptr),
            1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(bio);
  return pem;
}

// Runs TlsContext::Create on `files` in a child process of its own session
// (no controlling terminal, stdin /dev/null), or, with `tty`, with a
// pseudo-terminal as its controlling terminal that nobody types into.
// The child gets 3 s, then SIGKILL. Returns "ok" (Create failed with InvalidArgument
// naming the key), "other: ..." or "hung".
std::string CreateInChild(const CertificateFiles& files, bool tty) {
  int master = -1;
  std::string slave;
  if (tty) {
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return "other: no pty";
    slave = ptsname(master);
  }
  int pipefd[2];
  if (pipe(pipefd) != 0) return "other: no pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    setsid();
    const int in = open(tty ? slave.c_str() : "/dev/null", O_RDWR);  // tty: the controlling one
    if (in >= 0) dup2(in, 0);
    TlsSettings settings;
    settings.certificates = {files};
    auto c = TlsContext::Create(settings, std::make_shared<TicketKeys>(3600));
    std::string r = !c.ok() && c.status().code() == absl::StatusCode::kInvalidArgument &&
                            c.status().message().find(files.key_path) != std::string::npos
                        ? "ok"
                        : "other: " + c.status().ToString();
    if (write(pipefd[1], r.data(), r.size()) < 0) _exit(2);
    _exit(0);
  }
  close(pipefd[1]);
  // OpenSSL's prompt catches SIGALRM: the parent keeps the time.
  int status = 0;
  bool hung = true;
  for (int i = 0; i < 300; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      hung = false;
      break;
    }
    usleep(10'000);
  }
  if (hung) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  char buf[512];
  const ssize_t n = read(pipefd[0], buf, sizeof(buf));
  close(pipefd[0]);
  if (master >= 0) close(master);
  if (hung) return "hung";
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "other: no answer";
}

TEST_F(CreateErrorTest, EncryptedKeyIsRefusedWithoutATerminal) {
  CertificateFiles files{ec_files_.cert_path,
                         dir_->WriteFile("encrypted.key", EncryptedKeyPem(ec_->key()))};
  EXPECT_EQ(CreateInChild(files, /*tty=*/false), "ok");
}

TEST_F(CreateErrorTest, NoCertificates) {
  TlsSettings settings;
  auto c = TlsContext::Create(settings, keys_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- fixed bugs
//
// Each of these failed before its fix.

// CertificateInfo::key_type names the curve as documented ("ECDSA
// P-256"), not by OpenSSL's group name ("prime256v1"), in certificates()
// and the Describe() line (ready line, reload log).
TEST_F(TlsSessionTest, KeyTypeNamesTheNistCurve) {
  EXPECT_EQ(single_->certificates()[0].key_type, "ECDSA P-256");
  EXPECT_NE(single_->Describe().find("localhost (ECDSA P-256)"), std::string::npos);
}

// An SSL from NewSsl() keeps its TlsContext alive: the SNI and ClientHello
// callbacks point at it, and a reload drops the server's reference at any
// moment (before, a heap-use-after-free under ASan, a failed handshake
// otherwise).
TEST_F(TlsSessionTest, SslKeepsItsTlsContextAlive) {
  std::shared_ptr<const TlsContext> context = dual_;
  dual_.reset();
  SSL* ssl = context->NewSsl();  // accepted before a reload
  context.reset();               // the reload: the last reference goes
  SslCtxPtr cctx = Client();
  ClientOptions options;
  options.sni = "other.test";
  Peer client(NewClientSsl(cctx.get(), options));
  Peer server(ssl);
  ASSERT_TRUE(Handshake(client, server))
      << client.session.error() << " / " << server.session.error();
  EXPECT_TRUE(TlsContext::UsesRsa(server.session.ssl()));
}

// A passphrase-protected key on a terminal: OpenSSL's default passphrase
// callback would prompt "Enter PEM pass phrase:" and wait (at start-up, or
// in a SIGHUP reload holding the reload lock); it is refused instead.
TEST_F(TlsSessionTest, EncryptedKeyIsRefusedOnATerminalToo) {
  CertificateFiles files{ec_files_.cert_path,
                         dir_->WriteFile("encrypted-tty.key", EncryptedKeyPem(ec_->key()))};
  EXPECT_EQ(CreateInChild(files, /*tty=*/true), "ok");
}

}  // namespace
}  // namespace uring_http::tls
