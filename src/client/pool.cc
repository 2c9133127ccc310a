#include "src/client/pool.h"

#include <unistd.h>

#include <utility>

#include "src/client/tls_client.h"

namespace uring_http::client {

Connection::~Connection() {
  // A discarded connection (an error, a response that did not end
  // cleanly, a pool past its bound) is closed here, synchronously: it is
  // rare, and its exchange may have been stopped, when no await runs.
  if (fd >= 0) close(fd);
}

Pool& Pool::ForThread(uint64_t client_id) {
  // Per thread: a ring's calls take no lock. The thread's exit closes
  // what is left.
  thread_local std::unordered_map<uint64_t, Pool> pools;
  return pools[client_id];
}

std::unique_ptr<Connection> Pool::Take(const std::string& key,
                                       std::chrono::milliseconds idle_timeout) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Connection>>& list = it->second;
  while (!list.empty()) {
    std::unique_ptr<Connection> c = std::move(list.back());
    list.pop_back();
    if (now - c->idle_since < idle_timeout) {
      c->reused = true;
      return c;
    }
    // The newest is too old: so are the rest (LIFO).
    list.clear();
  }
  return nullptr;
}

void Pool::Put(std::unique_ptr<Connection> c, size_t max_idle) {
  std::vector<std::unique_ptr<Connection>>& list = idle_[c->key];
  if (list.size() >= max_idle) return;  // closed by its destructor
  c->idle_since = std::chrono::steady_clock::now();
  c->begin = c->end = 0;
  list.push_back(std::move(c));
}

size_t Pool::idle(const std::string& key) const {
  auto it = idle_.find(key);
  return it == idle_.end() ? 0 : it->second.size();
}

}  // namespace uring_http::client
