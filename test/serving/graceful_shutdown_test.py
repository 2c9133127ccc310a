"""SIGTERM in the middle of a mixed load: nothing already sent is lost.

Starts the real server (-A 2 -w 8 -D 50), runs keep-alive /test/fast loops,
/test/slow loops and pipelined batches from several threads, sends SIGTERM
while they run, and checks, per request (each one carries the moment its
last byte was handed to the kernel):

  * every request fully sent before the signal is answered 200;
  * a request sent after the signal is answered 200 (or 503 on a connection
    accepted while draining) or not at all, never with anything else;
  * a request whose sending started once the server provably drains (both
    listeners refuse connections) and that is answered, is answered with
    "Connection: close";
  * nothing follows a response that says "Connection: close" (RFC 9112 9.6);
  * every connection is closed by the server (EOF), an idle keep-alive one
    too, and the process exits 0 within 20 s.

No assertion depends on how fast the machine is, only on bounds.

Usage: graceful_shutdown_test.py PATH_TO_SERVER
"""
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

SLOW_MS = 50
IO_TIMEOUT = 20.0     # seconds a client waits for any byte before giving up
EXIT_TIMEOUT = 20.0   # the process must be gone this long after SIGTERM


def now():
    return time.monotonic()


def request_bytes(path):
    return b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path.encode()


class End(Exception):
    """The connection ended: kind is 'eof', 'reset' or 'timeout'."""

    def __init__(self, kind, partial=b""):
        super().__init__(kind)
        self.kind = kind
        self.partial = partial


class Reader:
    """Reads HTTP/1.1 responses (status line, headers, Content-Length body)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise End("timeout", self.buf)
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            raise End("reset", self.buf)
        if not data:
            raise End("eof", self.buf)
        self.buf += data

    def response(self):
        """(status, connection_close) of the next response; raises End if
        the stream ends before one is complete (partial bytes in .partial)."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", lines[0] + b" ")
        if not m:
            raise AssertionError("malformed status line %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get(b"content-length", b"0"))
        while len(rest) < length:
            self._fill()
            rest = self.buf.partition(b"\r\n\r\n")[2]
        self.buf = rest[length:]
        return int(m.group(1)), headers.get(b"connection", b"").lower() == b"close"

    def until_end(self):
        """Reads until the peer ends the stream: (kind, bytes read meanwhile)."""
        extra = self.buf
        self.buf = b""
        while True:
            try:
                self._fill()
            except End as e:
                return e.kind, extra + self.buf
            extra += self.buf
            self.buf = b""


class Req:
    def __init__(self, conn, path):
        self.conn = conn
        self.path = path
        self.t_start = None  # sendall() called
        self.t_sent = None   # sendall() returned: every byte is in the kernel
        self.status = None
        self.close = False
        self.t_answered = None


class Conn:
    def __init__(self, name, fresh=False):
        self.name = name
        self.fresh = fresh      # opened after the signal
        self.reqs = []
        self.end = None         # 'eof', 'reset', 'timeout', 'send-error', ...
        self.after_close = b""  # bytes received after a "Connection: close"
        self.errors = []


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    s.settimeout(IO_TIMEOUT)
    return s


def read_answers(conn, reader, reqs, then_wait_end):
    """Reads the answers to `reqs` in order. Returns True while the
    connection stays usable; otherwise records how it ended."""
    for r in reqs:
        try:
            r.status, r.close = reader.response()
        except End as e:
            conn.end = e.kind
            if e.partial:
                conn.errors.append("truncated response %r" % e.partial[:200])
            return False
        except AssertionError as e:
            conn.errors.append(str(e))
            conn.end = "malformed"
            return False
        r.t_answered = now()
        if r.close:
            conn.end, conn.after_close = reader.until_end()
            return False
    if then_wait_end:
        conn.end, extra = reader.until_end()
        if extra:
            conn.errors.append("unrequested bytes %r" % extra[:200])
        return False
    return True


def send(conn, sock, paths):
    """Sends `paths` in one write; the requests, or None if the write failed."""
    reqs = [Req(conn, p) for p in paths]
    conn.reqs.extend(reqs)
    t = now()
    for r in reqs:
        r.t_start = t
    try:
        sock.sendall(b"".join(request_bytes(p) for p in paths))
    except OSError as e:
        conn.end = "send-error(%s)" % type(e).__name__
        return None
    t = now()
    for r in reqs:
        r.t_sent = t
    return reqs


def run_batches(conn, sock, batch, repeat, started=None):
    """Sends `batch` (paths) in one write and reads its answers; again and
    again while `repeat`, until the server ends the connection."""
    reader = Reader(sock)
    while True:
        reqs = send(conn, sock, batch)
        if reqs is None:
            return
        if started is not None:
            started.set()
        if not read_answers(conn, reader, reqs, then_wait_end=not repeat):
            return


def late_thread(conn, port, sent, drain):
    """A SLOW request sent before the signal; once the drain is certain and
    while its answer is still due, a FAST one behind it: if answered, the
    answer must say "Connection: close" (checked with the others)."""
    sock = connect(port)
    with sock:
        reader = Reader(sock)
        reqs = send(conn, sock, ["/test/slow"])
        sent.set()
        if reqs is None:
            return
        deadline = now() + 1.0
        while drain.t_drained is None and now() < deadline:
            time.sleep(0.001)
        pending = select.select([sock], [], [], 0)[0] == []
        if drain.t_drained is not None and pending:
            more = send(conn, sock, ["/test/fast"])
            if more is None:
                return
            reqs += more
        read_answers(conn, reader, reqs, then_wait_end=True)


def load_thread(conn, port, batch, repeat=True, started=None):
    try:
        sock = connect(port)
    except OSError as e:
        conn.end = "connect-error(%s)" % e
        return
    with sock:
        run_batches(conn, sock, batch, repeat, started)


def idle_thread(conn, port, connected):
    # An idle keep-alive connection: one request answered, then silence. (A
    # connection that never sends is not accepted yet: TCP_DEFER_ACCEPT
    # leaves it with the kernel until its first bytes, see --defer-accept.)
    sock = connect(port)
    reader = Reader(sock)
    with sock:
        sock.sendall(request_bytes("/test/fast"))
        try:
            status, _ = reader.response()
        except End as e:
            status = e.kind
        if status != 200:
            conn.errors.append("idle: its one request was answered %r" % status)
        connected.set()
        conn.end, extra = reader.until_end()
        if extra:
            conn.errors.append("an idle connection received %r" % extra[:200])


class Drain:
    """Watches for the moment both listeners refuse connections (then every
    accept thread is draining) and, until then, checks how a connection
    opened after the signal is answered."""

    def __init__(self, port):
        self.port = port
        self.t_drained = None
        self.fresh = []
        self.done = threading.Event()

    def run(self):
        deadline = now() + EXIT_TIMEOUT
        i = 0
        while now() < deadline:
            i += 1
            conn = Conn("fresh-%d" % i, fresh=True)
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=IO_TIMEOUT)
            except ConnectionRefusedError:
                self.t_drained = now()
                break
            except OSError as e:
                conn.end = "connect-error(%s)" % e
                self.fresh.append(conn)
                time.sleep(0.005)
                continue
            self.fresh.append(conn)
            s.settimeout(IO_TIMEOUT)
            with s:
                run_batches(conn, s, ["/test/fast"], repeat=False)
            time.sleep(0.005)
        self.done.set()


def read_ready(server):
    line = server.stdout.readline()
    m = re.search(r"listening on \S+:(\d+)", line)
    assert m, "no ready line: %r" % line
    return int(m.group(1))


def main():
    binary = sys.argv[1]
    server = subprocess.Popen(
        [binary, "-p", "0", "-A", "2", "-w", "8", "-D", str(SLOW_MS)],
        stdout=subprocess.PIPE, text=True)
    threads = []
    conns = []
    try:
        port = read_ready(server)

        def start(conn, target, *args):
            conns.append(conn)
            t = threading.Thread(target=target, args=(conn, port) + args, daemon=True)
            t.start()
            threads.append(t)

        # The mixed load.
        for i in range(4):
            start(Conn("fast-%d" % i), load_thread, ["/test/fast"])
        for i in range(3):
            start(Conn("slow-%d" % i), load_thread, ["/test/slow"])
        for i in range(2):
            start(Conn("pipelined-fast-%d" % i), load_thread, ["/test/fast"] * 8)
        for i in range(3):
            start(Conn("pipelined-mixed-%d" % i), load_thread,
                  ["/test/fast", "/test/slow", "/test/fast", "/test/fast"])
        idle_ready = threading.Event()
        start(Conn("idle"), idle_thread, idle_ready)
        assert idle_ready.wait(IO_TIMEOUT)

        # Let every load connection complete a few rounds first.
        deadline = now() + IO_TIMEOUT
        while now() < deadline:
            if all(sum(r.status is not None for r in c.reqs) >= 4
                   for c in conns if c.name != "idle"):
                break
            time.sleep(0.02)
        time.sleep(0.3)

        # A batch whose fast requests wait behind a SLOW one: the signal
        # arrives while the worker sleeps, so they are answered during the
        # drain.
        behind = Conn("slow-then-fast")
        behind_sent = threading.Event()
        start(behind, load_thread, ["/test/slow", "/test/fast", "/test/fast"], False,
              behind_sent)
        assert behind_sent.wait(IO_TIMEOUT)
        time.sleep(0.005)

        drain = Drain(port)
        late = Conn("late-on-busy")
        late_sent = threading.Event()
        start(late, late_thread, late_sent, drain)
        assert late_sent.wait(IO_TIMEOUT)

        t_signal = now()
        server.send_signal(signal.SIGTERM)
        watcher = threading.Thread(target=drain.run, daemon=True)
        watcher.start()

        try:
            rc = server.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            rc = None
        t_exit = now()
        for t in threads:
            t.join(timeout=IO_TIMEOUT)
        drain.done.wait(IO_TIMEOUT)
        all_conns = conns + drain.fresh

        # ------------------------------------------------------------ checks
        failures = []
        for c in all_conns:
            for e in c.errors:
                failures.append("%s: %s" % (c.name, e))
            # A connection opened after the signal may also be reset while it
            # connects or sends (the listener went away under it).
            fresh_ok = c.fresh and c.end and c.end.startswith(("connect-error", "send-error"))
            if c.end not in ("eof", "reset") and not fresh_ok:
                failures.append("%s: ended with %s, not closed by the server" % (c.name, c.end))
            if c.after_close:
                failures.append("%s: %d bytes after a response with Connection: close: %r"
                                % (c.name, len(c.after_close), c.after_close[:200]))
        sent_before = answered_before = in_flight = sent_after = answered_after = 0
        last_answered = {}
        for c in all_conns:
            answered = [r for r in c.reqs if r.status is not None]
            if answered:
                last_answered[c.name] = answered[-1]
        for c in all_conns:
            for r in c.reqs:
                if r.t_sent is None:
                    continue
                if r.t_sent < t_signal:
                    sent_before += 1
                    if r.status != 200:
                        failures.append(
                            "%s: %s fully sent %.1f ms before the signal got %s"
                            % (c.name, r.path, (t_signal - r.t_sent) * 1e3,
                               r.status if r.status is not None else "no answer (%s)" % c.end))
                    elif r.t_answered > t_signal:
                        in_flight += 1
                    else:
                        answered_before += 1
                else:
                    sent_after += 1
                    if r.status is not None:
                        answered_after += 1
                    allowed = (200, 503) if c.fresh else (200,)
                    if r.status is not None and r.status not in allowed:
                        failures.append("%s: %s sent after the signal answered %d"
                                        % (c.name, r.path, r.status))
                    if r.status == 503 and not r.close:
                        failures.append("%s: 503 without Connection: close" % c.name)
                # While draining, the server answers what it has received and
                # says Connection: close on the last of it: in a pipelined
                # batch the answers before that one may keep-alive, so only the
                # connection's last answer must close.
                if (drain.t_drained is not None and r.t_start is not None
                        and r.t_start > drain.t_drained and r.status is not None
                        and not r.close and r is last_answered.get(c.name)):
                    failures.append("%s: %s sent while draining answered without "
                                    "Connection: close" % (c.name, r.path))
        for c in conns:
            if c.name in ("idle", "slow-then-fast", "late-on-busy"):
                continue
            if not any(r.t_answered is not None and r.t_answered < t_signal for r in c.reqs):
                failures.append("%s: no request answered before the signal (no load?)" % c.name)
        if rc is None:
            failures.append("the server did not exit within %.0f s of SIGTERM" % EXIT_TIMEOUT)
        elif rc != 0:
            failures.append("the server exited with status %d" % rc)

        print("graceful_shutdown_test: %d connections (%d opened after the signal); "
              "%d requests fully sent before the signal (%d answered before it, %d in flight); "
              "%d sent after it (%d answered); drain seen %.0f ms after the signal; "
              "exit %.0f ms after it"
              % (len(all_conns), len(drain.fresh), sent_before, answered_before, in_flight,
                 sent_after, answered_after,
                 ((drain.t_drained or float("nan")) - t_signal) * 1e3,
                 (t_exit - t_signal) * 1e3))
        print("slow-then-fast: %s" % [(r.path, r.status, "close" if r.close else "keep-alive")
                                      for r in behind.reqs])
        if failures:
            print("graceful_shutdown_test: FAILED")
            for f in failures[:40]:
                print("  " + f)
            if len(failures) > 40:
                print("  ... and %d more" % (len(failures) - 40))
            sys.exit(1)
        print("graceful_shutdown_test: ok")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
