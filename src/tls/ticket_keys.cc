#include "src/tls/ticket_keys.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <time.h>

#include <cstring>

#include "src/base/check.h"

namespace uring_http::tls {
namespace {

int TicketKeysIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// Milliseconds, not seconds: with whole seconds a key made late in one
// second looks a period older than it is.
int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool SetMacKey(EVP_MAC_CTX* mac, const unsigned char* key) {
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key), 32),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end(),
  };
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}

}  // namespace

TicketKeys::TicketKeys(uint32_t rotation_s) : rotation_s_(rotation_s) {
  std::lock_guard<std::mutex> lock(mu_);
  RotateLocked(NowMs());
}

void TicketKeys::Install(SSL_CTX* ctx) {
  SSL_CTX_set_ex_data(ctx, TicketKeysIndex(), this);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, &TicketKeys::Callback);
}

void TicketKeys::Rotate() {
  std::lock_guard<std::mutex> lock(mu_);
  RotateLocked(NowMs());
}

uint64_t TicketKeys::rotations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rotations_;
}

void TicketKeys::RotateLocked(int64_t now_ms) {
  previous_ = current_;
  Key k;
  // A key that cannot be made random would make forgeable tickets: stop.
  URING_CHECK(RAND_bytes(k.name, sizeof(k.name)) == 1 && RAND_bytes(k.aes, sizeof(k.aes)) == 1 &&
              RAND_bytes(k.hmac, sizeof(k.hmac)) == 1);
  k.valid = true;
  current_ = k;
  made_at_ms_ = now_ms;
  ++rotations_;
}

void TicketKeys::MaybeRotateLocked() {
  if (rotation_s_ == 0) return;
  const int64_t now = NowMs();
  const int64_t age = now - made_at_ms_;
  const int64_t period = int64_t{rotation_s_} * 1000;
  if (age < period) return;
  RotateLocked(now);
  // Idle for two periods or more: the key that was current is older than
  // "one more period" allows, so it opens nothing any more.
  if (age >= 2 * period) previous_.valid = false;
}

int TicketKeys::Callback(SSL* ssl, unsigned char key_name[16], unsigned char* iv,
                         EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt) {
  // Whichever of our contexts the SSL is on now (SNI may have moved it):
  // they all carry the same keys.
  auto* keys = static_cast<TicketKeys*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), TicketKeysIndex()));
  if (keys == nullptr) return -1;
  if (encrypt) return keys->Seal(key_name, iv, cipher, mac);
  const int r = keys->Open(key_name, iv, cipher, mac);
  // A TLS 1.3 resumption gets a fresh ticket (2: "renew"), as nginx gives
  // one: a client may use each ticket once (RFC 8446 C.4; BoringSSL, so
  // Chrome, does), and OpenSSL sends none after a resumption whose ticket
  // opened with the current key. TLS 1.2 clients use a ticket again, so
  // theirs is renewed only when its key is the previous one.
  return r == 1 && SSL_version(ssl) == TLS1_3_VERSION ? 2 : r;
}

int TicketKeys::Seal(unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
                     EVP_MAC_CTX* mac) {
  Key k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    MaybeRotateLocked();
    k = current_;
  }
  if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1) return -1;
  std::memcpy(key_name, k.name, sizeof(k.name));
  if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, k.aes, iv) != 1) return -1;
  return SetMacKey(mac, k.hmac) ? 1 : -1;
}

int TicketKeys::Open(const unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
                     EVP_MAC_CTX* mac) {
  Key k;
  bool renew = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    MaybeRotateLocked();
    if (std::memcmp(key_name, current_.name, sizeof(current_.name)) == 0) {
      k = current_;
    } else if (previous_.valid &&
               std::memcmp(key_name, previous_.name, sizeof(previous_.name)) == 0) {
      k = previous_;
      renew = true;
    } else {
      return 0;  // unknown or expired key: a full handshake
    }
  }
  if (!SetMacKey(mac, k.hmac)) return -1;
  if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, k.aes, iv) != 1) return -1;
  return renew ? 2 : 1;  // 2: accepted, and a ticket under the current key is sent
}

}  // namespace uring_http::tls
