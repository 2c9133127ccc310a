"""Ten restarts in a row under load, and not one request lost.

Each restart starts a new server with --takeover on the port of the running
one: the new process receives the running server's listening sockets over
its control socket (SCM_RIGHTS), serves on them, and the old one stops
accepting and drains. The accept queues are the same sockets, so a
connection waiting in one is accepted by the new process: nothing depends on
net.ipv4.tcp_migrate_req, which this test reads and never changes.

The load runs throughout, from threads of this process:
  * keep-alive clients, one request at a time (GET /test/fast);
  * keep-alive clients of GET /test/slow (a worker answers after 20 ms, so
    restarts catch requests in flight on a worker);
  * clients that open a new connection for every request (GET /test/fast).

Then, shorter: three sockets taken over by one accept thread and by four;
ten takeovers with no load, each followed at once by requests (the first
connection after a handover must not wait unseen in a queue); a successor
whose sockets do not fit (refused, the old server serves on); the pid file
and systemd's notifications across a takeover; a TLS server's plain-HTTP
port taken over with it.

The rule for a failure is perf/restart's: a request that went out on a
reused keep-alive connection and got not a single byte back (the server
closed that connection as idle in the same instant) is retried on a new
connection, as RFC 9112 section 9.3.1 lets a client do for an idempotent
request, and is counted; anything else is a failure (a refused or reset new
connection, a partial response, a status other than 200, a timeout). The
test asserts 0 failures, that every server it replaced exited 0, that each
new server says whose sockets it inherited, and that every restart happened
while requests were being answered.

Usage: takeover_restart_test.py PATH_TO_SERVER [--restarts N]
                        [--restart-by=takeover|reuseport]
--restart-by=reuseport restarts the way the README described before
--takeover existed (a second server on the port through SO_REUSEPORT, then
SIGTERM to the first); with tcp_migrate_req=0 that loses connections, which
is how this test was seen failing.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

IO_TIMEOUT = 10.0
START_TIMEOUT = 20.0
EXIT_TIMEOUT = 30.0
READY = re.compile(r"uring-http ready: listening on \S+:(\d+), (?:(.*?), )?\d+ accept thread")


class Unanswered(Exception):
    """The connection ended before a single byte of the response."""


class Failed(Exception):
    pass


def read_response(sock):
    """(status, server closes) of one response. Raises Unanswered or Failed."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            chunk = None
        except socket.timeout:
            raise Failed("timeout waiting for a response")
        if not chunk:
            if not data:
                raise Unanswered("reset" if chunk is None else "closed")
            raise Failed("connection lost inside a response head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, socket.timeout) as e:
            raise Failed("%s inside a body" % type(e).__name__)
        if not chunk:
            raise Failed("connection lost inside a body")
        body += chunk
    if len(body) != length:
        raise Failed("bytes after the response")
    return status, headers.get("connection", "").lower() == "close"


class Load:
    """Client threads that run until stop()."""

    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.ok = 0
        self.retried = {}
        self.failures = {}
        self.stopping = threading.Event()
        self.threads = []

    def add(self, n, path, fresh):
        for _ in range(n):
            self.threads.append(threading.Thread(target=self.run, args=(path, fresh), daemon=True))

    def count_ok(self):
        with self.lock:
            self.ok += 1

    def note(self, table, why):
        with self.lock:
            table[why] = table.get(why, 0) + 1

    def run(self, path, fresh):
        request = ("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode()
        sock, reused = None, False
        while not self.stopping.is_set():
            try:
                if sock is None:
                    sock = socket.create_connection(("127.0.0.1", self.port), timeout=IO_TIMEOUT)
                    reused = False
                try:
                    sock.sendall(request)
                except (BrokenPipeError, ConnectionResetError):
                    raise Unanswered("send failed")
                status, close = read_response(sock)
                if status != 200:
                    self.note(self.failures, "status %d" % status)
                else:
                    self.count_ok()
                if close or fresh:
                    sock.close()
                    sock = None
                else:
                    reused = True
            except Unanswered as e:
                sock.close()
                sock = None
                if reused:  # the same request again, on a new connection
                    self.note(self.retried, "reused connection %s before any response" % e)
                else:
                    self.note(self.failures, "new connection %s before any response" % e)
            except (Failed, OSError) as e:
                self.note(self.failures, "%s: %s" % (type(e).__name__, e))
                if sock is not None:
                    sock.close()
                sock = None
        if sock is not None:
            sock.close()

    def answered(self):
        with self.lock:
            return self.ok

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(IO_TIMEOUT * 3)
            assert not t.is_alive(), "a client thread hangs"


class Server:
    def __init__(self, binary, log_dir, number, args, threads=2, env=None):
        self.err_path = os.path.join(log_dir, "server_%s.err" % number)
        self.err = open(self.err_path, "w")
        self.process = subprocess.Popen(
            [binary, "--address=127.0.0.1", "-A", str(threads), "-w", "2", "-D", "20", "-C",
             "1024", "--shutdown-timeout=10s", *args],
            stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        timer = threading.Timer(START_TIMEOUT, self.process.kill)
        timer.start()
        self.line = self.process.stdout.readline()
        timer.cancel()
        m = READY.match(self.line)
        if not m:
            self.process.kill()
            raise AssertionError("server %d did not start: %r; stderr: %s" % (
                number, self.line, self.stderr()))
        self.port = int(m.group(1))
        self.sockets = m.group(2)  # "2 socket(s) bound", "... inherited from PID n"
        self.exit_status = None

    @property
    def pid(self):
        return self.process.pid

    def stderr(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()[-3000:]

    def wait_exit(self, timeout):
        try:
            self.exit_status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("server %d did not exit; stderr: %s" % (self.pid, self.stderr()))
        return self.exit_status


def wait_answered(load, at_least, why):
    deadline = time.monotonic() + IO_TIMEOUT * 2
    while load.answered() < at_least:
        assert time.monotonic() < deadline, "no progress %s: %d answered, %s" % (
            why, load.answered(), load.failures)
        time.sleep(0.01)


def fresh_requests(port, n):
    """n requests, each on a new connection: the kernel spreads them over
    every socket of the port (SO_REUSEPORT), so each socket's queue must be
    accepted from."""
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT) as c:
            c.sendall(b"GET /test/fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            status, _ = read_response(c)
            assert status == 200, status


def other_thread_counts(binary, log_dir):
    """Three sockets taken over by one accept thread (it accepts from all
    three), then by four (they share them), then a SIGTERM that shuts the
    shared sockets down: every request answered, every server exits 0, and
    no accept error is logged."""
    servers = [Server(binary, log_dir, "t3", ["-p", "0"], threads=3)]
    port = servers[0].port
    assert servers[0].sockets == "3 socket(s) bound", servers[0].line
    fresh_requests(port, 30)
    for threads in (1, 4):
        new = Server(binary, log_dir, "t%d" % threads, ["-p", str(port), "--takeover"],
                     threads=threads)
        assert new.sockets == "3 socket(s) inherited from PID %d" % servers[-1].pid, new.line
        servers.append(new)
        fresh_requests(port, 30)
    servers[-1].process.send_signal(signal.SIGTERM)
    for server in servers:
        assert server.wait_exit(EXIT_TIMEOUT) == 0, server.stderr()
        assert "accept:" not in server.stderr(), server.stderr()
    print("takeover_restart_test: 3 sockets over 1 accept thread, then over 4: ok")


def idle_takeovers(binary, log_dir, rounds=10):
    """Takeovers with no load at all, each followed at once by a few
    requests: the first connection after a handover must not wait in a
    queue that the new server is not woken for (the old server's cancelled
    accepts must not take its wake-up with them)."""
    current = Server(binary, log_dir, "idle0", ["-p", "0"])
    port = current.port
    for number in range(1, rounds + 1):
        new = Server(binary, log_dir, "idle%d" % number, ["-p", str(port), "--takeover"])
        assert current.wait_exit(EXIT_TIMEOUT) == 0, current.stderr()
        current = new
        fresh_requests(port, 3)
    current.process.send_signal(signal.SIGTERM)
    assert current.wait_exit(EXIT_TIMEOUT) == 0, current.stderr()
    print("takeover_restart_test: %d takeovers without load, each followed by requests: ok"
          % rounds)


def refused_takeover(binary, log_dir):
    """A successor whose sockets would not fit (another --address) aborts
    with exit status 1 and a message naming both addresses; the old server
    keeps serving, and a fitting successor takes it over afterwards."""
    old = Server(binary, log_dir, "fit0", ["-p", "0"])
    port = old.port
    wrong = subprocess.run(
        [binary, "--address=0.0.0.0", "-p", str(port), "-A", "1", "-w", "1", "-C", "256",
         "--takeover=@uring-http/127.0.0.1:%d" % port],
        capture_output=True, text=True, timeout=START_TIMEOUT)
    assert wrong.returncode == 1, (wrong.returncode, wrong.stdout, wrong.stderr)
    assert "127.0.0.1:%d" % port in wrong.stderr and "0.0.0.0:%d" % port in wrong.stderr, (
        wrong.stderr)
    fresh_requests(port, 10)
    assert old.process.poll() is None, "the old server stopped"
    assert "abandoned" in old.stderr() and "still serving" in old.stderr(), old.stderr()
    new = Server(binary, log_dir, "fit1", ["-p", str(port), "--takeover"])
    assert new.sockets == "2 socket(s) inherited from PID %d" % old.pid, new.line
    fresh_requests(port, 10)
    assert old.wait_exit(EXIT_TIMEOUT) == 0
    new.process.send_signal(signal.SIGTERM)
    assert new.wait_exit(EXIT_TIMEOUT) == 0
    print("takeover_restart_test: a takeover that does not fit is refused, the old server "
          "serves on: ok")


def pid_file_and_notifications(binary, log_dir):
    """With --pid-file and $NOTIFY_SOCKET (systemd): after a takeover the
    pid file names the new process (the old one, exiting, leaves it alone),
    the new one says READY=1 and MAINPID=, and the old one never says
    STOPPING=1 (it no longer is the service)."""
    pid_file = os.path.join(log_dir, "server.pid")
    # Not under log_dir: Bazel's TEST_TMPDIR is too long for a socket path.
    notify_path = os.path.join(tempfile.mkdtemp(prefix="notify.", dir="/tmp"), "sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(IO_TIMEOUT)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    args = ["--pid-file", pid_file]
    old = Server(binary, log_dir, "pid0", ["-p", "0"] + args, env=env)
    assert notify.recv(256).decode() == "READY=1\nMAINPID=%d" % old.pid
    new = Server(binary, log_dir, "pid1", ["-p", str(old.port), "--takeover"] + args, env=env)
    assert notify.recv(256).decode() == "READY=1\nMAINPID=%d" % new.pid
    assert old.wait_exit(EXIT_TIMEOUT) == 0
    with open(pid_file) as f:
        assert int(f.read()) == new.pid, "the pid file does not name the new server"
    new.process.send_signal(signal.SIGTERM)
    assert notify.recv(256) == b"STOPPING=1"  # the first since the takeover: the new one's
    assert new.wait_exit(EXIT_TIMEOUT) == 0
    assert not os.path.exists(pid_file)
    notify.close()
    shutil.rmtree(os.path.dirname(notify_path))
    print("takeover_restart_test: pid file and systemd notifications follow the takeover: ok")


def tls_with_plain_port(binary, log_dir):
    """A TLS server with a plain-HTTP port hands both kinds of socket over;
    a successor without --plain-port is refused (that queue would be lost)."""
    cert, key = os.path.join(log_dir, "cert.pem"), os.path.join(log_dir, "key.pem")
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-keyout", key, "-out", cert, "-subj", "/CN=localhost"],
        capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    tls = ["--tls-cert", cert, "--tls-key", key]
    old = Server(binary, log_dir, "tls0", ["-p", "0", "--plain-port", "0"] + tls)
    m = re.search(r"plain HTTP on 127\.0\.0\.1:(\d+)", old.line)
    assert m, old.line
    plain = int(m.group(1))
    without = subprocess.run(
        [binary, "--address=127.0.0.1", "-p", str(old.port), "-A", "1", "-w", "1", "-C", "256",
         "--takeover"] + tls, capture_output=True, text=True, timeout=START_TIMEOUT)
    assert without.returncode == 1 and "--plain-port=%d" % plain in without.stderr, (
        without.returncode, without.stderr)
    new = Server(binary, log_dir, "tls1",
                 ["-p", str(old.port), "--plain-port", str(plain), "--takeover"] + tls)
    # Two TLS sockets and two plain ones (one per accept thread each).
    assert new.sockets == "4 socket(s) inherited from PID %d" % old.pid, new.line
    assert "plain HTTP on 127.0.0.1:%d" % plain in new.line, new.line
    fresh_requests(plain, 10)
    assert old.wait_exit(EXIT_TIMEOUT) == 0
    new.process.send_signal(signal.SIGTERM)
    assert new.wait_exit(EXIT_TIMEOUT) == 0
    print("takeover_restart_test: TLS and its plain-HTTP port taken over together: ok")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--restart-by", choices=("takeover", "reuseport"), default="takeover")
    args = parser.parse_args()
    with open("/proc/sys/net/ipv4/tcp_migrate_req") as f:
        migrate = f.read().strip()
    print("takeover_restart_test: net.ipv4.tcp_migrate_req=%s (left as it is), restart by %s"
          % (migrate, args.restart_by))
    log_dir = tempfile.mkdtemp(prefix="takeover_restart_test.", dir=os.environ.get("TEST_TMPDIR"))

    current = Server(args.server, log_dir, 0, ["-p", "0"])
    port = current.port
    if args.restart_by == "takeover":
        assert current.sockets == "2 socket(s) bound", current.line
    load = Load(port)
    load.add(4, "/test/fast", fresh=False)
    load.add(2, "/test/slow", fresh=False)
    load.add(4, "/test/fast", fresh=True)
    replaced = []
    started = time.monotonic()
    try:
        load.start()
        wait_answered(load, 200, "before the first restart")
        for number in range(1, args.restarts + 1):
            before = load.answered()
            if args.restart_by == "takeover":
                new = Server(args.server, log_dir, number, ["-p", str(port), "--takeover"])
                assert new.sockets == "2 socket(s) inherited from PID %d" % current.pid, (
                    "restart %d: %r" % (number, new.line))
            else:
                new = Server(args.server, log_dir, number, ["-p", str(port)])
                current.process.send_signal(signal.SIGTERM)
            replaced.append(current)
            current = new
            # Under load until the next restart: the new server answers,
            # and the old one drains meanwhile (the next restart may come
            # before it is done: it no longer holds the control socket).
            wait_answered(load, before + 300, "after restart %d" % number)
            time.sleep(0.2)
        # The last server alone for a moment, then the load stops.
        wait_answered(load, load.answered() + 100, "after the last restart")
    finally:
        load.stop()
        elapsed = time.monotonic() - started
        current.process.send_signal(signal.SIGTERM)
        statuses = [s.wait_exit(EXIT_TIMEOUT) for s in replaced + [current]]
    print("takeover_restart_test: %d restarts in %.1f s: %d requests answered, %d failed %s;"
          " %d retried after an unanswered close on a reused keep-alive connection %s"
          % (args.restarts, elapsed, load.ok, sum(load.failures.values()), load.failures,
             sum(load.retried.values()), load.retried))
    for server, status in zip(replaced + [current], statuses):
        assert status == 0, "server %d exited %d; stderr: %s" % (server.pid, status,
                                                                 server.stderr())
    assert not load.failures, "failed requests: %s (server logs in %s)" % (load.failures, log_dir)
    if args.restart_by == "takeover":
        other_thread_counts(args.server, log_dir)
        idle_takeovers(args.server, log_dir)
        refused_takeover(args.server, log_dir)
        pid_file_and_notifications(args.server, log_dir)
        if shutil.which("openssl"):
            tls_with_plain_port(args.server, log_dir)
        else:
            print("takeover_restart_test: no openssl to make a certificate: TLS part skipped")
    print("takeover_restart_test: ok")


if __name__ == "__main__":
    main()
