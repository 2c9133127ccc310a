#include "src/worker/ring_post.h"

#include "src/io/msg_ring_sender.h"
#include "src/worker/mailbox.h"

namespace uring_http::worker {
namespace {

thread_local PostCounters counters;

}  // namespace

PostResult PostToRing(const RingAddress& ring, uint64_t user_data, uint32_t stream) {
  thread_local io::MsgRingSender sender;
  const uint64_t retries_before = sender.overflow_retries();
  const io::MsgRingSender::Result result = sender.Send(ring.ring_fd, user_data, static_cast<int32_t>(stream));
  counters.overflow_retries += sender.overflow_retries() - retries_before;
  switch (result) {
    case io::MsgRingSender::Result::kSent:
      ++counters.sent;
      return PostResult::kSent;
    case io::MsgRingSender::Result::kTargetGone:
      ++counters.dropped;
      return PostResult::kTargetGone;
    case io::MsgRingSender::Result::kFailed:
      break;
  }
  // The kernel will not deliver it: the ring picks it up on its next tick.
  ++counters.mailbox;
  if (ring.mailbox != nullptr) ring.mailbox->Post(user_data, stream);
  return PostResult::kMailbox;
}

const PostCounters& ThreadPostCounters() { return counters; }

}  // namespace uring_http::worker
