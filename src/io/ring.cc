#include "src/io/ring.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/io/uring_refusal.h"

namespace uring_http::io {

std::string RingFeatures::Describe() const {
  std::vector<std::string> parts;
  if (single_issuer) parts.push_back("single-issuer");
  if (defer_taskrun) parts.push_back("defer-taskrun");
  if (coop_taskrun) parts.push_back("coop-taskrun");
  if (sqpoll) parts.push_back("sqpoll");
  if (registered_ring_fd) parts.push_back("registered-ring-fd");
  if (submit_all) parts.push_back("submit-all");
  parts.push_back(absl::StrCat("sq=", sq_entries, ",cq=", cq_entries));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::unique_ptr<Ring>> Ring::Create(const RingOptions& options) {
  std::unique_ptr<Ring> ring(new Ring());  // private constructor: make_unique cannot reach it

  // CLAMP: a CQ larger than the kernel maximum is clamped instead of refused.
  // SUBMIT_ALL: one bad SQE does not stop the rest of a batch from going in.
  const unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP | IORING_SETUP_SUBMIT_ALL;
  unsigned sqpoll = 0;
  if (options.sqpoll) {
    sqpoll = IORING_SETUP_SQPOLL | (options.sqpoll_cpu >= 0 ? IORING_SETUP_SQ_AFF : 0);
  }
  // From best to plainest. SINGLE_ISSUER lets the kernel skip locking;
  // DEFER_TASKRUN runs completion work only when we enter the kernel to wait,
  // in one batch, instead of interrupting the thread (it cannot be combined
  // with SQPOLL). COOP_TASKRUN is the older, weaker form of the same idea.
  std::vector<unsigned> candidates;
  const unsigned single = options.single_issuer ? IORING_SETUP_SINGLE_ISSUER : 0;
  if (!sqpoll && options.single_issuer && options.defer_taskrun) {
    candidates.push_back(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  }
  if (options.coop_taskrun) {
    if (single != 0) {
      candidates.push_back(single | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
    }
    candidates.push_back(IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
  }
  if (single != 0) candidates.push_back(single);
  candidates.push_back(0);
  int last_error = 0;
  unsigned sq_entries = options.sq_entries;
  unsigned cq_entries = options.cq_entries;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const unsigned extra = candidates[i];
    io_uring_params params{};
    params.flags = base | sqpoll | extra;
    params.cq_entries = cq_entries;
    if (sqpoll) {
      params.sq_thread_idle = options.sqpoll_idle_ms;
      if (options.sqpoll_cpu >= 0) params.sq_thread_cpu = options.sqpoll_cpu;
    }
    int ret = io_uring_queue_init_params(sq_entries, &ring->ring_, &params);
    if (ret == -EINVAL) {
      last_error = ret;
      continue;  // a flag this kernel does not know: try the next combination
    }
    if (ret == -ENOMEM && options.shrink_on_enomem && (sq_entries > 64 || cq_entries > 256)) {
      // The rings' memory could not be had in one piece (memory pressure,
      // fragmentation, or the locked-memory limit): smaller rings only cost
      // batching, so try again at half the size (the ready line says which).
      sq_entries = sq_entries > 64 ? sq_entries / 2 : sq_entries;
      cq_entries = cq_entries > 256 ? cq_entries / 2 : cq_entries;
      --i;
      continue;
    }
    if (ret < 0) {
      if (ret == -ENOMEM) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "io_uring_setup: ", strerror(-ret),
            " (ring memory counts against RLIMIT_MEMLOCK for users without "
            "CAP_IPC_LOCK: raise it with `ulimit -l` or LimitMEMLOCK= in systemd)"));
      }
      if (IsSetupRefusal(-ret)) {
        // Not these flags but io_uring itself is refused (a sysctl, a
        // seccomp filter, a security module, or no io_uring in this kernel):
        // say which, from what /proc shows, and what to do about it.
        const std::string message = DescribeSetupRefusal(-ret, ReadSystemFacts());
        return ret == -ENOSYS ? absl::UnimplementedError(message)
                              : absl::PermissionDeniedError(message);
      }
      return absl::InternalError(absl::StrCat("io_uring_setup: ", strerror(-ret)));
    }
    ring->initialized_ = true;
    RingFeatures& f = ring->features_;
    const unsigned flags = params.flags;
    f.single_issuer = flags & IORING_SETUP_SINGLE_ISSUER;
    f.defer_taskrun = flags & IORING_SETUP_DEFER_TASKRUN;
    f.coop_taskrun = flags & IORING_SETUP_COOP_TASKRUN;
    f.sqpoll = flags & IORING_SETUP_SQPOLL;
    f.submit_all = flags & IORING_SETUP_SUBMIT_ALL;
    f.sq_entries = params.sq_entries;
    f.cq_entries = params.cq_entries;
    // A registered ring fd saves the fdget/fdput on every io_uring_enter.
    f.registered_ring_fd =
        options.registered_ring_fd && io_uring_register_ring_fd(&ring->ring_) == 1;
    return ring;
  }
  return absl::UnavailableError(absl::StrCat("io_uring_setup: ", strerror(-last_error)));
}

Ring::~Ring() {
  if (initialized_) io_uring_queue_exit(&ring_);
}

io_uring_sqe* Ring::GetSqeSlow() {
  for (;;) {
    io_uring_submit(&ring_);
    if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_)) return sqe;
  }
}

namespace {
constexpr uint64_t kKernelMaxFixedFiles = 1u << 20;  // IORING_MAX_FIXED_FILES
std::mutex rlimit_mutex;  // the soft limit is the process's, not the thread's
}  // namespace

uint64_t FileTableLimit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return std::min<uint64_t>(limit.rlim_max, kKernelMaxFixedFiles);
}

absl::Status RegisterFileTable(io_uring* ring, uint32_t entries) {
  std::lock_guard<std::mutex> lock(rlimit_mutex);
  rlimit before{};
  getrlimit(RLIMIT_NOFILE, &before);
  const bool lift = entries > before.rlim_cur && entries <= before.rlim_max;
  if (lift) {
    rlimit lifted = before;
    lifted.rlim_cur = entries;
    setrlimit(RLIMIT_NOFILE, &lifted);
  }
  const int ret = io_uring_register_files_sparse(ring, entries);
  if (lift) setrlimit(RLIMIT_NOFILE, &before);
  if (ret < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "registering a sparse fixed-file table of ", entries, " entries: ", strerror(-ret),
        " (it may not exceed the hard RLIMIT_NOFILE, ", before.rlim_max, ")"));
  }
  return absl::OkStatus();
}

}  // namespace uring_http::io
