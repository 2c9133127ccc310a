"""HTTPS faults from issue 19, against the real server binary over real
sockets (test/serving/tls_test.py has the rest of HTTPS):

  1. one TCP segment that holds a request record and then a record that
     ends the session (the client's fatal alert in clear, as a client that
     aborts right after writing sends it; an application-data record that
     does not decrypt; a close_notify): the server aborted on the first two
     (check failed in TlsSession::Encrypt). It must live on and keep serving;
  4. more stalled TLS downloads of a large file than the ring has file
     buffers (70 against -C 200's 64): each held its 64 KiB buffer for as
     long as its reader stalled, and every other client of the ring, plain
     port included, got a 200 with no body. A new client must get its file;
  7. --proxy-protocol with TLS: the PROXY header comes in clear before the
     ClientHello (HAProxy send-proxy/-v2, curl --haproxy-protocol); the
     server read it inside TLS, so every real proxy failed and a direct
     client could choose its logged address. The access log must name the
     header's client; a header inside TLS, or none, is closed unanswered.

Usage: tls_faults_test.py PATH_TO_SERVER
"""
import os
import re
import select
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import traceback

TIMEOUT = 20.0


def now():
    return time.monotonic()


def log(msg):
    print("tls_faults_test: " + msg, flush=True)


def make_cert(directory):
    cert = os.path.join(directory, "ec.pem")
    key = os.path.join(directory, "ec.key")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-keyout", key,
                        "-out", cert, "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
    return cert, key


class Server:
    def __init__(self, binary, args, name):
        self.name = name
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1"] + args,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.ready = self.proc.stdout.readline()
        m = re.search(r"listening on \S+:(\d+)", self.ready)
        assert m, "%s: no ready line: %r, stderr: %s" % (name, self.ready, self.stderr_text())
        self.port = int(m.group(1))
        m = re.search(r"plain HTTP on \S+:(\d+)", self.ready)
        self.plain_port = int(m.group(1)) if m else None

    def stderr_text(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()

    def alive(self, what):
        rc = self.proc.poll()
        assert rc is None, "%s: the server died (status %r) after %s; stderr:\n%s" % (
            self.name, rc, what, self.stderr_text()[-3000:])

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("%s: no exit within 30 s of SIGTERM" % self.name)
        assert rc == 0, "%s: exit status %d; stderr:\n%s" % (self.name, rc, self.stderr_text())


def client_context(version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    return ctx


def read_response(sock):
    """(status, headers, body) of one Content-Length response, or None at EOF."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None
        buf += data
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    n = int(headers.get("content-length", "0"))
    while len(body) < n:
        data = sock.recv(min(1 << 20, n - len(body)))
        if not data:
            break
        body += data
    return status, headers, body


def https_get(port, path, timeout=TIMEOUT, extra=b""):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    with client_context().wrap_socket(s, server_hostname="localhost") as t:
        t.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (path.encode(), extra))
        return read_response(t)


def http_get(port, path, timeout=TIMEOUT, extra=b""):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (path.encode(), extra))
        return read_response(s)


class RawTls:
    """A TLS client over a plain socket through memory BIOs, so a test
    decides exactly which bytes go out in which send."""

    def __init__(self, port, version=None, prefix=b""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = client_context(version).wrap_bio(self.incoming, self.outgoing,
                                                    server_hostname="localhost")
        self.prefix = prefix  # bytes sent in clear before the ClientHello

    def handshake(self):
        first = True
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                out = self.outgoing.read()
                if first:
                    out = self.prefix + out
                    first = False
                if out:
                    self.sock.sendall(out)
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("EOF during the handshake")
                self.incoming.write(data)
        out = self.outgoing.read()
        if out:
            self.sock.sendall(out)

    def records(self, plaintext):
        """The records carrying plaintext, not sent."""
        self.obj.write(plaintext)
        return self.outgoing.read()

    def read_plain(self, deadline_s=TIMEOUT):
        """Decrypted bytes until EOF, a reset or deadline_s (decrypted at the
        end: an SSLObject that sent its close_notify reads nothing piecemeal)."""
        raw = b""
        end = now() + deadline_s
        self.sock.settimeout(0.2)
        while now() < end:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                break
            if not data:
                break
            raw += data
        self.incoming.write(raw)
        got = b""
        try:
            while True:
                piece = self.obj.read(65536)
                if not piece:
                    break
                got += piece
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLError):
            pass
        return got

    def close(self):
        self.sock.close()


# ------------------------------------------------------------ 1.

def request_then_ending_record(binary, certs):
    srv = Server(binary, ["-A", "1", "-w", "2", "--tls-cert", certs[0], "--tls-key", certs[1]],
                 "item 1")
    # (tail, the session ends with it, an answer is due). In TLS 1.3 and,
    # after ChangeCipherSpec, in 1.2 every record is encrypted: an alert in
    # clear is as broken as a record that does not decrypt.
    tails = [
        ("a fatal alert in clear", b"\x15\x03\x03\x00\x02\x02\x28", True, False),
        ("a record that does not decrypt", b"\x17\x03\x03\x00\x20" + b"\x5a" * 32, True,
         False),
        ("a warning close_notify in clear", b"\x15\x03\x03\x00\x02\x01\x00", True, False),
        ("a truncated record header", b"\x17\x03", False, True),
        ("the client's own close_notify", None, True, True),
    ]
    try:
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            for what, tail, ends, answered in tails:
                for path in (b"/test/fast", b"/test/slow", b"/test/bytes?200000"):
                    c = RawTls(srv.port, version)
                    c.handshake()
                    req = b"GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path
                    records = c.records(req)
                    ending = tail
                    if ending is None:
                        try:
                            c.obj.unwrap()
                        except ssl.SSLWantReadError:
                            pass
                        ending = c.outgoing.read()
                        assert ending, "no close_notify from the client's SSL"
                    c.sock.sendall(records + ending)  # one segment
                    # A session that ends is closed at once; one that goes
                    # on (a record header cut short) keeps its connection.
                    got = c.read_plain(deadline_s=TIMEOUT if ends else 1)
                    c.close()
                    srv.alive("a request and %s in one segment (%s, %s)" % (what, version, path))
                    if answered:
                        assert got.startswith(b"HTTP/1.1 200 "), (
                            "a request then %s (%s, %s): %r" % (what, version, path, got[:100]))
                    else:
                        assert not got, "a request then %s was answered into a broken " \
                            "session (%s, %s): %r" % (what, version, path, got[:100])
        r = https_get(srv.port, "/test/fast")
        assert r is not None and r[0] == 200, "GET /test/fast afterwards: %r" % (r,)
        log("1. a request and an ending record in one segment, 30 ways: the server lives on")
    finally:
        srv.stop()


# ------------------------------------------------------------ 4.

def stalled_tls_downloads(binary, certs):
    root = tempfile.mkdtemp()
    big = os.path.join(root, "big.bin")
    with open(big, "wb") as f:
        f.truncate(64 << 20)  # sparse: zeros, never in the content cache
    srv = Server(binary, ["-A", "1", "-C", "200", "-w", "1", "--root", root, "--plain-port", "0",
                          "--file-splice", "0", "--send-timeout", "60s",
                          "--tls-cert", certs[0], "--tls-key", certs[1]], "item 4")
    stalled = []
    try:
        assert srv.plain_port, "no plain port in the ready line: %r" % srv.ready
        n = 70  # more than the 64 file buffers -C 200 gives the ring
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(TIMEOUT)
            s.connect(("127.0.0.1", srv.port))
            t = client_context().wrap_socket(s, server_hostname="localhost")
            t.sendall(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
            stalled.append(t)
        # Each reads its response's first bytes, then stops reading.
        for t in stalled:
            data = t.recv(1024)
            assert data.startswith(b"HTTP/1.1 200 "), "a download began with %r" % data[:100]
        time.sleep(1.0)  # the server fills their sockets and stalls
        srv.alive("70 stalled downloads")
        # Beside them, new clients of the same ring get a whole file body.
        a = now()
        r = http_get(srv.plain_port, "/big.bin", timeout=15,
                     extra=b"Range: bytes=0-1048575\r\n")
        assert r is not None and r[0] == 206 and len(r[2]) == 1 << 20, (
            "a plain 1 MiB range beside %d stalled TLS downloads: %r" % (
                n, r if r is None else (r[0], len(r[2]))))
        r = https_get(srv.port, "/big.bin", timeout=15, extra=b"Range: bytes=0-1048575\r\n")
        assert r is not None and r[0] == 206 and len(r[2]) == 1 << 20, (
            "a TLS 1 MiB range beside %d stalled TLS downloads: %r" % (
                n, r if r is None else (r[0], len(r[2]))))
        log("4. beside %d stalled TLS downloads, a plain and a TLS client each got 1 MiB "
            "in %.2f s" % (n, now() - a))
    except socket.timeout:
        raise AssertionError("4. a new client's file body did not come beside %d stalled "
                             "TLS downloads (the ring's file buffers were held)" % len(stalled))
    finally:
        for t in stalled:
            t.close()
        srv.stop()


# ------------------------------------------------------------ 7.

def proxy_header_before_tls(binary, certs):
    logdir = tempfile.mkdtemp()
    access = os.path.join(logdir, "access.log")
    srv = Server(binary, ["-A", "1", "-w", "1", "--proxy-protocol", "--access-log", access,
                          "--tls-cert", certs[0], "--tls-key", certs[1]], "item 7")
    stopped = False
    try:
        v1 = b"PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n"
        v2 = (b"\r\n\r\n\x00\r\nQUIT\n" + b"\x21\x11\x00\x0c" +
              bytes([198, 51, 100, 9, 192, 0, 2, 1]) + (4000).to_bytes(2, "big") +
              (443).to_bytes(2, "big"))
        for i, header in enumerate((v1, v2)):
            c = RawTls(srv.port, prefix=header)
            c.handshake()
            c.sock.sendall(c.records(b"GET /test/fast?from-proxy-%d HTTP/1.1\r\n"
                                     b"Host: localhost\r\nConnection: close\r\n\r\n" % i))
            got = c.read_plain()
            c.close()
            assert got.startswith(b"HTTP/1.1 200 "), "through a proxy (%r): %r" % (
                header[:12], got[:200])
        # A client that starts TLS at once, with a PROXY line inside TLS:
        # closed unanswered (it never gets to choose its address).
        c = RawTls(srv.port)
        try:
            c.handshake()
            c.sock.sendall(c.records(b"PROXY TCP4 10.9.9.9 192.0.2.1 1 443\r\n"
                                     b"GET /test/fast?inside HTTP/1.1\r\nHost: x\r\n\r\n"))
            got = c.read_plain(deadline_s=5)
            assert b"HTTP/1.1 200" not in got, "a PROXY line inside TLS was taken: %r" % got[:200]
        except (ConnectionError, ssl.SSLError, socket.timeout):
            pass  # closed during the handshake: right
        finally:
            c.close()
        srv.alive("PROXY headers in clear and inside TLS")
        srv.stop()  # the access log is complete once the server has exited
        stopped = True
        lines = open(access).read().splitlines()
        for i, want in enumerate(("203.0.113.7", "198.51.100.9")):
            hit = [l for l in lines if "from-proxy-%d" % i in l]
            assert hit and hit[0].startswith(want + " "), (
                "the access log names %r, not the PROXY header's %s" % (hit, want))
        assert not [l for l in lines if "inside" in l or l.startswith("10.9.9.9")], lines
        log("7. PROXY v1 and v2 in clear before TLS name the client; none in clear: closed")
    finally:
        if not stopped:
            srv.stop()


def main():
    binary = sys.argv[1]
    certdir = tempfile.mkdtemp()
    certs = make_cert(certdir)
    failures = 0
    for check in (request_then_ending_record, stalled_tls_downloads, proxy_header_before_tls):
        try:
            check(binary, certs)
        except Exception:  # noqa: BLE001: each check reports and the others run
            failures += 1
            log("FAILED %s:\n%s" % (check.__name__, traceback.format_exc()))
    if failures:
        log("%d check(s) failed" % failures)
        sys.exit(1)
    log("ok")


if __name__ == "__main__":
    main()
