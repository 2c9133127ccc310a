// ServerCore::RenderMetrics: the Prometheus text exposition format (version
// 0.0.4). Counters live per accept thread, written only by that thread, and
// are summed here, on whichever thread serves GET /metrics.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/http2/connection.h"
#include "src/serving/server_core.h"

namespace uring_http::serving {
namespace {

// Label values escape backslash, double quote and newline.
std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Family(std::string& out, const char* name, const char* type, const char* help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void Sample(std::string& out, const char* name, uint64_t value) {
  absl::StrAppend(&out, name, " ", value, "\n");
}

std::string Seconds(uint64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(us) / 1e6);
  return buf;
}

}  // namespace

std::string ServerCore::RenderMetrics() const {
  const ServerStats s = Stats();
  // Summed here, not kept in ServerStats: nothing but /metrics reads it.
  uint64_t body_rate_timeouts = 0;
  uint64_t http2_connections = 0;
  uint64_t http2_errors[exchange::ConnectionStats::kHttp2ErrorKinds] = {};
  for (const auto& loop : loops_) {
    body_rate_timeouts += loop->stats().conn.body_rate_timeouts.Get();
    http2_connections += loop->stats().http2_connections.Get();
    for (size_t i = 0; i < exchange::ConnectionStats::kHttp2ErrorKinds; ++i) {
      http2_errors[i] += loop->stats().conn.http2_errors[i].Get();
    }
  }
  std::string out;
  out.reserve(8192);
  struct Simple {
    const char* name;
    const char* type;
    const char* help;
    uint64_t value;
  };
  const Simple simple[] = {
      {"uring_http_connections_accepted_total", "counter", "Connections accepted.", s.accepted},
      {"uring_http_connections_active", "gauge", "Connections holding a slot now.", s.active},
      {"uring_http_http2_connections_total", "counter",
       "Connections that became HTTP/2 (ALPN h2, h2c with prior knowledge or by Upgrade).",
       http2_connections},
      {"uring_http_connections_refused_total", "counter",
       "Connections refused with 503 because the thread's pool was full.", s.refused},
      {"uring_http_bad_requests_total", "counter",
       "Requests rejected for their head or body framing (4xx/5xx before a handler).",
       s.bad_requests},
      {"uring_http_timeouts_total", "counter",
       "Requests or connections ended by a timeout (header, body, idle, send, linger).",
       s.timeouts},
      {"uring_http_body_rate_timeouts_total", "counter",
       "Request bodies answered 408 for arriving slower than --body-min-rate (also in "
       "uring_http_timeouts_total).",
       body_rate_timeouts},
      {"uring_http_recv_enobufs_total", "counter",
       "Receives that found the provided-buffer ring empty (re-armed).", s.recv_nobufs},
      {"uring_http_accept_errors_total", "counter", "Accept failures (EMFILE, ENFILE, ...).",
       s.accept_errors},
      {"uring_http_arena_heap_fallbacks_total", "counter",
       "Chunk requests served by the heap because the arena's pool was empty.",
       s.chunk_heap_fallbacks},
      {"uring_http_cq_overflows_total", "counter",
       "Waits that found completions the kernel held beyond a full CQ (none lost; the CQ is "
       "too small for the load).",
       s.cq_overflows},
      {"uring_http_sends_zerocopy_total", "counter",
       "Sends issued as IORING_OP_SEND_ZC (--send-zc).", s.sends_zc},
      {"uring_http_sends_zerocopy_copied_total", "counter",
       "Zero-copy sends the kernel completed by copying after all (loopback, some NICs).",
       s.sends_zc_copied},
      {"uring_http_sends_zerocopy_refused_total", "counter",
       "Zero-copy sends refused for the locked-memory limit (RLIMIT_MEMLOCK), sent by copying.",
       s.sends_zc_refused},
      {"uring_http_slow_tasks_dispatched_total", "counter", "SLOW tasks pushed to the queue.",
       s.slow_dispatched},
      {"uring_http_slow_tasks_rejected_total", "counter", "SLOW tasks refused: queue full (503).",
       s.slow_rejected},
      {"uring_http_slow_tasks_queued", "gauge", "SLOW tasks waiting in the queue.",
       s.workers.queued},
      {"uring_http_slow_tasks_running", "gauge", "SLOW tasks running on a worker.",
       s.workers.running},
      {"uring_http_slow_tasks_completed_total", "counter", "SLOW tasks a worker finished.",
       s.workers.completed},
      {"uring_http_msg_ring_messages_total", "counter",
       "Results posted to a ring with IORING_OP_MSG_RING.", s.workers.msg_ring_sent},
      {"uring_http_msg_ring_retries_total", "counter",
       "MSG_RING sends retried because the target CQ was full.", s.workers.msg_ring_retries},
      {"uring_http_msg_ring_received_total", "counter",
       "MSG_RING results received by the rings.", s.slow_completed},
      {"uring_http_async_started_total", "counter", "ASYNC handlers started.",
       s.async_started},
      {"uring_http_async_active", "gauge",
       "ASYNC exchanges in progress (suspended on a timer, a worker call, ...).", s.async_active},
      {"uring_http_async_cancelled_total", "counter",
       "ASYNC exchanges stopped early: the client left or the route's timeout passed.",
       s.async_cancelled},
      {"uring_http_async_deadlines_total", "counter",
       "ASYNC exchanges past their route's timeout (answered 503).", s.async_deadlines},
      {"uring_http_async_refused_total", "counter",
       "ASYNC requests refused because every exchange of the ring was taken (503).",
       s.async_refused},
      {"uring_http_async_worker_calls_total", "counter",
       "Exchange::OnWorker calls handed to the worker pool.", s.async_worker_calls},
      {"uring_http_async_frame_slabs", "gauge",
       "Coroutine-frame slabs (and oversized frames) taken from the heap after start-up; flat "
       "once warm.",
       s.async_frame_slabs},
      {"uring_http_mailbox_messages_total", "counter",
       "Worker messages MSG_RING could not deliver, taken from the ring's mailbox on a tick.",
       s.mailbox_messages},
      {"uring_http_chunked_request_bodies_total", "counter",
       "Request bodies with Transfer-Encoding: chunked.", s.chunked_bodies},
      {"uring_http_streamed_request_bodies_total", "counter",
       "Request bodies streamed to a handler as they arrived.", s.streamed_requests},
      {"uring_http_streamed_responses_total", "counter",
       "Responses streamed (from a worker's writes or a producer).", s.streamed_responses},
      {"uring_http_aborted_streams_total", "counter",
       "Streams cut short: the client left, or sent a malformed or oversized body.",
       s.aborted_streams},
      {"uring_http_lingering_closes_total", "counter",
       "Closes that sent our FIN and read until the client's, because input was left unread.",
       s.lingering_closes},
      {"uring_http_proxy_header_errors_total", "counter",
       "Connections closed unanswered for a missing, malformed or late PROXY header "
       "(--proxy-protocol).",
       s.proxy_header_errors},
      {"uring_http_files_served_total", "counter",
       "Requests answered from a static-file mount (any status).", s.files_served},
      {"uring_http_file_opens_total", "counter",
       "Files opened (openat2): cache misses, and cached files found changed.", s.file_opens},
      {"uring_http_file_cache_hits_total", "counter",
       "Requests answered from the open-file cache without a statx or an open.",
       s.file_cache_hits},
      {"uring_http_file_cache_revalidations_total", "counter",
       "Cached files checked again with statx after --open-file-cache-valid.",
       s.file_cache_revalidations},
      {"uring_http_file_cache_entries", "gauge", "Files held open by the caches now.",
       s.file_cache_entries},
      {"uring_http_file_cache_content_bytes", "gauge",
       "Bytes of small files' contents the caches hold now.", s.file_cache_content_bytes},
      {"uring_http_file_splices_total", "counter",
       "File bodies spliced (file -> pipe -> socket) rather than read (--file-splice).",
       s.file_splices},
      {"uring_http_file_truncated_total", "counter",
       "Files that ended before their body while sent (changed or deleted): the connection "
       "was closed.",
       s.file_truncated},
  };
  for (const Simple& m : simple) {
    Family(out, m.name, m.type, m.help);
    Sample(out, m.name, m.value);
  }
  if (config_.http2) {
    // Each defence of src/http2 that ended a connection (GOAWAY with
    // ENHANCE_YOUR_CALM for the floods, PROTOCOL_ERROR ...), by kind.
    Family(out, "uring_http_http2_connection_errors_total", "counter",
           "HTTP/2 connections ended by a flood or a protocol error of the client's, by reason.");
    for (size_t i = 0; i < static_cast<size_t>(http2::ErrorKind::kCount); ++i) {
      absl::StrAppend(&out, "uring_http_http2_connection_errors_total{reason=\"",
                      http2::ErrorKindName(static_cast<http2::ErrorKind>(i)), "\"} ",
                      http2_errors[i], "\n");
    }
  }
  {
    // WebSockets (src/ws), summed over the loops; shown once a route has
    // had one.
    const exchange::ConnectionStats* c0 = nullptr;
    uint64_t ws[8] = {};
    uint64_t closes[exchange::ConnectionStats::kWsCloseCodes] = {};
    for (const auto& loop : loops_) {
      const exchange::ConnectionStats& c = loop->stats().conn;
      c0 = &c;
      const base::Counter* counters[8] = {&c.ws_opened,       &c.ws_closed,     &c.ws_messages_in,
                                          &c.ws_messages_out, &c.ws_bytes_in,   &c.ws_bytes_out,
                                          &c.ws_backpressure_drops, &c.ws_errors};
      for (size_t i = 0; i < 8; ++i) ws[i] += counters[i]->Get();
      for (size_t i = 0; i < exchange::ConnectionStats::kWsCloseCodes; ++i) {
        closes[i] += c.ws_closes[i].Get();
      }
    }
    if (c0 != nullptr && ws[0] > 0) {
      const Simple wss[] = {
          {"uring_http_websockets_open", "gauge", "WebSocket connections open now.",
           ws[0] - std::min(ws[0], ws[1])},
          {"uring_http_websockets_total", "counter", "WebSocket connections opened (101).", ws[0]},
          {"uring_http_websocket_messages_received_total", "counter",
           "WebSocket messages received from clients.", ws[2]},
          {"uring_http_websocket_messages_sent_total", "counter",
           "WebSocket messages queued to clients.", ws[3]},
          {"uring_http_websocket_received_bytes_total", "counter",
           "WebSocket bytes received (frames as sent).", ws[4]},
          {"uring_http_websocket_sent_bytes_total", "counter",
           "WebSocket bytes queued to send (frames).", ws[5]},
          {"uring_http_websocket_backpressure_drops_total", "counter",
           "WebSocket sends refused because the client had not read enough.", ws[6]},
          {"uring_http_websocket_protocol_errors_total", "counter",
           "WebSocket connections failed for a client's protocol error (1002, 1007, 1009).",
           ws[7]},
      };
      for (const Simple& m : wss) {
        Family(out, m.name, m.type, m.help);
        Sample(out, m.name, m.value);
      }
      Family(out, "uring_http_websocket_closes_total", "counter",
             "WebSocket connections ended, by the close code that ended them (1006: none).");
      for (size_t i = 0; i < exchange::ConnectionStats::kWsCloseCodes; ++i) {
        absl::StrAppend(&out, "uring_http_websocket_closes_total{code=\"",
                        ws::CloseCodeBucketName(i), "\"} ", closes[i], "\n");
      }
    }
  }
  if (config_.tls.enabled()) {
    const Simple tls[] = {
        {"uring_http_tls_handshakes_total", "counter", "TLS handshakes completed.",
         s.tls_handshakes},
        {"uring_http_tls_resumptions_total", "counter",
         "TLS handshakes that resumed a session from a ticket.", s.tls_resumed},
        {"uring_http_tls_handshake_offloads_total", "counter",
         "TLS handshake steps (certificate signatures) run on a worker.", s.tls_offloaded},
        {"uring_http_tls_handshake_steps_reclaimed_total", "counter",
         "Offloaded TLS handshake steps no worker had started within the queue-wait bound: "
         "run on the ring instead.",
         s.tls_steps_reclaimed},
        {"uring_http_tls_handshake_steps_skipped_total", "counter",
         "Offloaded TLS handshake steps a TLS worker dequeued and skipped: the ring had taken "
         "them back or their connection had closed.",
         s.tls_steps_skipped},
        {"uring_http_tls_reloads_total", "counter", "Certificate reloads (SIGHUP) that took.",
         s.tls_reloads},
        {"uring_http_tls_reload_failures_total", "counter",
         "Certificate reloads that failed (the old certificates stayed).",
         s.tls_reload_failures},
    };
    for (const Simple& m : tls) {
      Family(out, m.name, m.type, m.help);
      Sample(out, m.name, m.value);
    }
    Family(out, "uring_http_tls_version_total", "counter",
           "TLS handshakes completed, by protocol version.");
    absl::StrAppend(&out, "uring_http_tls_version_total{version=\"TLSv1.3\"} ", s.tls13, "\n");
    absl::StrAppend(&out, "uring_http_tls_version_total{version=\"TLSv1.2\"} ", s.tls12, "\n");
    Family(out, "uring_http_tls_handshake_failures_total", "counter",
           "Connections closed before their TLS handshake completed, by reason.");
    const std::pair<const char*, uint64_t> reasons[] = {
        {"timeout", s.tls_failed_timeout},
        {"plain_http", s.tls_failed_plain_http},
        {"protocol", s.tls_failed_protocol},
        {"peer_closed", s.tls_failed_peer_closed},
        {"client_certificate", s.tls_failed_client_cert},
    };
    for (const auto& [reason, n] : reasons) {
      absl::StrAppend(&out, "uring_http_tls_handshake_failures_total{reason=\"", reason, "\"} ",
                      n, "\n");
    }
    if (config_.tls.verifies_clients()) {
      Family(out, "uring_http_tls_client_certificates_verified_total", "counter",
             "TLS handshakes (full or resumed) with a client certificate verified against "
             "--tls-client-ca.");
      Sample(out, "uring_http_tls_client_certificates_verified_total",
             s.tls_client_certs_verified);
      Family(out, "uring_http_tls_client_certificate_failures_total", "counter",
             "TLS handshakes failed over the client certificate, by reason: missing (required, "
             "none sent), untrusted (no chain to --tls-client-ca), expired (or not yet valid), "
             "invalid (any other verification failure).");
      const std::pair<const char*, uint64_t> why[] = {
          {"missing", s.tls_client_cert_missing},
          {"untrusted", s.tls_client_cert_untrusted},
          {"expired", s.tls_client_cert_expired},
          {"invalid", s.tls_client_cert_invalid},
      };
      for (const auto& [reason, n] : why) {
        absl::StrAppend(&out, "uring_http_tls_client_certificate_failures_total{reason=\"",
                        reason, "\"} ", n, "\n");
      }
    }
  }
  Family(out, "uring_http_slow_task_queue_wait_seconds_total", "counter",
         "Time SLOW tasks spent queued before a worker took them.");
  absl::StrAppend(&out, "uring_http_slow_task_queue_wait_seconds_total ",
                  Seconds(s.workers.queue_wait_ns / 1000), "\n");

  // Requests and latency per route, summed over threads.
  const std::vector<const router::Route*> routes = router_.Routes();
  struct Row {
    std::string labels;
    uint64_t by_class[6] = {};
    uint64_t latency[kLatencyBuckets] = {};
    uint64_t sum_us = 0;
  };
  std::vector<Row> rows(routes.size() + 1);
  for (size_t i = 0; i <= routes.size(); ++i) {
    rows[i].labels = i < routes.size()
                         ? absl::StrCat("method=\"", Escape(routes[i]->method), "\",route=\"",
                                        Escape(routes[i]->path), "\"")
                         : "method=\"\",route=\"(unmatched)\"";
    for (const auto& loop : loops_) {
      const RouteStats& r = loop->route_stats(i);
      for (int c = 0; c < 6; ++c) rows[i].by_class[c] += r.by_class[c].Get();
      for (size_t b = 0; b < kLatencyBuckets; ++b) rows[i].latency[b] += r.latency[b].Get();
      rows[i].sum_us += r.latency_sum_us.Get();
    }
  }
  Family(out, "uring_http_requests_total", "counter",
         "Responses by route and status class (code=\"2xx\" etc.).");
  for (const Row& row : rows) {
    for (int c = 1; c <= 5; ++c) {
      if (row.by_class[c] == 0) continue;
      absl::StrAppend(&out, "uring_http_requests_total{", row.labels, ",code=\"", c, "xx\"} ",
                      row.by_class[c], "\n");
    }
  }
  Family(out, "uring_http_request_duration_seconds", "histogram",
         "From a request's last byte parsed to its response queued for sending.");
  for (const Row& row : rows) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      cumulative += row.latency[b];
      const std::string le = b + 1 < kLatencyBuckets ? Seconds(kLatencyBoundsUs[b]) : "+Inf";
      absl::StrAppend(&out, "uring_http_request_duration_seconds_bucket{", row.labels, ",le=\"",
                      le, "\"} ", cumulative, "\n");
    }
    absl::StrAppend(&out, "uring_http_request_duration_seconds_sum{", row.labels, "} ",
                    Seconds(row.sum_us), "\n");
    absl::StrAppend(&out, "uring_http_request_duration_seconds_count{", row.labels, "} ",
                    cumulative, "\n");
  }

  if (limits_ != nullptr) {
    // Load shedding and rate limits (src/limits/request_limits.h): a row
    // per route with a limit of its own, and per route that refused any.
    Family(out, "uring_http_requests_in_flight", "gauge",
           "Requests in flight under a limit: per route with max_in_flight of its own, and "
           "route=\"(server)\" under --max-in-flight.");
    if (limits_->server_in_flight_limited()) {
      absl::StrAppend(&out, "uring_http_requests_in_flight{method=\"\",route=\"(server)\"} ",
                      limits_->server_in_flight(), "\n");
    }
    for (size_t i = 0; i < routes.size() && i < limits_->routes(); ++i) {
      const limits::RequestLimits::RouteCounts c = limits_->Counts(static_cast<uint32_t>(i));
      if (!c.limited_in_flight) continue;
      absl::StrAppend(&out, "uring_http_requests_in_flight{", rows[i].labels, "} ", c.in_flight,
                      "\n");
    }
    Family(out, "uring_http_requests_shed_total", "counter",
           "Requests refused by a limit: 503 past requests in flight (reason=\"in_flight\"), 429 "
           "past a client's rate (reason=\"rate_limit\").");
    for (size_t i = 0; i < routes.size() && i < limits_->routes(); ++i) {
      const limits::RequestLimits::RouteCounts c = limits_->Counts(static_cast<uint32_t>(i));
      const bool own_rate = routes[i]->options.rate_per_client.enabled();
      if (c.limited_in_flight || c.shed_in_flight > 0) {
        absl::StrAppend(&out, "uring_http_requests_shed_total{", rows[i].labels,
                        ",reason=\"in_flight\"} ", c.shed_in_flight, "\n");
      }
      if (own_rate || c.shed_rate > 0) {
        absl::StrAppend(&out, "uring_http_requests_shed_total{", rows[i].labels,
                        ",reason=\"rate_limit\"} ", c.shed_rate, "\n");
      }
    }
    Family(out, "uring_http_rate_limit_evictions_total", "counter",
           "Clients forgotten by a full rate-limit table before their bucket had refilled "
           "(--rate-limit-clients is too small for the clients seen).");
    Sample(out, "uring_http_rate_limit_evictions_total", limits_->rate_evictions());
  }

  Family(out, "uring_http_io_uring_feature", "gauge",
         "io_uring features in use (1), as in the ready line.");
  if (!loops_.empty()) {
    for (absl::string_view f : absl::StrSplit(loops_[0]->Features(), ',')) {
      if (f.empty() || f.find('=') != absl::string_view::npos) continue;
      absl::StrAppend(&out, "uring_http_io_uring_feature{feature=\"",
                      Escape(std::string_view(f.data(), f.size())), "\"} 1\n");
    }
  }
  Family(out, "uring_http_accept_threads", "gauge", "Accept threads (one ring each).");
  Sample(out, "uring_http_accept_threads", loops_.size());
  Family(out, "uring_http_workers", "gauge", "Worker threads for SLOW handlers.");
  Sample(out, "uring_http_workers", static_cast<uint64_t>(std::max(config_.workers, 0)));
  Family(out, "uring_http_draining", "gauge", "1 while the server drains before stopping.");
  Sample(out, "uring_http_draining", draining() ? 1 : 0);
  metrics_->Render(&out);  // the application's own
  return out;
}

}  // namespace uring_http::serving
