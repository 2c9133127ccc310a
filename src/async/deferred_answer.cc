#include "src/async/deferred_answer.h"

namespace uring_http::async {

bool DeferredAnswer::Send(int status, std::string body, Fields fields) {
  // The post is made under the handle's lock: once the ring has closed it
  // (under that lock), no sender touches the inbox (see the top).
  std::lock_guard<std::mutex> lock(mu_);
  if (sent_ || closed_.load(std::memory_order_relaxed)) return false;
  sent_ = true;
  status_ = status;
  body_ = std::move(body);
  fields_ = std::move(fields);
  inbox_->Post(user_data_);
  return true;
}

void DeferredAnswer::Take(int* status, std::string* body, Fields* fields) {
  std::lock_guard<std::mutex> lock(mu_);
  *status = status_;
  *body = std::move(body_);
  *fields = std::move(fields_);
}

void DeferredAnswer::Close(http::StopReason why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.load(std::memory_order_relaxed)) return;
  reason_.store(static_cast<uint8_t>(why), std::memory_order_release);
  closed_.store(true, std::memory_order_release);
}

}  // namespace uring_http::async
