#include "src/serving/options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/io/socket_address.h"

namespace uring_http::serving {
namespace {

enum LongOnly {
  kMaxRequestLine = 1000,
  kMaxHeaderBytes,
  kMaxHeaders,
  kMaxBodyBytes,
  kMaxResponseHeaderBytes,
  kHeaderTimeout,
  kBodyTimeout,
  kBodyMinRate,
  kBodyRateWindow,
  kIdleTimeout,
  kSendTimeout,
  kShutdownTimeout,
  kAddress,
  kSqpoll,
  kSendZc,
  kIoUringDisable,
  kPinCpus,
  kPidFile,
  kMetricsPath,
  kHealthPath,
  kAccessLog,
  kRecvBufferSize,
  kRecvBuffers,
  kRoot,
  kOpenFileCache,
  kOpenFileCacheValid,
  kFileCacheBytes,
  kFileSplice,
  kFileSplicePipe,
  kStaticDotfiles,
  kDeferAccept,
  kWorkerSched,
  kProxyProtocol,
  kGzip,
  kGzipMinBytes,
  kGzipLevel,
  kTlsCert,
  kTlsKey,
  kHandshakeTimeout,
  kTlsTicketRotation,
  kTlsOffload,
  kPlainPort,
  kTlsWorkers,
  kTakeover,
  kControlSocket,
  kListen,
  kAdminListen,
};

const option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},
    {"accept-threads", required_argument, nullptr, 'A'},
    {"accept-capacity", required_argument, nullptr, 'C'},
    {"workers", required_argument, nullptr, 'w'},
    {"worker-threads", required_argument, nullptr, 'w'},
    {"slow-duration", required_argument, nullptr, 'D'},
    {"verbose", no_argument, nullptr, 'v'},
    {"daemonize", no_argument, nullptr, 'd'},
    {"help", no_argument, nullptr, 'h'},
    {"address", required_argument, nullptr, kAddress},
    {"max-request-line", required_argument, nullptr, kMaxRequestLine},
    {"max-header-bytes", required_argument, nullptr, kMaxHeaderBytes},
    {"max-headers", required_argument, nullptr, kMaxHeaders},
    {"max-body-bytes", required_argument, nullptr, kMaxBodyBytes},
    {"max-response-header-bytes", required_argument, nullptr, kMaxResponseHeaderBytes},
    {"header-timeout", required_argument, nullptr, kHeaderTimeout},
    {"body-timeout", required_argument, nullptr, kBodyTimeout},
    {"body-min-rate", required_argument, nullptr, kBodyMinRate},
    {"body-rate-window", required_argument, nullptr, kBodyRateWindow},
    {"idle-timeout", required_argument, nullptr, kIdleTimeout},
    {"send-timeout", required_argument, nullptr, kSendTimeout},
    {"shutdown-timeout", required_argument, nullptr, kShutdownTimeout},
    {"sqpoll", no_argument, nullptr, kSqpoll},
    {"pin-cpus", no_argument, nullptr, kPinCpus},
    {"send-zc", required_argument, nullptr, kSendZc},
    {"io-uring-disable", required_argument, nullptr, kIoUringDisable},
    {"pid-file", required_argument, nullptr, kPidFile},
    {"metrics-path", required_argument, nullptr, kMetricsPath},
    {"health-path", required_argument, nullptr, kHealthPath},
    {"access-log", required_argument, nullptr, kAccessLog},
    {"recv-buffer-size", required_argument, nullptr, kRecvBufferSize},
    {"recv-buffers", required_argument, nullptr, kRecvBuffers},
    {"root", required_argument, nullptr, kRoot},
    {"open-file-cache", required_argument, nullptr, kOpenFileCache},
    {"open-file-cache-valid", required_argument, nullptr, kOpenFileCacheValid},
    {"file-cache-bytes", required_argument, nullptr, kFileCacheBytes},
    {"file-splice", required_argument, nullptr, kFileSplice},
    {"file-splice-pipe", required_argument, nullptr, kFileSplicePipe},
    {"static-dotfiles", required_argument, nullptr, kStaticDotfiles},
    {"defer-accept", required_argument, nullptr, kDeferAccept},
    {"worker-sched", required_argument, nullptr, kWorkerSched},
    {"proxy-protocol", no_argument, nullptr, kProxyProtocol},
    {"gzip", required_argument, nullptr, kGzip},
    {"gzip-min-bytes", required_argument, nullptr, kGzipMinBytes},
    {"gzip-level", required_argument, nullptr, kGzipLevel},
    {"tls-cert", required_argument, nullptr, kTlsCert},
    {"tls-key", required_argument, nullptr, kTlsKey},
    {"handshake-timeout", required_argument, nullptr, kHandshakeTimeout},
    {"tls-ticket-rotation", required_argument, nullptr, kTlsTicketRotation},
    {"tls-offload", required_argument, nullptr, kTlsOffload},
    {"plain-port", required_argument, nullptr, kPlainPort},
    {"tls-workers", required_argument, nullptr, kTlsWorkers},
    {"takeover", optional_argument, nullptr, kTakeover},
    {"control-socket", required_argument, nullptr, kControlSocket},
    {"listen", required_argument, nullptr, kListen},
    {"admin-listen", required_argument, nullptr, kAdminListen},
    {nullptr, 0, nullptr, 0},
};

const char* NameOf(int code) {
  for (const option& o : kLongOptions) {
    if (o.name != nullptr && o.val == code) return o.name;
  }
  return "?";
}

// A plain decimal in [min, max]; anything else ("12x", "-1", "", overflow)
// is an error naming the option and the range.
absl::StatusOr<uint64_t> ParseNumber(int code, const char* text, uint64_t min, uint64_t max) {
  std::string_view s(text);
  bool ok = !s.empty() && s.size() <= 19;
  uint64_t value = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') {
      ok = false;
      break;
    }
    value = value * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (!ok || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("invalid value '", text, "' for --",
                                                   NameOf(code), ": expected an integer in [",
                                                   min, ", ", max, "]"));
  }
  return value;
}

// A duration: a number of seconds, or with a unit suffix "ms", "s" or "m".
// 0 disables the timeout.
absl::StatusOr<uint32_t> ParseDurationMs(int code, const char* text) {
  std::string_view s(text);
  uint64_t scale = 1000;
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms") {
    scale = 1;
    s.remove_suffix(2);
  } else if (!s.empty() && s.back() == 's') {
    s.remove_suffix(1);
  } else if (!s.empty() && s.back() == 'm') {
    scale = 60'000;
    s.remove_suffix(1);
  }
  std::string digits(s);
  absl::StatusOr<uint64_t> n = ParseNumber(code, digits.c_str(), 0, 86'400'000 / scale);
  if (!n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid value '", text, "' for --", NameOf(code),
        ": expected a duration such as 30, 30s, 500ms or 2m (at most one day)"));
  }
  return static_cast<uint32_t>(*n * scale);
}

}  // namespace

std::string UsageText(const char* program) {
  return absl::StrCat(
      "uring-http: an io_uring HTTP/1.1 server (event loop + worker threads)\n"
      "Usage: ", program, " [ -<flag> [<val>] | --<name>[{=| }<val>] ]...\n\n"
      "  -p, --port=num              Listen port (9000); 0 picks a free port\n"
      "      --address=host          Listen address: IPv4 or IPv6 (::1), or a name\n"
      "                              (localhost: ::1 and 127.0.0.1); default every\n"
      "                              address, dual-stack [::] (0.0.0.0 without IPv6)\n"
      "      --listen=ADDR:PORT[,tls]  Listen there instead of --address and -p;\n"
      "                              repeatable. ADDR as --address, [::1] bracketed,\n"
      "                              empty for every address (:8080); or unix:PATH\n"
      "                              (a Unix socket, mode 0660) or unix:@NAME. ,tls:\n"
      "                              it speaks TLS (with --tls-cert); the others then\n"
      "                              plain HTTP\n"
      "      --admin-listen=ADDR:PORT  Serve --metrics-path and --health-path there\n"
      "                              only (plain HTTP), not on the other listeners\n"
      "  -A, --accept-threads=num    Accept threads, one io_uring ring and one SO_REUSEPORT\n"
      "                              listener each (the number of CPUs); >= 1\n"
      "  -C, --accept-capacity=num   Connection slots per accept thread (100000); >= 1.\n"
      "                              Limited by the hard RLIMIT_NOFILE per thread (one\n"
      "                              ring's fixed-file table cannot be larger)\n"
      "  -w, --workers=num           Worker threads for SLOW handlers (the number of\n"
      "      --worker-threads=num    accept threads); 0 runs SLOW handlers inline\n"
      "      --worker-sched=policy   batch (SCHED_BATCH: a waking worker does not preempt\n"
      "                              a busy ring thread) or normal (batch)\n"
      "  -D, --slow-duration=ms      What GET /test/slow sleeps on a worker (30)\n"
      "  -v, --verbose               Debug output on stderr\n"
      "      --access-log=path       Access log in Common Log Format (written through\n"
      "                              the rings, never blocking them)\n"
      "      --proxy-protocol        Every connection starts with a PROXY protocol v1 or\n"
      "                              v2 header (HAProxy send-proxy[-v2], load balancers);\n"
      "                              its client is the one logged and given to handlers.\n"
      "                              Missing or malformed: closed without an answer\n"
      "  -d, --daemonize             Detach from the terminal and run in the background\n"
      "      --pid-file=path         Write the process id there once serving\n"
      "      --metrics-path=path     Prometheus metrics endpoint (/metrics); empty: off\n"
      "      --health-path=path      Health endpoint (/healthz): 200, or 503 while\n"
      "                              draining; empty: off\n"
      "      --takeover[=socket]     Take the listening sockets over from the server\n"
      "                              running on this port (its control socket: the\n"
      "                              default one of --address and -p) and make it drain:\n"
      "                              a restart that loses no connection. Nobody there:\n"
      "                              start as usual\n"
      "      --control-socket=socket Where this server hands its sockets to a --takeover\n"
      "                              (@uring-http/ADDRESS:PORT; @name: abstract, else a\n"
      "                              path); none: nowhere\n"
      "  -h, --help                  This text\n\n"
      "Static files (GET and HEAD, through the ring: openat2 beneath the root, statx, reads):\n"
      "      --root=dir             Serve dir for every path no route claims (off)\n"
      "      --open-file-cache=num  Open files kept per accept thread (1000); 0: none\n"
      "      --open-file-cache-valid=t  How long a cached file is trusted before a statx\n"
      "                             checks it again (1s; 0: every request)\n"
      "      --file-cache-bytes=bytes  Memory per accept thread for the contents of small\n"
      "                             files (up to 64 KiB each) answered without a read\n"
      "                             (33554432); 0: none\n"
      "      --file-splice=bytes    Bodies at least this large go file -> pipe -> socket\n"
      "                             by splice, never through user space (65536; 0: off)\n"
      "      --file-splice-pipe=bytes  Pipe size for splicing (1048576; 4096..the\n"
      "                             system's /proc/sys/fs/pipe-max-size)\n"
      "      --static-dotfiles=deny|allow  Paths with a segment starting with '.'\n"
      "                             (/.env, /.git/config): 404 as if absent, except\n"
      "                             /.well-known/ (deny), or served like any file\n\n"
      "Limits (exceeded: the status shown, then the connection is closed):\n"
      "      --max-request-line=bytes   8192 (414)\n"
      "      --max-header-bytes=bytes   16384, all header lines together (431)\n"
      "      --max-headers=num          100 (431)\n"
      "      --max-body-bytes=bytes     1048576: a buffered request body, Content-Length\n"
      "                                 or chunked (413); routes may set their own\n"
      "      --max-response-header-bytes=bytes  65536: a handler's response header lines\n"
      "                                 (and, apart, its trailers); a header past it is\n"
      "                                 refused: the response is answered 500 (the\n"
      "                                 connection stays) and logged (1024..16777216)\n\n"
      "Timeouts (seconds, or with a unit: 500ms, 30s, 2m; 0 disables):\n"
      "      --header-timeout=t     10s: first byte to end of headers (408, close)\n"
      "      --body-timeout=t       60s: no byte of a request body for this long (408, close)\n"
      "      --body-min-rate=bytes  1024: a request body must bring this many bytes a second,\n"
      "                             counted over each --body-rate-window from its head's\n"
      "                             end, else 408 and close; 0: no minimum\n"
      "      --body-rate-window=t   10s: the window the rate is counted over (1s..1h); the\n"
      "                             first one is a new body's grace\n"
      "      --idle-timeout=t       60s: keep-alive connection between requests (close)\n"
      "      --send-timeout=t       30s: peer taking none of our output for this long (close)\n"
      "      --shutdown-timeout=t   30s: drain on SIGTERM/SIGINT, then close the rest\n"
      "      --defer-accept=t       1s: accept a connection once its first bytes arrive\n"
      "                             (TCP_DEFER_ACCEPT), or after about this long without\n"
      "                             any; whole seconds, rounded up; 0: accept at once\n\n"
      "io_uring:\n"
      "      --sqpoll               Kernel submission-queue polling thread per ring\n"
      "      --pin-cpus             Pin accept thread i to CPU i\n"
      "      --send-zc=bytes        Zero-copy send (IORING_OP_SEND_ZC) for responses of\n"
      "                             at least this size (131072); 0: off, else >= 1024\n"
      "      --recv-buffer-size=bytes  Size of each provided receive buffer (2048;\n"
      "                             256..1048576): one receive completion carries at most\n"
      "                             this much\n"
      "      --recv-buffers=num     Provided receive buffers per ring, rounded up to a power\n"
      "                             of two (sized from -C; 1..32768)\n"
      "      --io-uring-disable=list  Turn features off to measure what they give:\n"
      "                             comma-separated defer-taskrun, single-issuer,\n"
      "                             coop-taskrun, registered-ring-fd (none)\n\n"
      "Compression (handlers' responses; static files are sent as they are):\n"
      "      --gzip=on|off          gzip compressible types when the client accepts it\n"
      "                             (off)\n"
      "      --gzip-min-bytes=bytes  Smallest buffered body compressed (1024)\n"
      "      --gzip-level=n         1 (fastest) to 9 (smallest) (1)\n\n"
      "HTTPS (OpenSSL; TLS 1.3 and 1.2, ALPN http/1.1, session tickets):\n"
      "      --tls-cert=file        PEM certificate chain (ECDSA or RSA); with --tls-key,\n"
      "                             the -p listeners speak TLS. Repeat the pair for more\n"
      "                             certificates: SNI picks the one naming the host, the\n"
      "                             first answers the rest. SIGHUP reloads them\n"
      "      --tls-key=file         PEM private key of the --tls-cert before it\n"
      "      --plain-port=port      Also serve plain HTTP on this port (health checks);\n"
      "                             0: a free one, named in the ready line\n"
      "      --handshake-timeout=t  10s: a client whose handshake is not done by then is\n"
      "                             closed (0: the --header-timeout bounds it)\n"
      "      --tls-ticket-rotation=t  1h: session-ticket keys are replaced this often (the\n"
      "                             previous key still opens tickets for one more period)\n"
      "      --tls-offload=auto|on|rsa|off  Full handshakes' key exchange and signature\n"
      "                             on the TLS workers: while the ring's connections are\n"
      "                             reused (auto), always, for RSA certificates only, or\n"
      "                             never\n"
      "      --tls-workers=num      TLS handshake threads, below the rings' priority\n"
      "                             (one per accept thread; 0: handshakes on the rings)\n\n"
      "Endpoints: GET /test/fast (200, inline), GET /test/slow (200 after --slow-duration\n"
      "on a worker), GET /test/bytes?N, POST /test/echo (the body back), POST /test/sink\n"
      "(a streamed body of any size, answered with its length), GET\n"
      "/test/stream?bytes=N&chunk=M (streamed from a worker).\n");
}

absl::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options options;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  options.config.accept_threads = static_cast<int>(cpus);
  bool workers_set = false;
  // The shipped server takes systemd's sockets when given some, and can be
  // taken over (--control-socket=none turns that off).
  options.config.systemd_sockets = true;
  options.config.accept_takeover = true;
  opterr = 0;  // we print our own messages
  // 0, not 1: glibc then also forgets where it stopped inside the previous
  // argv (a pointer into memory that may be gone), so parsing twice works.
  optind = 0;
  int code;
  while ((code = getopt_long(argc, argv, ":p:A:C:w:D:vdh?", kLongOptions, nullptr)) != -1) {
    absl::StatusOr<uint64_t> n;
    switch (code) {
      case 'p':
        n = ParseNumber(code, optarg, 0, 65535);
        if (!n.ok()) return n.status();
        options.config.port = static_cast<uint16_t>(*n);
        break;
      case 'A':
        n = ParseNumber(code, optarg, 1, 1024);
        if (!n.ok()) return n.status();
        options.config.accept_threads = static_cast<int>(*n);
        break;
      case 'C':
        n = ParseNumber(code, optarg, 1, (1u << 24) - 1);
        if (!n.ok()) return n.status();
        options.config.accept_capacity = static_cast<uint32_t>(*n);
        break;
      case 'w':
        n = ParseNumber(code, optarg, 0, 10000);
        if (!n.ok()) return n.status();
        options.config.workers = static_cast<int>(*n);
        workers_set = true;
        break;
      case 'D':
        n = ParseNumber(code, optarg, 0, 3'600'000);
        if (!n.ok()) return n.status();
        options.slow_duration_ms = static_cast<uint32_t>(*n);
        break;
      case 'v':
        options.config.verbose = true;
        break;
      case 'd':
        options.daemonize = true;
        break;
      case 'h':
        options.help = true;
        break;
      case '?': {
        // '?' is both the reference design's help flag and getopt's "unknown".
        const std::string_view arg = argv[optind - 1];
        if (optopt == '?' || arg == "-?") {
          options.help = true;
          break;
        }
        if (optopt != 0 && std::string_view(NameOf(optopt)) != "?") {
          // A known long option given a value it does not take ("--verbose=1"):
          // optopt is then its code, which need not be a character.
          return absl::InvalidArgumentError(
              absl::StrCat("option '--", NameOf(optopt), "' takes no value"));
        }
        if (optopt != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("unknown option '-", std::string(1, static_cast<char>(optopt)), "'"));
        }
        return absl::InvalidArgumentError(
            absl::StrCat("unknown option '", std::string(arg), "'"));
      }
      case ':':
        return absl::InvalidArgumentError(
            absl::StrCat("option '", argv[optind - 1], "' needs a value"));
      case kAddress:
        options.config.address = optarg;
        break;
      case kListen:
      case kAdminListen: {
        ListenAddress listen;
        std::string_view text = optarg;
        if (code == kListen && text.ends_with(",tls")) {
          listen.tls = true;
          text.remove_suffix(4);
        }
        if (absl::Status s = io::CheckListenAddress(text); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid value '", optarg, "' for --", NameOf(code), ": ",
                           s.message()));
        }
        listen.address = std::string(text);
        listen.admin = code == kAdminListen;
        options.config.listen.push_back(std::move(listen));
        break;
      }
      case kMaxRequestLine:
        n = ParseNumber(code, optarg, 64, 1 << 20);
        if (!n.ok()) return n.status();
        options.config.limits.max_request_line = *n;
        break;
      case kMaxHeaderBytes:
        n = ParseNumber(code, optarg, 64, 1 << 20);
        if (!n.ok()) return n.status();
        options.config.limits.max_header_bytes = *n;
        break;
      case kMaxHeaders:
        n = ParseNumber(code, optarg, 1, 1000);
        if (!n.ok()) return n.status();
        options.config.limits.max_headers = *n;
        break;
      case kMaxBodyBytes:
        n = ParseNumber(code, optarg, 0, 1ull << 30);
        if (!n.ok()) return n.status();
        options.config.limits.max_body_bytes = *n;
        break;
      case kMaxResponseHeaderBytes:
        n = ParseNumber(code, optarg, 1024, 16u << 20);
        if (!n.ok()) return n.status();
        options.config.max_response_header_bytes = *n;
        break;
      case kHeaderTimeout:
      case kBodyTimeout:
      case kIdleTimeout:
      case kSendTimeout:
      case kShutdownTimeout: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        uint32_t* target = code == kHeaderTimeout  ? &options.config.header_timeout_ms
                           : code == kBodyTimeout ? &options.config.body_timeout_ms
                           : code == kIdleTimeout ? &options.config.idle_timeout_ms
                           : code == kSendTimeout ? &options.config.send_timeout_ms
                                                  : &options.config.shutdown_timeout_ms;
        *target = *ms;
        break;
      }
      case kBodyMinRate:
        n = ParseNumber(code, optarg, 0, 1u << 30);
        if (!n.ok()) return n.status();
        options.config.body_min_rate = static_cast<uint32_t>(*n);
        break;
      case kBodyRateWindow: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        // Shorter windows would judge a client by a scheduling hiccup (and
        // the loop's clock ticks every 100 ms).
        if (*ms < 1000 || *ms > 3'600'000) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --body-rate-window: expected 1s to 1h"));
        }
        options.config.body_rate_window_ms = *ms;
        break;
      }
      case kWorkerSched: {
        const std::string_view policy(optarg);
        if (policy != "batch" && policy != "normal") {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --worker-sched: expected batch or normal"));
        }
        options.config.workers_batch_sched = policy == "batch";
        break;
      }
      case kStaticDotfiles: {
        const std::string_view v(optarg);
        if (v != "deny" && v != "allow") {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --static-dotfiles: expected deny or allow"));
        }
        options.static_dotfiles = v == "allow";
        break;
      }
      case kGzip: {
        const std::string_view v(optarg);
        if (v != "on" && v != "off") {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid value '", optarg, "' for --gzip: expected on or off"));
        }
        options.config.compression.enabled = v == "on";
        break;
      }
      case kGzipMinBytes:
        n = ParseNumber(code, optarg, 0, 1ull << 30);
        if (!n.ok()) return n.status();
        options.config.compression.min_bytes = *n;
        break;
      case kGzipLevel:
        n = ParseNumber(code, optarg, 1, 9);
        if (!n.ok()) return n.status();
        options.config.compression.level = static_cast<int>(*n);
        break;
      case kDeferAccept: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        options.config.defer_accept_s = (*ms + 999) / 1000;
        break;
      }
      case kTlsCert:
      case kTlsKey: {
        if (optarg[0] == '\0') {
          return absl::InvalidArgumentError(absl::StrCat("--", NameOf(code), " needs a file"));
        }
        auto& certs = options.config.tls.certificates;
        if (code == kTlsCert) {
          if (!certs.empty() && certs.back().key_path.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat("--tls-cert ", certs.back().cert_path, " has no --tls-key"));
          }
          certs.push_back({optarg, ""});
        } else {
          if (certs.empty() || !certs.back().key_path.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat("--tls-key ", optarg, " has no --tls-cert before it"));
          }
          certs.back().key_path = optarg;
        }
        break;
      }
      case kTlsWorkers:
        n = ParseNumber(code, optarg, 0, 1024);
        if (!n.ok()) return n.status();
        options.config.tls.workers = static_cast<int>(*n);
        break;
      case kPlainPort:
        n = ParseNumber(code, optarg, 0, 65535);
        if (!n.ok()) return n.status();
        options.config.plain_port = static_cast<int>(*n);
        break;
      case kHandshakeTimeout: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        options.config.tls.handshake_timeout_ms = *ms;
        break;
      }
      case kTlsTicketRotation: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        options.config.tls.ticket_key_rotation_s = (*ms + 999) / 1000;
        break;
      }
      case kTlsOffload: {
        const std::string_view v(optarg);
        if (v != "auto" && v != "on" && v != "rsa" && v != "off") {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --tls-offload: expected auto, on, rsa or off"));
        }
        options.config.tls.offload = v == "on"    ? tls::TlsSettings::Offload::kOn
                                     : v == "off" ? tls::TlsSettings::Offload::kOff
                                     : v == "rsa" ? tls::TlsSettings::Offload::kRsa
                                                  : tls::TlsSettings::Offload::kAuto;
        break;
      }
      case kSqpoll:
        options.config.sqpoll = true;
        break;
      case kPinCpus:
        options.config.pin_cpus = true;
        break;
      case kIoUringDisable:
        for (absl::string_view piece : absl::StrSplit(optarg, ',')) {
          const std::string_view name(piece.data(), piece.size());
          if (name == "defer-taskrun") {
            options.config.ring_defer_taskrun = false;
          } else if (name == "single-issuer") {
            options.config.ring_single_issuer = false;
          } else if (name == "coop-taskrun") {
            options.config.ring_coop_taskrun = false;
          } else if (name == "registered-ring-fd") {
            options.config.ring_registered_fd = false;
          } else {
            return absl::InvalidArgumentError(absl::StrCat(
                "invalid value '", optarg, "' for --io-uring-disable: expected a comma-separated "
                "list of defer-taskrun, single-issuer, coop-taskrun, registered-ring-fd"));
          }
        }
        break;
      case kSendZc:
        // Below a page the pinning and the second completion cost more than
        // the copy they save; 0 turns it off.
        n = ParseNumber(code, optarg, 0, 1ull << 30);
        if (!n.ok()) return n.status();
        if (*n != 0 && *n < 1024) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --send-zc: expected 0 (off) or at least 1024"));
        }
        options.config.send_zc_min_bytes = static_cast<uint32_t>(*n);
        break;
      case kRecvBufferSize:
        n = ParseNumber(code, optarg, 256, 1u << 20);
        if (!n.ok()) return n.status();
        options.config.recv_buffer_size = static_cast<uint32_t>(*n);
        break;
      case kRecvBuffers:
        n = ParseNumber(code, optarg, 1, 32768);
        if (!n.ok()) return n.status();
        options.config.recv_buffer_count = static_cast<uint32_t>(*n);
        break;
      case kRoot:
        if (optarg[0] == '\0') return absl::InvalidArgumentError("--root needs a directory");
        options.root = optarg;
        break;
      case kOpenFileCache:
        n = ParseNumber(code, optarg, 0, 1u << 19);
        if (!n.ok()) return n.status();
        options.config.open_file_cache_entries = static_cast<uint32_t>(*n);
        break;
      case kOpenFileCacheValid: {
        absl::StatusOr<uint32_t> ms = ParseDurationMs(code, optarg);
        if (!ms.ok()) return ms.status();
        options.config.open_file_cache_valid_ms = *ms;
        break;
      }
      case kFileCacheBytes:
        n = ParseNumber(code, optarg, 0, 1ull << 36);
        if (!n.ok()) return n.status();
        options.config.file_cache_bytes = *n;
        break;
      case kFileSplice:
        n = ParseNumber(code, optarg, 0, 1ull << 50);
        if (!n.ok()) return n.status();
        options.config.file_splice_min_bytes = *n;
        break;
      case kFileSplicePipe:
        n = ParseNumber(code, optarg, 4096, 1u << 30);
        if (!n.ok()) return n.status();
        options.config.file_splice_pipe_bytes = static_cast<uint32_t>(*n);
        break;
      case kTakeover:
        options.config.takeover = true;
        if (optarg != nullptr) {
          if (optarg[0] == '\0' || std::string_view(optarg).size() > 107) {
            return absl::InvalidArgumentError(absl::StrCat(
                "invalid value '", optarg, "' for --takeover: expected a control socket "
                "(@name or a path, at most 107 bytes)"));
          }
          options.config.takeover_from = optarg;
        }
        break;
      case kControlSocket: {
        const std::string_view name(optarg);
        if (name.empty() || name == "@" || name.size() > 107) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --control-socket: expected @name, a path "
              "(at most 107 bytes) or none"));
        }
        options.config.accept_takeover = name != "none";
        options.config.control_socket = name == "none" ? "" : std::string(name);
        break;
      }
      case kPidFile:
        if (optarg[0] == '\0') return absl::InvalidArgumentError("--pid-file needs a path");
        options.pid_file = optarg;
        break;
      case kProxyProtocol:
        options.config.proxy_protocol = true;
        break;
      case kAccessLog:
        if (optarg[0] == '\0') return absl::InvalidArgumentError("--access-log needs a path");
        options.config.access_log_path = optarg;
        break;
      case kMetricsPath:
      case kHealthPath: {
        std::string_view path(optarg);
        if (!path.empty() && path.front() != '/') {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid value '", optarg, "' for --", NameOf(code),
              ": expected a path starting with '/', or empty to turn it off"));
        }
        (code == kMetricsPath ? options.config.metrics_path : options.config.health_path) =
            std::string(path);
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat("unknown option '", argv[optind - 1], "'"));
    }
  }
  if (optind < argc) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", argv[optind], "'"));
  }
  if (!workers_set) options.config.workers = options.config.accept_threads;
  const auto& certs = options.config.tls.certificates;
  if (!certs.empty() && certs.back().key_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", certs.back().cert_path, " has no --tls-key"));
  }
  if (options.config.plain_port >= 0 && certs.empty()) {
    return absl::InvalidArgumentError("--plain-port goes with --tls-cert/--tls-key");
  }
  for (const ListenAddress& l : options.config.listen) {
    if (l.tls && certs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen=", l.address, ",tls goes with --tls-cert/--tls-key"));
    }
  }
  return options;
}

}  // namespace uring_http::serving
