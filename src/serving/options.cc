#include "src/serving/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/io/socket_address.h"
#include "absl/strings/str_split.h"
#include "src/serving/flags.h"

namespace uring_http::serving {
namespace {

// Durations the server keeps in milliseconds (or whole seconds), as flags:
// up to a day unless a flag says otherwise.
Flag& DurationMs(Flags& f, std::string name, uint32_t* field, std::string help,
                 uint64_t min_ms = 0, uint64_t max_ms = 86'400'000) {
  return f.AddParsed(
      std::move(name), "DURATION", std::move(help),
      [field, min_ms, max_ms](std::string_view text) -> absl::Status {
        absl::StatusOr<uint64_t> ms = ParseDuration(text, max_ms);
        if (ms.ok() && *ms < min_ms) {
          return absl::InvalidArgumentError(absl::StrCat(
              "expected ", FormatDuration(min_ms), " to ", FormatDuration(max_ms)));
        }
        if (!ms.ok()) return ms.status();
        *field = static_cast<uint32_t>(*ms);
        return absl::OkStatus();
      },
      [field] { return FormatDuration(*field); });
}

// Whole seconds, rounded up.
Flag& DurationS(Flags& f, std::string name, uint32_t* field, std::string help) {
  return f.AddParsed(
      std::move(name), "DURATION", std::move(help),
      [field](std::string_view text) -> absl::Status {
        absl::StatusOr<uint64_t> ms = ParseDuration(text, 86'400'000);
        if (!ms.ok()) return ms.status();
        *field = static_cast<uint32_t>((*ms + 999) / 1000);
        return absl::OkStatus();
      },
      [field] { return FormatDuration(uint64_t{*field} * 1000); });
}

// One of a few words, each standing for a value of the field.
template <typename T>
Flag& Choice(Flags& f, std::string name, T* field,
             std::vector<std::pair<std::string, T>> choices, std::string help) {
  std::string word;
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i) {
    absl::StrAppend(&word, i == 0 ? "" : "|", choices[i].first);
    absl::StrAppend(&expected, i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ",
                    choices[i].first);
  }
  return f.AddParsed(
      std::move(name), word, std::move(help),
      [field, choices, expected](std::string_view text) -> absl::Status {
        for (const auto& [choice, value] : choices) {
          if (text == choice) {
            *field = value;
            return absl::OkStatus();
          }
        }
        return absl::InvalidArgumentError(absl::StrCat("expected ", expected));
      },
      [field, choices] {
        for (const auto& [choice, value] : choices) {
          if (*field == value) return choice;
        }
        return std::string();
      });
}

// A path an endpoint answers on: "/..." or empty (off).
Flag& EndpointPath(Flags& f, std::string name, std::string* field, std::string help) {
  return f.AddParsed(
      std::move(name), "PATH", std::move(help),
      [field](std::string_view text) -> absl::Status {
        if (!text.empty() && text.front() != '/') {
          return absl::InvalidArgumentError(
              "expected a path starting with '/', or empty to turn it off");
        }
        *field = std::string(text);
        return absl::OkStatus();
      },
      [field] { return field->empty() ? std::string("off") : *field; });
}

// A file the server opens: not empty.
Flag& FilePath(Flags& f, std::string name, std::string* field, std::string help) {
  return f.AddParsed(
      std::move(name), "FILE", std::move(help),
      [field](std::string_view text) -> absl::Status {
        if (text.empty()) return absl::InvalidArgumentError("expected a file");
        *field = std::string(text);
        return absl::OkStatus();
      },
      [field] { return field->empty() ? std::string("none") : *field; });
}

// A request rate: "10" or "10/s" a second, "600/m" a minute, "3600/h" an
// hour (decimals allowed); 0 turns the limit off.
absl::StatusOr<double> ParseRate(std::string_view s) {
  double per = 1;
  if (s.size() > 2 && s[s.size() - 2] == '/') {
    const char unit = s.back();
    per = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
    s.remove_suffix(2);
  }
  const std::string number(s);
  char* end = nullptr;
  const double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (per == 0 || end == nullptr || *end != '\0' || !(value >= 0 && value <= 1e9) ||
      number.find_first_not_of("0123456789.") != std::string::npos) {
    return absl::InvalidArgumentError(
        "expected requests a second, or with a unit: 10/s, 600/m, 3600/h (0: off)");
  }
  return value / per;
}

// A number of threads as --help shows it: the CPU count by that name,
// since the number differs from machine to machine.
std::string ThreadCount(int n) {
  return n == CpuCount() ? std::string("CPU count") : std::to_string(n);
}

// What the server's flags share while they are taken: the order of
// --tls-cert and --tls-key.
struct ParseState {
  std::vector<std::pair<bool, std::string>> tls_files;  // (is a key, path), in order
  bool client_auth_set = false;                         // --tls-client-auth given
};

// The server's flags, one declaration each, setting `options`. Adding a
// flag is adding its declaration here (and its line in the README's
// Command line table: test/serving:readme_flags_test checks them against --help).
Flags ServerFlags(Options& options) {
  ServerConfig& c = options.config;
  auto state = std::make_shared<ParseState>();
  Flags f("A server built on uring-http, an io_uring HTTP/1.1, HTTP/2 and WebSocket server "
          "(event loop + worker threads).");

  f.Section("Server");
  f.Add("port", &c.port, "Listen port; 0 picks a free port (named in the ready line)").Short('p');
  f.Add("address", &c.address,
        "Listen address: IPv4 or IPv6 (::1), or a name (localhost: ::1 and 127.0.0.1); "
        "empty: every address, dual-stack [::] (0.0.0.0 without IPv6)")
      .Value("HOST")
      .ShowDefault([&c] { return c.address.empty() ? std::string("every address") : c.address; });
  for (const bool admin : {false, true}) {
    f.AddParsed(
        admin ? "admin-listen" : "listen", admin ? "ADDR:PORT" : "ADDR:PORT[,tls]",
        admin ? "Serve --metrics-path and --health-path there only (plain HTTP), not on the "
                "other listeners"
              : "Listen there instead of --address and -p; repeatable. ADDR as --address, "
                "[::1] bracketed, empty for every address (:8080); or unix:PATH (a Unix "
                "socket, mode 0660) or unix:@NAME. ,tls: it speaks TLS (with --tls-cert); "
                "the others then plain HTTP",
        [&c, admin](std::string_view text) -> absl::Status {
          ListenAddress listen;
          if (!admin && text.ends_with(",tls")) {
            listen.tls = true;
            text.remove_suffix(4);
          }
          if (absl::Status s = io::CheckListenAddress(text); !s.ok()) return s;
          listen.address = std::string(text);
          listen.admin = admin;
          c.listen.push_back(std::move(listen));
          return absl::OkStatus();
        },
        [] { return std::string("none"); });
  }
  f.Add("accept-threads", &c.accept_threads,
        "Accept threads, one io_uring ring and one SO_REUSEPORT listener each", 1, 1024)
      .Short('A')
      .ShowDefault([&c] { return ThreadCount(c.accept_threads); });
  f.Add("accept-capacity", &c.accept_capacity,
        "Connection slots per accept thread; limited by the hard RLIMIT_NOFILE per thread "
        "(one ring's fixed-file table cannot be larger)",
        1u, (1u << 24) - 1)
      .Short('C');
  f.Add("workers", &c.workers, "Worker threads for SLOW handlers; 0 runs them inline", 0, 10000)
      .Short('w')
      .Alias("worker-threads")
      .ShowDefault([&c] { return ThreadCount(c.workers); });
  Choice(f, "worker-sched", &c.workers_batch_sched, {{"batch", true}, {"normal", false}},
         "batch: workers run as SCHED_BATCH, so a waking worker does not preempt a busy ring "
         "thread; normal: SCHED_OTHER like the rings");
  Choice(f, "http2", &c.http2, {{"on", true}, {"off", false}},
         "on: HTTP/2, by ALPN h2 on TLS listeners, and h2c on plain ones (with prior "
         "knowledge, or by Upgrade: h2c)");
  f.Add("http2-max-streams", &c.http2_max_streams,
        "HTTP/2 streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); one "
        "more is refused (REFUSED_STREAM)",
        uint32_t{1}, uint32_t{100000});
  f.AddSize("http2-stream-window", &c.http2_stream_window,
            "HTTP/2: how far a request body may run ahead of its handler, per stream "
            "(SETTINGS_INITIAL_WINDOW_SIZE)",
            1024, (uint64_t{1} << 31) - 1);
  f.AddSize("http2-connection-window", &c.http2_connection_window,
            "HTTP/2: the same for all of a connection's streams together",
            65535, (uint64_t{1} << 31) - 1);
  f.AddSize("http2-max-frame", &c.http2_max_frame,
            "HTTP/2: the largest frame payload a client may send (SETTINGS_MAX_FRAME_SIZE)",
            16384, (uint64_t{1} << 24) - 1);
  f.AddSize("ws-max-message", &c.ws_max_message,
            "WebSocket: the largest message a client may send (more closes with 1009)", 1,
            uint64_t{1} << 32);
  f.AddSize("ws-max-backpressure", &c.ws_max_backpressure,
            "WebSocket: bytes queued for a client past which sends are refused (its reads "
            "pause at half)",
            1024, uint64_t{1} << 32);
  DurationMs(f, "ws-idle-timeout", &c.ws_idle_timeout_ms,
             "WebSocket: nothing received for this long (close 1001); 0: never");
  DurationMs(f, "ws-ping-interval", &c.ws_ping_interval_ms,
             "WebSocket: a ping after this long without a frame from the client; 0: never");
  Choice(f, "ws-deflate", &c.ws_deflate,
         {{"off", ws::Compression::kOff},
          {"shared", ws::Compression::kShared},
          {"dedicated", ws::Compression::kDedicated}},
         "WebSocket permessage-deflate when a client offers it: off; shared (the ring "
         "thread's compressor, no context kept, no memory per socket); dedicated (each "
         "socket's own with context in a 4 KiB window, 50-80 KiB per busy socket)");
  f.Add("verbose", &c.verbose, "Debug output on stderr").Short('v');
  FilePath(f, "access-log", &c.access_log_path,
           "Access log in Common Log Format (written through the rings, never blocking them)");
  f.Add("proxy-protocol", &c.proxy_protocol,
        "Every connection starts with a PROXY protocol v1 or v2 header (HAProxy "
        "send-proxy[-v2], load balancers); its client is the one logged and given to "
        "handlers. Missing or malformed: closed without an answer");
  EndpointPath(f, "metrics-path", &c.metrics_path, "Prometheus metrics endpoint; empty: off");
  EndpointPath(f, "health-path", &c.health_path,
               "Health endpoint: 200, or 503 while draining; empty: off");
  f.AddParsed(
       "takeover", "SOCKET",
       "Take the listening sockets over from the server running on this port (its control "
       "socket: the default one of --address and -p, or SOCKET) and make it drain: a "
       "restart that loses no connection. Nobody there: start as usual",
       [&c](std::string_view text) -> absl::Status {
         if (text.empty() || text.size() > 107) {
           return absl::InvalidArgumentError(
               "expected a control socket (@name or a path, at most 107 bytes)");
         }
         c.takeover = true;
         c.takeover_from = std::string(text);
         return absl::OkStatus();
       },
       [&c] { return std::string(c.takeover ? "on" : "off"); })
      .OptionalValue([&c] { c.takeover = true; });
  f.AddParsed(
      "control-socket", "SOCKET",
      "Where this server hands its sockets to a --takeover (@name: abstract, else a path); "
      "none: nowhere",
      [&c](std::string_view name) -> absl::Status {
        if (name.empty() || name == "@" || name.size() > 107) {
          return absl::InvalidArgumentError("expected @name, a path (at most 107 bytes) or none");
        }
        c.accept_takeover = name != "none";
        c.control_socket = name == "none" ? "" : std::string(name);
        return absl::OkStatus();
      },
      [&c] {
        return !c.accept_takeover          ? std::string("none")
               : c.control_socket.empty() ? std::string("@uring-http/ADDRESS:PORT")
                                          : c.control_socket;
      });
  // Taken before parsing (Flags::Parse), declared for --help and for a
  // value given to it by mistake.
  f.AddSwitch("help", "This text (also -?)", [] {}, nullptr).Short('h');

  f.Section("Static files (Router::Static mounts: openat2 beneath the root, statx, reads)");
  f.Add("open-file-cache", &c.open_file_cache_entries, "Open files kept per accept thread (LRU); 0: none",
        0u, 1u << 19);
  DurationMs(f, "open-file-cache-valid", &c.open_file_cache_valid_ms,
             "How long a cached file is trusted before a statx checks it again (0: every "
             "request)");
  f.AddSize("file-cache-bytes", &c.file_cache_bytes,
            "Memory per accept thread for the contents of small files (up to 64KiB each) "
            "answered without a read; 0: none",
            0, uint64_t{1} << 36);
  f.AddSize("file-splice", &c.file_splice_min_bytes,
            "Bodies at least this large go file -> pipe -> socket by splice, never through "
            "user space; 0: off",
            0, uint64_t{1} << 50);
  f.AddSize("file-splice-pipe", &c.file_splice_pipe_bytes,
            "Pipe size for splicing (at most the system's /proc/sys/fs/pipe-max-size)", 4096,
            uint64_t{1} << 30);
  f.Section("Limits (exceeded: the status shown, then the connection is closed)");
  f.AddSize("max-request-line", &c.limits.max_request_line, "The request line (414)", 64,
            1u << 20);
  f.AddSize("max-header-bytes", &c.limits.max_header_bytes,
            "All header lines together (431)", 64, 1u << 20);
  f.Add("max-headers", &c.limits.max_headers, "Header lines (431)", size_t{1}, size_t{1000});
  f.AddSize("max-body-bytes", &c.limits.max_body_bytes,
            "A buffered request body, Content-Length or chunked (413); routes may set their own",
            0, uint64_t{1} << 30);
  f.AddSize("max-response-header-bytes", &c.max_response_header_bytes,
            "A handler's response header lines (and, apart, its trailers); a header past it "
            "is refused: the response is answered 500 (the connection stays) and logged",
            1024, 16u << 20);

  f.Section("Timeouts (0 disables one)");
  DurationMs(f, "header-timeout", &c.header_timeout_ms,
             "First byte to end of headers (408, close)");
  DurationMs(f, "body-timeout", &c.body_timeout_ms,
             "No byte of a request body for this long (408, close)");
  f.AddSize("body-min-rate", &c.body_min_rate,
            "Bytes a second a request body must bring, counted over each --body-rate-window "
            "from its head's end, else 408 and close; 0: no minimum",
            0, 1u << 30);
  // Shorter windows would judge a client by a scheduling hiccup (and the
  // loop's clock ticks every 100 ms).
  DurationMs(f, "body-rate-window", &c.body_rate_window_ms,
             "The window --body-min-rate is counted over (1s to 1h); the first one is a new "
             "body's grace",
             1000, 3'600'000);
  DurationMs(f, "idle-timeout", &c.idle_timeout_ms,
             "Keep-alive connection between requests (close)");
  DurationMs(f, "send-timeout", &c.send_timeout_ms,
             "Peer taking none of our output for this long (close)");
  DurationMs(f, "shutdown-timeout", &c.shutdown_timeout_ms,
             "Drain on SIGTERM/SIGINT, then close the rest");
  DurationS(f, "defer-accept", &c.defer_accept_s,
            "Accept a connection once its first bytes arrive (TCP_DEFER_ACCEPT), or after "
            "about this long without any; whole seconds, rounded up; 0: accept at once");

  f.Section("io_uring");
  f.Add("sqpoll", &c.sqpoll, "Kernel submission-queue polling thread per ring");
  f.Add("pin-cpus", &c.pin_cpus, "Pin accept thread i to CPU i");
  f.AddParsed(
      "send-zc", "SIZE",
      "Zero-copy send (IORING_OP_SEND_ZC) for responses of at least this size; 0: off, "
      "else at least 1KiB",
      [&c](std::string_view text) -> absl::Status {
        // Below a page the pinning and the second completion cost more than
        // the copy they save.
        absl::StatusOr<uint64_t> n = ParseSize(text);
        if (n.ok() && ((*n != 0 && *n < 1024) || *n > (uint64_t{1} << 30))) {
          return absl::InvalidArgumentError("expected 0 (off) or at least 1024 (1KiB), at most 1GiB");
        }
        if (!n.ok()) return n.status();
        c.send_zc_min_bytes = static_cast<uint32_t>(*n);
        return absl::OkStatus();
      },
      [&c] { return FormatSize(c.send_zc_min_bytes); });
  f.AddSize("recv-buffer-size", &c.recv_buffer_size,
            "Size of each provided receive buffer: one receive completion carries at most "
            "this much",
            256, 1u << 20);
  f.Add("recv-buffers", &c.recv_buffer_count,
        "Provided receive buffers per ring, rounded up to a power of two", 1u, 32768u)
      .ShowDefault([&c] {
        return c.recv_buffer_count == 0 ? std::string("sized from -C")
                                        : std::to_string(c.recv_buffer_count);
      });
  f.AddParsed(
      "io-uring-disable", "LIST",
      "Turn ring features off to measure what they give: comma-separated defer-taskrun, "
      "single-issuer, coop-taskrun, registered-ring-fd",
      [&c](std::string_view text) -> absl::Status {
        for (absl::string_view piece : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
          if (piece == "defer-taskrun") {
            c.ring_defer_taskrun = false;
          } else if (piece == "single-issuer") {
            c.ring_single_issuer = false;
          } else if (piece == "coop-taskrun") {
            c.ring_coop_taskrun = false;
          } else if (piece == "registered-ring-fd") {
            c.ring_registered_fd = false;
          } else {
            return absl::InvalidArgumentError(
                "expected a comma-separated list of defer-taskrun, single-issuer, "
                "coop-taskrun, registered-ring-fd");
          }
        }
        return absl::OkStatus();
      },
      [&c] {
        std::string off;
        for (const auto& [on, name] : {std::pair{c.ring_defer_taskrun, "defer-taskrun"},
                                       {c.ring_single_issuer, "single-issuer"},
                                       {c.ring_coop_taskrun, "coop-taskrun"},
                                       {c.ring_registered_fd, "registered-ring-fd"}}) {
          if (!on) absl::StrAppend(&off, off.empty() ? "" : ",", name);
        }
        return off.empty() ? std::string("none") : off;
      });

  f.Section(
      "Compression (handlers' responses, and compressible files the open-file cache keeps in "
      "memory)");
  Choice(f, "gzip", &c.compression.enabled, {{"on", true}, {"off", false}},
         "gzip compressible types when the client accepts it");
  f.AddSize("gzip-min-bytes", &c.compression.min_bytes, "Smallest buffered body compressed", 0,
            uint64_t{1} << 30);
  f.Add("gzip-level", &c.compression.level, "1 (fastest) to 9 (smallest)", 1, 9);

  f.Section("HTTPS (OpenSSL; TLS 1.3 and 1.2, ALPN h2 and http/1.1, session tickets)");
  f.AddParsed(
      "tls-cert", "FILE",
      "PEM certificate chain (ECDSA or RSA); with --tls-key, the -p listeners speak TLS. "
      "Repeat the pair for more certificates: SNI picks the one naming the host, the first "
      "answers the rest. SIGHUP reloads them",
      [state](std::string_view text) -> absl::Status {
        if (text.empty()) return absl::InvalidArgumentError("expected a file");
        state->tls_files.emplace_back(false, std::string(text));
        return absl::OkStatus();
      },
      [] { return std::string("none"); });
  f.AddParsed(
      "tls-key", "FILE", "PEM private key of the --tls-cert before it",
      [state](std::string_view text) -> absl::Status {
        if (text.empty()) return absl::InvalidArgumentError("expected a file");
        state->tls_files.emplace_back(true, std::string(text));
        return absl::OkStatus();
      },
      [] { return std::string("none"); });
  f.AddCheck([state, &c] {
    auto& certs = c.tls.certificates;
    for (const auto& [is_key, path] : state->tls_files) {
      if (!is_key) {
        if (!certs.empty() && certs.back().key_path.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--tls-cert ", certs.back().cert_path, " has no --tls-key"));
        }
        certs.push_back({path, ""});
      } else {
        if (certs.empty() || !certs.back().key_path.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--tls-key ", path, " has no --tls-cert before it"));
        }
        certs.back().key_path = path;
      }
    }
    if (!certs.empty() && certs.back().key_path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-cert ", certs.back().cert_path, " has no --tls-key"));
    }
    if (c.plain_port >= 0 && certs.empty()) {
      return absl::InvalidArgumentError("--plain-port goes with --tls-cert/--tls-key");
    }
    for (const ListenAddress& l : c.listen) {
      if (l.tls && certs.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--listen=", l.address, ",tls goes with --tls-cert/--tls-key"));
      }
    }
    if (c.tls.verifies_clients() && certs.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca goes with --tls-cert/--tls-key");
    }
    if (state->client_auth_set && !c.tls.verifies_clients()) {
      return absl::InvalidArgumentError("--tls-client-auth goes with --tls-client-ca");
    }
    return absl::OkStatus();
  });
  f.Add("plain-port", &c.plain_port,
        "Also serve plain HTTP on this port (health checks); 0: a free one, named in the "
        "ready line",
        0, 65535)
      .Value("PORT")
      .ShowDefault([&c] {
        return c.plain_port < 0 ? std::string("none") : std::to_string(c.plain_port);
      });
  DurationMs(f, "handshake-timeout", &c.tls.handshake_timeout_ms,
             "A client whose handshake is not done by then is closed (0: the --header-timeout "
             "bounds it)");
  DurationS(f, "tls-ticket-rotation", &c.tls.ticket_key_rotation_s,
            "Session-ticket keys are replaced this often (the previous key still opens "
            "tickets for one more period)");
  Choice(f, "tls-offload", &c.tls.offload,
         {{"auto", tls::TlsSettings::Offload::kAuto},
          {"on", tls::TlsSettings::Offload::kOn},
          {"rsa", tls::TlsSettings::Offload::kRsa},
          {"off", tls::TlsSettings::Offload::kOff}},
         "Where full handshakes' key exchange and signature run: on the TLS workers while the "
         "ring's connections are reused (auto), always (on), for RSA certificates only (rsa), "
         "or never (off)");
  f.Add("tls-workers", &c.tls.workers,
        "TLS handshake threads, below the rings' priority; 0: handshakes on the rings", 0, 1024)
      .ShowDefault([&c] {
        return c.tls.workers < 0 ? std::string("accept threads") : std::to_string(c.tls.workers);
      });
  FilePath(f, "tls-client-ca", &c.tls.client_ca_path,
           "Ask clients for a certificate and verify it against the CAs in this PEM file "
           "(mutual TLS)");
  f.AddParsed(
      "tls-client-auth", "required|optional",
      "With --tls-client-ca: a client without a valid certificate fails the handshake "
      "(required), or one without any is let in (optional)",
      [state, &c](std::string_view text) -> absl::Status {
        using ClientAuth = tls::TlsSettings::ClientAuth;
        if (text != "required" && text != "optional") {
          return absl::InvalidArgumentError("expected required or optional");
        }
        c.tls.client_auth = text == "required" ? ClientAuth::kRequired : ClientAuth::kOptional;
        state->client_auth_set = true;
        return absl::OkStatus();
      },
      [&c] {
        return std::string(c.tls.client_auth == tls::TlsSettings::ClientAuth::kRequired
                               ? "required"
                               : "optional");
      });

  f.Section("Load shedding (not /metrics, /healthz; routes may set their own)");
  f.Add("max-in-flight", &c.max_in_flight,
        "Requests in flight at once, over every route; one more is answered 503 with "
        "Retry-After: 1 (0: no limit)",
        uint32_t{0}, UINT32_MAX);
  f.AddParsed(
      "rate-limit", "RATE",
      "Requests per client (IPv4 address, IPv6 /64): 10 or 10/s, 600/m, 3600/h; past it "
      "429 with Retry-After (0: off)",
      [&c](std::string_view text) -> absl::Status {
        absl::StatusOr<double> rate = ParseRate(text);
        if (!rate.ok()) return rate.status();
        c.rate_limit.per_second = *rate;
        return absl::OkStatus();
      },
      [&c] {
        return c.rate_limit.per_second == 0 ? std::string("0")
                                            : absl::StrCat(c.rate_limit.per_second, "/s");
      });
  f.Add("rate-limit-burst", &c.rate_limit.burst,
        "Requests a client may make at once (0: a second's worth of --rate-limit)", uint32_t{0},
        UINT32_MAX);
  f.Add("rate-limit-clients", &c.rate_limit_clients,
        "Clients remembered per rate limit, least recent forgotten first (32 bytes each)",
        uint32_t{1}, uint32_t{1} << 26);
  return f;
}

// What the command line starts from.
Options DefaultOptions() {
  Options options;
  // The shipped server takes systemd's sockets when given some, and can be
  // taken over (--control-socket=none turns that off).
  options.config.systemd_sockets = true;
  options.config.accept_takeover = true;
  return options;
}

}  // namespace

std::string UsageText(const char* program, const Flags* app_flags) {
  Options options = DefaultOptions();
  return absl::StrCat(
      ServerFlags(options).Usage(program, app_flags),
      "\nSizes are bytes, or take a unit: 64k, 64KiB, 1M, 1GiB (k M G T and KiB MiB GiB TiB:\n"
      "powers of 1024; kB MB GB TB: powers of 1000). Durations: 500ms, 30s, 2m, 1h, or a\n"
      "plain number of seconds.\n");
}

absl::StatusOr<Options> TryParseOptions(int argc, char** argv, const Flags* app_flags) {
  Options options = DefaultOptions();
  Flags flags = ServerFlags(options);
  if (absl::Status s = flags.Parse(argc, argv, &options.help, app_flags); !s.ok()) return s;
  return options;
}

int ExitStatus(const absl::Status& status) {
  if (status.ok()) return 0;
  return absl::IsInvalidArgument(status) ? 2 : 1;
}

Options ParseOptions(int argc, char** argv, const Flags* app_flags) {
  const char* program = argc > 0 ? argv[0] : "uring-http";
  absl::StatusOr<Options> options = TryParseOptions(argc, argv, app_flags);
  if (!options.ok()) {
    const char* slash = std::strrchr(program, '/');
    std::fprintf(stderr, "%s: %s\n", slash != nullptr ? slash + 1 : program,
                 std::string(options.status().message()).c_str());
    // Anything but InvalidArgument is the program's own mistake (a flag it
    // declares twice), not the command line's.
    if (!absl::IsInvalidArgument(options.status())) std::exit(1);
    std::fprintf(stderr, "Try '%s --help'.\n", program);
    std::exit(2);
  }
  if (options->help) {
    std::fputs(UsageText(program, app_flags).c_str(), stdout);
    std::fflush(stdout);
    std::exit(0);
  }
  return *std::move(options);
}

}  // namespace uring_http::serving
