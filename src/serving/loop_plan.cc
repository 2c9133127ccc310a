#include "src/serving/loop_plan.h"

#include <liburing.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/serving/acceptor.h"
#include "src/serving/user_data.h"

namespace uring_http::serving {
namespace {

uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

absl::StatusOr<LoopPlan> PlanLoop(const ServerConfig& config, bool files,
                                  uint64_t file_table_limit, uint64_t nofile_soft,
                                  uint64_t nofile_hard) {
  LoopPlan plan;
  plan.files = files;
  constexpr uint32_t kReserve = Acceptor::kRefuseReserve;
  // Static files take entries too: the cache's, and room for files open
  // outside it (the cache full of files being sent, or a cached file
  // replaced while sent). Past that an open fails with ENFILE: a 503.
  const uint64_t table_limit = std::min<uint64_t>(file_table_limit, kMaxSlots);
  const uint64_t file_entries =
      files ? uint64_t{config.open_file_cache_entries} +
                  std::min<uint64_t>(config.accept_capacity, kUncachedFiles)
            : 0;
  const uint64_t wanted = uint64_t{config.accept_capacity} + kReserve + file_entries;
  plan.file_table_size = static_cast<uint32_t>(std::min<uint64_t>(wanted, table_limit));
  if (plan.file_table_size <= kReserve + file_entries) {
    return absl::ResourceExhaustedError(
        absl::StrCat("RLIMIT_NOFILE (", nofile_soft, ", hard ", nofile_hard,
                     ") leaves no room for connections", files ? " beside the files' entries" : ""));
  }
  plan.capacity = static_cast<uint32_t>(std::min<uint64_t>(
      config.accept_capacity, plan.file_table_size - kReserve - file_entries));

  // Sized for bursts: every live connection may post a receive completion
  // and a worker result in the same round, plus accepts. Beyond the CQ the
  // kernel keeps overflowed CQEs on its own list (IORING_FEAT_NODROP) and
  // MSG_RING senders retry on -EOVERFLOW, so nothing is lost, only slower.
  plan.sq_entries = config.ring_sq_entries != 0
                        ? config.ring_sq_entries
                        : std::clamp<uint32_t>(RoundUpPow2(plan.capacity), 256, 4096);
  plan.cq_entries = config.ring_cq_entries != 0
                        ? config.ring_cq_entries
                        : std::clamp<uint32_t>(RoundUpPow2(plan.capacity + 1024), 4096, 32768);

  // Buffers are busy only between a receive completing and its bytes being
  // parsed (or staged), so a fraction of the capacity suffices; a burst that
  // empties the ring costs an ENOBUFS and a re-arm, not a connection.
  plan.recv_buffers = config.recv_buffer_count != 0
                          ? RoundUpPow2(config.recv_buffer_count)
                          : std::clamp<uint32_t>(RoundUpPow2(plan.capacity / 16), 256, 1024);
  plan.recv_buffer_size = std::max<uint32_t>(config.recv_buffer_size, 64);
  plan.chunks = std::clamp<uint32_t>(plan.capacity / 8, 128, 4096);
  plan.bulk_buffers = config.bulk_buffer_count == 0 ? 0 : RoundUpPow2(config.bulk_buffer_count);
  plan.bulk_buffer_size = std::max<uint32_t>(config.bulk_buffer_size, 4096);
  plan.arena_bytes = size_t{plan.recv_buffers} * plan.recv_buffer_size +
                     plan.recv_buffers * sizeof(io_uring_buf) +
                     size_t{plan.bulk_buffers} * plan.bulk_buffer_size +
                     plan.bulk_buffers * sizeof(io_uring_buf) + plan.chunks * kChunkSize +
                     5 * 4096;

  if (files) {
    FileServiceConfig& fc = plan.file_service;
    fc.cache.max_entries = config.open_file_cache_entries;
    fc.cache.valid_ticks = (config.open_file_cache_valid_ms + kTickMs - 1) / kTickMs;
    fc.cache.max_content_bytes = config.file_cache_bytes;
    fc.cache.max_content_file = config.file_cache_max_file;
    fc.buffer_size = std::max<uint32_t>(config.file_buffer_size, 4096);
    // A reader holds a buffer only while the socket takes its bytes (a
    // stalled one gives them back), so a fraction of the capacity serves
    // many readers; past that, readers take turns.
    fc.buffer_count = config.file_buffer_count != 0
                          ? config.file_buffer_count
                          : std::clamp<uint32_t>(plan.capacity / 8, 64, 512);
    fc.pipe_bytes = config.file_splice_pipe_bytes;
    fc.max_pipes = std::clamp<uint32_t>(plan.capacity, 1, 256);
  }
  return plan;
}

exchange::ConnectionConfig ConnectionConfigFor(const ServerConfig& config, const LoopPlan& plan) {
  exchange::ConnectionConfig c;
  c.limits = config.limits;
  c.chunked.max_trailer_bytes = config.limits.max_header_bytes;
  c.chunked.max_trailers = config.limits.max_headers;
  c.header_timeout_ms = config.header_timeout_ms;
  c.body_timeout_ms = config.body_timeout_ms;
  c.body_min_rate = config.body_min_rate;
  c.body_rate_window_ms = config.body_rate_window_ms;
  c.idle_timeout_ms = config.idle_timeout_ms;
  c.send_timeout_ms = config.send_timeout_ms;
  c.linger_timeout_ms = config.linger_timeout_ms;
  c.tick_ms = kTickMs;
  c.proxy_protocol = config.proxy_protocol;
  c.send_zc_min_bytes = config.send_zc_min_bytes;
  c.recv_pool_bytes = size_t{plan.recv_buffers} * plan.recv_buffer_size +
                      size_t{plan.bulk_buffers} * plan.bulk_buffer_size;
  c.bulk_receives = plan.bulk_buffers > 0;
  c.splice_min_bytes = config.file_splice_min_bytes;
  c.compression = config.compression;
  c.http2_max_streams = config.http2_max_streams;
  c.http2_stream_window = config.http2_stream_window;
  c.http2_connection_window = config.http2_connection_window;
  c.http2_max_frame = config.http2_max_frame;
  c.ws_max_message = config.ws_max_message;
  c.ws_max_backpressure = static_cast<size_t>(config.ws_max_backpressure);
  c.ws_idle_timeout_ms = config.ws_idle_timeout_ms;
  c.ws_ping_interval_ms = config.ws_ping_interval_ms;
  c.ws_deflate = config.ws_deflate;
  return c;
}

}  // namespace uring_http::serving
