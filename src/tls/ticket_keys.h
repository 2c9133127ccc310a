// TicketKeys: the keys session tickets are sealed with, shared by every
// OpenSSL context of the server (so a ticket survives a certificate
// reload) and rotated on a timer. A ticket is sealed with the current key;
// one sealed with the previous key is still opened, and the client is given
// a fresh ticket. Older tickets fall back to a full handshake. A TLS 1.3
// resumption always gets a fresh ticket (clients may use each one once).
//
// Rotation is lazy: the first ticket operation after the period ends makes
// the new key, so no timer is needed.
//
// Thread-safety: any thread (every ring thread runs handshakes); a mutex
// guards the keys, taken once per ticket sealed or opened.
#ifndef URING_HTTP_SRC_TLS_TICKET_KEYS_H_
#define URING_HTTP_SRC_TLS_TICKET_KEYS_H_

#include <openssl/ssl.h>

#include <cstdint>
#include <mutex>

namespace uring_http::tls {

class TicketKeys {
 public:
  explicit TicketKeys(uint32_t rotation_s);

  // Installs the ticket callback on `ctx`; `this` must outlive it.
  void Install(SSL_CTX* ctx);

  // Makes a new current key at once (tests, and the first rotation).
  void Rotate();
  uint64_t rotations() const;

 private:
  struct Key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
    bool valid = false;
  };
  static int Callback(SSL* ssl, unsigned char key_name[16], unsigned char* iv,
                      EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt);
  int Seal(unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
           EVP_MAC_CTX* mac);
  int Open(const unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
           EVP_MAC_CTX* mac);
  void RotateLocked(int64_t now_ms);
  void MaybeRotateLocked();

  const uint32_t rotation_s_;
  mutable std::mutex mu_;
  Key current_;   // guarded by mu_
  Key previous_;  // guarded by mu_
  int64_t made_at_ms_ = 0;
  uint64_t rotations_ = 0;
};

}  // namespace uring_http::tls

#endif  // URING_HTTP_SRC_TLS_TICKET_KEYS_H_
