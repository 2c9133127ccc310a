"""HTTPS end to end against the real server binary (--tls-cert/--tls-key).

Certificates are made at test time (openssl req) in a temporary directory:
an ECDSA P-256 one for localhost (the default) and an RSA-2048 one for
other.test. Checked:

  * curl over TLS 1.3 and 1.2 gets 200; ALPN selects http/1.1 for a client
    offering it alone, h2 for one offering h2 (HTTP/2 is on by default);
  * Python ssl over TLS 1.2 and 1.3 with the certificate verified; 50
    keep-alive requests on one connection; 20 pipelined requests answered in
    order; a SLOW request; a 200 KB echo; a 50 MB chunked upload to
    /test/sink; a 1 MiB response and a 100 MB streamed one, counted; a large
    response to a reader taking it slowly in small pieces, intact;
  * session resumption from a ticket over TLS 1.2 and 1.3, counted in
    uring_http_tls_resumptions_total;
  * SNI: other.test gets the RSA certificate, localhost and no SNI the
    default ECDSA one;
  * openssl s_client gets a 200;
  * failures: plain HTTP gets 400 in plain text then EOF; garbage (0x16 then
    random bytes, 0x00 then random bytes) is closed unanswered within 5 s; a
    truncated ClientHello is closed after --handshake-timeout=1s; peers
    vanishing at connect or mid-ClientHello (reset); the server keeps
    serving and counts plain_http, protocol, timeout and peer_closed;
  * SIGHUP reloads the certificate files: open connections keep working, new
    ones get the new certificate, a session from before still resumes; a
    broken certificate file fails the reload, the last good certificate
    stays; both counted;
  * handshakes in flight across a reload (the ClientHello's first 50 bytes
    before SIGHUP, the rest after a new connection has picked up the new
    certificates), with SNI localhost and other.test: they complete with
    the right certificate and the server lives on;
  * a "Connection: close" response ends with close_notify (no ragged EOF),
    over TLS 1.3 and 1.2;
  * SIGTERM with TLS connections open (idle keep-alive, a SLOW request in
    flight, one mid-handshake): the SLOW request is answered, the idle one
    gets close_notify, and the process exits 0.

Each check is a function; a failing one is reported and the others still
run. Bounds are generous (a noisy 2-core machine, sanitizer builds).

Usage: tls_test.py PATH_TO_SERVER
"""
import os
import random
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import traceback

TIMEOUT = 20.0  # seconds any single expectation may take before it fails
SLOW_MS = 300


def now():
    return time.monotonic()


def log(msg):
    print("tls_test: " + msg, flush=True)


def req(path, close=False, host="localhost"):
    return b"GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (
        path.encode(), host.encode(), b"Connection: close\r\n" if close else b"")


def rst_close(sock):
    """Close with SO_LINGER 0: the kernel sends a RST, not a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ------------------------------------------------------------ certificates

def make_cert(directory, stem, cn, sans, rsa=False):
    """A self-signed certificate and its key: (cert_path, key_path)."""
    cert = os.path.join(directory, stem + ".pem")
    key = os.path.join(directory, stem + ".key")
    algo = (["-newkey", "rsa:2048"] if rsa else
            ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
    cmd = (["openssl", "req", "-x509"] + algo +
           ["-nodes", "-days", "2", "-keyout", key, "-out", cert, "-subj", "/CN=" + cn,
            "-addext", "subjectAltName=" + sans])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode == 0, "openssl req failed: %s" % p.stdout.decode(errors="replace")
    return cert, key


def der_of(cert_path):
    with open(cert_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def client_context(cafiles=(), version=None, alpn=None, verify=True):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        for f in cafiles:
            ctx.load_verify_locations(cafile=f)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    if alpn is not None:
        ctx.set_alpn_protocols(alpn)
    return ctx


def client_hello():
    """The bytes of a real ClientHello (run through memory BIOs)."""
    ctx = client_context(verify=False)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    assert len(hello) > 100 and hello[0] == 0x16, "no ClientHello captured: %r" % hello[:20]
    return hello


# ------------------------------------------------------------ HTTP over TLS

class Closed(Exception):
    pass


class Responses:
    """Reads HTTP/1.1 responses (Content-Length or chunked) from a socket,
    TLS or not."""

    def __init__(self, sock, read_size=65536, pause=0.0):
        self.sock = sock
        self.buf = b""
        self.read_size = read_size  # at most this much a recv
        self.pause = pause          # seconds before each recv: a slow reader

    def fill(self):
        if self.pause:
            time.sleep(self.pause)
        data = self.sock.recv(self.read_size)
        if not data:
            raise Closed("the connection ended (%d bytes pending: %r)"
                         % (len(self.buf), self.buf[:200]))
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _body(self, n, sink):
        while n:
            if not self.buf:
                self.fill()
            piece = self.buf[:n]
            self.buf = self.buf[len(piece):]
            n -= len(piece)
            sink(piece)

    def next(self, sink=None):
        """(status, headers, body); with `sink`, the body goes to sink(piece)
        piece by piece instead (body is then b"")."""
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", lines[0] + b" ")
        assert m, "malformed status line %r" % lines[0]
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode()
        parts = []
        out = sink if sink is not None else parts.append
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():  # trailers
                        pass
                    break
                self._body(size, out)
                assert self._line() == b"", "chunk not followed by CRLF"
        else:
            self._body(int(headers.get("content-length", "0")), out)
        return int(m.group(1)), headers, b"".join(parts)

    def until_eof(self):
        """Everything until the peer ends the stream."""
        data = self.buf
        self.buf = b""
        while True:
            piece = self.sock.recv(65536)
            if not piece:
                return data
            data += piece


class Server:
    def __init__(self, binary, args, name):
        self.name = name
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([binary, "-p", "0"] + args, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True)
        self.ready = self.proc.stdout.readline()
        m = re.search(r"listening on \S+:(\d+)", self.ready)
        assert m, "%s: no ready line: %r, stderr: %s" % (name, self.ready, self.stderr_text())
        assert ", TLS: OpenSSL" in self.ready, "%s: the ready line does not mention TLS: %r" % (
            name, self.ready)
        self.port = int(m.group(1))
        self.ca = []  # certificates trusted by default clients
        self.stopped = False

    def stderr_text(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()

    def wait_stderr(self, needle, count, what):
        """Waits until `needle` appears `count` times on stderr."""
        deadline = now() + TIMEOUT
        while self.stderr_text().count(needle) < count:
            assert now() < deadline, "%s: no %r on stderr within %.0f s; stderr:\n%s" % (
                what, needle, TIMEOUT, self.stderr_text())
            time.sleep(0.05)

    def tcp(self, timeout=TIMEOUT):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.settimeout(timeout)
        return s

    def tls(self, ctx=None, server_hostname="localhost", session=None, rcvbuf=None,
            suppress_ragged_eofs=True):
        if ctx is None:
            ctx = client_context(self.ca)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(TIMEOUT)
        s.connect(("127.0.0.1", self.port))
        return ctx.wrap_socket(s, server_hostname=server_hostname, session=session,
                               suppress_ragged_eofs=suppress_ragged_eofs)

    def get(self, path, **kw):
        """One request on its own TLS connection: (status, headers, body)."""
        with self.tls(**kw) as s:
            s.sendall(req(path))
            return Responses(s).next()

    def metrics(self):
        """Every sample of /metrics, labels included in the key."""
        status, _, body = self.get("/metrics")
        assert status == 200, "/metrics answered %d" % status
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def assert_serves(self, what):
        for path in ("/test/fast", "/test/slow"):
            status = self.get(path)[0]
            assert status == 200, "%s: GET %s over TLS answered %d afterwards" % (
                what, path, status)

    def stop(self, timeout=30):
        self.stopped = True
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("%s: the server did not exit within %d s of SIGTERM"
                                 % (self.name, timeout))
        assert rc == 0, "%s: the server exited with %d (a signal is negative), stderr:\n%s" % (
            self.name, rc, self.stderr_text())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def delta(before, after, name):
    return after.get(name, 0) - before.get(name, 0)


FAIL_REASON = 'uring_http_tls_handshake_failures_total{reason="%s"}'


# ------------------------------------------------------------ 1. curl, ALPN

def curl_and_alpn(srv, ec_cert):
    base = "https://localhost:%d" % srv.port
    for name, flags, version in (("TLS 1.3", ["--tlsv1.3"], "TLSv1.3"),
                                 ("TLS 1.2", ["--tlsv1.2", "--tls-max", "1.2"], "TLSv1.2")):
        p = subprocess.run(
            ["curl", "-sS", "-v", "--http1.1", "--cacert", ec_cert, "--resolve",
             "localhost:%d:127.0.0.1" % srv.port, "-o", "/dev/null", "-w", "%{http_code}"]
            + flags + [base + "/test/fast"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 0 and p.stdout == b"200", (
            "curl %s: exit %d, status %r, stderr:\n%s" % (name, p.returncode, p.stdout, err))
        assert re.search(r"SSL connection using %s" % re.escape(version), err), (
            "curl %s: not negotiated as %s:\n%s" % (name, version, err))
        assert re.search(r"ALPN.*server accepted (to use )?http/1\.1", err), (
            "curl %s: the server did not select ALPN http/1.1:\n%s" % (name, err))
    # curl offering h2 too (its default): h2, HTTP/2 being on by default
    # (test/http2/h2_tls_test.py tests it further, and --http2=off).
    p = subprocess.run(
        ["curl", "-sS", "-v", "--http2", "--cacert", ec_cert, "--resolve",
         "localhost:%d:127.0.0.1" % srv.port, "-o", "/dev/null", "-w", "%{http_code}",
         base + "/test/fast"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0 and p.stdout == b"200" and re.search(
        r"ALPN.*server accepted (to use )?h2", err), (
        "curl --http2 (offering h2,http/1.1): exit %d, status %r:\n%s" % (
            p.returncode, p.stdout, err))
    # Python ssl offering h2 and http/1.1: h2; offering only http/1.1: that.
    with srv.tls(client_context(srv.ca, alpn=["h2", "http/1.1"])) as s:
        assert s.selected_alpn_protocol() == "h2", (
            "offered h2,http/1.1: selected %r" % s.selected_alpn_protocol())
    with srv.tls(client_context(srv.ca, alpn=["http/1.1"])) as s:
        assert s.selected_alpn_protocol() == "http/1.1", (
            "offered http/1.1: selected %r" % s.selected_alpn_protocol())
        s.sendall(req("/test/fast"))
        assert Responses(s).next()[0] == 200
    log("curl TLS 1.3 and 1.2: 200, ALPN http/1.1 for --http1.1, h2 for a client offering it")


# ------------------------------------------------------------ 2. Python ssl

def versions_and_bodies(srv):
    before = srv.metrics()
    for version, name in ((ssl.TLSVersion.TLSv1_2, "TLSv1.2"),
                          (ssl.TLSVersion.TLSv1_3, "TLSv1.3")):
        with srv.tls(client_context(srv.ca, version=version)) as s:
            assert s.version() == name, "asked for %s, got %s" % (name, s.version())
            cert = s.getpeercert()
            assert ((("commonName", "localhost"),) in cert["subject"]), cert
            s.sendall(req("/test/fast"))
            status = Responses(s).next()[0]
            assert status == 200, "%s: GET /test/fast answered %d" % (name, status)
    after = srv.metrics()
    for name in ("TLSv1.2", "TLSv1.3"):
        key = 'uring_http_tls_version_total{version="%s"}' % name
        assert delta(before, after, key) >= 1, "%s not counted: %s %s -> %s" % (
            name, key, before.get(key), after.get(key))
    assert delta(before, after, "uring_http_tls_handshakes_total") >= 3, (
        "handshakes_total %s -> %s after 3 handshakes" % (
            before.get("uring_http_tls_handshakes_total"),
            after.get("uring_http_tls_handshakes_total")))

    # Keep-alive: 50 requests on one connection.
    with srv.tls() as s:
        r = Responses(s)
        for i in range(50):
            s.sendall(req("/test/fast"))
            status, headers, _ = r.next()
            assert status == 200, "keep-alive request %d answered %d" % (i, status)
            assert headers.get("connection", "").lower() != "close", (
                "keep-alive request %d answered with Connection: close" % i)
    # Pipelining: 20 requests in one write, bodies of 1..20 bytes and two
    # SLOW ones (empty) among them: the answers in order.
    paths = ["/test/slow" if i in (5, 13) else "/test/bytes?%d" % (i + 1) for i in range(20)]
    with srv.tls() as s:
        s.sendall(b"".join(req(p) for p in paths))
        r = Responses(s)
        for i, p in enumerate(paths):
            status, _, body = r.next()
            want = 0 if p == "/test/slow" else i + 1
            assert status == 200 and len(body) == want, (
                "pipelined answer %d (%s): status %d, %d body bytes, expected 200 and %d"
                % (i, p, status, len(body), want))
        # SLOW alone.
        t0 = now()
        s.sendall(req("/test/slow"))
        status = r.next()[0]
        assert status == 200, "GET /test/slow answered %d" % status
        assert now() - t0 >= SLOW_MS / 1000 * 0.9, "SLOW answered before its -D %d ms" % SLOW_MS

        # POST /test/echo, 200 KB.
        body = random.Random(2).randbytes(200 * 1024)
        s.sendall(b"POST /test/echo HTTP/1.1\r\nHost: localhost\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        status, _, echoed = r.next()
        assert status == 200 and echoed == body, (
            "POST /test/echo of 200 KB: status %d, %d bytes back, equal: %s"
            % (status, len(echoed), echoed == body))

        # POST /test/sink, 50 MB chunked, streamed in 64 KB chunks.
        piece = b"s" * 65536
        chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
        s.sendall(b"POST /test/sink HTTP/1.1\r\nHost: localhost\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        total = 0
        for _ in range(800):
            s.sendall(chunk)
            total += len(piece)
        s.sendall(b"0\r\n\r\n")
        status, _, answer = r.next()
        assert status == 200 and answer.strip() == str(total).encode(), (
            "POST /test/sink of %d bytes (chunked): status %d, answer %r"
            % (total, status, answer[:100]))

        # Large responses, read fully and counted.
        s.sendall(req("/test/bytes?1048576"))
        status, _, got = r.next()
        assert status == 200 and len(got) == 1048576 and not got.strip(b"x"), (
            "GET /test/bytes?1048576: status %d, %d bytes" % (status, len(got)))
        counted = [0, 0]  # bytes, bytes other than 'x'

        def count(p):
            counted[0] += len(p)
            counted[1] += len(p.translate(None, b"x"))

        t0 = now()
        s.sendall(req("/test/stream?bytes=100000000"))
        status, headers, _ = r.next(sink=count)
        assert status == 200 and counted == [100000000, 0], (
            "GET /test/stream?bytes=100000000: status %d, %d bytes (%d not 'x')"
            % (status, counted[0], counted[1]))
        stream_s = now() - t0
        # Still usable after all that.
        s.sendall(req("/test/fast"))
        assert r.next()[0] == 200, "the connection is unusable after the large bodies"

    # A slow reader: a small receive window, 4 KB reads with pauses.
    def slow_read(path, body=None):
        with srv.tls(rcvbuf=4096) as s:
            if body is None:
                s.sendall(req(path))
            else:
                s.sendall(b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n"
                          % (path.encode(), len(body)) + body)
            time.sleep(0.3)  # the server fills the window and waits
            got = []
            status, _, _ = Responses(s, read_size=4096, pause=0.001).next(sink=got.append)
            return status, b"".join(got)

    t0 = now()
    status, got = slow_read("/test/bytes?1048576")
    assert status == 200 and len(got) == 1048576 and not got.strip(b"x"), (
        "slow reader, GET /test/bytes?1048576: status %d, %d bytes" % (status, len(got)))
    big = random.Random(3).randbytes(1000000)
    status, got = slow_read("/test/echo", big)
    assert status == 200 and got == big, (
        "slow reader, POST /test/echo of 1 MB random bytes: status %d, %d bytes, equal: %s"
        % (status, len(got), got == big))
    log("TLS 1.2 and 1.3 verified; 50 keep-alive, 20 pipelined in order, SLOW, 200 KB echo, "
        "50 MB chunked sink, 1 MiB and 100 MB (%.1f s) responses; slow readers intact (%.1f s)"
        % (stream_s, now() - t0))


# ------------------------------------------------------------ 3. resumption

def resumption(srv):
    before = srv.metrics()
    for version, name in ((ssl.TLSVersion.TLSv1_2, "TLS 1.2"),
                          (ssl.TLSVersion.TLSv1_3, "TLS 1.3")):
        ctx = client_context(srv.ca, version=version)
        with srv.tls(ctx) as s:
            assert not s.session_reused, "%s: the first connection resumed" % name
            s.sendall(req("/test/fast"))
            assert Responses(s).next()[0] == 200  # TLS 1.3: the ticket came before it
            session = s.session
        assert session is not None and session.has_ticket, (
            "%s: no session ticket received (session %r)" % (name, session))
        for i in range(2):
            with srv.tls(ctx, session=session) as s:
                assert s.session_reused, "%s: reconnection %d with the saved session was a " \
                    "full handshake (session_reused False)" % (name, i + 1)
                s.sendall(req("/test/fast"))
                status = Responses(s).next()[0]
                assert status == 200, "%s: resumed connection answered %d" % (name, status)
                session = s.session
    after = srv.metrics()
    d = delta(before, after, "uring_http_tls_resumptions_total")
    assert d >= 4, "uring_http_tls_resumptions_total rose by %d after 4 resumptions" % d
    log("resumption: TLS 1.2 and 1.3 sessions resumed twice each; resumptions_total +%d" % d)


# ------------------------------------------------------------ 4. SNI

def sni(srv, ec_cert, rsa_cert):
    both = client_context([ec_cert, rsa_cert])
    cases = (("other.test", rsa_cert, "other.test"),
             ("localhost", ec_cert, "localhost"),
             (None, ec_cert, "localhost"))
    for name, cert_file, cn in cases:
        ctx = both
        if name is None:
            ctx = client_context([ec_cert, rsa_cert])
            ctx.check_hostname = False  # still verified against the two
        with srv.tls(ctx, server_hostname=name) as s:
            cert = s.getpeercert()
            der = s.getpeercert(binary_form=True)
            assert ((("commonName", cn),) in cert["subject"]) and der == der_of(cert_file), (
                "SNI %r: got the certificate of %s, expected %s"
                % (name, cert["subject"], cn))
            s.sendall(req("/test/fast", host=name or "localhost"))
            assert Responses(s).next()[0] == 200
    log("SNI: other.test -> RSA certificate, localhost and no SNI -> the ECDSA default")


# ------------------------------------------------------------ 5. s_client

def s_client(srv, ec_cert):
    p = subprocess.run(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % srv.port, "-servername",
         "localhost", "-CAfile", ec_cert, "-verify_return_error", "-quiet", "-ign_eof"],
        input=req("/test/bytes?5", close=True), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, timeout=TIMEOUT)
    out = p.stdout
    assert out.startswith(b"HTTP/1.1 200 ") and out.endswith(b"\r\n\r\nxxxxx"), (
        "openssl s_client: exit %d, stdout %r, stderr %s"
        % (p.returncode, out[:300], p.stderr.decode(errors="replace")))
    log("openssl s_client: 200 (exit %d)" % p.returncode)


# ------------------------------------------------------------ 6. failures

def wait_closed(sock, limit):
    """Reads until EOF or reset: (what, bytes received, seconds)."""
    t0 = now()
    sock.settimeout(limit)
    data = b""
    try:
        while True:
            piece = sock.recv(65536)
            if not piece:
                return "eof", data, now() - t0
            data += piece
    except socket.timeout:
        return "timeout", data, now() - t0
    except (ConnectionResetError, ConnectionAbortedError):
        return "reset", data, now() - t0


def failures(srv):
    hello = client_hello()
    m0 = srv.metrics()

    # Plain HTTP: 400 in plain text, then EOF.
    with srv.tcp() as s:
        s.sendall(req("/test/fast"))
        how, data, _ = wait_closed(s, 5.0)
    head, _, body = data.partition(b"\r\n\r\n")
    assert how == "eof" and head.startswith(b"HTTP/1.1 400 ") and b"text/plain" in head and \
        b"HTTPS" in body, "plain HTTP on the TLS port: ended with %s after %r" % (how, data[:300])
    m1 = srv.metrics()
    d = delta(m0, m1, FAIL_REASON % "plain_http")
    assert d >= 1, "plain HTTP: reason=plain_http rose by %d" % d

    # Garbage: closed within 5 s without an HTTP response.
    rnd = random.Random(1)
    for first in (b"\x16", b"\x00"):
        junk = first + rnd.randbytes(199)
        with srv.tcp() as s:
            s.sendall(junk)
            how, data, took = wait_closed(s, 5.0)
        assert how in ("eof", "reset"), (
            "200 bytes of garbage starting with %r: still open after 5 s (received %r)"
            % (first, data[:100]))
        assert not data.startswith(b"HTTP"), (
            "200 bytes of garbage starting with %r were answered %r" % (first, data[:200]))
    m2 = srv.metrics()
    d = delta(m1, m2, FAIL_REASON % "protocol")
    assert d >= 2, "2 garbage connections: reason=protocol rose by %d" % d

    # A truncated ClientHello, then nothing: closed after the 1 s handshake
    # timeout.
    with srv.tcp() as s:
        s.sendall(hello[:50])
        how, data, took = wait_closed(s, 10.0)
    assert how in ("eof", "reset") and 0.5 <= took, (
        "a truncated ClientHello (50 of %d bytes): %s after %.2f s (handshake timeout 1 s)"
        % (len(hello), how, took))
    assert not data.startswith(b"HTTP"), "a truncated ClientHello was answered %r" % data[:200]
    m3 = srv.metrics()
    d = delta(m2, m3, FAIL_REASON % "timeout")
    assert d >= 1, "truncated ClientHello: reason=timeout rose by %d" % d

    # Vanishing peers: connect and close at once; half a ClientHello, then
    # a reset.
    s = srv.tcp()
    s.close()
    s = srv.tcp()
    s.sendall(hello[:len(hello) // 2])
    time.sleep(0.3)
    rst_close(s)
    srv.assert_serves("after peers vanishing at connect and mid-ClientHello")
    deadline = now() + TIMEOUT
    while True:
        m4 = srv.metrics()
        d = delta(m3, m4, FAIL_REASON % "peer_closed")
        if d >= 1:
            break
        assert now() < deadline, "half a ClientHello then a reset: reason=peer_closed rose " \
            "by %d" % d
        time.sleep(0.1)
    log("failures: plain HTTP 400 + EOF, garbage closed unanswered, truncated ClientHello "
        "closed after %.1f s; counted plain_http %+d, protocol %+d, timeout %+d, "
        "peer_closed %+d"
        % (took, *(delta(m0, m4, FAIL_REASON % r)
                    for r in ("plain_http", "protocol", "timeout", "peer_closed"))))
    srv.assert_serves("after the failures")


# ------------------------------------------------------------ 7. reload

def reload(srv, cert, key, tmp, old_cert_copy):
    old_der = der_of(cert)
    new_cert, new_key = make_cert(tmp, "reload-new", "localhost",
                                  "DNS:localhost,IP:127.0.0.1")
    new_der = der_of(new_cert)
    assert new_der != old_der
    ctx = client_context([old_cert_copy, new_cert])
    m0 = srv.metrics()

    keep = srv.tls(ctx)
    r = Responses(keep)
    keep.sendall(req("/test/fast"))
    assert r.next()[0] == 200
    assert keep.getpeercert(binary_form=True) == old_der
    session = keep.session

    shutil.copyfile(new_key, key)
    shutil.copyfile(new_cert, cert)
    srv.proc.send_signal(signal.SIGHUP)
    srv.wait_stderr("TLS reloaded", 1, "SIGHUP with a new certificate")
    srv.ca = [new_cert]
    try:
        keep.sendall(req("/test/fast"))
        status = r.next()[0]
    except (OSError, Closed) as e:
        raise AssertionError("the connection opened before the reload broke: %r" % e)
    assert status == 200, "the connection opened before the reload: answered %d" % status
    with srv.tls(ctx) as s:
        assert s.getpeercert(binary_form=True) == new_der, (
            "a connection after the reload did not get the new certificate")
        s.sendall(req("/test/fast"))
        assert Responses(s).next()[0] == 200
    # Ticket keys are kept across reloads: the session from before resumes.
    with srv.tls(ctx, session=session) as s:
        resumed = s.session_reused
        s.sendall(req("/test/fast"))
        assert Responses(s).next()[0] == 200
    assert resumed, "a session from before the reload was not resumed after it"

    # A broken certificate file: the reload fails, the last good one stays.
    with open(cert, "w") as f:
        f.write("this is not a certificate\n")
    srv.proc.send_signal(signal.SIGHUP)
    srv.wait_stderr("TLS reload failed", 1, "SIGHUP with a broken certificate file")
    assert srv.proc.poll() is None, "the server exited after a failed reload"
    keep.sendall(req("/test/fast"))
    assert r.next()[0] == 200, "the old connection after a failed reload"
    keep.close()
    with srv.tls(ctx) as s:
        assert s.getpeercert(binary_form=True) == new_der, (
            "after a failed reload, a new connection did not get the last good certificate")
        s.sendall(req("/test/fast"))
        assert Responses(s).next()[0] == 200
    m1 = srv.metrics()
    d_ok = delta(m0, m1, "uring_http_tls_reloads_total")
    d_bad = delta(m0, m1, "uring_http_tls_reload_failures_total")
    assert d_ok >= 1 and d_bad >= 1, (
        "reloads_total rose by %d, reload_failures_total by %d (expected >= 1 each)"
        % (d_ok, d_bad))
    lines = [l[:70] + "..." for l in srv.stderr_text().splitlines() if "TLS reload" in l]
    log("reload: open connection kept, new certificate served, old session resumed, "
        "broken file refused; %s" % lines)


def reload_mid_handshake(srv, ec_cert, rsa_cert):
    """Connections accepted before a reload whose ClientHello is processed
    after it (their SSL was made from the old certificates)."""
    pending = []
    for name, cert in (("localhost", ec_cert), ("other.test", rsa_cert)):
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = client_context([cert]).wrap_bio(incoming, outgoing, server_hostname=name)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = outgoing.read()
        sock = srv.tcp()
        sock.sendall(hello[:50])
        pending.append((name, cert, sock, obj, incoming, outgoing, hello[50:]))
    time.sleep(0.2)  # accepted, their first bytes read
    reloads = srv.stderr_text().count("TLS reloaded")
    srv.proc.send_signal(signal.SIGHUP)
    srv.wait_stderr("TLS reloaded", reloads + 1, "SIGHUP (the same files)")
    # A new connection: the loop takes the new certificates for it (-A 1:
    # the same loop as the pending ones).
    status = srv.get("/test/fast")[0]
    assert status == 200, "the connection after the reload answered %d" % status
    problems = []
    for name, cert, sock, obj, incoming, outgoing, rest in pending:
        try:
            sock.sendall(rest)
            while True:
                try:
                    obj.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    if outgoing.pending:
                        sock.sendall(outgoing.read())
                    data = sock.recv(65536)
                    if not data:
                        raise Closed("the server closed the connection (EOF) mid-handshake")
                    incoming.write(data)
            if outgoing.pending:
                sock.sendall(outgoing.read())
            got = obj.getpeercert(binary_form=True)
            obj.write(req("/test/fast", host=name))
            sock.sendall(outgoing.read())
            answer = b""
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    raise Closed("EOF before the answer")
                incoming.write(data)
                try:
                    answer += obj.read(65536)
                except ssl.SSLWantReadError:
                    pass
            if got != der_of(cert) or not answer.startswith(b"HTTP/1.1 200 "):
                problems.append("SNI %s: certificate %s, answer %r" % (
                    name, "right" if got == der_of(cert) else "WRONG", answer[:40]))
        except Exception as e:
            problems.append("SNI %s: the handshake begun before the reload failed: %r"
                            % (name, e))
        sock.close()
    time.sleep(0.2)
    rc = srv.proc.poll()
    if rc is not None:
        problems.append("the server died (exit status %d%s)" % (
            rc, ", " + signal.Signals(-rc).name if rc < 0 else ""))
    assert not problems, "handshakes in flight across a SIGHUP reload: " + "; ".join(problems)
    log("reload mid-handshake: both handshakes completed with the right certificate")


# ------------------------------------------------------------ 8. close_notify

def close_notify(srv):
    for version, name in ((ssl.TLSVersion.TLSv1_3, "TLS 1.3"),
                          (ssl.TLSVersion.TLSv1_2, "TLS 1.2")):
        with srv.tls(client_context(srv.ca, version=version),
                     suppress_ragged_eofs=False) as s:
            s.sendall(req("/test/bytes?1000", close=True))
            r = Responses(s)
            try:
                status, headers, body = r.next()
                rest = r.until_eof()
            except ssl.SSLEOFError as e:
                raise AssertionError("%s: a Connection: close response ended without "
                                     "close_notify (ragged EOF: %r)" % (name, e))
            except (ssl.SSLError, OSError) as e:
                raise AssertionError("%s: a Connection: close response ended with %r"
                                     % (name, e))
            assert status == 200 and len(body) == 1000 and rest == b"", (
                "%s: status %d, %d body bytes, %r after it" % (name, status, len(body), rest))
    log("close_notify: Connection: close ends cleanly over TLS 1.3 and 1.2")


# ------------------------------------------------------------ 9. SIGTERM

def sigterm_with_connections(srv):
    hello = client_hello()
    idle = srv.tls(suppress_ragged_eofs=False)
    idle.sendall(req("/test/fast"))
    idle_r = Responses(idle)
    assert idle_r.next()[0] == 200
    slow = srv.tls()
    slow.sendall(req("/test/slow"))
    half = srv.tcp()
    half.sendall(hello[:len(hello) // 2])
    time.sleep(0.1)  # all of it with the server
    t0 = now()
    srv.stop(timeout=30)
    took = now() - t0
    problems = []
    try:
        status = Responses(slow).next()[0]
        if status != 200:
            problems.append("the SLOW request in flight at SIGTERM answered %d" % status)
    except (OSError, Closed) as e:
        problems.append("the SLOW request in flight at SIGTERM was not answered: %r" % e)
    try:
        rest = idle_r.until_eof()
        if rest:
            problems.append("the idle connection received %r" % rest[:200])
    except ssl.SSLEOFError as e:
        problems.append("the idle keep-alive TLS connection was closed without close_notify "
                        "(%r)" % e)
    except OSError as e:
        problems.append("the idle keep-alive TLS connection ended with %r" % e)
    how, data, _ = wait_closed(half, 5.0)
    if how == "timeout":
        problems.append("the mid-handshake connection is still open after the exit")
    for s in (idle, slow, half):
        s.close()
    assert not problems, "; ".join(problems)
    log("SIGTERM with an idle, a SLOW and a mid-handshake TLS connection: exit 0 in %.1f s"
        % took)


def main():
    binary = sys.argv[1]
    t0 = now()
    tmp = tempfile.mkdtemp(prefix="tls_test.")
    servers = []
    failed = []

    def run(name, fn, *args):
        try:
            fn(*args)
        except Exception as e:  # report, go on with the next check
            failed.append("%s: %s" % (name, e))
            log("FAILED %s:\n%s" % (name, traceback.format_exc()))

    try:
        ec_cert, ec_key = make_cert(tmp, "ec", "localhost", "DNS:localhost,IP:127.0.0.1")
        rsa_cert, rsa_key = make_cert(tmp, "rsa", "other.test", "DNS:other.test", rsa=True)

        a = Server(binary, ["-A", "1", "-w", "4", "-D", str(SLOW_MS),
                            "--tls-cert=" + ec_cert, "--tls-key=" + ec_key,
                            "--tls-cert=" + rsa_cert, "--tls-key=" + rsa_key], "server A")
        a.ca = [ec_cert]
        servers.append(a)
        run("1. curl and ALPN", curl_and_alpn, a, ec_cert)
        run("2. versions, keep-alive, pipelining, bodies", versions_and_bodies, a)
        run("3. session resumption", resumption, a)
        run("4. SNI", sni, a, ec_cert, rsa_cert)
        run("5. openssl s_client", s_client, a, ec_cert)
        run("8. close_notify", close_notify, a)
        run("9. SIGTERM with TLS connections open", sigterm_with_connections, a)

        b = Server(binary, ["-A", "1", "-w", "2", "--handshake-timeout=1s",
                            "--tls-cert=" + ec_cert, "--tls-key=" + ec_key], "server B")
        b.ca = [ec_cert]
        servers.append(b)
        run("6. handshake failures", failures, b)
        run("9. SIGTERM (server B)", b.stop)

        # Its own copies of the files: the test overwrites them.
        c_cert = os.path.join(tmp, "reload.pem")
        c_key = os.path.join(tmp, "reload.key")
        shutil.copyfile(ec_cert, c_cert)
        shutil.copyfile(ec_key, c_key)
        c = Server(binary, ["-A", "1", "-w", "2", "--tls-cert=" + c_cert,
                            "--tls-key=" + c_key], "server C")
        c.ca = [ec_cert]
        servers.append(c)
        run("7. SIGHUP reload", reload, c, c_cert, c_key, tmp, ec_cert)
        run("9. SIGTERM (server C)", c.stop)

        d = Server(binary, ["-A", "1", "-w", "2", "--tls-cert=" + ec_cert,
                            "--tls-key=" + ec_key, "--tls-cert=" + rsa_cert,
                            "--tls-key=" + rsa_key], "server D")
        d.ca = [ec_cert]
        servers.append(d)
        run("7b. SIGHUP reload with handshakes in flight", reload_mid_handshake, d, ec_cert,
            rsa_cert)
        if d.proc.poll() is None:
            run("9. SIGTERM (server D)", d.stop)
    finally:
        for s in servers:
            s.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        log("%d check(s) FAILED (%.1f s):" % (len(failed), now() - t0))
        for f in failed:
            log("  " + f)
        sys.exit(1)
    log("ok (%.1f s); every server exited 0 on SIGTERM" % (now() - t0))


if __name__ == "__main__":
    main()
