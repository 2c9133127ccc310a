// hold_client: opens N concurrent keep-alive connections to an HTTP server,
// sends one GET on each, checks every answer, and holds them open until told
// to let go. It measures how many connections a server can hold and what
// each one costs (perf/connections/run reads the server's memory meanwhile).
//
// One process can hold at most RLIMIT_NOFILE sockets (20,000 here), and one
// source address reaches one destination from at most the ephemeral port
// range (~28,000 ports), so the work is spread over --procs forked processes
// and --sources source addresses 127.0.0.2, 127.0.0.3, ... (bound with
// IP_BIND_ADDRESS_NO_PORT, so that the port is picked at connect() time per
// destination). Each process is a plain non-blocking epoll loop: it keeps at
// most --max-pending connects in flight, sends the request as soon as a
// connect completes and parses the answer (status line, headers,
// Content-Length body).
//
// --websocket PATH: each connection is a WebSocket (RFC 6455) instead. It
// sends an opening handshake (a random 16-byte Sec-WebSocket-Key, version
// 13), checks the 101 (Upgrade, Connection, and Sec-WebSocket-Accept =
// base64(SHA-1(key + GUID)), OpenSSL's), then, unless --ws-message 0, one
// masked text frame of --ws-message bytes (16) whose echo must come back
// unchanged (the server's /test/ws echoes), and holds the socket idle. A
// held WebSocket answers the server's pings with pongs; a close frame or an
// EOF from the server counts as lost while held.
//
//   hold_client --port 9000 --connections 100000 --procs 8 --sources 8 --hold forever
//   hold_client --port 9000 --connections 100000 --procs 8 --sources 8 --websocket /test/ws
//
// Output, one line each (the parent sums its children):
//   hold_client: connected C of N; answered: 200 A, 503 R, other O; connect errors E, ...
//                (--websocket: "answered: 101 A, ..." and "; websocket: bad handshake H,
//                echoes checked K, bad echo B")
//   hold_client: holding A connections            (then waits: --hold)
//   hold_client: released; L closed by the server while held (--websocket: "; P pings answered")
// Exit status 0 if every connection was answered 200 (101 and its echo with
// --websocket; with --allow-refused also refused 503, nothing else) and none
// was lost while held.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/evp.h>
#include <openssl/sha.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 9000;
  long connections = 1000;
  int procs = 1;
  int sources = 1;       // 127.0.0.<first_source> ... <first_source + sources - 1>
  int first_source = 2;  // 0 sources: no bind, the kernel's choice
  int max_pending = 512;  // connects in flight per process
  std::string path = "/test/fast";
  double timeout_s = 300;  // for every connection to be answered
  double hold_s = 0;       // < 0: until SIGTERM/SIGINT
  bool allow_refused = false;
  bool rst_on_release = false;
  std::string websocket;       // non-empty: WebSocket handshakes on this path
  size_t ws_message_bytes = 16;  // the echoed text frame; 0: none
};

// What one process reports to the parent (plain struct over a pipe).
struct Counts {
  int64_t connections = 0;     // assigned to the process
  int64_t connected = 0;       // connect() completed
  int64_t answered = 0;        // 200 (--websocket: 101, accept checked, echo back)
  int64_t refused = 0;         // 503
  int64_t other_status = 0;
  int64_t connect_errors = 0;
  int64_t closed_early = 0;    // EOF or reset before a whole answer
  int64_t malformed = 0;
  int64_t timed_out = 0;
  int64_t lost_while_held = 0;  // closed by the server while we held it
  int64_t bad_handshake = 0;    // --websocket: a 101 whose fields are wrong
  int64_t echoed = 0;           // --websocket: echoes that came back unchanged
  int64_t bad_echo = 0;         // --websocket: an answer other than the echo
  int64_t pings_answered = 0;   // --websocket: pongs sent while held
  int64_t first_errno = 0;      // of the first connect error, for the message
  double seconds = 0;
  void Add(const Counts& o) {
    connections += o.connections;
    connected += o.connected;
    answered += o.answered;
    refused += o.refused;
    other_status += o.other_status;
    connect_errors += o.connect_errors;
    closed_early += o.closed_early;
    malformed += o.malformed;
    timed_out += o.timed_out;
    lost_while_held += o.lost_while_held;
    bad_handshake += o.bad_handshake;
    echoed += o.echoed;
    bad_echo += o.bad_echo;
    pings_answered += o.pings_answered;
    if (first_errno == 0) first_errno = o.first_errno;
    if (o.seconds > seconds) seconds = o.seconds;
  }
};

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

[[noreturn]] void Usage(const char* argv0, const char* error) {
  if (error != nullptr) std::fprintf(stderr, "hold_client: %s\n", error);
  std::fprintf(stderr,
               "usage: %s --port P [--host 127.0.0.1] [--connections N] [--procs P]\n"
               "          [--sources K] [--first-source 2] [--max-pending 512] [--path /test/fast]\n"
               "          [--timeout SECONDS] [--hold SECONDS|forever] [--allow-refused]\n"
               "          [--rst-on-release] [--websocket PATH [--ws-message BYTES]]\n",
               argv0);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage(argv[0], "missing value");
      return argv[++i];
    };
    if (a == "--host") {
      o.host = value();
    } else if (a == "--port") {
      o.port = std::atoi(value());
    } else if (a == "--connections") {
      o.connections = std::atol(value());
    } else if (a == "--procs") {
      o.procs = std::atoi(value());
    } else if (a == "--sources") {
      o.sources = std::atoi(value());
    } else if (a == "--first-source") {
      o.first_source = std::atoi(value());
    } else if (a == "--max-pending") {
      o.max_pending = std::atoi(value());
    } else if (a == "--path") {
      o.path = value();
    } else if (a == "--timeout") {
      o.timeout_s = std::atof(value());
    } else if (a == "--hold") {
      std::string_view v = value();
      o.hold_s = v == "forever" ? -1 : std::atof(std::string(v).c_str());
    } else if (a == "--allow-refused") {
      o.allow_refused = true;
    } else if (a == "--rst-on-release") {
      o.rst_on_release = true;
    } else if (a == "--websocket") {
      o.websocket = value();
    } else if (a == "--ws-message") {
      o.ws_message_bytes = std::strtoul(value(), nullptr, 10);
    } else if (a == "-h" || a == "--help") {
      Usage(argv[0], nullptr);
    } else {
      Usage(argv[0], ("unknown argument " + std::string(a)).c_str());
    }
  }
  if (o.port <= 0 || o.port > 65535) Usage(argv[0], "--port out of range");
  if (o.connections < 1 || o.procs < 1 || o.sources < 0 || o.max_pending < 1) {
    Usage(argv[0], "--connections, --procs and --max-pending must be positive");
  }
  if (!o.websocket.empty() && o.websocket[0] != '/') Usage(argv[0], "--websocket takes a path");
  // One frame with a 7-bit length: the echo arrives as one small frame too.
  if (o.ws_message_bytes > 125) Usage(argv[0], "--ws-message is at most 125 bytes");
  if (o.sources > 0 && o.first_source + o.sources - 1 > 254) Usage(argv[0], "too many sources");
  return o;
}

bool WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// ------------------------------------------------------------ one process

// kSent: the request (or handshake) is out, its answer awaited; kEcho: the
// WebSocket's text frame is out, its echo awaited.
enum class State : uint8_t { kIdle, kConnecting, kSent, kEcho, kHeld, kDone };

struct Conn {
  int fd = -1;
  State state = State::kIdle;
  uint8_t key[16] = {};  // --websocket: the Sec-WebSocket-Key's 16 bytes
  std::string partial;   // an answer (or frame) split over reads (rare)
};

// Parses one HTTP/1.x response at the start of `data`. Returns the status
// (>0) once the whole response (head + Content-Length body) is there, 0 if
// more bytes are needed, -1 if it is malformed. *consumed: the response's
// length, where what follows it (a WebSocket's frames) begins.
int ParseResponse(std::string_view data, size_t* consumed) {
  const size_t head_end = data.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return data.size() > 16384 ? -1 : 0;
  if (data.size() < 12 || data.substr(0, 7) != "HTTP/1." || data[8] != ' ') return -1;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (data[i] < '0' || data[i] > '9') return -1;
    status = status * 10 + (data[i] - '0');
  }
  size_t length = 0;
  const std::string_view head = data.substr(0, head_end + 2);
  for (size_t pos = head.find("\r\n"); pos != std::string_view::npos;) {
    pos += 2;
    const size_t eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) break;
    const std::string_view line = head.substr(pos, eol - pos);
    if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0) {
      length = std::strtoul(std::string(line.substr(15)).c_str(), nullptr, 10);
    }
    pos = eol;
  }
  if (data.size() < head_end + 4 + length) return 0;
  *consumed = head_end + 4 + length;
  return status;
}

// The value of the response head's first `name` field (any case), trimmed;
// empty if there is none.
std::string_view Field(std::string_view head, std::string_view name) {
  for (size_t pos = head.find("\r\n"); pos != std::string_view::npos;) {
    pos += 2;
    const size_t eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) break;
    std::string_view line = head.substr(pos, eol - pos);
    pos = eol;
    if (line.size() <= name.size() || line[name.size()] != ':' ||
        strncasecmp(line.data(), name.data(), name.size()) != 0) {
      continue;
    }
    line.remove_prefix(name.size() + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    return line;
  }
  return {};
}

// Whether the comma-separated `list` holds `token` (any case).
bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.size() == token.size() && strncasecmp(item.data(), token.data(), token.size()) == 0) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string Base64(const uint8_t* data, size_t len) {
  std::string out(4 * ((len + 2) / 3) + 1, '\0');  // EVP_EncodeBlock ends it with a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                                static_cast<int>(len));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 4.2.2):
// base64(SHA-1(key + GUID)), computed here rather than with the server's
// code, so that the client checks it.
std::string AcceptFor(const std::string& key) {
  const std::string text = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  uint8_t digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return Base64(digest, sizeof(digest));
}

void Random(void* data, size_t len) {
  auto* p = static_cast<uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = getrandom(p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror("hold_client: getrandom");
      std::exit(1);
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// A client frame (RFC 6455 5.2): FIN, `opcode`, masked with a random key.
// Only payloads up to 125 bytes (a 7-bit length): a text message of
// --ws-message bytes, a pong.
std::string ClientFrame(uint8_t opcode, std::string_view payload) {
  uint8_t mask[4];
  Random(mask, sizeof(mask));
  std::string frame;
  frame.push_back(static_cast<char>(0x80 | opcode));
  frame.push_back(static_cast<char>(0x80 | payload.size()));
  frame.append(reinterpret_cast<const char*>(mask), sizeof(mask));
  for (size_t i = 0; i < payload.size(); ++i) {
    frame.push_back(static_cast<char>(payload[i] ^ static_cast<char>(mask[i % 4])));
  }
  return frame;
}

// The text each connection sends (and must get back): its number, then
// letters up to `bytes`.
std::string Message(long global, size_t bytes) {
  std::string m = std::to_string(global) + ":";
  for (size_t i = m.size(); i < bytes; ++i) m.push_back(static_cast<char>('a' + i % 26));
  m.resize(bytes);
  return m;
}

// One server frame (never masked, 5.1) at the start of `data`.
struct ServerFrame {
  uint8_t opcode = 0;
  bool fin = false;
  std::string_view payload;
};
// Returns the frame's length once it is all there, 0 if more bytes are
// needed, -1 if it is malformed (masked, or over 64 KiB: nothing we sent
// asks for more).
long ParseServerFrame(std::string_view data, ServerFrame* f) {
  if (data.size() < 2) return 0;
  const auto b0 = static_cast<uint8_t>(data[0]);
  const auto b1 = static_cast<uint8_t>(data[1]);
  if ((b1 & 0x80) != 0 || (b0 & 0x70) != 0) return -1;  // masked, or RSV bits
  size_t header = 2;
  uint64_t len = b1 & 0x7f;
  if (len == 126 || len == 127) {
    const size_t bytes = len == 126 ? 2 : 8;
    if (data.size() < 2 + bytes) return 0;
    len = 0;
    for (size_t i = 0; i < bytes; ++i) len = (len << 8) | static_cast<uint8_t>(data[2 + i]);
    header += bytes;
  }
  if (len > 65536) return -1;
  if (data.size() < header + len) return 0;
  f->opcode = b0 & 0x0f;
  f->fin = (b0 & 0x80) != 0;
  f->payload = data.substr(header, len);
  return static_cast<long>(header + len);
}

// One process's share of the connections: [begin, end) of the global
// numbering (which picks the source address).
class Worker {
 public:
  Worker(const Options& o, long begin, long end, int release_fd)
      : o_(o), begin_(begin), conns_(static_cast<size_t>(end - begin)), release_fd_(release_fd) {
    counts_.connections = end - begin;
  }

  // Opens every connection, sends the request, reads the answer. Returns
  // when each is answered or failed, at --timeout, or when released early.
  const Counts& Connect() {
    const double start = Now();
    rlimit nofile{};
    getrlimit(RLIMIT_NOFILE, &nofile);
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);

    dst_.sin_family = AF_INET;
    dst_.sin_port = htons(static_cast<uint16_t>(o_.port));
    if (inet_pton(AF_INET, o_.host.c_str(), &dst_.sin_addr) != 1) {
      std::fprintf(stderr, "hold_client: bad --host %s\n", o_.host.c_str());
      std::exit(2);
    }
    request_ = "GET " + o_.path + " HTTP/1.1\r\nHost: " + o_.host + "\r\n\r\n";
    if (websocket()) {
      request_ = "GET " + o_.websocket + " HTTP/1.1\r\nHost: " + o_.host + ":" +
                 std::to_string(o_.port) +
                 "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ";
      // The key's 24 characters go here, each connection's own.
      key_at_ = request_.size();
      request_ += std::string(24, 'A') + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
    }
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event rev{};
    rev.events = EPOLLIN;
    rev.data.u64 = kReleaseTag;
    epoll_ctl(ep_, EPOLL_CTL_ADD, release_fd_, &rev);

    unresolved_ = static_cast<long>(conns_.size());
    OpenMore();
    const double deadline = start + o_.timeout_s;
    while (unresolved_ > 0 && !released_) {
      const double left = deadline - Now();
      if (left <= 0) break;
      Poll(static_cast<int>(std::min(left, 1.0) * 1000) + 1);
      OpenMore();
    }
    for (Conn& c : conns_) {
      if (c.state == State::kIdle || c.state == State::kConnecting || c.state == State::kSent ||
          c.state == State::kEcho) {
        Finish(c, &Counts::timed_out);
      }
    }
    counts_.seconds = Now() - start;
    return counts_;
  }

  // Holds the answered connections until the parent closes the release
  // pipe (or dies), counting those the server closes meanwhile.
  const Counts& Hold() {
    while (!released_) Poll(-1);
    for (Conn& c : conns_) {
      if (c.fd < 0) continue;
      if (o_.rst_on_release) {
        const linger l{1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      }
      close(c.fd);
      c.fd = -1;
    }
    return counts_;
  }

 private:
  static constexpr uint64_t kReleaseTag = ~uint64_t{0};

  bool websocket() const { return !o_.websocket.empty(); }

  void Finish(Conn& c, int64_t Counts::*counter) {
    ++(counts_.*counter);
    if (c.fd >= 0) {
      epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
      close(c.fd);
    }
    c.fd = -1;
    c.state = State::kDone;
    std::string().swap(c.partial);
    --unresolved_;
  }

  void Fail(Conn& c, int err) {
    if (counts_.first_errno == 0) counts_.first_errno = err;
    Finish(c, &Counts::connect_errors);
  }

  void OpenMore() {
    while (pending_ < o_.max_pending && next_ < conns_.size() && !released_) {
      const size_t i = next_++;
      Conn& c = conns_[i];
      const long global = begin_ + static_cast<long>(i);
      c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (c.fd < 0) {
        Fail(c, errno);
        continue;
      }
      if (o_.sources > 0) {
        // The port is chosen at connect() time, per destination: each source
        // address has the whole ephemeral range towards the server.
        const int one = 1;
        setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        sockaddr_in src{};
        src.sin_family = AF_INET;
        src.sin_addr.s_addr =
            htonl((127u << 24) | static_cast<uint32_t>(o_.first_source + global % o_.sources));
        if (bind(c.fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) {
          Fail(c, errno);
          continue;
        }
      }
      if (connect(c.fd, reinterpret_cast<sockaddr*>(&dst_), sizeof(dst_)) != 0 &&
          errno != EINPROGRESS) {
        Fail(c, errno);
        continue;
      }
      c.state = State::kConnecting;
      ++pending_;
      Watch(c, i, EPOLLOUT, EPOLL_CTL_ADD);
    }
  }

  void Watch(Conn& c, size_t i, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = i;
    epoll_ctl(ep_, op, c.fd, &ev);
  }

  void Poll(int timeout_ms) {
    epoll_event events[1024];
    const int n = epoll_wait(ep_, events, 1024, timeout_ms);
    for (int k = 0; k < n; ++k) {
      if (events[k].data.u64 == kReleaseTag) {
        released_ = true;
        continue;
      }
      const size_t i = events[k].data.u64;
      Conn& c = conns_[i];
      switch (c.state) {
        case State::kConnecting:
          OnConnected(c, i);
          break;
        case State::kSent:
        case State::kEcho:
          OnReadable(c, i);
          break;
        case State::kHeld:
          OnHeldEvent(c);
          break;
        default:
          break;
      }
    }
  }

  void OnConnected(Conn& c, size_t i) {
    --pending_;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Fail(c, err);
      return;
    }
    ++counts_.connected;
    if (websocket()) {
      Random(c.key, sizeof(c.key));
      request_.replace(key_at_, 24, Base64(c.key, sizeof(c.key)));
    }
    if (send(c.fd, request_.data(), request_.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request_.size())) {
      Finish(c, &Counts::closed_early);
      return;
    }
    c.state = State::kSent;
    Watch(c, i, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
  }

  void OnReadable(Conn& c, size_t i) {
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        Finish(c, &Counts::closed_early);  // EOF or reset before a whole answer
        return;
      }
      c.partial.append(buf, static_cast<size_t>(n));
      if (c.state == State::kEcho) {
        if (!ReadEcho(c, i)) continue;
        return;
      }
      size_t consumed = 0;
      const int status = ParseResponse(c.partial, &consumed);
      if (status == 0) continue;
      if (status < 0) {
        Finish(c, &Counts::malformed);
      } else if (status == (websocket() ? 101 : 200)) {
        if (websocket()) {
          OnSwitched(c, i, consumed);
          return;
        }
        Answered(c);
      } else if (status == 503) {
        Finish(c, &Counts::refused);  // the server closes it anyway
      } else {
        Finish(c, &Counts::other_status);
      }
      return;
    }
  }

  void Answered(Conn& c) {
    ++counts_.answered;
    --unresolved_;
    c.state = State::kHeld;
    std::string().swap(c.partial);
  }

  // The 101 (`consumed` bytes of c.partial) came: its fields are checked,
  // then the text frame goes out (or the socket is held at once).
  void OnSwitched(Conn& c, size_t i, size_t consumed) {
    const std::string_view head(c.partial.data(), consumed);
    if (!HasToken(Field(head, "Upgrade"), "websocket") ||
        !HasToken(Field(head, "Connection"), "Upgrade") ||
        Field(head, "Sec-WebSocket-Accept") != AcceptFor(Base64(c.key, sizeof(c.key)))) {
      Finish(c, &Counts::bad_handshake);
      return;
    }
    c.partial.erase(0, consumed);
    if (o_.ws_message_bytes == 0) {
      if (!c.partial.empty()) {
        Finish(c, &Counts::bad_echo);  // a frame nobody asked for
        return;
      }
      Answered(c);
      return;
    }
    const std::string frame =
        ClientFrame(0x1, Message(begin_ + static_cast<long>(i), o_.ws_message_bytes));
    if (send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size())) {
      Finish(c, &Counts::closed_early);
      return;
    }
    c.state = State::kEcho;
    if (!c.partial.empty()) ReadEcho(c, i);
  }

  // Frames awaiting the echo: a ping is answered, the echo ends the wait.
  // Returns false if more bytes are needed.
  bool ReadEcho(Conn& c, size_t i) {
    for (;;) {
      ServerFrame f;
      const long n = ParseServerFrame(c.partial, &f);
      if (n == 0) return false;
      if (n < 0) {
        Finish(c, &Counts::malformed);
        return true;
      }
      if (f.opcode == 0x9) {
        if (!SendPong(c, f.payload)) {
          Finish(c, &Counts::closed_early);
          return true;
        }
        c.partial.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (f.opcode == 0x8) {
        Finish(c, &Counts::closed_early);
        return true;
      }
      const bool same = f.opcode == 0x1 && f.fin && static_cast<size_t>(n) == c.partial.size() &&
                        f.payload == Message(begin_ + static_cast<long>(i), o_.ws_message_bytes);
      if (!same) {
        Finish(c, &Counts::bad_echo);
        return true;
      }
      ++counts_.echoed;
      Answered(c);
      return true;
    }
  }

  // A ping's answer (RFC 6455 5.5.3: its payload, masked).
  bool SendPong(Conn& c, std::string_view payload) {
    const std::string pong = ClientFrame(0xA, payload);
    if (send(c.fd, pong.data(), pong.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(pong.size())) {
      return false;
    }
    ++counts_.pings_answered;
    return true;
  }

  // An answered connection became readable: the server closed it (or sent
  // something nobody asked for). A held WebSocket's pings are answered.
  void OnHeldEvent(Conn& c) {
    char buf[512];
    const ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (websocket() && n > 0) {
      c.partial.append(buf, static_cast<size_t>(n));
      for (;;) {
        ServerFrame f;
        const long len = ParseServerFrame(c.partial, &f);
        if (len == 0) return;  // the rest of a frame is to come
        if (len > 0 && f.opcode == 0x9 && SendPong(c, f.payload)) {
          c.partial.erase(0, static_cast<size_t>(len));
          if (c.partial.empty()) std::string().swap(c.partial);
          continue;
        }
        // A close frame (the idle timeout, the drain) ends it as an EOF
        // does; anything else, or a pong that could not be sent, is
        // unexpected.
        LoseHeld(c, len > 0 && f.opcode == 0x8 ? &Counts::lost_while_held : &Counts::malformed);
        return;
      }
    }
    LoseHeld(c, n > 0 ? &Counts::malformed : &Counts::lost_while_held);
  }

  void LoseHeld(Conn& c, int64_t Counts::*counter) {
    --counts_.answered;
    if (websocket() && o_.ws_message_bytes > 0) --counts_.echoed;
    ++unresolved_;  // Finish() takes it back
    Finish(c, counter);
  }

  const Options& o_;
  const long begin_;
  std::vector<Conn> conns_;
  const int release_fd_;
  sockaddr_in dst_{};
  std::string request_;
  size_t key_at_ = 0;  // --websocket: where request_'s Sec-WebSocket-Key goes
  int ep_ = -1;
  size_t next_ = 0;
  long pending_ = 0;
  long unresolved_ = 0;
  bool released_ = false;
  Counts counts_;
};

std::string Describe(const Options& o, const Counts& c) {
  char buf[768];
  int n = std::snprintf(
      buf, sizeof(buf),
      "connected %ld of %ld; answered: %d %ld, 503 %ld, other %ld; connect errors %ld%s%s%s, "
      "closed before an answer %ld, malformed %ld, timed out %ld (%.1f s)",
      static_cast<long>(c.connected), static_cast<long>(c.connections),
      o.websocket.empty() ? 200 : 101, static_cast<long>(c.answered),
      static_cast<long>(c.refused), static_cast<long>(c.other_status),
      static_cast<long>(c.connect_errors), c.first_errno ? " (first: " : "",
      c.first_errno ? std::strerror(static_cast<int>(c.first_errno)) : "",
      c.first_errno ? ")" : "", static_cast<long>(c.closed_early), static_cast<long>(c.malformed),
      static_cast<long>(c.timed_out), c.seconds);
  if (!o.websocket.empty() && n > 0 && static_cast<size_t>(n) < sizeof(buf)) {
    std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n),
                  "; websocket: bad handshake %ld, echoes checked %ld, bad echo %ld",
                  static_cast<long>(c.bad_handshake), static_cast<long>(c.echoed),
                  static_cast<long>(c.bad_echo));
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  std::printf("hold_client: opening %ld connections to %s:%d from ", o.connections,
              o.host.c_str(), o.port);
  if (o.sources > 0) {
    std::printf("127.0.0.%d-127.0.0.%d", o.first_source, o.first_source + o.sources - 1);
  } else {
    std::printf("the default source address");
  }
  if (o.websocket.empty()) {
    std::printf(" in %d process(es), GET %s\n", o.procs, o.path.c_str());
  } else {
    std::printf(" in %d process(es), WebSocket %s", o.procs, o.websocket.c_str());
    if (o.ws_message_bytes > 0) std::printf(" (one %zu-byte echo each)", o.ws_message_bytes);
    std::printf("\n");
  }
  std::fflush(stdout);

  // The parent takes SIGTERM/SIGINT synchronously (sigtimedwait); children
  // inherit the blocked mask and listen only to the release pipe.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);

  int release[2];
  if (pipe2(release, O_CLOEXEC) != 0) {
    std::perror("hold_client: pipe");
    return 1;
  }
  std::vector<pid_t> pids;
  std::vector<int> result_fds;
  for (int p = 0; p < o.procs; ++p) {
    int result[2];
    if (pipe2(result, O_CLOEXEC) != 0) {
      std::perror("hold_client: pipe");
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("hold_client: fork");
      return 1;
    }
    if (pid == 0) {
      close(release[1]);
      close(result[0]);
      for (int fd : result_fds) close(fd);
      Worker worker(o, o.connections * p / o.procs, o.connections * (p + 1) / o.procs,
                    release[0]);
      Counts first = worker.Connect();
      WriteAll(result[1], &first, sizeof(first));
      Counts last = worker.Hold();
      WriteAll(result[1], &last, sizeof(last));
      std::_Exit(0);
    }
    close(result[1]);
    pids.push_back(pid);
    result_fds.push_back(result[0]);
  }
  close(release[0]);

  Counts total;
  for (int fd : result_fds) {
    Counts c;
    if (!ReadAll(fd, &c, sizeof(c))) {
      std::fprintf(stderr, "hold_client: a child process died\n");
      return 1;
    }
    total.Add(c);
  }
  std::printf("hold_client: %s\n", Describe(o, total).c_str());
  std::printf("hold_client: holding %ld connections\n", static_cast<long>(total.answered));
  std::fflush(stdout);

  if (o.hold_s != 0) {
    timespec ts{};
    timespec* timeout = nullptr;
    if (o.hold_s > 0) {
      ts.tv_sec = static_cast<time_t>(o.hold_s);
      ts.tv_nsec = static_cast<long>((o.hold_s - static_cast<double>(ts.tv_sec)) * 1e9);
      timeout = &ts;
    }
    while (sigtimedwait(&set, nullptr, timeout) < 0 && errno == EINTR) {
    }
  }
  close(release[1]);  // every child lets go now

  Counts after;
  for (int fd : result_fds) {
    Counts c;
    if (ReadAll(fd, &c, sizeof(c))) after.Add(c);
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  std::printf("hold_client: released; %ld closed by the server while held",
              static_cast<long>(after.lost_while_held));
  if (!o.websocket.empty()) {
    std::printf("; %ld pings answered", static_cast<long>(after.pings_answered));
  }
  std::printf("\n");

  const long ok = static_cast<long>(after.answered) +
                  (o.allow_refused ? static_cast<long>(after.refused) : 0);
  const bool pass = ok == o.connections && after.lost_while_held == 0;
  if (!pass) {
    std::printf("hold_client: FAILED: %ld of %ld connections were not %s\n",
                o.connections - ok, o.connections,
                o.allow_refused ? (o.websocket.empty() ? "answered 200 or refused 503"
                                                       : "switched (101, echo) or refused 503")
                                : (o.websocket.empty() ? "answered 200" : "switched (101, echo)"));
  }
  return pass ? 0 : 1;
}
