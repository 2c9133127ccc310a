"""Fault injection against the real server binary.

  * peers that reset in the middle of a large response, half-close after a
    request, or vanish while their SLOW request runs: the slots come back
    (connections_active returns to the scraper alone) and service goes on;
  * peers that close right after a "Connection: close" answer, each followed
    by a new connection: every new one is answered;
  * a peer that pipelines without ever reading: the server stops reading it
    (bounded memory, checked on its VmRSS) and closes it after --send-timeout;
  * slowloris: 50 connections dribbling header bytes get 408 after
    --header-timeout while a normal client is answered at once;
  * more connections than slots (-A 1 -C 50): the surplus gets 503 + close,
    is counted, and service recovers;
  * descriptor exhaustion (RLIMIT_NOFILE 200): the capacity is clamped to the
    fixed-file table, a burst beyond it is refused or waits (ENFILE back-off,
    logged once), and service recovers;
  * none of it kills the process: it exits 0 on SIGTERM every time.

Bounds are generous (a noisy 2-core machine, sanitizer builds).

Usage: faults_test.py PATH_TO_SERVER
"""
import os
import re
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 15.0  # seconds any single expectation may take before it fails


def now():
    return time.monotonic()


def req(path, close=False):
    return b"GET %s HTTP/1.1\r\nHost: t\r\n%s\r\n" % (
        path.encode(), b"Connection: close\r\n" if close else b"")


def rst_close(sock):
    """Close with SO_LINGER 0: the kernel sends a RST, not a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def tcp_state(sock):
    # struct tcp_info starts with the u8 tcpi_state (1: ESTABLISHED).
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


TCP_ESTABLISHED = 1


class Responses:
    """Parses pipelined HTTP/1.1 responses (Content-Length bodies)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def next(self):
        """(status, headers, body), or None if the stream ended cleanly."""
        while b"\r\n\r\n" not in self.buf:
            if not self.fill():
                assert not self.buf, "truncated response head %r" % self.buf[:200]
                return None
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3}) ", lines[0] + b" ")
        assert m, "malformed status line %r" % lines[0]
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode()
        n = int(headers.get("content-length", "0"))
        while len(rest) < n:
            assert self.fill(), "truncated body"
            rest = self.buf.partition(b"\r\n\r\n")[2]
        self.buf = rest[n:]
        return int(m.group(1)), headers, rest[:n]

    def expect_end(self):
        while self.fill():
            pass
        assert not self.buf, "unexpected bytes %r" % self.buf[:200]


class Server:
    def __init__(self, binary, args, nofile=None):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        preexec = None
        if nofile is not None:
            def preexec():
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        with open(binary, "rb") as f:
            image = f.read()
        self.sanitized = b"__asan_init" in image or b"__tsan_init" in image
        self.proc = subprocess.Popen([binary, "-p", "0"] + args, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, preexec_fn=preexec)
        self.ready = self.proc.stdout.readline()
        m = re.search(r"listening on \S+:(\d+)", self.ready)
        assert m, "no ready line: %r, stderr: %s" % (self.ready, self.stderr_text())
        self.port = int(m.group(1))
        self.pid = self.proc.pid

    def stderr_text(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()

    def connect(self, rcvbuf=None, timeout=TIMEOUT):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(timeout)
        s.connect(("127.0.0.1", self.port))
        return s

    def get(self, path):
        """One request on its own connection: (status, body). Keep-alive, and
        we close first: a "Connection: close" exchange that the client closes
        at once is what close_churn() tests, the helpers stay out of it."""
        with self.connect() as s:
            s.sendall(req(path))
            r = Responses(s)
            resp = r.next()
            assert resp is not None, "%s: connection closed without an answer" % path
            return resp[0], resp[2]

    def metrics(self):
        """The unlabelled samples of /metrics; retried while the pool is full."""
        deadline = now() + TIMEOUT
        while True:
            status, body = self.get("/metrics")
            if status == 200:
                break
            assert status == 503 and now() < deadline, "/metrics answered %d" % status
            time.sleep(0.05)
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.split()
                out[name] = float(value)
        return out

    def wait_idle(self, what):
        """Polls until the scraping connection is the only one left."""
        deadline = now() + TIMEOUT
        while True:
            m = self.metrics()
            if m["uring_http_connections_active"] == 1:
                return m
            assert now() < deadline, "%s: connections_active stays at %d (1 is the scraper)" % (
                what, m["uring_http_connections_active"])
            time.sleep(0.05)

    def assert_serves(self, what):
        assert self.get("/test/fast")[0] == 200, "%s: /test/fast failed afterwards" % what
        assert self.get("/test/slow")[0] == 200, "%s: /test/slow failed afterwards" % what

    def rss_kb(self, field="VmRSS"):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError("no %s" % field)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the server did not exit within 30 s of SIGTERM")
        assert rc == 0, "the server exited with %d (a signal is negative), stderr:\n%s" % (
            rc, self.stderr_text())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


FAILURES = []


def check(cond, msg):
    """A failure that does not stop the other scenarios; reported at the end."""
    if not cond:
        FAILURES.append(msg)
        log("FAILED: " + msg)


def log(msg):
    print("faults_test: " + msg, flush=True)


# ------------------------------------------------------------- server A

def resets_half_closes_vanishes(srv):
    # 1. Resets in the middle of a large response. /metrics is ~10 KB, so 200
    # pipelined scrapes are ~2 MB of output against a 4 KB receive window.
    big = req("/metrics") * 200
    s = srv.connect(rcvbuf=4096)
    s.sendall(big)
    got = 0
    while got < 64 * 1024:
        got += len(s.recv(65536))
    rst_close(s)  # after reading part of it
    s = srv.connect(rcvbuf=4096)
    s.sendall(big)
    time.sleep(0.3)
    rst_close(s)  # without reading anything
    s = srv.connect(rcvbuf=4096)
    s.sendall(req("/test/fast") * 5000)  # ~0.5 MB of small responses
    s.recv(1000)
    rst_close(s)
    # Reset while the request is still being parsed, and while a SLOW one
    # waits behind a FAST one.
    s = srv.connect()
    s.sendall(b"GET /test/fast HTTP/1.1\r\nHo")
    rst_close(s)
    s = srv.connect()
    s.sendall(req("/test/fast") + req("/test/slow") + req("/test/fast"))
    rst_close(s)
    log("resets: survived")

    # 2. Half-close after sending: the answers, then EOF.
    for batch in (["/test/fast"], ["/test/slow"], ["/test/fast", "/test/slow", "/test/fast"]):
        s = srv.connect()
        s.sendall(b"".join(req(p) for p in batch))
        s.shutdown(socket.SHUT_WR)
        r = Responses(s)
        for p in batch:
            resp = r.next()
            assert resp is not None, "half-close %s: no answer to %s" % (batch, p)
            assert resp[0] == 200, "half-close %s: %s answered %d" % (batch, p, resp[0])
        r.expect_end()
        s.close()
    log("half-close: every request answered, then EOF")

    # 3. Vanish while the SLOW request runs: a plain close and a reset.
    for i in range(8):
        s = srv.connect()
        s.sendall(req("/test/slow"))
        time.sleep(0.01)
        if i % 2:
            rst_close(s)
        else:
            s.close()
    m = srv.wait_idle("resets, half-closes, vanished peers")
    deadline = now() + TIMEOUT
    while m["uring_http_slow_tasks_completed_total"] < m["uring_http_slow_tasks_dispatched_total"]:
        assert now() < deadline, "SLOW tasks of vanished peers never completed"
        time.sleep(0.05)
        m = srv.metrics()
    srv.assert_serves("after resets")
    log("vanished during SLOW: slots back (%d tasks completed), still serving"
        % m["uring_http_slow_tasks_completed_total"])


def close_churn(srv):
    """Clients that send "Connection: close", read the answer and close at
    once, as HTTP libraries do, one after another (each new connection tends
    to get the fixed-file entry the previous one had): every one must be
    answered, none closed unanswered. Two spinning processes keep the CPUs
    busy meanwhile, as on a loaded machine, so that work the kernel runs
    asynchronously for the server (io-wq) is late."""
    counts = {"opened": 0, "unanswered": 0}
    lock = threading.Lock()
    deadline = now() + 3.0

    def client():
        while now() < deadline:
            with srv.connect() as s:
                s.sendall(req("/test/fast", close=True))
                try:
                    resp = Responses(s).next()
                except ConnectionResetError:
                    resp = None
            with lock:
                counts["opened"] += 1
                if resp is None:
                    counts["unanswered"] += 1
                elif resp[0] != 200:
                    counts.setdefault("other", []).append(resp[0])

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(2)]
    try:
        threads = [threading.Thread(target=client) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert "other" not in counts, counts
    check(counts["unanswered"] == 0,
          "close-churn: %d of %d connections, each opened right after another closed its "
          "Connection: close exchange, were closed (EOF) before any answer"
          % (counts["unanswered"], counts["opened"]))
    srv.wait_idle("close churn")
    log("close-churn: %d connections, %d closed unanswered"
        % (counts["opened"], counts["unanswered"]))


def never_reads(srv):
    """Pipelines as fast as the server takes it and never reads: the server
    must stop reading (bounded memory) and close after --send-timeout=1s."""
    rss_before = srv.rss_kb()
    timeouts_before = srv.metrics()["uring_http_timeouts_total"]
    socks = [srv.connect(rcvbuf=4096) for _ in range(4)]
    payload = req("/test/fast") * 2000  # 2000 requests a write
    sent = [0] * len(socks)
    for s in socks:
        s.setblocking(False)
    deadline = now() + 3.0
    stalled = [None] * len(socks)
    while now() < deadline and None in stalled:
        _, writable, _ = select.select([], [s for s, st in zip(socks, stalled) if st is None],
                                       [], 0.5)
        if not writable:
            break  # nobody can write for 0.5 s: every one is stalled
        for i, s in enumerate(socks):
            if s in writable:
                try:
                    sent[i] += s.send(payload)
                except BlockingIOError:
                    pass
                except OSError:
                    stalled[i] = "closed"
    t_stalled = now()
    requests = sum(sent) // len(req("/test/fast"))
    rss_peak = srv.rss_kb()
    log("never-reads: %d requests pipelined into 4 connections (%.1f MB), then the server "
        "stopped reading; VmRSS %d -> %d kB" % (requests, sum(sent) / 1e6, rss_before, rss_peak))
    assert requests >= 4000, "could not even pipeline a few thousand requests"
    # The kernel buffers (a few MB) take the rest; if the server kept
    # reading, all 3 s of sending would have gone through.
    assert sum(sent) < 64 * 1024 * 1024, "the server kept reading a peer that never reads"
    # Sanitizer builds keep freed memory in quarantine and add shadow memory.
    bound_kb = (256 if srv.sanitized else 64) * 1024
    assert rss_peak - rss_before < bound_kb, "VmRSS grew by %d kB" % (rss_peak - rss_before)
    # Closed by the send timeout (1 s), not by anything we do.
    deadline = now() + TIMEOUT
    while any(tcp_state(s) == TCP_ESTABLISHED for s in socks):
        assert now() < deadline, "a non-reading peer is still connected %.0f s later" % TIMEOUT
        time.sleep(0.05)
    closed_after = now() - t_stalled
    for s in socks:
        s.close()
    m = srv.wait_idle("never-reading peers")
    assert m["uring_http_timeouts_total"] >= timeouts_before + 4, m
    assert srv.rss_kb() - rss_before < bound_kb
    srv.assert_serves("after never-reading peers")
    log("never-reads: closed %.1f s after they stalled (send timeout 1 s); timeouts_total %d"
        % (closed_after, m["uring_http_timeouts_total"]))


def slowloris(srv):
    dribblers = []
    for _ in range(50):
        s = srv.connect()
        s.sendall(b"GET /test/fast HTTP/1.1\r\nHost: t\r\n")
        dribblers.append(s)
    t_start = now()
    stop = threading.Event()
    received = {s: b"" for s in dribblers}
    done_at = {}

    def dribble():
        last_byte = 0.0
        while not stop.is_set() and len(done_at) < len(dribblers):
            open_socks = [s for s in dribblers if s not in done_at]
            if now() - last_byte >= 0.1:
                last_byte = now()
                for s in open_socks:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
            readable, _, _ = select.select(open_socks, [], [], 0.05)
            for s in readable:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                received[s] += data
                if not data:
                    done_at[s] = now()

    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    # A normal client meanwhile.
    t0 = now()
    with srv.connect() as s:
        r = Responses(s)
        for _ in range(200):
            s.sendall(req("/test/fast"))
            resp = r.next()
            assert resp is not None and resp[0] == 200, resp
    normal = now() - t0
    t.join(timeout=TIMEOUT)
    stop.set()
    assert normal < 5.0, "200 requests took %.1f s beside 50 slowloris connections" % normal
    assert len(done_at) == len(dribblers), "%d of 50 dribblers still open after %.0f s" % (
        len(dribblers) - len(done_at), TIMEOUT)
    for s in dribblers:
        data = received[s]
        assert data.startswith(b"HTTP/1.1 408 "), "a dribbler got %r" % data[:200]
        assert b"Connection: close" in data, data
        s.close()
    first = min(done_at.values()) - t_start
    last = max(done_at.values()) - t_start
    assert first >= 0.5, "408 after %.2f s, before the 1 s header timeout" % first
    srv.wait_idle("slowloris")
    log("slowloris: 200 normal requests in %.2f s; 50 dribblers got 408 and EOF after "
        "%.1f-%.1f s (header timeout 1 s)" % (normal, first, last))


def serve_wave(socks, what):
    """GET /test/fast on each connection; every one must be answered 200.
    Returns how many were; the others are check failures."""
    for s in socks:
        s.sendall(req("/test/fast"))
    ok, unanswered, other = 0, 0, []
    for s in socks:
        try:
            resp = Responses(s).next()
        except ConnectionResetError:
            resp = None
        if resp is None:
            unanswered += 1
        elif resp[0] == 200:
            ok += 1
        else:
            other.append(resp[0])
    check(unanswered == 0 and not other,
          "%s: of %d connections holding a slot, %d were closed without an answer and %d "
          "answered %s" % (what, len(socks), unanswered, len(other), other))
    return ok


# ------------------------------------------------------------- server B

def flood(srv):
    socks = [srv.connect() for _ in range(80)]
    # Refusals come at once (503 + close) without a request.
    refused = set()
    deadline = now() + TIMEOUT
    while len(refused) < 30 and now() < deadline:
        readable, _, _ = select.select([s for s in socks if s not in refused], [], [], 0.2)
        refused.update(readable)
    time.sleep(0.2)  # any further refusal would show now
    refused.update(select.select([s for s in socks if s not in refused], [], [], 0)[0])
    for s in refused:
        r = Responses(s)
        status, headers, _ = r.next()
        assert status == 503 and headers.get("connection") == "close", (status, headers)
        r.expect_end()
    served = [s for s in socks if s not in refused]
    assert (len(served), len(refused)) == (50, 30), (len(served), len(refused))
    serve_wave(served, "flood")
    for s in socks:
        s.close()
    m = srv.wait_idle("flood")
    assert m["uring_http_connections_refused_total"] >= 30, m
    # Recovered: a pool's worth of new connections is served (less the one
    # slot the last /metrics scrape may still hold while it closes).
    socks = [srv.connect() for _ in range(49)]
    again = serve_wave(socks, "after the flood")
    for s in socks:
        s.close()
    srv.wait_idle("after the flood")
    log("flood: 80 connections on 50 slots: 50 served, 30 refused with 503 "
        "(refused_total %d); %d of 49 new ones served afterwards"
        % (m["uring_http_connections_refused_total"], again))


# ------------------------------------------------------------- server C

def descriptor_exhaustion(srv):
    m = re.search(r"(\d+) connections per thread \(fixed-file table (\d+)", srv.ready)
    assert m and m.group(2) == "200", "the ready line does not show the clamp: " + srv.ready
    capacity = int(m.group(1))
    assert capacity == 200 - 64, srv.ready
    # A burst while the server is stopped: the accept that resumes meets the
    # whole backlog at once, so the table (capacity + 64 for refusals) fills.
    burst = 250
    os.kill(srv.pid, signal.SIGSTOP)
    try:
        socks = [srv.connect() for _ in range(burst)]
    finally:
        os.kill(srv.pid, signal.SIGCONT)
    # Each one is served, or refused with 503 + close, or waits in the
    # backlog until it is one of those: none is dropped unanswered.
    ended = set()
    deadline = now() + TIMEOUT
    while len(ended) < burst - capacity and now() < deadline:
        readable, _, _ = select.select([s for s in socks if s not in ended], [], [], 0.2)
        ended.update(readable)
    time.sleep(0.3)
    ended.update(select.select([s for s in socks if s not in ended], [], [], 0)[0])
    refused, dropped = [], []
    for s in ended:
        r = Responses(s)
        try:
            resp = r.next()
        except ConnectionResetError:
            resp = None
        if resp is None:
            dropped.append(s)  # closed without a word
            continue
        status, headers, _ = resp
        assert status == 503 and headers.get("connection") == "close", (status, headers)
        r.expect_end()
        refused.append(s)
    served = [s for s in socks if s not in ended]
    assert len(served) == capacity, (len(served), capacity)
    serve_wave(served, "descriptors")
    for s in socks:
        s.close()
    m = srv.wait_idle("descriptor exhaustion")
    errors = m["uring_http_accept_errors_total"]
    log_lines = [l for l in srv.stderr_text().splitlines() if "accept:" in l]
    if errors:
        # Once per episode, not once per failed accept.
        check(len(log_lines) == 1, "descriptors: %d log lines for one episode: %s"
              % (len(log_lines), log_lines))
        check(log_lines and "retrying as descriptors free up" in log_lines[0],
              "descriptors: log line %s" % log_lines)
    check(not dropped,
          "descriptors: %d of the %d connections beyond the full table were closed without "
          "an answer (no 503), with accept_errors_total %d and connections_refused_total %d "
          "(%d answered 503)" % (len(dropped), burst - capacity, errors,
                                 m["uring_http_connections_refused_total"], len(refused)))
    # Recovered: a full pool again (less the scraper's slot).
    socks = [srv.connect() for _ in range(capacity - 1)]
    again = serve_wave(socks, "after descriptor exhaustion")
    for s in socks:
        s.close()
    srv.wait_idle("after descriptor exhaustion")
    log("descriptors: RLIMIT_NOFILE 200 -> %d slots + 64; burst of %d: %d served, %d refused "
        "with 503, %d closed unanswered; accept errors %d, logged: %s; %d of %d new ones "
        "served afterwards" % (capacity, burst, len(served), len(refused), len(dropped), errors,
                               log_lines[0] if log_lines else "(no error this time)", again,
                               capacity - 1))


def main():
    binary = sys.argv[1]
    t0 = now()
    servers = []
    try:
        a = Server(binary, ["-A", "2", "-w", "4", "-D", "300", "--send-timeout=1s",
                            "--header-timeout=1s"])
        servers.append(a)
        resets_half_closes_vanishes(a)
        close_churn(a)
        never_reads(a)
        slowloris(a)
        a.stop()

        b = Server(binary, ["-A", "1", "-C", "50", "-w", "2"])
        servers.append(b)
        flood(b)
        b.stop()

        c = Server(binary, ["-A", "1", "-C", "100000", "-w", "2"], nofile=200)
        servers.append(c)
        descriptor_exhaustion(c)
        c.stop()
        if FAILURES:
            log("%d check(s) FAILED (%.1f s):" % (len(FAILURES), now() - t0))
            for f in FAILURES:
                log("  " + f)
            sys.exit(1)
        log("ok (%.1f s); every server exited 0 on SIGTERM" % (now() - t0))
    finally:
        for s in servers:
            s.kill()


if __name__ == "__main__":
    main()
