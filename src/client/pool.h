// The client's connections to its upstreams, and their keep-alive pool:
// one pool per client per thread (a ring's, or a worker's), keyed by the
// upstream's address, so that a connection is only ever used by the
// thread that made it and a ring's calls take no lock.
//
// A connection carries its buffers (the response's bytes, the request's
// head, the response's field array), which stay with it in the pool: a
// steady-state call on a kept connection allocates nothing for them.
// An idle connection is kept for Options::idle_timeout at most, and at
// most max_idle per upstream (the newest are kept: LIFO, so the ones
// that go cold are the ones that time out).
//
// Thread-safety: the thread whose pool it is.
#ifndef URING_HTTP_SRC_CLIENT_POOL_H_
#define URING_HTTP_SRC_CLIENT_POOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/http/header.h"

namespace uring_http::client {

struct TlsConnection;  // tls_client.h (kept out of the public headers: OpenSSL)

struct Connection {
  Connection() = default;
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd = -1;
  std::string key;       // the upstream's address, as the pool names it
  bool reused = false;   // taken from the pool (it may have gone stale)
  std::chrono::steady_clock::time_point idle_since;
  // Received bytes: [begin, end) not yet parsed.
  std::string in;
  size_t begin = 0;
  size_t end = 0;
  std::string out;                    // the request head (and a small body)
  std::vector<http::Header> headers;  // the response's fields
  std::unique_ptr<TlsConnection> tls;  // https: its session (null: plain)
};

class Pool {
 public:
  // The calling thread's pool for client `client_id`.
  static Pool& ForThread(uint64_t client_id);

  // An idle connection to `key` not older than `idle_timeout`, or null.
  // Older ones are closed on the way.
  std::unique_ptr<Connection> Take(const std::string& key, std::chrono::milliseconds idle_timeout);
  // Keeps a connection whose last response ended cleanly (or closes it:
  // over max_idle).
  void Put(std::unique_ptr<Connection> c, size_t max_idle);

  size_t idle(const std::string& key) const;

 private:
  std::unordered_map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;
};

}  // namespace uring_http::client

#endif  // URING_HTTP_SRC_CLIENT_POOL_H_
