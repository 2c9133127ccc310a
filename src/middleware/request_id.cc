#include "src/middleware/request_id.h"

#include <sys/random.h>

#include <cstdint>
#include <ctime>

namespace uring_http::middleware {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void PutHex(uint64_t v, char* out) {
  for (int i = 15; i >= 0; --i) {
    out[i] = kHex[v & 0xf];
    v >>= 4;
  }
}

uint64_t RandomPrefix() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
    // No entropy yet (early boot): still distinct per thread and start.
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    v = static_cast<uint64_t>(now.tv_nsec) * 0x9e3779b97f4a7c15ull ^
        reinterpret_cast<uintptr_t>(&v);
  }
  return v;
}

}  // namespace

bool IsValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  for (char c : id) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

void GenerateRequestId(char out[32]) {
  // Per thread: no shared counter for ring threads and workers to fight over.
  thread_local const uint64_t prefix = RandomPrefix();
  thread_local uint64_t counter = 0;
  PutHex(prefix, out);
  PutHex(++counter, out + 16);
}

router::Middleware RequestId() {
  router::Middleware m;
  m.after = [](const http::Request& request, http::Response& response) {
    const std::string_view incoming = request.FindHeader("x-request-id");
    // A refusal (the header limit) fails the response by itself: a 500.
    if (IsValidRequestId(incoming)) {
      (void)response.AddHeader("X-Request-Id", incoming);
      return;
    }
    char id[32];
    GenerateRequestId(id);
    (void)response.AddHeader("X-Request-Id", std::string_view(id, sizeof(id)));
  };
  return m;
}

}  // namespace uring_http::middleware
